//! `--big-turn N[,N…]`: the daemon's peak RSS (VmHWM) through the first
//! watch, through a turn of N files and through its rewind, each phase's
//! own (the peak is reset before it), each size and shape with a fresh
//! daemon, so the peaks can be compared across sizes (issue 35: at most
//! 96 MiB at 50,000 files, and independent of the turn's size beyond a
//! fixed window). Two shapes: a turn that rewrites every one of N files in
//! directories of 100, and one that creates N files four directories
//! deep, whose rewind takes every directory away.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::ckpt_runner::{Bins, Ckpt};
use crate::procstat;
use crate::system::System;
use crate::tree::small_file;

/// Files per directory.
const FAN: usize = 100;

#[derive(Clone, Copy, PartialEq)]
enum Shape {
    Rewrite,
    Create,
}

/// Runs each size; false if a rewind did not bring the files back.
pub fn run(bins: &Bins, work: &Path, sizes: &[usize], timeout: Duration) -> Result<bool> {
    let mut ok = true;
    for &n in sizes {
        for shape in [Shape::Rewrite, Shape::Create] {
            ok &= one(bins, work, n, shape, timeout)?;
        }
    }
    Ok(ok)
}

/// File `i` of a turn of `shape`.
fn file(root: &Path, shape: Shape, i: usize) -> PathBuf {
    match shape {
        Shape::Rewrite => root.join(format!("d{}/f{i}.txt", i / FAN)),
        Shape::Create => root.join(format!(
            "new/a{}/b{}/c{}/f{i}.txt",
            i / (FAN * FAN * 10),
            i / (FAN * 10),
            i / FAN
        )),
    }
}

fn one(bins: &Bins, work: &Path, n: usize, shape: Shape, timeout: Duration) -> Result<bool> {
    let root = work.join(format!("big-{n}"));
    std::fs::create_dir_all(&root)?;
    if shape == Shape::Rewrite {
        write_all(&root, shape, n, "before")?;
    } else {
        std::fs::write(root.join("README"), "seed\n")?;
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
    write_all(&root, shape, n, "after")?;
    procstat::reset_peak(pid)?;
    let t = Instant::now();
    sys.turn_end()?;
    let ended = (t.elapsed(), procstat::sample(pid)?.peak_rss);
    procstat::reset_peak(pid)?;
    let t = Instant::now();
    sys.rewind(turn)?;
    let rewound = (t.elapsed(), procstat::sample(pid)?.peak_rss);
    let wrong = match shape {
        Shape::Rewrite => (0..n)
            .filter(|&i| std::fs::read(file(&root, shape, i)).ok() != Some(small_file(i, "before")))
            .count(),
        // Every file and directory the turn made is gone.
        Shape::Create => usize::from(root.join("new").exists()),
    };
    sys.shutdown();
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    let (what, not) = match shape {
        Shape::Rewrite => ("files", "files not restored"),
        Shape::Create => ("files created", "directories not taken away"),
    };
    println!(
        "{n} {what}: peak RSS {:.1} MiB in the first watch ({:.2} s), {:.1} MiB in the turn-end ({:.2} s), \
         {:.1} MiB in the rewind ({:.2} s); {wrong} {not}",
        mib(watched.1),
        watched.0.as_secs_f64(),
        mib(ended.1),
        ended.0.as_secs_f64(),
        mib(rewound.1),
        rewound.0.as_secs_f64(),
    );
    std::fs::remove_dir_all(&root)?;
    Ok(wrong == 0)
}

/// Writes file `i` of `shape` for every `i` below `n`.
fn write_all(root: &Path, shape: Shape, n: usize, word: &str) -> Result<()> {
    for i in 0..n {
        let f = file(root, shape, i);
        if i % FAN == 0 {
            std::fs::create_dir_all(f.parent().expect("a file has a parent"))?;
        }
        std::fs::write(f, small_file(i, word))?;
    }
    Ok(())
}
