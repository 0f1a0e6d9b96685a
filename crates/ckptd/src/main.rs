//! `ckptd`: the per-user ckpt daemon. Runs in the foreground; SIGTERM or
//! SIGINT shut it down cleanly. See the `ckptd` library for what it does.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

/// The ckpt daemon: watches project folders and rewinds AI agent turns.
#[derive(Parser, Debug)]
#[command(name = "ckptd", version)]
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
    limit_malloc_arenas();
    raise_open_file_limit();
    let args = Args::parse();
    ckptd::init_logging(args.verbose);
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

/// glibc gives each thread that allocates its own arena (up to 8 per core)
/// and keeps freed memory in each. With the daemon's capture, request and
/// runtime threads that cost up to ~12 MiB of peak RSS on a 53k-file
/// baseline; two arenas showed no consistent slowdown there.
fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: called first thing in main, before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
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
