//! `--sizes N,N…`: what each operation costs as the tree grows (issue 35:
//! an idle turn and a small rewind must stay flat from 5,000 to 1M files).
//! Per size, on a tree of N small files in directories of 10 (1M files in
//! 100k directories, the shape), with a fresh daemon:
//!
//! - the first watch and the restart to synced, each against its floor
//!   (`floors.rs`), once;
//! - `--reps` idle turns (`ckptctl turn-start`, then `turn-end`, each
//!   timed as the process it is) and as many small turns (one file
//!   rewritten) each rewound (`ckptctl rewind N`) and checked;
//! - the hook call's floor: a static binary that connects to a socket the
//!   bench serves and makes one round trip of a turn-start's size.
//!
//! Prints p50 and p99 per operation and size, and the daemon's RSS.

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::ckpt_runner::{Bins, Ckpt};
use crate::floors::{floor_restart, floor_watch};
use crate::procstat;
use crate::system::System;

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

fn content(i: usize, version: &str) -> Vec<u8> {
    format!(
        "// file {i}, {version}\n{}",
        "let x = 1; // padding\n".repeat(12)
    )
    .into_bytes()
}

/// One row of the table: an operation's samples per size, in seconds.
struct Row {
    name: &'static str,
    per_size: Vec<Vec<f64>>,
}

/// Runs every size in turn; false if a small rewind was not exact.
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
    let names = [
        "turn-start (idle)",
        "turn-end (idle)",
        "hook floor: static binary, connect, one round trip",
        "rewind of a one-file turn",
    ];
    let mut rows: Vec<Row> = names
        .iter()
        .map(|&name| Row {
            name,
            per_size: Vec::new(),
        })
        .collect();
    let mut ok = true;
    for &n in sizes {
        let root = work.join(format!("sizes-{n}"));
        let t = Instant::now();
        for i in 0..n {
            let f = file(&root, i);
            if i % FAN == 0 {
                std::fs::create_dir_all(f.parent().context("a file without a parent")?)?;
            }
            std::fs::write(f, content(i, "v0"))?;
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
        // Stopped first: the floor's watches and the daemon's together
        // would pass the user's inotify limit at 1M files (192,530 here).
        sys.shutdown();
        let restart_floor = floor_restart(&root)?;
        let restart = sys.restart_until_synced()?.as_secs_f64();
        eprintln!("[bench] sizes: {n} files watched ({watch:.1} s) and restarted ({restart:.2} s)");

        let mut samples: Vec<Vec<f64>> = vec![Vec::new(); names.len()];
        let mut wrong = 0;
        for rep in 0..reps {
            let t = Instant::now();
            sys.turn_start()?;
            samples[0].push(t.elapsed().as_secs_f64());
            let t = Instant::now();
            sys.turn_end()?;
            samples[1].push(t.elapsed().as_secs_f64());

            let t = Instant::now();
            round_trip(&client, &socket)?;
            samples[2].push(t.elapsed().as_secs_f64());

            // A file spread over the tree, so no cache stays warm for it.
            let i = (rep * 7919) % n;
            let turn = sys.turn_start()?;
            std::fs::write(file(&root, i), content(i, "edited"))?;
            sys.turn_end()?;
            let t = Instant::now();
            sys.rewind(turn)?;
            samples[3].push(t.elapsed().as_secs_f64());
            if std::fs::read(file(&root, i))? != content(i, "v0") {
                wrong += 1;
            }
        }
        let pid = sys.daemon_pid().context("no daemon pid")?;
        let rss = procstat::sample(pid)?.rss;
        sys.shutdown();
        std::fs::remove_dir_all(&root)?;
        let (start, floor) = (&samples[0], &samples[2]);
        // Printed as each size ends: a 1M-file size takes many minutes.
        println!(
            "{n} files: first watch {watch:.2} s vs floor {watch_floor:.2} s ({:.2}x); restart \
             to synced {restart:.2} s vs floor {restart_floor:.2} s ({:.2}x); turn-start vs the \
             hook floor: p50 {:.2}x, p99 {:.2}x; daemon RSS after the turns {:.1} MiB; {wrong} \
             of {reps} rewinds not exact",
            watch / watch_floor,
            restart / restart_floor,
            percentile(start, 0.50) / percentile(floor, 0.50),
            percentile(start, 0.99) / percentile(floor, 0.99),
            rss as f64 / (1 << 20) as f64,
        );
        ok &= wrong == 0;
        for (row, s) in rows.iter_mut().zip(samples) {
            row.per_size.push(s);
        }
    }

    println!("p50 / p99 in ms over {reps} calls each; files in directories of {FAN}:");
    print!("{:<52}", "operation");
    for &n in sizes {
        print!(" | {:>17}", format!("{n} files"));
    }
    println!();
    for row in &rows {
        print!("{:<52}", row.name);
        for s in &row.per_size {
            let (p50, p99) = (percentile(s, 0.50), percentile(s, 0.99));
            print!(" | {:>17}", format!("{:.2} / {:.2}", p50 * 1e3, p99 * 1e3));
        }
        println!();
    }
    Ok(ok)
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

/// Spawns the floor client against `socket` and waits for it.
fn round_trip(client: &Path, socket: &Path) -> Result<()> {
    let st = Command::new(client)
        .arg(socket)
        .arg(REQUEST.to_string())
        .stdin(Stdio::null())
        .status()?;
    if !st.success() {
        bail!("the hook floor's client failed: {st}");
    }
    Ok(())
}

/// Answers each connection's one frame with a reply of `REPLY` bytes, on a
/// thread of its own, until dropped.
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
