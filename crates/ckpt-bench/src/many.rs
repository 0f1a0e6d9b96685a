//! `--many-clients N`: one daemon, `--projects P` watched projects, N
//! clients at once for `--seconds S`, each a session of its own on project
//! `i % P`: turn-start, a write to its own file, turn-end, and every fourth
//! turn a forced `rewind N --path` of its file, checked byte for byte.
//! Prints p50/p99 per operation, the rewinds that were not exact, and the
//! daemon's RSS over the run (issue 35: p99 turn-start ≤ 20 ms, every
//! rewind exact, RSS flat). With `--socket-clients` the clients call over
//! the socket themselves, so the daemon's part is timed without the
//! process start. `--pace MS` starts each client's turns at most every MS
//! ms, as an agent between prompts; 0 (the default) is back to back, which
//! measures how many turns the daemon serves at saturation.

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use ckpt_proto::{Request, Response, Rewind, RewindFlags, RewindTo, TurnEnd, TurnStart};

use crate::ckpt_runner::{Bins, Ckpt};
use crate::cmd::run;
use crate::system::System;
use crate::{ckpt_json, conns::percentile, procstat};

/// What every client measured, in ms.
#[derive(Default)]
pub(crate) struct Tally {
    /// `ckptctl --version`: the process start every call pays, timed by
    /// the same clients under the same load (the floor).
    pub spawn: Vec<f64>,
    pub turn_start: Vec<f64>,
    pub turn_end: Vec<f64>,
    pub rewind: Vec<f64>,
    pub wrong: Vec<String>,
}

pub fn run_all(
    bins: &Bins,
    work: &Path,
    clients: usize,
    projects: usize,
    secs: u64,
    load: Load,
    timeout: Duration,
) -> Result<bool> {
    let Load { via, pace } = load;
    let projects = projects.max(1);
    let roots: Vec<PathBuf> = (0..projects)
        .map(|p| work.join(format!("many/p{p}")))
        .collect();
    let sys = watching(bins, &roots, &work.join("many-daemon"), timeout)?;
    let pid = sys.daemon_pid().context("no daemon pid")?;
    let sys = Arc::new(sys);
    let mut rss = Vec::new();
    let per_root = drive(&sys, &roots, clients, load, secs, timeout, || {
        rss.push(procstat::sample(pid)?.rss as f64 / (1 << 20) as f64);
        Ok(())
    })?;
    let mut t = Tally::default();
    for r in per_root {
        t.absorb(r);
    }
    for (name, v) in [
        ("spawn (ckptctl --version)", &mut t.spawn),
        ("turn-start", &mut t.turn_start),
        ("turn-end", &mut t.turn_end),
        ("rewind --path", &mut t.rewind),
    ] {
        if v.is_empty() {
            // The socket's clients start no process.
            if via == Via::Process {
                bail!("no {name} finished");
            }
            continue;
        }
        println!(
            "{name}: p50 {:.2} ms, p99 {:.2} ms ({} calls)",
            percentile(v, 50),
            percentile(v, 99),
            v.len()
        );
    }
    let third = (rss.len() / 3).max(1);
    let early = rss[..third].iter().cloned().fold(0.0, f64::max);
    let late = rss[rss.len() - third..].iter().cloned().fold(0.0, f64::max);
    println!(
        "daemon RSS: max {early:.1} MiB in the first third of the run, {late:.1} MiB in the last ({} samples)",
        rss.len()
    );
    for w in &t.wrong {
        println!("WRONG: {w}");
    }
    let p99 = percentile(&mut t.turn_start, 99);
    let against_spawn = match via {
        Via::Process => format!(
            ", {:.2}x the p99 of a bare spawn",
            p99 / percentile(&mut t.spawn, 99)
        ),
        Via::Socket => " (calls over the socket, no process started)".to_string(),
    };
    let turns = t.turn_start.len() as f64 / secs as f64;
    println!(
        "{clients} clients on {projects} projects for {secs} s, a turn each every {} ms at most: \
         {turns:.0} turns/s, {} rewinds not exact; \
         p99 turn-start {p99:.2} ms (issue 35: ≤ 20 ms){against_spawn}",
        pace.as_millis(),
        t.wrong.len(),
    );
    Ok(t.wrong.is_empty())
}

/// A fresh daemon in `data` watching `roots`, each made a project of 50
/// small files.
pub(crate) fn watching(
    bins: &Bins,
    roots: &[PathBuf],
    data: &Path,
    timeout: Duration,
) -> Result<Ckpt> {
    for root in roots {
        std::fs::create_dir_all(root)?;
        for f in 0..50 {
            std::fs::write(root.join(format!("f{f}.txt")), format!("file {f}\n"))?;
        }
    }
    let mut sys = Ckpt::new(bins.clone(), &roots[0], data, timeout)?;
    sys.prepare_fresh()?;
    for root in roots {
        run(&mut sys.ctl_in(root, &["watch"]), None, timeout)?;
    }
    Ok(sys)
}

/// Runs `clients` clients for `secs`, client `i` a session of its own on
/// `roots[i % roots.len()]`, and calls `tick` about once a second
/// meanwhile; what they measured, per root.
pub(crate) fn drive(
    sys: &Arc<Ckpt>,
    roots: &[PathBuf],
    clients: usize,
    load: Load,
    secs: u64,
    timeout: Duration,
    mut tick: impl FnMut() -> Result<()>,
) -> Result<Vec<Tally>> {
    let tallies: Vec<_> = roots
        .iter()
        .map(|_| Arc::new(Mutex::new(Tally::default())))
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let deadline = start + Duration::from_secs(secs);
    let pace = load.pace;
    let threads: Vec<_> = (0..clients)
        .map(|i| {
            let tally = Arc::clone(&tallies[i % roots.len()]);
            let (sys, stop) = (Arc::clone(sys), Arc::clone(&stop));
            let root = roots[i % roots.len()].clone();
            std::thread::spawn(move || {
                let session = format!("c{i}");
                let calls = Calls {
                    sys: &sys,
                    root: &root,
                    session: &session,
                    timeout,
                };
                // Clients start spread over one pace, not all at once.
                let first = start + pace.mul_f64(i as f64 / clients as f64);
                let r = client(&calls, i, load, first, deadline, &tally);
                if let Err(e) = r {
                    tally
                        .lock()
                        .unwrap()
                        .wrong
                        .push(format!("client {i}: {e:#}"));
                    stop.store(true, Ordering::Release);
                }
            })
        })
        .collect();
    while Instant::now() < deadline && !stop.load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_secs(1));
        tick()?;
    }
    for t in threads {
        let _ = t.join();
    }
    Ok(tallies
        .iter()
        .map(|t| std::mem::take(&mut *t.lock().unwrap()))
        .collect())
}

impl Tally {
    pub(crate) fn absorb(&mut self, other: Tally) {
        self.spawn.extend(other.spawn);
        self.turn_start.extend(other.turn_start);
        self.turn_end.extend(other.turn_end);
        self.rewind.extend(other.rewind);
        self.wrong.extend(other.wrong);
    }
}

/// How the clients call the daemon, and how often.
#[derive(Clone, Copy)]
pub struct Load {
    pub via: Via,
    /// Each client starts a turn at most this often (zero: back to back).
    pub pace: Duration,
}

/// How the clients reach the daemon.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// A `ckptctl` process per call, as agents' hooks do.
    Process,
    /// A connection per call from the bench's own thread (hello and
    /// request, as `ckptctl` sends them): the daemon's part alone, without
    /// the process start that dominates on a loaded machine.
    Socket,
}

/// One client's loop until `deadline`.
fn client(
    calls: &Calls,
    i: usize,
    Load { via, pace }: Load,
    mut next: Instant,
    deadline: Instant,
    tally: &Mutex<Tally>,
) -> Result<()> {
    let Calls {
        sys, root, timeout, ..
    } = *calls;
    let file = root.join(format!("client-{i}.txt"));
    let mut k = 0u64;
    while Instant::now() < deadline {
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
        next = Instant::now().max(next) + pace;
        k += 1;
        let spawned = match via {
            Via::Process => {
                let t = Instant::now();
                run(&mut sys.ctl_in(root, &["--version"]), None, timeout)?;
                Some(t.elapsed())
            }
            Via::Socket => None,
        };
        let before = std::fs::read(&file).ok();
        let t = Instant::now();
        let turn = calls.turn_start(via)?;
        let started = t.elapsed();
        std::fs::write(&file, format!("client {i} turn {k}\n"))?;
        let t = Instant::now();
        calls.turn_end(via)?;
        let ended = t.elapsed();
        let mut rewound = None;
        if k.is_multiple_of(4) {
            let t = Instant::now();
            let refused = calls.rewind(via, turn, &file)?;
            rewound = Some(t.elapsed());
            let now = std::fs::read(&file).ok();
            if refused.is_some() || now != before {
                tally.lock().unwrap().wrong.push(format!(
                    "client {i} turn {turn}: file {:?}, want {:?} ({})",
                    now.map(|b| String::from_utf8_lossy(&b).into_owned()),
                    before.map(|b| String::from_utf8_lossy(&b).into_owned()),
                    refused.unwrap_or_default()
                ));
            }
        }
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let mut t = tally.lock().unwrap();
        t.spawn.extend(spawned.map(ms));
        t.turn_start.push(ms(started));
        t.turn_end.push(ms(ended));
        t.rewind.extend(rewound.map(ms));
    }
    Ok(())
}

/// One client's calls, by either way.
struct Calls<'a> {
    sys: &'a Ckpt,
    root: &'a Path,
    session: &'a str,
    timeout: Duration,
}

impl Calls<'_> {
    fn turn_start(&self, via: Via) -> Result<u64> {
        if via == Via::Socket {
            let req = Request::TurnStart(TurnStart {
                dir: self.root.into(),
                session: Some(self.session.into()),
                ..TurnStart::default()
            });
            return match self.call(req)? {
                Response::TurnStarted(r) => Ok(r.turn as u64),
                other => bail!("turn-start: {other:?}"),
            };
        }
        let out = self.ctl(&["--json", "turn-start", "--session", self.session])?;
        ckpt_json::parse(&out.stdout())
            .as_ref()
            .and_then(ckpt_json::turn_id)
            .with_context(|| format!("turn-start: {} {}", out.stdout(), out.stderr()))
    }

    fn turn_end(&self, via: Via) -> Result<()> {
        if via == Via::Socket {
            let req = Request::TurnEnd(TurnEnd {
                dir: self.root.into(),
                session: Some(self.session.into()),
                transcript: None,
                // What a hook asks for.
                list: Some(0),
            });
            return match self.call(req)? {
                Response::TurnEnded(_) => Ok(()),
                other => bail!("turn-end: {other:?}"),
            };
        }
        let out = self.ctl(&["--json", "turn-end", "--session", self.session])?;
        if !out.status().success() {
            bail!("turn-end failed: {}", out.stderr());
        }
        Ok(())
    }

    /// A forced rewind of `turn` for `file` alone; why it was refused, if
    /// it was.
    fn rewind(&self, via: Via, turn: u64, file: &Path) -> Result<Option<String>> {
        if via == Via::Socket {
            let req = Request::Rewind(Rewind {
                dir: self.root.into(),
                to: RewindTo::Before(turn as i64),
                paths: vec![file.into()],
                flags: RewindFlags {
                    dry_run: false,
                    force: true,
                },
                merge: None,
                list: None,
            });
            return Ok(match self.call(req)? {
                Response::Rewind(_) => None,
                other => Some(format!("{other:?}")),
            });
        }
        let (n, path) = (turn.to_string(), file.to_string_lossy());
        let out = self.ctl(&["--json", "rewind", &n, "--force", "--path", &path])?;
        Ok((!out.status().success()).then(|| out.stderr().trim().to_string()))
    }

    fn ctl(&self, args: &[&str]) -> Result<crate::cmd::Timed> {
        run(&mut self.sys.ctl_in(self.root, args), None, self.timeout)
    }

    /// One connection: hello and `req` written at once, then both replies.
    fn call(&self, req: Request) -> Result<Response> {
        let mut s = UnixStream::connect(self.sys.socket())?;
        let hello = Request::Hello {
            version: ckpt_proto::PROTOCOL_VERSION,
            client: "ckpt-bench".into(),
            progress: false,
        };
        let mut out = ckpt_proto::encode(&hello)?;
        out.extend(ckpt_proto::encode(&req)?);
        s.write_all(&out)?;
        match ckpt_proto::read_frame(&mut s)? {
            Response::Hello(_) => Ok(ckpt_proto::read_frame(&mut s)?),
            other => bail!("hello: {other:?}"),
        }
    }
}
