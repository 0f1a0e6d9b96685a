//! `ckptd`: the per-user ckpt daemon. Runs in the foreground; SIGTERM or
//! SIGINT shut it down cleanly. See the `ckptd` library for what it does.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

/// `--version`; a build with test hooks says so, so the soak can refuse a
/// daemon it could not pause mid-rewind.
const VERSION: &str = if cfg!(feature = "test-hooks") {
    concat!(env!("CARGO_PKG_VERSION"), " (test hooks)")
} else {
    env!("CARGO_PKG_VERSION")
};

/// The ckpt daemon: watches project folders and rewinds AI agent turns.
#[derive(Parser, Debug)]
#[command(name = "ckptd", version = VERSION)]
struct Args {
    /// Socket path [default: $XDG_RUNTIME_DIR/ckpt/ckptd.sock].
    #[arg(long, env = "CKPT_SOCKET", value_name = "PATH")]
    socket: Option<PathBuf>,
    /// Data directory [default: $XDG_DATA_HOME/ckpt].
    #[arg(long, env = "CKPT_DATA_DIR", value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// More logging (-v debug, -vv trace); RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count)]
    verbose: u8,
}

fn main() -> ExitCode {
    tune_malloc();
    ckpt_core::limit_memory(SQLITE_MEMORY);
    raise_open_file_limit();
    let args = Args::parse();
    ckptd::init_logging(args.verbose);
    #[cfg(target_os = "linux")]
    lock_code_in_memory();
    let config = match ckptd::Config::resolve(args.socket, args.data_dir) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("ckptd: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    match ckptd::run(config) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ckptd: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// SQLite's memory across every project's database, page caches above all
/// (see `limit_memory`): 20 projects under 50 clients grew the daemon by
/// 24-26 MiB a minute without it and by 2-3 MiB with it, at the same turns
/// a second; 32 MiB let it grow by 8.
const SQLITE_MEMORY: i64 = 16 << 20;

/// glibc gives each thread that allocates its own arena (up to 8 per core)
/// and keeps freed memory in each: two arenas save up to ~12 MiB of peak
/// RSS at no measurable cost. And once a block it had mapped is freed,
/// glibc raises its mapping threshold (up to 32 MiB), so a big turn's
/// lists then grow inside the heap and stay as holes: fixed thresholds
/// took a 50,000-file turn's peak from 39 to 29 MiB and its rewind's from
/// 60 to 48 MiB.
fn tune_malloc() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: called first thing in main, before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 128 * 1024);
    }
}

/// Keeps the daemon's code in memory once it has run, and the client's
/// whole executable: an agent's first hook call after some idle minutes
/// otherwise waits while the kernel reads both back in (turn-start about
/// twice as slow).
///
/// The daemon's pages are locked as they are first used (`MLOCK_ONFAULT`),
/// so the cost is the code it runs; the client's file is read in at once
/// (its pages are faulted in by its own processes, not ours). The daemon's
/// machine code goes first, then the client's file, then the daemon's
/// constants, in case `RLIMIT_MEMLOCK` (often 8 MiB) runs out. Best effort:
/// without it only latency suffers.
#[cfg(target_os = "linux")]
fn lock_code_in_memory() {
    let ranges = match code_ranges() {
        Ok(r) => r,
        Err(e) => {
            tracing::info!("cannot find the daemon's code to lock in memory: {e}");
            return;
        }
    };
    let (code, constants): (Vec<_>, Vec<_>) = ranges.into_iter().partition(|&(_, _, exec)| exec);
    let lock_own = |ranges: Vec<(usize, usize, bool)>| {
        ranges.into_iter().try_for_each(|(start, end, _)| {
            // SAFETY: locking changes no contents, only whether the kernel
            // may drop these pages.
            unsafe {
                rustix::mm::mlock_with(
                    start as *mut std::ffi::c_void,
                    end - start,
                    rustix::mm::MlockFlags::ONFAULT,
                )
            }
        })
    };
    let refused = |e: rustix::io::Errno| {
        tracing::info!(
            "cannot lock the daemon's code in memory ({e}); a request after a long idle may wait for it to page in"
        );
    };
    if let Err(e) = lock_own(code) {
        return refused(e);
    }
    if let Err(e) = lock_client() {
        tracing::info!(
            "cannot keep ckptctl in memory ({e}); a hook call after a long idle may wait for it to be read in"
        );
    }
    if let Err(e) = lock_own(constants) {
        refused(e);
    }
}

/// Maps `ckptctl` beside our own executable and locks it, for good (the
/// mapping is never used or dropped: it keeps the file's pages cached).
#[cfg(target_os = "linux")]
fn lock_client() -> std::io::Result<()> {
    let exe = std::env::current_exe()?;
    let path = exe.with_file_name("ckptctl");
    let file = std::fs::File::open(&path)?;
    let len = usize::try_from(file.metadata()?.len()).map_err(std::io::Error::other)?;
    if len == 0 {
        return Ok(());
    }
    // SAFETY: a new read-only shared mapping that nothing reads; a file
    // replaced or truncated under it can only drop pages nobody touches.
    unsafe {
        let map = rustix::mm::mmap(
            std::ptr::null_mut(),
            len,
            rustix::mm::ProtFlags::READ,
            rustix::mm::MapFlags::SHARED,
            &file,
            0,
        )?;
        rustix::mm::mlock(map, len)?;
    }
    Ok(())
}

/// The read-only mappings of our own executable: (start, end, executable).
#[cfg(target_os = "linux")]
fn code_ranges() -> std::io::Result<Vec<(usize, usize, bool)>> {
    use std::os::unix::fs::MetadataExt;
    let exe = std::fs::metadata("/proc/self/exe")?;
    let dev = format!(
        "{:02x}:{:02x}",
        libc::major(exe.dev()),
        libc::minor(exe.dev())
    );
    let ino = exe.ino().to_string();
    let mut ranges = Vec::new();
    for line in std::fs::read_to_string("/proc/self/maps")?.lines() {
        // address perms offset dev inode path
        let f: Vec<&str> = line.split_whitespace().collect();
        let (Some(range), Some(perms)) = (f.first(), f.get(1)) else {
            continue;
        };
        if f.get(3) != Some(&dev.as_str()) || f.get(4) != Some(&ino.as_str()) || perms.contains('w')
        {
            continue;
        }
        let bounds = range.split_once('-').and_then(|(a, b)| {
            Some((
                usize::from_str_radix(a, 16).ok()?,
                usize::from_str_radix(b, 16).ok()?,
            ))
        });
        if let Some((start, end)) = bounds {
            ranges.push((start, end, perms.contains('x')));
        }
    }
    Ok(ranges)
}

/// A rewind keeps a handle on each directory it changes, which on a big
/// tree is more than the usual soft limit of 1024 open files; the hard
/// limit is far higher (systemd: 1024 / 524288).
fn raise_open_file_limit() {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let limit = getrlimit(Resource::Nofile);
    // (`None` is unlimited, which Linux does not allow for open files.)
    if let (Some(current), Some(maximum)) = (limit.current, limit.maximum) {
        if current >= maximum {
            return;
        }
        let raised = Rlimit {
            current: Some(maximum),
            maximum: Some(maximum),
        };
        if let Err(e) = setrlimit(Resource::Nofile, raised) {
            eprintln!("ckptd: cannot raise the open file limit: {e}");
        }
    }
}
