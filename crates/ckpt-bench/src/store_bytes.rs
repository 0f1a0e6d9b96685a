//! `--store-bytes N`: what the store and hash cache cost per unchanged small
//! file (issue 35: at most 150 B). N files of ~17 bytes in N/100
//! directories, a first `ckptctl watch` with a fresh daemon (timed), the
//! daemon stopped cleanly, then the project's `ckpt.db` measured by
//! SQLite's `dbstat` (bundled SQLite is built with it), per b-tree.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::ckpt_runner::{Bins, Ckpt};
use crate::report::median;
use crate::system::System;

/// Files per directory.
const FAN: usize = 100;

/// The databases' bytes: per b-tree (name, bytes, pages, bytes unused in
/// its pages), and the file's.
struct Sizes {
    trees: Vec<(String, u64, u64, u64)>,
    file: u64,
}

/// Runs `reps` first watches of the same tree, each with a fresh data dir;
/// prints the watch times and the bytes per file of the last run. With
/// `keep`, the tree stays for the next run in the same work dir (making
/// 100,000 files takes minutes on a loaded machine), and so does the last
/// run's store.
pub fn run(
    bins: &Bins,
    work: &Path,
    n: usize,
    reps: usize,
    keep: bool,
    timeout: Duration,
) -> Result<bool> {
    let root = work.join(format!("store-bytes-tree-{n}"));
    // Beside the tree, not in it: the tree is what is measured.
    let made = work.join(format!("store-bytes-tree-{n}.made"));
    if !made.exists() {
        for i in 0..n {
            let dir = root.join(format!("d{}", i / FAN));
            if i % FAN == 0 {
                std::fs::create_dir_all(&dir)?;
            }
            std::fs::write(dir.join(format!("f{i}.txt")), format!("small file {i}\n"))?;
        }
        std::fs::write(&made, b"")?;
    }
    let mut times = Vec::new();
    let mut last = None;
    for rep in 1..=reps {
        let ckpt_dir = work.join(format!("store-bytes-ckpt-{rep}"));
        let mut sys = Ckpt::new(bins.clone(), &root, &ckpt_dir, timeout)?;
        sys.prepare_fresh()?;
        let t = Instant::now();
        sys.init()?;
        times.push(t.elapsed().as_secs_f64());
        // A clean stop: the WAL is checkpointed into the database.
        sys.shutdown();
        let db = find_db(&ckpt_dir)?;
        let sizes = measure(&db)?;
        eprintln!(
            "[bench] store bytes: round {rep} of {reps}: watch {:.3} s, {} B per file",
            times[rep - 1],
            sizes.file / n.max(1) as u64
        );
        last = Some(sizes);
        if !keep || rep < reps {
            std::fs::remove_dir_all(&ckpt_dir)?;
        }
    }
    let sizes = last.context("no run")?;
    let per = |b: u64| b as f64 / n.max(1) as f64;
    println!("{n} files of ~17 bytes in directories of {FAN}; first watch, then dbstat:");
    println!(
        "first watch: median {:.3} s of {reps} ({})",
        median(times.clone()).context("no sample")?,
        times
            .iter()
            .map(|t| format!("{t:.3}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!("| b-tree | pages | bytes | per file | unused |\n|---|---:|---:|---:|---:|");
    let (big, small): (Vec<_>, Vec<_>) = sizes.trees.iter().partition(|t| per(t.1) >= 0.5);
    for (name, bytes, pages, unused) in big {
        println!(
            "| `{name}` | {pages} | {bytes} | {:.1} | {:.0}% |",
            per(*bytes),
            100.0 * *unused as f64 / (*bytes).max(1) as f64
        );
    }
    let rest: u64 = small.iter().map(|t| t.1).sum();
    println!("| {} others | | {rest} | {:.1} | |", small.len(), per(rest));
    println!(
        "| ckpt.db (file) | | {} | **{:.1}** |",
        sizes.file,
        per(sizes.file)
    );
    if !keep {
        std::fs::remove_dir_all(&root)?;
        std::fs::remove_file(&made)?;
    }
    Ok(true)
}

/// The one project database under `dir` (`…/projects/<id>/ckpt.db`).
fn find_db(dir: &Path) -> Result<PathBuf> {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d)? {
            let e = e?;
            if e.file_type()?.is_dir() {
                stack.push(e.path());
            } else if e.file_name() == "ckpt.db" {
                return Ok(e.path());
            }
        }
    }
    anyhow::bail!("no ckpt.db under {}", dir.display())
}

fn measure(db: &Path) -> Result<Sizes> {
    let conn = rusqlite::Connection::open_with_flags(
        db,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    let mut stmt = conn.prepare(
        "SELECT name, sum(pgsize), count(*), sum(unused) FROM dbstat
         GROUP BY name ORDER BY sum(pgsize) DESC",
    )?;
    let trees = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)? as u64,
                r.get::<_, i64>(2)? as u64,
                r.get::<_, i64>(3)? as u64,
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(Sizes {
        trees,
        file: std::fs::metadata(db)?.len(),
    })
}
