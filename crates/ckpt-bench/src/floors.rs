//! `--floors N`: ckpt against the least work each operation needs, done
//! by the bench itself with the same crates, on the same tree of N small
//! files, alternating in one run (issue 35: only a same-run ratio is
//! evidence on a shared machine).
//!
//! - first watch: a walk with an lstat per entry, then every file read,
//!   hashed (tape-sha256's lanes, as ckpt hashes), compressed (zstd level
//!   1, the cheapest ckpt stores at) on 2 threads, and its path, hash and
//!   bytes inserted into SQLite in one transaction.
//! - restart to synced: the same walk, and one `inotify_add_watch` per
//!   directory on a new inotify descriptor.
//! - full-tree capture: the turn's writes, then every changed file read,
//!   hashed, compressed and inserted as the first watch's floor does (no
//!   walk: events name the files), its path's row replaced, into the
//!   first watch floor's database.
//! - full-tree rewind: every file written under a temporary name and
//!   renamed over, then one `syncfs` (the floor); every file
//!   written into the inode the previous one in its directory replaced,
//!   under a temporary name, and exchanged with it (`RENAME_EXCHANGE`),
//!   then one `syncfs`: the least a rewind that never shows a half-written
//!   file can do without freeing an inode per file; and every file
//!   rewritten in place, then one `syncfs`, which frees and allocates no
//!   inode or block (on ext4 mounted with `discard` freeing waits for the
//!   device, so there the rename floor is no floor: ckpt reuses inodes).
//!
//! The floors that write work on a twin of the tree the daemon does not
//! watch, so its handling of their events is not timed as theirs.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::ckpt_runner::{Bins, Ckpt};
use crate::report::median;
use crate::system::System;
use crate::tree::small_file;

/// Files per directory.
const FAN: usize = 100;

/// Threads the floor reads, hashes and compresses on (the machine's 2 cores).
const THREADS: usize = 2;

fn file(root: &Path, i: usize) -> PathBuf {
    root.join(format!("d{}/f{i}.rs", i / FAN))
}

/// Runs every scenario `reps` times against its floor; prints medians and
/// ratios. False if a rewind did not restore the tree. With `no_rewind`,
/// the full-tree turn is not rewound and the trees are written back
/// untimed.
pub fn run(
    bins: &Bins,
    work: &Path,
    n: usize,
    reps: usize,
    no_rewind: bool,
    timeout: Duration,
) -> Result<bool> {
    let root = work.join("floors-tree");
    let twin = work.join("floors-twin");
    for tree in [&root, &twin] {
        for i in 0..n {
            if i % FAN == 0 {
                std::fs::create_dir_all(tree.join(format!("d{}", i / FAN)))?;
            }
            std::fs::write(file(tree, i), small_file(i, "before"))?;
        }
    }
    let scratch = work.join("floors-scratch");
    std::fs::create_dir_all(&scratch)?;
    let mut sys = Ckpt::new(bins.clone(), &root, &work.join("floors-ckpt"), timeout)?;
    let mut rows: Vec<(&str, Vec<f64>, Vec<f64>)> = vec![
        ("first watch", Vec::new(), Vec::new()),
        ("restart to synced", Vec::new(), Vec::new()),
        ("full-tree turn (writes + turn-end)", Vec::new(), Vec::new()),
        (
            "full-tree turn-end (after the writes)",
            Vec::new(),
            Vec::new(),
        ),
        ("full-tree rewind", Vec::new(), Vec::new()),
        (
            "full-tree rewind (exchange, inodes reused)",
            Vec::new(),
            Vec::new(),
        ),
        ("full-tree rewind (in place)", Vec::new(), Vec::new()),
    ];
    let mut settled = Vec::new();
    for rep in 1..=reps {
        if no_rewind && rep > 1 {
            write_all(&root, n, "before")?;
            write_all(&twin, n, "before")?;
        }
        sys.prepare_fresh()?;
        let t = Instant::now();
        sys.init()?;
        rows[0].1.push(t.elapsed().as_secs_f64());
        let db = scratch.join(format!("floor-{rep}.db"));
        rows[0].2.push(floor_watch(&root, &db)?);

        rows[1].1.push(sys.restart_until_synced()?.as_secs_f64());
        rows[1].2.push(floor_restart(&root)?);

        let turn = sys.turn_start()?;
        let t = Instant::now();
        write_all(&root, n, "after")?;
        let ended = Instant::now();
        sys.turn_end()?;
        rows[2].1.push(t.elapsed().as_secs_f64());
        rows[3].1.push(ended.elapsed().as_secs_f64());
        let t = Instant::now();
        write_all(&twin, n, "after")?;
        let writes = t.elapsed().as_secs_f64();
        let capture = floor_capture(&twin, n, &db)?;
        rows[2].2.push(writes + capture);
        rows[3].2.push(capture);
        if no_rewind {
            eprintln!("[bench] floors: round {rep} of {reps}");
            continue;
        }

        let t = Instant::now();
        sys.rewind(turn)?;
        let rewound = t.elapsed().as_secs_f64();
        rows[4].1.push(rewound);
        rows[5].1.push(rewound);
        rows[6].1.push(rewound);
        // The daemon checks the rewind's own events after its reply: not
        // timed as the floors' work.
        let t = Instant::now();
        sys.settle()?;
        settled.push(t.elapsed().as_secs_f64());
        let wrong = (0..n)
            .filter(|&i| std::fs::read(file(&root, i)).ok() != Some(small_file(i, "before")))
            .count();
        if wrong > 0 {
            bail!("the rewind left {wrong} of {n} files wrong");
        }
        rows[4].2.push(floor_rewind(&twin, n, Rewrite::Rename)?);
        write_all(&twin, n, "after")?;
        rows[5].2.push(floor_rewind(&twin, n, Rewrite::Exchange)?);
        rows[6].2.push(floor_rewind(&twin, n, Rewrite::InPlace)?);
        eprintln!("[bench] floors: round {rep} of {reps}");
    }
    sys.shutdown();
    println!("{n} files of ~300 bytes in directories of {FAN}, medians of {reps}:");
    for (name, ckpt, floor) in rows {
        if ckpt.is_empty() {
            continue;
        }
        // Each round's ratio too: on a shared machine the spread is the news.
        let rounds: Vec<String> = ckpt
            .iter()
            .zip(&floor)
            .map(|(c, f)| format!("{:.2}", c / f))
            .collect();
        let (c, f) = (
            median(ckpt).context("no sample")?,
            median(floor).context("no sample")?,
        );
        println!(
            "{name}: ckpt {c:.3} s, floor {f:.3} s, {:.2}x (rounds: {})",
            c / f,
            rounds.join(", ")
        );
    }
    if let Some(settled) = median(settled) {
        println!("after a rewind's reply, the daemon settled (sync, freeing) in {settled:.3} s");
    }
    Ok(true)
}

/// Every entry under `root`, lstat'ed: (files, directories).
fn walk(root: &Path) -> Result<(Vec<PathBuf>, Vec<PathBuf>)> {
    let (mut files, mut dirs) = (Vec::new(), vec![root.to_path_buf()]);
    let mut i = 0;
    while i < dirs.len() {
        for e in std::fs::read_dir(&dirs[i])? {
            let e = e?;
            let md = std::fs::symlink_metadata(e.path())?;
            if md.is_dir() {
                dirs.push(e.path());
            } else {
                files.push(e.path());
            }
        }
        i += 1;
    }
    Ok((files, dirs))
}

/// Writes `version` of every file of the tree at `root`.
fn write_all(root: &Path, n: usize, version: &str) -> Result<()> {
    for i in 0..n {
        std::fs::write(file(root, i), small_file(i, version))?;
    }
    Ok(())
}

/// The first watch's floor, in seconds.
pub fn floor_watch(root: &Path, db: &Path) -> Result<f64> {
    let t = Instant::now();
    let (files, _) = walk(root)?;
    let conn = rusqlite::Connection::open(db)?;
    conn.execute_batch(
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;
         CREATE TABLE files (path BLOB PRIMARY KEY, hash BLOB NOT NULL) WITHOUT ROWID;
         CREATE TABLE blobs (hash BLOB PRIMARY KEY, data BLOB NOT NULL) WITHOUT ROWID;",
    )?;
    store(&conn, &files)?;
    Ok(t.elapsed().as_secs_f64())
}

/// The full-tree capture's floor, in seconds: the `n` files of `root`
/// read, hashed, compressed and stored into `db`, the first watch floor's
/// database, replacing their rows.
fn floor_capture(root: &Path, n: usize, db: &Path) -> Result<f64> {
    let files: Vec<PathBuf> = (0..n).map(|i| file(root, i)).collect();
    let t = Instant::now();
    let conn = rusqlite::Connection::open(db)?;
    store(&conn, &files)?;
    Ok(t.elapsed().as_secs_f64())
}

/// `files` read, hashed with tape-sha256's lanes and compressed on
/// `THREADS` threads, and their paths, hashes and contents inserted in one
/// transaction (a path's row replaced).
fn store(conn: &rusqlite::Connection, files: &[PathBuf]) -> Result<()> {
    let lanes = tape_sha256::lane_width().max(1);
    let (tx, rx) = std::sync::mpsc::sync_channel::<(PathBuf, [u8; 32], Vec<u8>)>(1024);
    std::thread::scope(|s| -> Result<()> {
        for k in 0..THREADS {
            let (tx, files) = (tx.clone(), files);
            s.spawn(move || -> Result<()> {
                let mut mine: Vec<&PathBuf> = files.iter().skip(k).step_by(THREADS).collect();
                while !mine.is_empty() {
                    let group: Vec<&PathBuf> = mine.drain(..mine.len().min(lanes)).collect();
                    let datas = group
                        .iter()
                        .map(std::fs::read)
                        .collect::<std::io::Result<Vec<_>>>()?;
                    let refs: Vec<&[u8]> = datas.iter().map(Vec::as_slice).collect();
                    let mut digests = vec![[0u8; 32]; refs.len()];
                    tape_sha256::hash_many(&refs, &mut digests);
                    for ((p, d), h) in group.into_iter().zip(&datas).zip(digests) {
                        let z = zstd::bulk::compress(d, 1)?;
                        if tx.send((p.clone(), h, z)).is_err() {
                            return Ok(());
                        }
                    }
                }
                Ok(())
            });
        }
        drop(tx);
        let txn = conn.unchecked_transaction()?;
        {
            let mut f = txn.prepare("INSERT OR REPLACE INTO files VALUES (?1, ?2)")?;
            let mut b = txn.prepare("INSERT OR IGNORE INTO blobs VALUES (?1, ?2)")?;
            for (p, h, z) in rx {
                f.execute(rusqlite::params![p.as_os_str().as_bytes(), &h[..]])?;
                b.execute(rusqlite::params![&h[..], z])?;
            }
        }
        txn.commit()?;
        Ok(())
    })
}

/// Restart to synced's floor, in seconds.
pub fn floor_restart(root: &Path) -> Result<f64> {
    let t = Instant::now();
    let (_, dirs) = walk(root)?;
    // SAFETY: inotify_init1 takes flags only.
    let fd = unsafe { libc::inotify_init1(libc::IN_CLOEXEC) };
    if fd < 0 {
        bail!("inotify_init1: {}", std::io::Error::last_os_error());
    }
    let mask = libc::IN_CREATE
        | libc::IN_DELETE
        | libc::IN_MODIFY
        | libc::IN_MOVED_FROM
        | libc::IN_MOVED_TO
        | libc::IN_ATTRIB
        | libc::IN_CLOSE_WRITE;
    for d in &dirs {
        let c = CString::new(d.as_os_str().as_bytes())?;
        // SAFETY: `fd` is our inotify descriptor and `c` a NUL-terminated path.
        if unsafe { libc::inotify_add_watch(fd, c.as_ptr(), mask) } < 0 {
            let e = std::io::Error::last_os_error();
            // SAFETY: closing our own descriptor.
            unsafe { libc::close(fd) };
            bail!("inotify_add_watch {}: {e}", d.display());
        }
    }
    let took = t.elapsed().as_secs_f64();
    // SAFETY: closing our own descriptor.
    unsafe { libc::close(fd) };
    Ok(took)
}

/// How a rewind floor puts each file's content in place.
#[derive(Clone, Copy, PartialEq)]
enum Rewrite {
    /// A new file under a temporary name, renamed over.
    Rename,
    /// The inode the previous file of the directory replaced, rewritten
    /// under a temporary name and exchanged with the file.
    Exchange,
    /// The file itself, rewritten.
    InPlace,
}

/// The full-tree rewind's floor, in seconds: it writes the "before"
/// contents, so the tree ends right.
fn floor_rewind(root: &Path, n: usize, how: Rewrite) -> Result<f64> {
    use std::io::Write;
    use std::os::unix::fs::FileExt;
    let t = Instant::now();
    // The exchange's spare: the replaced inode under its temporary name.
    let mut spare: Option<(PathBuf, std::fs::File)> = None;
    for i in 0..n {
        let to = file(root, i);
        let data = small_file(i, "before");
        match how {
            Rewrite::InPlace => {
                let mut f = std::fs::OpenOptions::new().write(true).open(&to)?;
                f.write_all(&data)?;
                f.set_len(data.len() as u64)?;
            }
            Rewrite::Rename => {
                let tmp = to.with_extension("rs.tmp");
                std::fs::write(&tmp, &data)?;
                std::fs::rename(&tmp, &to)?;
            }
            Rewrite::Exchange => {
                if i % FAN == 0 {
                    if let Some((tmp, _)) = spare.take() {
                        std::fs::remove_file(tmp)?;
                    }
                }
                let (tmp, f) = match spare.take() {
                    Some(s) => s,
                    None => {
                        let tmp = to.with_extension("rs.tmp");
                        let f = std::fs::File::create(&tmp)?;
                        (tmp, f)
                    }
                };
                f.write_all_at(&data, 0)?;
                f.set_len(data.len() as u64)?;
                rustix::fs::renameat_with(
                    rustix::fs::CWD,
                    &tmp,
                    rustix::fs::CWD,
                    &to,
                    rustix::fs::RenameFlags::EXCHANGE,
                )?;
                // The replaced file, now under `tmp`, is the next spare.
                let f = std::fs::OpenOptions::new().write(true).open(&tmp)?;
                spare = Some((tmp, f));
            }
        }
    }
    if let Some((tmp, _)) = spare {
        std::fs::remove_file(tmp)?;
    }
    let dir = std::fs::File::open(root)?;
    // SAFETY: syncfs on a descriptor we hold open.
    if unsafe { libc::syncfs(std::os::fd::AsRawFd::as_raw_fd(&dir)) } != 0 {
        bail!("syncfs: {}", std::io::Error::last_os_error());
    }
    Ok(t.elapsed().as_secs_f64())
}
