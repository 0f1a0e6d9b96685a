//! Test-only behaviour, read from `CKPT_TEST_*` environment variables at
//! start-up. It exists only with the `test-hooks` feature, which the e2e
//! harness and the soak build `ckptd` with: a plain build neither reads
//! these variables nor holds the code.

#[cfg(feature = "test-hooks")]
use std::path::PathBuf;

use ckpt_core::{PlanWindow, RewindOptions};

/// The hooks set for this daemon; empty without the `test-hooks` feature.
#[derive(Clone, Debug, Default)]
pub struct TestHooks {
    /// `CKPT_TEST_PAUSE_REWIND_AFTER=k`: a rewind, redo or copy-in sleeps
    /// for an hour before its filesystem operation number `k`, so a test
    /// can kill the daemon in the middle of it.
    #[cfg(feature = "test-hooks")]
    pause_rewind_after: Option<usize>,
    /// `CKPT_TEST_PAUSE_MARKER=path`: created when that pause begins.
    #[cfg(feature = "test-hooks")]
    pause_marker: Option<PathBuf>,
    /// `CKPT_TEST_FAKE_WATCH_LIMIT=1`: every new watch fails as if the
    /// inotify watch limit had been reached.
    #[cfg(feature = "test-hooks")]
    fake_watch_limit: bool,
    /// `CKPT_TEST_GC_GRACE_SECS=n`: gc may take unreferenced blobs `n`
    /// seconds old (not an hour), so a test sees what a gc frees.
    #[cfg(feature = "test-hooks")]
    gc_grace_secs: Option<u64>,
    /// `CKPT_TEST_PROGRESS_AT_ONCE=1`: a connection that asked for
    /// progress gets a frame from a request's first step, not only after
    /// 100 ms, so a test does not depend on how fast the machine is.
    #[cfg(feature = "test-hooks")]
    progress_at_once: bool,
    /// `CKPT_TEST_PENDING_MAX=n`: a project's queue holds `n` paths, not
    /// `PENDING_MAX`, so a test fills it with a few files.
    #[cfg(feature = "test-hooks")]
    pending_max: Option<usize>,
    /// `CKPT_TEST_PLAN_WINDOW=block,blocks`: a rewind holds that many
    /// blocks of that many actions in memory, so a test's few paths go
    /// through the lists' files (`0` blocks: every list does).
    #[cfg(feature = "test-hooks")]
    plan_window: Option<PlanWindow>,
}

impl TestHooks {
    #[cfg(feature = "test-hooks")]
    pub fn from_env() -> TestHooks {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        TestHooks {
            pause_rewind_after: var("CKPT_TEST_PAUSE_REWIND_AFTER")
                .and_then(|v| v.to_str().and_then(|s| s.parse().ok())),
            pause_marker: var("CKPT_TEST_PAUSE_MARKER").map(PathBuf::from),
            fake_watch_limit: var("CKPT_TEST_FAKE_WATCH_LIMIT").is_some(),
            gc_grace_secs: var("CKPT_TEST_GC_GRACE_SECS")
                .and_then(|v| v.to_str().and_then(|s| s.parse().ok())),
            progress_at_once: var("CKPT_TEST_PROGRESS_AT_ONCE").is_some(),
            pending_max: var("CKPT_TEST_PENDING_MAX")
                .and_then(|v| v.to_str().and_then(|s| s.parse().ok())),
            plan_window: var("CKPT_TEST_PLAN_WINDOW").and_then(|v| {
                let (block, blocks) = v.to_str()?.split_once(',')?;
                Some(PlanWindow {
                    block: block.parse().ok()?,
                    blocks: blocks.parse().ok()?,
                })
            }),
        }
    }

    /// Without the feature there is nothing to read.
    #[cfg(not(feature = "test-hooks"))]
    pub fn from_env() -> TestHooks {
        TestHooks::default()
    }

    /// The grace period gc gives unreferenced blobs, if a test set one.
    #[cfg(feature = "test-hooks")]
    pub fn gc_grace_secs(&self) -> Option<u64> {
        self.gc_grace_secs
    }

    #[cfg(not(feature = "test-hooks"))]
    pub fn gc_grace_secs(&self) -> Option<u64> {
        None
    }

    /// Whether progress frames start at a request's first step.
    #[cfg(feature = "test-hooks")]
    pub fn progress_at_once(&self) -> bool {
        self.progress_at_once
    }

    #[cfg(not(feature = "test-hooks"))]
    pub fn progress_at_once(&self) -> bool {
        false
    }

    /// The most paths a project's queue holds.
    #[cfg(feature = "test-hooks")]
    pub fn pending_max(&self) -> usize {
        self.pending_max.unwrap_or(crate::project::PENDING_MAX)
    }

    #[cfg(not(feature = "test-hooks"))]
    pub fn pending_max(&self) -> usize {
        crate::project::PENDING_MAX
    }

    /// How many of a rewind's actions it holds in memory.
    #[cfg(feature = "test-hooks")]
    pub fn plan_window(&self) -> PlanWindow {
        self.plan_window.unwrap_or_default()
    }

    #[cfg(not(feature = "test-hooks"))]
    pub fn plan_window(&self) -> PlanWindow {
        PlanWindow::default()
    }

    /// Whether every new watch is to fail as if the watch limit were hit.
    #[cfg(feature = "test-hooks")]
    pub fn fake_watch_limit(&self) -> bool {
        self.fake_watch_limit
    }

    #[cfg(not(feature = "test-hooks"))]
    pub fn fake_watch_limit(&self) -> bool {
        false
    }

    /// `opts` with the pause point armed, if one is set.
    #[cfg(feature = "test-hooks")]
    pub fn arm(&self, opts: RewindOptions) -> RewindOptions {
        RewindOptions {
            before_op: self.pause_hook(),
            ..opts
        }
    }

    #[cfg(not(feature = "test-hooks"))]
    pub fn arm(&self, opts: RewindOptions) -> RewindOptions {
        opts
    }

    /// The pause point: before filesystem operation `k`, announce the pause
    /// and sleep for an hour, so a test can kill the daemon mid-rewind.
    #[cfg(feature = "test-hooks")]
    #[allow(clippy::type_complexity)] // the core's own hook type
    fn pause_hook(&self) -> Option<Box<dyn FnMut(usize) -> ckpt_core::Result<()> + Send>> {
        let k = self.pause_rewind_after?;
        let marker = self.pause_marker.clone();
        Some(Box::new(move |i| {
            if i == k {
                tracing::warn!(op = i, "test pause point reached; sleeping");
                if let Some(m) = &marker {
                    let _ = std::fs::write(m, std::process::id().to_string());
                }
                std::thread::sleep(std::time::Duration::from_secs(3600));
            }
            Ok(())
        }))
    }
}
