//! The file-system watcher backend, which knows nothing about projects: it
//! watches for changes only and hands every event, in the order the OS
//! gives them, to one handler. Two shapes:
//!
//! - [`Shape::PerDirectory`] (Linux's default): our own inotify loop, one
//!   non-recursive watch per captured directory, added by each project.
//! - [`Shape::Recursive`] (FSEvents' shape, macOS's only one; on Linux
//!   `CKPT_WATCHER=notify`): notify's watcher asked for one recursive watch
//!   per project root; the router filters and routes by path.

#[cfg(target_os = "linux")]
mod inotify;

use std::path::Path;
use std::sync::Mutex;

use notify::{EventKindMask, RecursiveMode, Watcher as _};

use crate::mutex::lock;

pub use crate::shape::Shape;
pub use notify::{Error, ErrorKind, Event, EventKind, Result};

/// The advice given when the kernel runs out of inotify watches.
pub const WATCH_LIMIT_ADVICE: &str = "inotify watch limit reached; raise fs.inotify.max_user_watches \
     (e.g. `sudo sysctl fs.inotify.max_user_watches=524288`); falling back to full scans at turn boundaries";

/// notify's watcher for the recursive shape: its inotify backend on Linux
/// (so CI runs the code macOS runs), FSEvents on macOS.
#[cfg(target_os = "linux")]
type TreeWatcher = notify::INotifyWatcher;
#[cfg(not(target_os = "linux"))]
type TreeWatcher = notify::RecommendedWatcher;

enum Imp {
    #[cfg(target_os = "linux")]
    Dirs(inotify::Inotify),
    Tree(TreeWatcher),
}

/// The watcher, shared by the daemon and every project's worker (which adds
/// watches for directories that appear, in the per-directory shape).
pub struct Backend {
    shape: Shape,
    inner: Mutex<Option<Imp>>,
    /// Outside `inner`: what a read hands on may watch or unwatch.
    reader: Option<QueueReader>,
}

/// Reads the watcher's queue on the caller's thread (inotify only; a
/// recursive backend's events come on its own thread).
#[cfg(target_os = "linux")]
pub use inotify::QueueReader;
#[cfg(not(target_os = "linux"))]
#[derive(Clone)]
pub enum QueueReader {}
#[cfg(not(target_os = "linux"))]
impl QueueReader {
    pub fn try_read_all(&self) -> bool {
        match *self {}
    }
}

impl Backend {
    /// Starts the backend's thread; `handler` gets every event, in order,
    /// and `after_read` is called after each read of events, once the
    /// backend has let its queue go.
    pub fn start(
        shape: Shape,
        mut handler: impl FnMut(Result<Event>) + Send + 'static,
        after_read: impl Fn() + Send + Sync + std::panic::RefUnwindSafe + 'static,
    ) -> Result<Backend> {
        let imp = match shape {
            #[cfg(target_os = "linux")]
            Shape::PerDirectory => {
                Imp::Dirs(inotify::Inotify::new(handler, after_read).map_err(Error::io)?)
            }
            #[cfg(not(target_os = "linux"))]
            Shape::PerDirectory => return Err(Error::generic("no per-directory watcher here")),
            Shape::Recursive => {
                // No open/close-nowrite events: every read in a watched tree
                // (a build, a `grep -r`, the daemon's own hashing) would wake
                // us and could overflow the kernel queue. Close-after-write
                // stays where it exists (inotify: an mmap write sends nothing
                // else); FSEvents has none, and a modify event is enough.
                let config = notify::Config::default()
                    .with_follow_symlinks(false)
                    .with_event_kinds(EventKindMask::CORE | EventKindMask::ACCESS_CLOSE);
                let each = move |res| {
                    handler(res);
                    after_read();
                };
                Imp::Tree(TreeWatcher::new(each, config)?)
            }
        };
        let reader = match &imp {
            #[cfg(target_os = "linux")]
            Imp::Dirs(w) => Some(w.queue_reader()),
            Imp::Tree(_) => None,
        };
        Ok(Backend {
            shape,
            inner: Mutex::new(Some(imp)),
            reader,
        })
    }

    pub fn queue_reader(&self) -> Option<QueueReader> {
        self.reader.clone()
    }

    pub fn shape(&self) -> Shape {
        self.shape
    }

    /// The kernel watches held, where this shape counts them (the
    /// recursive one leaves them to notify, which does not say).
    pub fn watch_count(&self) -> Option<u64> {
        match lock(&self.inner).as_ref() {
            #[cfg(target_os = "linux")]
            Some(Imp::Dirs(w)) => Some(w.watch_count()),
            Some(Imp::Tree(_)) => None,
            None => Some(0),
        }
    }

    /// Watches one directory (not its subdirectories).
    pub fn watch_dir(&self, abs: &Path) -> Result<()> {
        match lock(&self.inner).as_mut() {
            #[cfg(target_os = "linux")]
            Some(Imp::Dirs(w)) => w.watch_dir(abs),
            Some(Imp::Tree(w)) => w.watch(abs, RecursiveMode::NonRecursive),
            None => Err(stopped()),
        }
    }

    /// Watches a directory and everything below it, with one watch (the
    /// recursive shape only).
    pub fn watch_tree(&self, abs: &Path) -> Result<()> {
        match lock(&self.inner).as_mut() {
            Some(Imp::Tree(w)) => w.watch(abs, RecursiveMode::Recursive),
            #[cfg(target_os = "linux")]
            Some(Imp::Dirs(_)) => Err(Error::generic(
                "the per-directory watcher has no recursive watches",
            )),
            None => Err(stopped()),
        }
    }

    /// Drops the watch of a directory (in the recursive shape, of a tree).
    pub fn unwatch_dir(&self, abs: &Path) {
        match lock(&self.inner).as_mut() {
            #[cfg(target_os = "linux")]
            Some(Imp::Dirs(w)) => w.unwatch_dir(abs),
            Some(Imp::Tree(w)) => {
                if let Err(e) = w.unwatch(abs) {
                    tracing::trace!(dir = %abs.display(), error = %e, "unwatch");
                }
            }
            None => {}
        }
    }

    /// Stops the backend (its thread ends).
    pub fn shutdown(&self) {
        lock(&self.inner).take();
    }
}

fn stopped() -> Error {
    Error::generic("the file watcher has stopped")
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
