//! `--big-turn N[,N…]`: the daemon's peak RSS (VmHWM) through a turn that
//! rewrites every one of N files and through its rewind, each size with a
//! fresh daemon, so the peaks can be compared across sizes (issue 35: at
//! most 96 MiB at 50,000 files, and independent of the turn's size beyond a
//! fixed window).

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::ckpt_runner::{Bins, Ckpt};
use crate::procstat;
use crate::system::System;
use crate::tree::small_file;

/// Files per directory.
const FAN: usize = 100;

/// Runs each size; false if a rewind did not bring the files back.
pub fn run(bins: &Bins, work: &Path, sizes: &[usize], timeout: Duration) -> Result<bool> {
    let mut ok = true;
    for &n in sizes {
        let root = work.join(format!("big-{n}"));
        for i in 0..n {
            let dir = root.join(format!("d{}", i / FAN));
            if i % FAN == 0 {
                std::fs::create_dir_all(&dir)?;
            }
            std::fs::write(dir.join(format!("f{i}.txt")), small_file(i, "before"))?;
        }
        let mut sys = Ckpt::new(
            bins.clone(),
            &root,
            &work.join(format!("big-{n}-ckpt")),
            timeout,
        )?;
        sys.prepare_fresh()?;
        let pid = sys.daemon_pid().context("no daemon pid")?;
        let t = Instant::now();
        sys.init()?;
        let watched = (t.elapsed(), procstat::sample(pid)?.peak_rss);
        let turn = sys.turn_start()?;
        for i in 0..n {
            let f = root.join(format!("d{}/f{i}.txt", i / FAN));
            std::fs::write(f, small_file(i, "after"))?;
        }
        let t = Instant::now();
        sys.turn_end()?;
        let ended = (t.elapsed(), procstat::sample(pid)?.peak_rss);
        let t = Instant::now();
        sys.rewind(turn)?;
        let rewound = (t.elapsed(), procstat::sample(pid)?.peak_rss);
        let wrong = (0..n)
            .filter(|i| {
                let f = root.join(format!("d{}/f{i}.txt", i / FAN));
                std::fs::read(f).ok() != Some(small_file(*i, "before"))
            })
            .count();
        sys.shutdown();
        let mib = |b: u64| b as f64 / (1 << 20) as f64;
        println!(
            "{n} files: peak RSS {:.1} MiB after the first watch ({:.2} s), {:.1} MiB after the turn-end ({:.2} s), \
             {:.1} MiB after the rewind ({:.2} s); {wrong} files not restored",
            mib(watched.1),
            watched.0.as_secs_f64(),
            mib(ended.1),
            ended.0.as_secs_f64(),
            mib(rewound.1),
            rewound.0.as_secs_f64(),
        );
        ok &= wrong == 0;
        std::fs::remove_dir_all(&root)?;
    }
    Ok(ok)
}
