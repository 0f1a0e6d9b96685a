//! The file-system watcher backend, which knows nothing about projects: it
//! watches single directories (never recursively) for changes only, and
//! hands every event, in the kernel's order, to one handler. Our own
//! inotify loop on Linux, notify's recommended watcher elsewhere.

#[cfg(target_os = "linux")]
mod inotify;

use std::path::Path;
use std::sync::Mutex;

#[cfg(not(target_os = "linux"))]
use notify::{EventKindMask, RecommendedWatcher, RecursiveMode, Watcher as _};

use crate::mutex::lock;

pub use notify::{Error, ErrorKind, Event, EventKind, Result};

/// The advice given when the kernel runs out of inotify watches.
pub const WATCH_LIMIT_ADVICE: &str = "inotify watch limit reached; raise fs.inotify.max_user_watches \
     (e.g. `sudo sysctl fs.inotify.max_user_watches=524288`); falling back to full scans at turn boundaries";

/// The watcher, shared by the daemon and every project's worker (which adds
/// watches for directories that appear).
pub struct Backend {
    inner: Mutex<Option<Imp>>,
}

#[cfg(target_os = "linux")]
type Imp = inotify::Inotify;
#[cfg(not(target_os = "linux"))]
type Imp = RecommendedWatcher;

impl Backend {
    /// Starts the backend's thread; `handler` gets every event, in order.
    pub fn start(handler: impl FnMut(Result<Event>) + Send + 'static) -> Result<Backend> {
        #[cfg(target_os = "linux")]
        let imp = inotify::Inotify::new(handler).map_err(Error::io)?;
        #[cfg(not(target_os = "linux"))]
        let imp = {
            // No open/close-nowrite events: every read in a watched tree (a
            // build, a `grep -r`, the daemon's own hashing) would wake us and
            // could overflow the kernel queue. Close-after-write stays: it is
            // the only event an mmap write produces.
            let config = notify::Config::default()
                .with_follow_symlinks(false)
                .with_event_kinds(EventKindMask::CORE | EventKindMask::ACCESS_CLOSE);
            RecommendedWatcher::new(handler, config)?
        };
        Ok(Backend {
            inner: Mutex::new(Some(imp)),
        })
    }

    /// Watches one directory (not its subdirectories).
    pub fn watch_dir(&self, abs: &Path) -> Result<()> {
        match lock(&self.inner).as_mut() {
            #[cfg(target_os = "linux")]
            Some(w) => w.watch_dir(abs),
            #[cfg(not(target_os = "linux"))]
            Some(w) => w.watch(abs, RecursiveMode::NonRecursive),
            None => Err(Error::generic("the file watcher has stopped")),
        }
    }

    pub fn unwatch_dir(&self, abs: &Path) {
        if let Some(w) = lock(&self.inner).as_mut() {
            #[cfg(target_os = "linux")]
            w.unwatch_dir(abs);
            #[cfg(not(target_os = "linux"))]
            if let Err(e) = w.unwatch(abs) {
                tracing::trace!(dir = %abs.display(), error = %e, "unwatch");
            }
        }
    }

    /// Stops the backend (its thread ends).
    pub fn shutdown(&self) {
        lock(&self.inner).take();
    }
}

/// Whether a failed watch only means there is nothing to watch (the
/// directory vanished, is unreadable, or became a symlink).
pub fn nothing_to_watch(e: &Error) -> bool {
    match &e.kind {
        ErrorKind::PathNotFound => true,
        ErrorKind::Io(io) => matches!(
            io.raw_os_error(),
            Some(libc::ENOENT | libc::ENOTDIR | libc::EACCES | libc::ELOOP)
        ),
        _ => false,
    }
}

/// Why the watcher cannot watch a tree (the project then relies on full
/// scans at turn boundaries).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WatchFailure {
    /// `fs.inotify.max_user_watches` reached.
    WatchLimit,
    /// `fs.inotify.max_user_instances` reached.
    InstanceLimit,
    /// Any other watcher error, as the backend words it.
    Other(String),
}

impl WatchFailure {
    /// The reason as a person reads it, with the sysctl to raise when it is
    /// a kernel limit.
    pub fn message(&self) -> String {
        match self {
            WatchFailure::WatchLimit => WATCH_LIMIT_ADVICE.to_string(),
            WatchFailure::InstanceLimit => {
                "inotify instance limit reached; raise fs.inotify.max_user_instances; \
                 falling back to full scans at turn boundaries"
                    .to_string()
            }
            WatchFailure::Other(e) => {
                format!("file watcher error: {e}; falling back to full scans at turn boundaries")
            }
        }
    }
}

/// A backend error as the reason capture is degraded.
pub fn describe(e: &Error) -> WatchFailure {
    match &e.kind {
        ErrorKind::MaxFilesWatch => WatchFailure::WatchLimit,
        ErrorKind::Io(io) if io.raw_os_error() == Some(libc::EMFILE) => WatchFailure::InstanceLimit,
        _ => WatchFailure::Other(e.to_string()),
    }
}
