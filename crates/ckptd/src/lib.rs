//! ckptd: the per-user ckpt daemon, as a library with a thin `main`.
//!
//! It watches project folders with one `notify` watcher, feeds changed paths
//! to each project's `ckpt_core::Project`, passes a cookie barrier before
//! every turn boundary, and serves `ckptctl` over a private Unix socket
//! (`ckpt_proto` frames). One daemon per socket and data dir (lock files);
//! SIGTERM/SIGINT shut it down cleanly.
//!
//! ```no_run
//! let config = ckptd::Config::resolve(
//!     Some("/tmp/ckpt-test/ckptd.sock".into()),
//!     Some("/tmp/ckpt-test/data".into()),
//! )?;
//! ckptd::run(config)?; // until SIGTERM
//! # Ok::<(), anyhow::Error>(())
//! ```

// The layers, bottom first; a module uses only modules in layers below its
// own: (test_hooks, shape, config, error, lock, mutex, pathmap, socket) < cookie <
// backend < project < registry < router < watcher < barrier < daemon <
// handlers < server.
mod admission;
mod backend;
mod barrier;
mod config;
mod cookie;
mod daemon;
mod error;
mod freer;
mod handlers;
mod lock;
mod mutex;
mod pathmap;
mod progress;
mod project;
mod registry;
mod reserve;
mod router;
mod server;
mod settings;
mod shape;
mod socket;
mod test_hooks;
mod watcher;

use std::io::IsTerminal;
use std::os::unix::fs::DirBuilderExt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;

pub use config::Config;
pub use test_hooks::TestHooks;

/// How long shutdown waits for operations in progress (a rewind) to finish.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Sets up `tracing` on stderr: `RUST_LOG` if set, else info/debug/trace by
/// the number of `-v`.
pub fn init_logging(verbose: u8) {
    // notify logs routine inotify housekeeping at info; keep it quiet.
    let default = match verbose {
        0 => "info,notify=warn",
        1 => "debug,notify=info",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
}

/// Runs the daemon until SIGTERM or SIGINT.
pub fn run(config: Config) -> anyhow::Result<()> {
    ignore_sigio();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let result = rt.block_on(async {
        use tokio::signal::unix::{signal, SignalKind};
        // Registered before the socket is bound: a signal that comes right
        // after the first reply must shut down cleanly, not kill.
        let term = signal(SignalKind::terminate());
        let int = signal(SignalKind::interrupt());
        let shutdown = async move {
            match (term, int) {
                (Ok(mut term), Ok(mut int)) => {
                    tokio::select! {
                        _ = term.recv() => tracing::info!("SIGTERM: shutting down"),
                        _ = int.recv() => tracing::info!("SIGINT: shutting down"),
                    }
                }
                (Err(e), _) | (_, Err(e)) => {
                    tracing::warn!(error = %e, "cannot listen for SIGTERM and SIGINT");
                    std::future::pending::<()>().await;
                }
            }
        };
        serve(config, shutdown).await
    });
    rt.shutdown_timeout(Duration::from_secs(1));
    result
}

/// A rewind briefly takes a write lease on a file it replaced, to learn
/// that no one else has it open (`ckpt_core` recycles such files). Someone
/// opening it in that instant breaks the lease, which signals SIGIO, whose
/// default action would end the daemon.
fn ignore_sigio() {
    // SAFETY: installs SIG_IGN, which runs no code in the handler.
    unsafe {
        libc::signal(libc::SIGIO, libc::SIG_IGN);
    }
}

/// Runs the daemon until `shutdown` resolves. Takes the locks, binds the
/// socket, reopens stored projects, serves.
pub async fn serve(
    config: Config,
    shutdown: impl std::future::Future<Output = ()>,
) -> anyhow::Result<()> {
    let socket_dir = config
        .socket
        .parent()
        .context("the socket path has no parent directory")?
        .to_path_buf();
    socket::prepare_private_dir(&socket_dir)?;
    // A path too long for a socket address is served at its short stand-in.
    let address = ckpt_proto::paths::socket_address(&config.socket);
    if address != config.socket {
        if let Some(dir) = address.parent() {
            socket::prepare_private_dir(dir)?;
        }
    }
    let mut lock_name = config.socket.as_os_str().to_owned();
    lock_name.push(".lock");
    let _socket_lock = lock::LockFile::acquire(std::path::Path::new(&lock_name))?;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&config.data_dir)
        .with_context(|| format!("creating data directory {}", config.data_dir.display()))?;
    let _data_lock = lock::LockFile::acquire(&config.data_dir.join("ckptd.lock"))?;
    tracing::debug!(socket_lock = %_socket_lock.path().display(), data_lock = %_data_lock.path().display(), "locked");
    let listener = socket::listen(&address)?;
    tracing::info!(
        socket = %config.socket.display(), address = %address.display(),
        data = %config.data_dir.display(), pid = std::process::id(), "ckptd listening"
    );

    let socket_path = address;
    let d = daemon::Daemon::new(config);
    {
        let d = Arc::clone(&d);
        tokio::task::spawn_blocking(move || d.load_projects());
    }
    server::accept_loop(listener, socket_path.clone(), Arc::clone(&d), shutdown).await;

    // Stop taking requests, let operations in progress finish, stop watching.
    let _ = std::fs::remove_file(&socket_path);
    let deadline = Instant::now() + SHUTDOWN_GRACE;
    let projects = d.registry.all();
    while Instant::now() < deadline && !projects.iter().all(|h| h.is_idle()) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    d.watcher.shutdown();
    for h in &projects {
        h.stop_worker();
    }
    tracing::info!("ckptd stopped");
    Ok(())
}
