//! The one file-system watcher for every project (inotify allows 128
//! instances per user): starts the backend with the router as its handler,
//! watches the cookie directory, and starts and stops each project's
//! watches.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::backend::{Backend, QueueReader, Shape, WatchFailure};
use crate::cookie;
use crate::project::{DegradedReason, ProjectHandle};
use crate::registry::Registry;
use crate::router::Router;

pub struct Watcher {
    backend: Option<Arc<Backend>>,
    /// Where barriers create their cookies; `None` if it cannot be watched.
    cookie_dir: Option<PathBuf>,
    fake_limit: bool,
}

impl Watcher {
    /// Creates the watcher; when the backend cannot start, every project is
    /// degraded and barriers scan.
    pub fn new(
        registry: Arc<Registry>,
        shape: Shape,
        cookie_dir: PathBuf,
        fake_limit: bool,
    ) -> Watcher {
        // Events name the cookie as the OS spells its path (FSEvents:
        // `/private/tmp`, not `/tmp`): the router compares that spelling.
        let prepared =
            cookie::prepare_dir(&cookie_dir).and_then(|()| std::fs::canonicalize(&cookie_dir));
        let cookie_dir = prepared.as_ref().map_or(cookie_dir, Clone::clone);
        let router = Arc::new(Router::new(registry, cookie_dir.clone()));
        let woken = Arc::clone(&router);
        let backend = match Backend::start(
            shape,
            move |res| router.handle(res),
            move || woken.wake(),
        ) {
            Ok(b) => Some(Arc::new(b)),
            Err(e) => {
                tracing::error!(error = %e, "cannot start the file watcher; capture falls back to scans");
                None
            }
        };
        let cookie_dir = backend.as_ref().and_then(|b| {
            let watched = match &prepared {
                Ok(_) => b.watch_dir(&cookie_dir).map_err(anyhow::Error::from),
                Err(e) => Err(anyhow::anyhow!("{e}")),
            };
            match watched {
                Ok(()) => Some(cookie_dir),
                Err(e) => {
                    tracing::error!(dir = %cookie_dir.display(), error = %e,
                        "cannot watch the cookie directory; turn boundaries fall back to scans");
                    None
                }
            }
        });
        Watcher {
            backend,
            cookie_dir,
            fake_limit,
        }
    }

    /// The shape of the running backend (`None`: it could not start).
    pub fn shape(&self) -> Option<Shape> {
        self.backend.as_ref().map(|b| b.shape())
    }

    /// The kernel watches held in all, where the backend counts them.
    pub fn watch_count(&self) -> Option<u64> {
        self.backend.as_ref().map_or(Some(0), |b| b.watch_count())
    }

    /// Reads the event queue on a barrier's thread, where the backend can.
    pub fn queue_reader(&self) -> Option<QueueReader> {
        self.backend.as_ref().and_then(|b| b.queue_reader())
    }

    /// The watched directory where barriers create their cookies.
    pub fn cookie_dir(&self) -> Option<&Path> {
        self.cookie_dir.as_deref()
    }

    /// Watches a project's root and every captured directory below it (the
    /// project must already be in the registry, so early events find it).
    /// Failures degrade the project.
    pub fn add(&self, h: &ProjectHandle) {
        if self.fake_limit {
            h.mark_degraded(DegradedReason::Watcher(WatchFailure::WatchLimit));
            return;
        }
        let Some(backend) = &self.backend else {
            h.mark_degraded(DegradedReason::NoWatcher);
            return;
        };
        h.start_watching(backend);
    }

    /// Drops every watch of a project.
    pub fn remove(&self, h: &ProjectHandle) {
        h.stop_watching();
    }

    /// Stops the backend (its thread ends).
    pub fn shutdown(&self) {
        if let Some(b) = &self.backend {
            b.shutdown();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// FSEvents names paths as the OS resolves them (`/tmp` is
    /// `/private/tmp`): the cookie directory is watched, and compared, by
    /// its canonical path, here reached through a symlink.
    #[test]
    fn the_cookie_directory_is_watched_by_its_canonical_path() {
        for shape in crate::shape::available() {
            let t = tempfile::tempdir().unwrap();
            let real = t.path().join("real");
            std::fs::create_dir(&real).unwrap();
            std::os::unix::fs::symlink(&real, t.path().join("link")).unwrap();
            let w = Watcher::new(
                Arc::new(Registry::default()),
                shape,
                t.path().join("link/cookies"),
                false,
            );
            let expected = real.canonicalize().unwrap().join("cookies");
            assert_eq!(w.cookie_dir(), Some(expected.as_path()), "{shape:?}");
            assert_eq!(w.shape(), Some(shape));
            w.shutdown();
        }
    }
}
