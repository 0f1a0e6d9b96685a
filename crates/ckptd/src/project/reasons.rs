//! Why a project is degraded or unavailable, as values: code decides by
//! the variant, and only a reply turns one into the words a person reads.

use std::path::Path;

use ckpt_core::{CaptureNote, GapKind};

use crate::backend::WatchFailure;

/// Why capture for a project cannot be fully trusted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DegradedReason {
    /// The watcher cannot watch the tree (a kernel limit, a watcher error).
    Watcher(WatchFailure),
    /// The daemon has no file watcher at all.
    NoWatcher,
    /// The thread that drains the project's queue could not be started.
    NoWorker(String),
    /// The watcher's queue overflowed: events were lost.
    LostEvents,
    /// The thread that loads the project could not be started.
    NoLoader(String),
    /// Recovering an interrupted rewind at start-up failed.
    RecoveryFailed(String),
    /// A rewind failed part-way.
    RewindFailed(String),
    /// Capturing changes failed (a full disk, an unreadable tree).
    CaptureFailed { message: String, disk_full: bool },
}

impl DegradedReason {
    /// Whether it lasts until the project is watched again (no watches or
    /// no worker); otherwise the next successful full scan clears it.
    pub fn persistent(&self) -> bool {
        matches!(
            self,
            DegradedReason::Watcher(_) | DegradedReason::NoWatcher | DegradedReason::NoWorker(_)
        )
    }

    /// The words every reply about the project carries in `degraded`.
    pub fn message(&self) -> String {
        match self {
            DegradedReason::Watcher(w) => w.message(),
            DegradedReason::NoWatcher => "the file watcher could not be started".into(),
            DegradedReason::NoWorker(e) => format!("cannot start the capture worker: {e}"),
            DegradedReason::LostEvents => {
                "the file watcher lost events (queue overflow); rescanning".into()
            }
            DegradedReason::NoLoader(e) => format!("cannot start loading: {e}"),
            DegradedReason::RecoveryFailed(e) => {
                format!("recovering an interrupted rewind failed: {e}")
            }
            DegradedReason::RewindFailed(e) => format!("a rewind failed: {e}"),
            DegradedReason::CaptureFailed { message, .. } => format!("capture failed: {message}"),
        }
    }

    /// What it means for the turns open while it held, noted on them by
    /// the full scan that follows it: lost events were found by the
    /// rescan; a watcher that cannot watch, or a capture that failed,
    /// leaves a gap. `None` for what is not about capture (a rewind, the
    /// start-up).
    pub fn capture_note(&self) -> Option<CaptureNote> {
        let gap = |kind| Some(CaptureNote::Gap(kind, self.message()));
        match self {
            DegradedReason::LostEvents => Some(CaptureNote::Rescanned),
            DegradedReason::Watcher(WatchFailure::WatchLimit) => gap(GapKind::WatchLimit),
            DegradedReason::Watcher(_)
            | DegradedReason::NoWatcher
            | DegradedReason::NoWorker(_) => gap(GapKind::CaptureFailed),
            DegradedReason::CaptureFailed {
                disk_full: true, ..
            } => gap(GapKind::DiskFull),
            DegradedReason::CaptureFailed { .. } => gap(GapKind::CaptureFailed),
            DegradedReason::NoLoader(_)
            | DegradedReason::RecoveryFailed(_)
            | DegradedReason::RewindFailed(_) => None,
        }
    }
}

/// Why requests for a project cannot be served.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unavailable {
    /// The root directory is gone.
    RootGone,
    /// The root path now names another directory than the one ckpt opened.
    RootReplaced,
}

impl Unavailable {
    /// The words a reply carries, naming the root.
    pub fn message(&self, root: &Path) -> String {
        match self {
            Unavailable::RootGone => format!(
                "project root {} no longer exists (make the directory again, or rewind, to get it back)",
                root.display()
            ),
            Unavailable::RootReplaced => format!(
                "project root {} was replaced by another directory",
                root.display()
            ),
        }
    }
}
