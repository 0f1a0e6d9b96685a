//! The daemon's configuration: where it listens and stores, and the test
//! hooks read from the environment at start-up.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;

/// Everything `ckptd::run` needs.
#[derive(Clone, Debug)]
pub struct Config {
    pub socket: PathBuf,
    pub data_dir: PathBuf,
    /// How long a barrier waits for its cookie before falling back to a full scan.
    pub barrier_timeout: Duration,
    pub hooks: TestHooks,
}

/// Test-only behaviour, off unless the matching environment variable is set.
#[derive(Clone, Debug, Default)]
pub struct TestHooks {
    /// `CKPT_TEST_PAUSE_REWIND_AFTER=k`: a rewind or redo sleeps for an hour
    /// before its filesystem operation number `k`, so a test can kill the
    /// daemon in the middle of it.
    pub pause_rewind_after: Option<usize>,
    /// `CKPT_TEST_PAUSE_MARKER=path`: created when that pause begins.
    pub pause_marker: Option<PathBuf>,
    /// `CKPT_TEST_FAKE_WATCH_LIMIT=1`: every new watch fails as if the inotify
    /// watch limit had been reached.
    pub fake_watch_limit: bool,
}

impl TestHooks {
    pub fn from_env() -> TestHooks {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        TestHooks {
            pause_rewind_after: var("CKPT_TEST_PAUSE_REWIND_AFTER")
                .and_then(|v| v.to_str().and_then(|s| s.parse().ok())),
            pause_marker: var("CKPT_TEST_PAUSE_MARKER").map(PathBuf::from),
            fake_watch_limit: var("CKPT_TEST_FAKE_WATCH_LIMIT").is_some(),
        }
    }
}

impl Config {
    /// Fills in the defaults for what was not given (flags or `CKPT_*`
    /// variables, which the caller has already read).
    pub fn resolve(socket: Option<PathBuf>, data_dir: Option<PathBuf>) -> anyhow::Result<Config> {
        let socket = socket.unwrap_or_else(ckpt_proto::paths::default_socket);
        let data_dir = match data_dir {
            Some(d) => d,
            None => ckpt_proto::paths::default_data_dir()
                .context("cannot tell the data directory (no home directory); pass --data-dir")?,
        };
        let timeout_ms = std::env::var("CKPT_BARRIER_TIMEOUT_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(2000);
        Ok(Config {
            socket: absolute(socket)?,
            data_dir: absolute(data_dir)?,
            barrier_timeout: Duration::from_millis(timeout_ms),
            hooks: TestHooks::from_env(),
        })
    }
}

fn absolute(p: PathBuf) -> anyhow::Result<PathBuf> {
    if p.is_absolute() {
        return Ok(p);
    }
    let cwd = std::env::current_dir().context("reading the current directory")?;
    Ok(cwd.join(p))
}
