//! `--watch-shapes DIRS`: the first `ckptctl watch` of a tree of DIRS empty
//! directories under each watcher shape (issue 36): ckptd's own inotify
//! loop (one watch per directory, added by the daemon) against notify's
//! recursive watch of the root (FSEvents' shape). The directories hold no
//! files, so the baseline scan is small and the watches are most of the
//! time. Runs alternate between the shapes; medians and their ratio are
//! printed.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::ckpt_runner::{Bins, Ckpt};
use crate::report::median;
use crate::system::System;

/// The shapes, as `CKPT_WATCHER` names them.
const SHAPES: [&str; 2] = ["inotify", "notify"];

/// Directories per parent: `a<i / FAN>/b<i % FAN>`.
const FAN: usize = 100;

/// Makes `dirs` leaf directories (and their parents) under `root`.
fn make_tree(root: &Path, dirs: usize) -> Result<usize> {
    let mut made = 0;
    for i in 0..dirs {
        let leaf = root.join(format!("a{}/b{}", i / FAN, i % FAN));
        if i % FAN == 0 {
            made += 1;
        }
        std::fs::create_dir_all(&leaf).with_context(|| format!("creating {}", leaf.display()))?;
        made += 1;
    }
    Ok(made)
}

/// Times each shape's first watch `reps` times; prints the medians and
/// the ratio. False if a watch failed.
pub fn run(bins: &Bins, work: &Path, dirs: usize, reps: usize, timeout: Duration) -> Result<bool> {
    let root = work.join("shapes-tree");
    let made = make_tree(&root, dirs)?;
    eprintln!(
        "[bench] watch shapes: {made} directories in {}",
        root.display()
    );
    let mut systems = Vec::new();
    for shape in SHAPES {
        let sys = Ckpt::new(
            bins.clone(),
            &root,
            &work.join(format!("shape-{shape}")),
            timeout,
        )?
        .with_daemon_env("CKPT_WATCHER", shape);
        systems.push((shape, sys, Vec::new()));
    }
    for rep in 1..=reps {
        for (shape, sys, times) in systems.iter_mut() {
            sys.prepare_fresh()?;
            let start = Instant::now();
            let watched = sys.init();
            let took = start.elapsed();
            if let Err(e) = watched {
                eprintln!("[bench] {shape}: first watch failed: {e:#}");
                return Ok(false);
            }
            eprintln!(
                "[bench] rep {rep} {shape}: first watch {:.3} s",
                took.as_secs_f64()
            );
            times.push(took.as_secs_f64());
        }
    }
    let mut medians = Vec::new();
    for (shape, sys, times) in systems.iter_mut() {
        sys.shutdown();
        let m = median(times.clone()).context("no sample")?;
        println!("first watch, {made} dirs, CKPT_WATCHER={shape}: median {m:.3} s of {times:?}");
        medians.push(m);
    }
    let ratio = medians[1] / medians[0];
    println!("recursive / per-directory: {ratio:.2}x (issue 36 allows 2x)");
    Ok(ratio <= 2.0)
}
