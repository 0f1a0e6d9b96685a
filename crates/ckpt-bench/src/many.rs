//! `--many-clients N`: one daemon, `--projects P` watched projects, N
//! clients at once for `--seconds S`, each a session of its own on project
//! `i % P`: turn-start, a write to its own file, turn-end, and every fourth
//! turn a forced `rewind N --path` of its file, checked byte for byte.
//! Prints p50/p99 per operation, the rewinds that were not exact, and the
//! daemon's RSS over the run (issue 35: p99 turn-start ≤ 20 ms, every
//! rewind exact, RSS flat).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::ckpt_runner::{Bins, Ckpt};
use crate::cmd::run;
use crate::system::System;
use crate::{ckpt_json, conns::percentile, procstat};

/// What every client measured.
#[derive(Default)]
struct Tally {
    /// `ckptctl --version`: the process start every call pays, timed by
    /// the same clients under the same load (the floor).
    spawn: Vec<f64>,
    turn_start: Vec<f64>,
    turn_end: Vec<f64>,
    rewind: Vec<f64>,
    wrong: Vec<String>,
}

pub fn run_all(
    bins: &Bins,
    work: &Path,
    clients: usize,
    projects: usize,
    secs: u64,
    timeout: Duration,
) -> Result<bool> {
    let projects = projects.max(1);
    let roots: Vec<PathBuf> = (0..projects)
        .map(|p| work.join(format!("many/p{p}")))
        .collect();
    for root in &roots {
        std::fs::create_dir_all(root)?;
        for f in 0..50 {
            std::fs::write(root.join(format!("f{f}.txt")), format!("file {f}\n"))?;
        }
    }
    let mut sys = Ckpt::new(bins.clone(), &roots[0], &work.join("many-daemon"), timeout)?;
    sys.prepare_fresh()?;
    for root in &roots {
        run(&mut sys.ctl_in(root, &["watch"]), None, timeout)?;
    }
    let pid = sys.daemon_pid().context("no daemon pid")?;
    let sys = Arc::new(sys);
    let tally = Arc::new(Mutex::new(Tally::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let deadline = Instant::now() + Duration::from_secs(secs);
    let threads: Vec<_> = (0..clients)
        .map(|i| {
            let (sys, tally, stop) = (Arc::clone(&sys), Arc::clone(&tally), Arc::clone(&stop));
            let root = roots[i % projects].clone();
            std::thread::spawn(move || {
                let r = client(&sys, &root, i, deadline, &tally, timeout);
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
    let mut rss = Vec::new();
    while Instant::now() < deadline && !stop.load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_secs(1));
        rss.push(procstat::sample(pid)?.rss as f64 / (1 << 20) as f64);
    }
    for t in threads {
        let _ = t.join();
    }
    let mut t = std::mem::take(&mut *tally.lock().unwrap());
    for (name, v) in [
        ("spawn (ckptctl --version)", &mut t.spawn),
        ("turn-start", &mut t.turn_start),
        ("turn-end", &mut t.turn_end),
        ("rewind --path", &mut t.rewind),
    ] {
        if v.is_empty() {
            bail!("no {name} finished");
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
    let floor = percentile(&mut t.spawn, 99);
    println!(
        "{clients} clients on {projects} projects for {secs} s: {} rewinds not exact; \
         p99 turn-start {p99:.2} ms (issue 35: ≤ 20 ms), {:.2}x the p99 of a bare spawn",
        t.wrong.len(),
        p99 / floor
    );
    Ok(t.wrong.is_empty())
}

/// One client's loop until `deadline`.
fn client(
    sys: &Ckpt,
    root: &Path,
    i: usize,
    deadline: Instant,
    tally: &Mutex<Tally>,
    timeout: Duration,
) -> Result<()> {
    let session = format!("c{i}");
    let file = root.join(format!("client-{i}.txt"));
    let mut k = 0u64;
    while Instant::now() < deadline {
        k += 1;
        let t = Instant::now();
        run(&mut sys.ctl_in(root, &["--version"]), None, timeout)?;
        let spawned = t.elapsed();
        let before = std::fs::read(&file).ok();
        let t = Instant::now();
        let out = run(
            &mut sys.ctl_in(root, &["--json", "turn-start", "--session", &session]),
            None,
            timeout,
        )?;
        let started = t.elapsed();
        let turn = ckpt_json::parse(&out.stdout())
            .as_ref()
            .and_then(ckpt_json::turn_id)
            .with_context(|| format!("turn-start: {} {}", out.stdout(), out.stderr()))?;
        std::fs::write(&file, format!("client {i} turn {k}\n"))?;
        let t = Instant::now();
        let end = run(
            &mut sys.ctl_in(root, &["--json", "turn-end", "--session", &session]),
            None,
            timeout,
        )?;
        let ended = t.elapsed();
        if !end.status().success() {
            bail!("turn-end failed: {}", end.stderr());
        }
        let mut rewound = None;
        if k.is_multiple_of(4) {
            let (n, path) = (turn.to_string(), file.to_string_lossy());
            let t = Instant::now();
            let rw = run(
                &mut sys.ctl_in(root, &["--json", "rewind", &n, "--force", "--path", &path]),
                None,
                timeout,
            )?;
            rewound = Some(t.elapsed());
            let now = std::fs::read(&file).ok();
            if !rw.status().success() || now != before {
                tally.lock().unwrap().wrong.push(format!(
                    "client {i} turn {turn}: rewind exit {}, file {:?}, want {:?} ({})",
                    rw.status(),
                    now.map(|b| String::from_utf8_lossy(&b).into_owned()),
                    before.map(|b| String::from_utf8_lossy(&b).into_owned()),
                    rw.stderr().trim()
                ));
            }
        }
        let mut t = tally.lock().unwrap();
        t.spawn.push(spawned.as_secs_f64() * 1e3);
        t.turn_start.push(started.as_secs_f64() * 1e3);
        t.turn_end.push(ended.as_secs_f64() * 1e3);
        if let Some(r) = rewound {
            t.rewind.push(r.as_secs_f64() * 1e3);
        }
    }
    Ok(())
}
