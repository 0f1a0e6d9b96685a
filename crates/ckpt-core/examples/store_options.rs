//! Measures the blob-store layouts on a real source tree, to choose
//! `Options::inline_max` by numbers.
//!
//! ```text
//! cargo run --release -p ckpt-core --example store_options -- [TREE] [--files N] [--reps N] [--dir DIR]
//! ```
//!
//! TREE defaults to the crate sources cargo downloaded
//! (`$CARGO_HOME/registry/src/*/`); at most `--files` (5,000) regular files
//! are sampled evenly from it. DIR (default: the system temp dir) is where the
//! stores are written; put it on the filesystem the data dir will live on.
//!
//! Every variant stores every sampled file's content (prepare + insert, one
//! transaction, one commit), the way a turn that rewrites the whole tree
//! would, into a fresh store:
//!
//! - A: every blob a file, synced per file (`inline_max = 0`): the store as is.
//! - A': A without the directory sync after each rename (prototype; the
//!   store keeps it, since without it a committed row may outlive its file's
//!   name after a power loss on filesystems that do not order the two).
//! - B: every blob a file, no per-file sync; one `syncfs` before the commit
//!   (prototyped here, not in the store).
//! - C: every blob inline in SQLite (`inline_max = usize::MAX`).
//! - D: hybrid at 16, 64 and 256 KiB (the store as is).
//! - E: hybrid at 64 KiB, but its few files written like B (prototype).
//!
//! Variants run interleaved (A B C D… then again) `--reps` times; the table
//! shows medians. Read-back gets and verifies every blob through the real
//! store, first warm, then "cold" after `posix_fadvise(DONTNEED)` on every
//! store file (the host may still cache the disk; treat cold as a lower bound).
//!
//! The store's modules are private to ckpt-core, so this example compiles the
//! real `store.rs` (and the `db.rs`, `state.rs`, `error.rs` it needs) into
//! itself: what is timed is the code the daemon runs.

#[allow(dead_code)]
#[path = "../src/db.rs"]
mod db;
#[allow(dead_code)]
#[path = "../src/error.rs"]
mod error;
// Public API in the library; private here, so clippy would judge it anew.
#[allow(dead_code, clippy::wrong_self_convention)]
#[path = "../src/state.rs"]
mod state;
#[allow(dead_code)]
#[path = "../src/store.rs"]
mod store;

use std::collections::HashSet;
use std::fs;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::{params, Connection};

use crate::state::Hash;
use crate::store::{BlobStore, Prepared};

const LEVEL: i32 = 3;
const MAX_FILE_SIZE: u64 = 16 << 20;

type Res<T> = std::result::Result<T, Box<dyn std::error::Error>>;

#[derive(Clone, Copy)]
enum Variant {
    /// The real store at this inline threshold (every new file synced).
    Store(usize),
    /// Prototype: inline up to this threshold, files written without sync,
    /// one syncfs before the commit.
    Batched(usize),
    /// Prototype: every blob a file, each file synced but not its directory.
    NoDirSync,
}

struct Case {
    name: &'static str,
    variant: Variant,
}

const CASES: &[Case] = &[
    Case {
        name: "A files+fsync each",
        variant: Variant::Store(0),
    },
    Case {
        name: "A' A minus dir sync",
        variant: Variant::NoDirSync,
    },
    Case {
        name: "B files+1 syncfs",
        variant: Variant::Batched(0),
    },
    Case {
        name: "C all inline",
        variant: Variant::Store(usize::MAX),
    },
    Case {
        name: "D hybrid 16K",
        variant: Variant::Store(16 << 10),
    },
    Case {
        name: "D hybrid 64K",
        variant: Variant::Store(64 << 10),
    },
    Case {
        name: "D hybrid 256K",
        variant: Variant::Store(256 << 10),
    },
    Case {
        name: "E hybrid 64K+syncfs",
        variant: Variant::Batched(64 << 10),
    },
];

#[derive(Default, Clone)]
struct Run {
    prepare: Duration,
    insert: Duration,
    commit: Duration,
    total: Duration,
    disk_bytes: u64,
    files: u64,
    stored_bytes: u64,
    read_warm: Duration,
    read_cold: Duration,
    /// CPU time of this thread in insert + commit, and in the warm read:
    /// unlike wall time, barely moved by other processes on the machine.
    write_cpu: Duration,
    read_cpu: Duration,
}

struct Args {
    tree: Vec<PathBuf>,
    files: usize,
    reps: usize,
    dir: PathBuf,
}

fn parse_args() -> Res<Args> {
    let mut tree = Vec::new();
    let mut files = 5000;
    let mut reps = 3;
    let mut dir = std::env::temp_dir();
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--files" => files = it.next().ok_or("--files N")?.parse()?,
            "--reps" => reps = it.next().ok_or("--reps N")?.parse()?,
            "--dir" => dir = it.next().ok_or("--dir DIR")?.into(),
            "-h" | "--help" => {
                println!("usage: store_options [TREE] [--files N] [--reps N] [--dir DIR]");
                std::process::exit(0);
            }
            _ => tree.push(PathBuf::from(a)),
        }
    }
    if tree.is_empty() {
        let cargo_home = std::env::var_os("CARGO_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")))
            .ok_or("no TREE given and neither CARGO_HOME nor HOME is set")?;
        let src = cargo_home.join("registry/src");
        for e in fs::read_dir(&src).map_err(|e| format!("{}: {e}", src.display()))? {
            let p = e?.path();
            if p.is_dir() {
                tree.push(p);
            }
        }
    }
    Ok(Args {
        tree,
        files,
        reps,
        dir,
    })
}

/// Every regular file under `root` (symlinks are not followed).
fn walk(root: &Path, out: &mut Vec<PathBuf>) -> Res<()> {
    for e in fs::read_dir(root).map_err(|e| format!("{}: {e}", root.display()))? {
        let e = e?;
        let ft = e.file_type()?;
        if ft.is_dir() {
            walk(&e.path(), out)?;
        } else if ft.is_file() && e.metadata()?.len() <= MAX_FILE_SIZE {
            out.push(e.path());
        }
    }
    Ok(())
}

/// An even sample of at most `cap` paths, in a stable order.
fn sample(mut paths: Vec<PathBuf>, cap: usize) -> Vec<PathBuf> {
    paths.sort();
    if paths.len() <= cap {
        return paths;
    }
    let n = paths.len();
    (0..cap).map(|i| paths[i * n / cap].clone()).collect()
}

/// Bytes the directory tree takes on disk (allocated blocks) and its file count.
fn disk_usage(path: &Path) -> Res<(u64, u64)> {
    let meta = fs::symlink_metadata(path)?;
    let mut bytes = meta.blocks() * 512;
    let mut files = 0;
    if meta.is_dir() {
        for e in fs::read_dir(path)? {
            let (b, f) = disk_usage(&e?.path())?;
            bytes += b;
            files += f;
        }
    } else {
        files += 1;
    }
    Ok((bytes, files))
}

/// Drops the (clean) page-cache pages of every file in the tree.
fn evict(path: &Path) -> Res<()> {
    let meta = fs::symlink_metadata(path)?;
    if meta.is_dir() {
        for e in fs::read_dir(path)? {
            evict(&e?.path())?;
        }
    } else if meta.is_file() {
        use std::os::fd::AsRawFd;
        let f = fs::File::open(path)?;
        #[cfg(target_os = "linux")]
        // SAFETY: a valid open fd; the call only advises the kernel.
        unsafe {
            libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED);
        }
        #[cfg(not(target_os = "linux"))]
        let _ = f.as_raw_fd();
    }
    Ok(())
}

fn sync_filesystem(dir: &Path) -> Res<()> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let d = fs::File::open(dir)?;
        // SAFETY: a valid open fd.
        if unsafe { libc::syncfs(d.as_raw_fd()) } != 0 {
            return Err(format!(
                "syncfs {}: {}",
                dir.display(),
                std::io::Error::last_os_error()
            )
            .into());
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = dir;
        // SAFETY: no arguments; flushes every filesystem.
        unsafe { libc::sync() };
    }
    Ok(())
}

/// Prototype inserts: like `BlobStore::insert`, but a file blob is written
/// (temp + rename) with at most a sync of the file, never of its directory.
/// Without `file_sync` the caller syncs the filesystem once before committing.
fn insert_proto(
    conn: &Connection,
    objects: &Path,
    inline_max: usize,
    file_sync: bool,
    fans: &mut HashSet<String>,
    seq: &mut u64,
    p: &Prepared,
) -> Res<()> {
    let exists = conn
        .prepare_cached("SELECT 1 FROM blobs WHERE hash = ?1")?
        .exists([&p.hash.0[..]])?;
    if exists {
        return Ok(());
    }
    let inline = p.compressed.len() <= inline_max;
    if !inline {
        let hex = p.hash.to_hex();
        let fan = objects.join(&hex[..2]);
        if fans.insert(hex[..2].to_string()) {
            match fs::create_dir(&fan) {
                Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(e.into()),
                _ => {}
            }
        }
        *seq += 1;
        let tmp = fan.join(format!(".tmp-{}-{seq}", std::process::id()));
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        f.write_all(&p.compressed)?;
        if file_sync {
            f.sync_all()?;
        }
        drop(f);
        fs::rename(&tmp, fan.join(&hex[2..]))?;
    }
    conn.prepare_cached(
        "INSERT INTO blobs (hash, size, csize, created_ns, data) VALUES (?1, ?2, ?3, 0, ?4)",
    )?
    .execute(params![
        &p.hash.0[..],
        p.size as i64,
        p.compressed.len() as i64,
        inline.then_some(&p.compressed[..]),
    ])?;
    Ok(())
}

fn run_case(case: &Case, contents: &[Vec<u8>], hashes: &[Hash], base: &Path) -> Res<Run> {
    let tmp = tempfile::Builder::new()
        .prefix("store-options-")
        .tempdir_in(base)?;
    let db_path = tmp.path().join("db.sqlite");
    let objects = tmp.path().join("objects");
    let inline_max = match case.variant {
        Variant::Store(t) | Variant::Batched(t) => t,
        Variant::NoDirSync => 0,
    };
    let mut run = Run::default();
    {
        let conn = db::open(&db_path)?;
        let store = BlobStore::open(&objects, LEVEL, inline_max)?;
        let mut fans = HashSet::new();
        let mut seq = 0u64;
        let start = Instant::now();
        conn.execute_batch("BEGIN IMMEDIATE")?;
        for data in contents {
            let t0 = Instant::now();
            let p = store.prepare(data);
            let t1 = Instant::now();
            let c1 = thread_cpu();
            match case.variant {
                Variant::Store(_) => store.insert(&conn, &p)?,
                Variant::Batched(t) => {
                    insert_proto(&conn, &objects, t, false, &mut fans, &mut seq, &p)?
                }
                Variant::NoDirSync => {
                    insert_proto(&conn, &objects, 0, true, &mut fans, &mut seq, &p)?
                }
            }
            run.prepare += t1 - t0;
            run.insert += t1.elapsed();
            run.write_cpu += thread_cpu() - c1;
        }
        let t0 = Instant::now();
        let c0 = thread_cpu();
        if let Variant::Batched(_) = case.variant {
            sync_filesystem(&objects)?;
        }
        conn.execute_batch("COMMIT")?;
        run.commit = t0.elapsed();
        run.write_cpu += thread_cpu() - c0;
        run.total = start.elapsed();
        run.stored_bytes = store.usage(&conn)?.1;
    } // closing the last connection checkpoints the WAL into the db file
    (run.disk_bytes, run.files) = disk_usage(tmp.path())?;

    for cold in [false, true] {
        if cold {
            evict(tmp.path())?;
        }
        let conn = db::open(&db_path)?;
        let store = BlobStore::open(&objects, LEVEL, inline_max)?;
        let t0 = Instant::now();
        let c0 = thread_cpu();
        let mut bytes = 0usize;
        for h in hashes {
            bytes += store.get(&conn, h)?.len();
        }
        let took = t0.elapsed();
        let cpu = thread_cpu() - c0;
        std::hint::black_box(bytes);
        if cold {
            run.read_cold = took;
        } else {
            run.read_warm = took;
            run.read_cpu = cpu;
        }
    }
    Ok(run)
}

/// CPU time consumed by the calling thread so far.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write into.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// The 1/5/15-minute load averages, when the OS shows them.
fn loadavg() -> String {
    fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

fn median<T: Copy + Ord>(mut v: Vec<T>) -> T {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn mib(b: u64) -> f64 {
    b as f64 / (1 << 20) as f64
}

fn main() -> Res<()> {
    let args = parse_args()?;
    let mut all = Vec::new();
    for root in &args.tree {
        walk(root, &mut all)?;
    }
    let found = all.len();
    let paths = sample(all, args.files);
    let contents: Vec<Vec<u8>> = paths.iter().map(fs::read).collect::<Result<_, _>>()?;
    if contents.is_empty() {
        return Err("no files found".into());
    }

    // Describe the sample: sizes, and how many blobs each threshold sends to files.
    let probe_dir = tempfile::tempdir()?;
    let probe = BlobStore::open(&probe_dir.path().join("o"), LEVEL, 0)?;
    let mut uniq = HashSet::new();
    let mut csizes = Vec::new();
    for data in &contents {
        let p = probe.prepare(data);
        if uniq.insert(p.hash) {
            csizes.push(p.compressed.len());
        }
    }
    let hashes: Vec<Hash> = uniq.into_iter().collect();
    let raw: u64 = contents.iter().map(|c| c.len() as u64).sum();
    let mut sizes: Vec<usize> = contents.iter().map(Vec::len).collect();
    sizes.sort();
    let pct = |p: usize| sizes[(sizes.len() - 1) * p / 100];
    println!(
        "tree: {} ({} files found)",
        args.tree
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        found
    );
    println!(
        "sample: {} files, {:.1} MiB raw; {} unique blobs, {:.1} MiB zstd-{LEVEL}; file size p50 {} B, p90 {} B, p99 {} B, max {} B",
        contents.len(),
        mib(raw),
        hashes.len(),
        mib(csizes.iter().map(|&c| c as u64).sum()),
        pct(50),
        pct(90),
        pct(99),
        sizes[sizes.len() - 1]
    );
    for t in [16usize << 10, 64 << 10, 256 << 10] {
        let big: Vec<usize> = csizes.iter().copied().filter(|&c| c > t).collect();
        println!(
            "  compressed > {:>3} KiB: {:>4} blobs ({:.1}% of blobs, {:.1}% of stored bytes)",
            t >> 10,
            big.len(),
            100.0 * big.len() as f64 / csizes.len() as f64,
            100.0 * big.iter().sum::<usize>() as f64 / csizes.iter().sum::<usize>() as f64
        );
    }
    println!(
        "stores written under {}; {} rounds, interleaved; load average {}",
        args.dir.display(),
        args.reps,
        loadavg()
    );

    let mut runs: Vec<Vec<Run>> = vec![Vec::new(); CASES.len()];
    for rep in 0..args.reps {
        for (i, case) in CASES.iter().enumerate() {
            let r = run_case(case, &contents, &hashes, &args.dir)?;
            eprintln!(
                "round {} {:<20} total {:>8.1} ms  read warm {:>6.1} ms  cold {:>6.1} ms",
                rep + 1,
                case.name,
                ms(r.total),
                ms(r.read_warm),
                ms(r.read_cold)
            );
            runs[i].push(r);
        }
    }

    let meds: Vec<Run> = runs
        .iter()
        .map(|rs| Run {
            prepare: median(rs.iter().map(|r| r.prepare).collect()),
            insert: median(rs.iter().map(|r| r.insert).collect()),
            commit: median(rs.iter().map(|r| r.commit).collect()),
            total: median(rs.iter().map(|r| r.total).collect()),
            disk_bytes: median(rs.iter().map(|r| r.disk_bytes).collect()),
            files: median(rs.iter().map(|r| r.files).collect()),
            stored_bytes: median(rs.iter().map(|r| r.stored_bytes).collect()),
            read_warm: median(rs.iter().map(|r| r.read_warm).collect()),
            read_cold: median(rs.iter().map(|r| r.read_cold).collect()),
            write_cpu: median(rs.iter().map(|r| r.write_cpu).collect()),
            read_cpu: median(rs.iter().map(|r| r.read_cpu).collect()),
        })
        .collect();
    let a = &meds[0];
    let a_write = a.insert + a.commit;
    println!();
    println!(
        "{:<20} {:>8} {:>6} {:>8} {:>6} {:>7} {:>7} {:>6} {:>8} {:>6} {:>6} {:>7} {:>6} {:>6}",
        "variant (medians)",
        "total ms",
        "vs A",
        "write ms",
        "vs A",
        "cpu ms",
        "commit",
        "files",
        "disk MiB",
        "vs A",
        "blobs",
        "read ms",
        "cpu ms",
        "cold"
    );
    for (case, m) in CASES.iter().zip(&meds) {
        let write = m.insert + m.commit;
        println!(
            "{:<20} {:>8.0} {:>5.2}x {:>8.0} {:>5.3}x {:>7.0} {:>7.1} {:>6} {:>8.1} {:>5.2}x {:>6.1} {:>7.0} {:>6.0} {:>6.0}",
            case.name,
            ms(m.total),
            m.total.as_secs_f64() / a.total.as_secs_f64(),
            ms(write),
            write.as_secs_f64() / a_write.as_secs_f64(),
            ms(m.write_cpu),
            ms(m.commit),
            m.files,
            mib(m.disk_bytes),
            m.disk_bytes as f64 / a.disk_bytes as f64,
            mib(m.stored_bytes),
            ms(m.read_warm),
            ms(m.read_cpu),
            ms(m.read_cold),
        );
    }
    println!("load average at the end: {}", loadavg());
    println!();
    println!(
        "total = prepare (hash + zstd: ~{:.0} ms, the same work in every variant) + write; write = insert + commit (wall), cpu = its thread CPU time.",
        ms(a.prepare)
    );
    println!("files = files in the store dir (the db included); disk = their allocated blocks; blobs = compressed blob bytes (MiB).");
    println!("read = get() + verify of every unique blob through a fresh connection: wall, thread CPU, and wall after fadvise(DONTNEED).");
    Ok(())
}
