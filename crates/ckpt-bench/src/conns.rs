//! `--idle-connections N`: hook calls (`ckptctl turn-start` + `turn-end`,
//! one process each) with N idle connections open to the daemon against
//! the same calls with none, in alternating rounds of one run; the p99s'
//! ratio is the figure (issue 35 allows 2x). Half the idle connections
//! never send a byte (a stuck client), half say hello and then wait (an
//! MCP server or a `ckptctl ui` between requests).

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::ckpt_runner::{Bins, Ckpt};
use crate::system::System;

/// Call pairs timed per phase per round.
const PAIRS: usize = 40;

/// Time the idle connections get to settle before the calls are timed
/// (the daemon sees them all and leaves them waiting).
const SETTLE: Duration = Duration::from_millis(500);

/// Times hook calls without and with `conns` idle connections over `reps`
/// rounds; prints p50 and p99 of each and the p99 ratio. False if the
/// ratio is over 2 or a call failed.
pub fn run(bins: &Bins, work: &Path, conns: usize, reps: usize, timeout: Duration) -> Result<bool> {
    raise_fd_limit(conns as u64 + 256);
    let root = work.join("conns-tree");
    std::fs::create_dir_all(&root)?;
    for i in 0..100 {
        std::fs::write(root.join(format!("f{i}.txt")), format!("file {i}\n"))?;
    }
    let mut sys = Ckpt::new(bins.clone(), &root, &work.join("conns"), timeout)?;
    sys.prepare_fresh()?;
    sys.init()?;
    let hello = ckpt_proto::encode(&ckpt_proto::Request::Hello {
        version: ckpt_proto::PROTOCOL_VERSION,
        client: "ckpt-bench idle".into(),
        progress: false,
    })?;
    let (mut without, mut with) = (Vec::new(), Vec::new());
    for rep in 1..=reps {
        time_pairs(&mut sys, &mut without)?;
        let mut open = Vec::with_capacity(conns);
        for i in 0..conns {
            let mut s = UnixStream::connect(sys.socket())
                .with_context(|| format!("idle connection {i} of {conns}"))?;
            if i % 2 == 1 {
                s.write_all(&hello)?;
            }
            open.push(s);
        }
        std::thread::sleep(SETTLE);
        time_pairs(&mut sys, &mut with)?;
        drop(open);
        eprintln!(
            "[bench] round {rep}: {} calls timed per phase",
            without.len()
        );
    }
    sys.shutdown();
    let (p50a, p99a) = (percentile(&mut without, 50), percentile(&mut without, 99));
    let (p50b, p99b) = (percentile(&mut with, 50), percentile(&mut with, 99));
    println!(
        "hook call (turn-start or turn-end), no idle connections: p50 {p50a:.2} ms, p99 {p99a:.2} ms ({} calls)",
        without.len()
    );
    println!(
        "hook call with {conns} idle connections open: p50 {p50b:.2} ms, p99 {p99b:.2} ms ({} calls)",
        with.len()
    );
    let ratio = p99b / p99a;
    println!("p99 with / without: {ratio:.2}x (issue 35 allows 2x)");
    Ok(ratio <= 2.0)
}

/// One `turn-start` and one `turn-end` process per pair, each timed.
fn time_pairs(sys: &mut Ckpt, out: &mut Vec<f64>) -> Result<()> {
    for _ in 0..PAIRS {
        let t = Instant::now();
        sys.turn_start()?;
        out.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        sys.turn_end()?;
        out.push(t.elapsed().as_secs_f64() * 1e3);
    }
    Ok(())
}

/// The nearest-rank `p`th percentile, in the samples' unit.
pub fn percentile(v: &mut [f64], p: usize) -> f64 {
    v.sort_by(f64::total_cmp);
    let rank = (v.len() * p).div_ceil(100).max(1);
    v[rank - 1]
}

/// Lifts this process's open-file limit to `want` (or the hard limit):
/// the idle connections are this process's descriptors too.
fn raise_fd_limit(want: u64) {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid rlimit for getrlimit to fill and setrlimit to read.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < want {
            lim.rlim_cur = want.min(lim.rlim_max);
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}
