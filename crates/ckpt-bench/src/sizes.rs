//! `--sizes N,N…`: what each operation costs as the tree grows (issue 35:
//! an idle turn and a small rewind must stay flat from 5,000 to 1M files).
//! Per size, a tree of N small files in directories of 10 (1M files in
//! 100k directories, the shape) and a daemon of its own:
//!
//! - the first watch and the restart to synced, each against its floor
//!   (`floors.rs`), once;
//! - then, every size in turn within each of `--reps` repetitions (so the
//!   machine's load falls on all sizes alike): an idle turn (`ckptctl
//!   turn-start -q`, then `turn-end -q`, as a hook runs them), the hook
//!   call's floor (a static binary that connects to a socket the bench
//!   serves and makes one round trip of a turn-start's bytes), each
//!   spawned and reaped alike (`cmd::run`), and a one-file turn rewound
//!   (`ckptctl rewind N`) and checked.
//!
//! Prints per size the ratios to the floors and to the smallest tree, the
//! daemon's RSS, and a table of p50 and p99 per operation and size.

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::ckpt_runner::{Bins, Ckpt};
use crate::cmd;
use crate::floors::{floor_restart, floor_watch};
use crate::procstat;
use crate::system::System;
use crate::tree::small_file;

/// Files per directory, and directories per parent.
const FAN: usize = 10;
const PARENT_FAN: usize = 100;

/// The floor's request and reply bodies: as many bytes as `ckptctl
/// turn-start` sends (hello and request, 186 with headers) and receives
/// (both answers, 136), seen with strace.
const REQUEST: usize = 182;
const REPLY: usize = 132;

fn file(root: &Path, i: usize) -> PathBuf {
    let dir = i / FAN;
    root.join(format!("p{}/d{dir}/f{i}.rs", dir / PARENT_FAN))
}

/// One size's tree, its daemon and what was timed on it.
struct Size {
    n: usize,
    root: PathBuf,
    sys: Ckpt,
    /// The first watch and restart to synced, each with its floor (s).
    watch: (f64, f64),
    restart: (f64, f64),
    /// Per operation of `OPS`, its samples (s).
    samples: Vec<Vec<f64>>,
    wrong: usize,
}

const OPS: [&str; 4] = [
    "turn-start (idle)",
    "turn-end (idle)",
    "hook floor: static binary, connect, one round trip",
    "rewind of a one-file turn",
];

/// Makes and watches each size's tree with a daemon of its own, then
/// times the calls on every size in turn within each repetition, so that
/// the machine's load falls on all sizes alike; false if a small rewind
/// was not exact.
pub fn run(
    bins: &Bins,
    work: &Path,
    sizes: &[usize],
    reps: usize,
    timeout: Duration,
) -> Result<bool> {
    let client = floor_client()?;
    let socket = work.join("hook-floor.sock");
    let _server = FloorServer::start(&socket)?;
    let mut all = Vec::new();
    for &n in sizes {
        all.push(watched(bins, work, n, timeout)?);
    }
    for rep in 0..reps {
        for size in all.iter_mut() {
            size.time_calls(rep, &client, &socket, timeout)?;
        }
    }
    let mut ok = true;
    let smallest = all.first().map(|s| s.samples.clone());
    for size in all.iter_mut() {
        let pid = size.sys.daemon_pid().context("no daemon pid")?;
        let rss = procstat::sample(pid)?.rss;
        size.sys.shutdown();
        std::fs::remove_dir_all(&size.root)?;
        let p50 = |k: usize| percentile(&size.samples[k], 0.50);
        let p99 = |k: usize| percentile(&size.samples[k], 0.99);
        let base = |k: usize, q: f64| smallest.as_ref().map_or(1.0, |b| percentile(&b[k], q));
        println!(
            "{} files: first watch {:.2} s vs floor {:.2} s ({:.2}x); restart to synced {:.2} s \
             vs floor {:.2} s ({:.2}x); against the hook floor: turn-start p50 {:.2}x, p99 \
             {:.2}x, turn-end p50 {:.2}x, p99 {:.2}x; against the smallest tree: turn-start \
             p50 {:.2}x, one-file rewind p50 {:.2}x; daemon RSS after the turns {:.1} MiB; \
             {} of {reps} rewinds not exact",
            size.n,
            size.watch.0,
            size.watch.1,
            size.watch.0 / size.watch.1,
            size.restart.0,
            size.restart.1,
            size.restart.0 / size.restart.1,
            p50(0) / p50(2),
            p99(0) / p99(2),
            p50(1) / p50(2),
            p99(1) / p99(2),
            p50(0) / base(0, 0.50),
            p50(3) / base(3, 0.50),
            rss as f64 / (1 << 20) as f64,
            size.wrong,
        );
        ok &= size.wrong == 0;
    }

    println!("p50 / p99 in ms over {reps} calls each; files in directories of {FAN}:");
    print!("{:<52}", "operation");
    for size in &all {
        print!(" | {:>17}", format!("{} files", size.n));
    }
    println!();
    for (k, name) in OPS.iter().enumerate() {
        print!("{name:<52}");
        for size in &all {
            let s = &size.samples[k];
            let (p50, p99) = (percentile(s, 0.50), percentile(s, 0.99));
            print!(" | {:>17}", format!("{:.2} / {:.2}", p50 * 1e3, p99 * 1e3));
        }
        println!();
    }
    Ok(ok)
}

/// A tree of `n` files, watched by a new daemon: its first watch and its
/// restart to synced timed against their floors.
fn watched(bins: &Bins, work: &Path, n: usize, timeout: Duration) -> Result<Size> {
    let root = work.join(format!("sizes-{n}"));
    let t = Instant::now();
    for i in 0..n {
        let f = file(&root, i);
        if i % FAN == 0 {
            std::fs::create_dir_all(f.parent().context("a file without a parent")?)?;
        }
        std::fs::write(f, small_file(i, "v0"))?;
    }
    eprintln!(
        "[bench] sizes: {n} files made in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let mut sys = Ckpt::new(
        bins.clone(),
        &root,
        &work.join(format!("sizes-{n}-ckpt")),
        timeout,
    )?;
    sys.prepare_fresh()?;
    let t = Instant::now();
    sys.init()?;
    let watch = t.elapsed().as_secs_f64();
    let floor_db = work.join(format!("sizes-{n}-floor.db"));
    let watch_floor = floor_watch(&root, &floor_db)?;
    std::fs::remove_file(&floor_db)?;
    // Stopped first: the floor's watches and the daemon's together would
    // pass the user's inotify limit at 1M files (192,530 here).
    sys.shutdown();
    let restart_floor = floor_restart(&root)?;
    let restart = sys.restart_until_synced()?.as_secs_f64();
    eprintln!("[bench] sizes: {n} files watched ({watch:.1} s) and restarted ({restart:.2} s)");
    Ok(Size {
        n,
        root,
        sys,
        watch: (watch, watch_floor),
        restart: (restart, restart_floor),
        samples: vec![Vec::new(); OPS.len()],
        wrong: 0,
    })
}

impl Size {
    /// One repetition of every timed call.
    fn time_calls(
        &mut self,
        rep: usize,
        client: &Path,
        socket: &Path,
        timeout: Duration,
    ) -> Result<()> {
        let t = Instant::now();
        self.sys.hook_turn_start()?;
        self.samples[0].push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        self.sys.turn_end()?;
        self.samples[1].push(t.elapsed().as_secs_f64());

        self.samples[2].push(round_trip(client, socket, timeout)?);

        // A file spread over the tree, so no cache stays warm for it.
        let i = (rep * 7919) % self.n;
        let turn = self.sys.turn_start()?;
        std::fs::write(file(&self.root, i), small_file(i, "edited"))?;
        self.sys.turn_end()?;
        let t = Instant::now();
        self.sys.rewind(turn)?;
        self.samples[3].push(t.elapsed().as_secs_f64());
        if std::fs::read(file(&self.root, i))? != small_file(i, "v0") {
            self.wrong += 1;
        }
        Ok(())
    }
}

/// The nearest-rank percentile `q` of `samples`.
fn percentile(samples: &[f64], q: f64) -> f64 {
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[rank - 1]
}

/// The hook floor's client, built with the bench (`src/bin/ckpt-bench-hook-floor.rs`).
fn floor_client() -> Result<PathBuf> {
    let me = std::env::current_exe().context("finding the bench's own executable")?;
    let client = me.with_file_name("ckpt-bench-hook-floor");
    if !client.is_file() {
        bail!(
            "{} not found; build ckpt-bench's binaries",
            client.display()
        );
    }
    Ok(client)
}

/// One run of the floor's client, spawned and reaped as every `ckptctl`
/// call is (`cmd::run`: its output read through pipes), in seconds.
fn round_trip(client: &Path, socket: &Path, timeout: Duration) -> Result<f64> {
    let mut c = Command::new(client);
    c.arg(socket).arg(REQUEST.to_string());
    Ok(cmd::run_ok(&mut c, None, timeout)?.elapsed.as_secs_f64())
}

/// Answers each connection's one frame with a reply of `REPLY` bytes, on a
/// thread of its own that ends with the bench.
struct FloorServer {
    path: PathBuf,
}

impl FloorServer {
    fn start(path: &Path) -> Result<Self> {
        let _ = std::fs::remove_file(path);
        let listener = UnixListener::bind(path)?;
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut c) = conn else { return };
                let _ = answer(&mut c);
            }
        });
        Ok(Self {
            path: path.to_path_buf(),
        })
    }
}

impl Drop for FloorServer {
    /// The socket file goes; the thread ends with the bench.
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn answer(c: &mut UnixStream) -> std::io::Result<()> {
    let mut header = [0u8; 4];
    c.read_exact(&mut header)?;
    let mut body = vec![0u8; u32::from_be_bytes(header) as usize];
    c.read_exact(&mut body)?;
    let mut reply = (REPLY as u32).to_be_bytes().to_vec();
    reply.resize(4 + REPLY, b' ');
    c.write_all(&reply)
}
