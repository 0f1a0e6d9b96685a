//! One watched project inside the daemon: its core `Project` behind a lock,
//! its health, the directories watched for it, the queue of paths the
//! router reported, and the worker thread that drains the queue into
//! `check_paths`. The project knows the watcher backend (to add watches)
//! but not the router or the registry, which sit above it.

mod health;
mod queue;
mod reasons;
pub use reasons::{DegradedReason, Unavailable};
mod watches;
mod worker;

use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use ckpt_core::{Project, ProjectStatus};

use crate::error::{panic_message, ReqError, ReqResult};
use crate::mutex::lock;

use watches::DirWatches;

pub struct ProjectHandle {
    pub id: String,
    /// Canonical root.
    pub root: PathBuf,
    pub store_dir: PathBuf,
    core: Mutex<Project>,
    queue: Mutex<queue::Queue>,
    /// Signalled on every queue change: new paths, cookies, progress, stop.
    cond: Condvar,
    health: Mutex<health::HealthState>,
    loaded: Condvar,
    status_cache: Mutex<Option<ProjectStatus>>,
    worker: Mutex<Option<JoinHandle<()>>>,
    /// The directories watched for this project.
    watches: Mutex<DirWatches>,
    last_gc: Mutex<Option<Instant>>,
    /// Held while a root that came back is attached again, so two requests
    /// (or a request and the worker) do it once.
    reattaching: Mutex<()>,
    /// Device and inode of the root directory the core has open: a
    /// directory at the root's path with another is a new one.
    root_identity: Mutex<Option<(u64, u64)>>,
    /// Unix ns when the worker last captured a change (0: none yet); one
    /// store per batch, read by `activity` without any lock.
    last_change_ns: AtomicI64,
    /// Its config file and the settings in force (settings.rs).
    pub(crate) settings: crate::settings::ProjectSettings,
}

impl ProjectHandle {
    pub fn new(id: String, store_dir: PathBuf, project: Project) -> Arc<ProjectHandle> {
        let root_identity = project.root_identity().ok();
        let settings = crate::settings::ProjectSettings::new(project.root());
        Arc::new(ProjectHandle {
            id,
            root: project.root().to_path_buf(),
            store_dir,
            core: Mutex::new(project),
            queue: Mutex::new(queue::Queue::default()),
            cond: Condvar::new(),
            health: Mutex::new(health::HealthState::default()),
            loaded: Condvar::new(),
            status_cache: Mutex::new(None),
            worker: Mutex::new(None),
            watches: Mutex::new(DirWatches::default()),
            last_gc: Mutex::new(None),
            reattaching: Mutex::new(()),
            root_identity: Mutex::new(root_identity),
            last_change_ns: AtomicI64::new(0),
            settings,
        })
    }

    /// Runs `f` on the core project, holding its lock. A panic in the core
    /// becomes an internal error instead of taking the daemon down. (The
    /// status cache is refreshed by `status_nowait`, off the hot path.)
    pub fn call<T>(&self, f: impl FnOnce(&mut Project) -> ckpt_core::Result<T>) -> ReqResult<T> {
        let mut guard = lock(&self.core);
        // A request whose client asked for progress hears of this call's.
        let observed = crate::progress::observer().map(|o| guard.observe(Some(o)));
        let result = std::panic::catch_unwind(AssertUnwindSafe(|| f(&mut guard)));
        if let Some(before) = observed {
            guard.observe(before);
        }
        match result {
            Ok(r) => r.map_err(ReqError::from),
            Err(payload) => Err(ReqError::internal(format!(
                "internal error in the capture engine: {}",
                panic_message(payload.as_ref())
            ))),
        }
    }

    /// Runs `f` on the core project if no operation holds it (`None`
    /// otherwise): for `status`, which never waits for a busy project.
    pub fn try_call<T>(
        &self,
        f: impl FnOnce(&mut Project) -> ckpt_core::Result<T>,
    ) -> Option<ReqResult<T>> {
        let mut guard = self.core.try_lock().ok()?;
        let result = std::panic::catch_unwind(AssertUnwindSafe(|| f(&mut guard)));
        Some(match result {
            Ok(r) => r.map_err(ReqError::from),
            Err(payload) => Err(ReqError::internal(format!(
                "internal error in the capture engine: {}",
                panic_message(payload.as_ref())
            ))),
        })
    }

    /// The status without waiting for a long operation: fresh if the project
    /// is free, else the last one seen and `busy = true`.
    pub fn status_nowait(&self) -> (Option<ProjectStatus>, bool) {
        match self.core.try_lock() {
            Ok(guard) => {
                let fresh = std::panic::catch_unwind(AssertUnwindSafe(|| guard.status()));
                drop(guard);
                if let Ok(Ok(s)) = fresh {
                    *lock(&self.status_cache) = Some(s.clone());
                    return (Some(s), false);
                }
                (lock(&self.status_cache).clone(), false)
            }
            Err(std::sync::TryLockError::Poisoned(p)) => {
                drop(p);
                (lock(&self.status_cache).clone(), false)
            }
            Err(std::sync::TryLockError::WouldBlock) => (lock(&self.status_cache).clone(), true),
        }
    }

    /// What [`status_nowait`](Self::status_nowait) answers while the
    /// project is busy, until it next reads the status itself.
    pub fn remember_status(&self, s: ProjectStatus) {
        *lock(&self.status_cache) = Some(s);
    }

    /// When the worker last captured a change: events of excluded paths and
    /// cookies never reach it, and checks that found nothing changed do not
    /// count.
    pub fn last_change_ns(&self) -> Option<i64> {
        Some(self.last_change_ns.load(Ordering::Relaxed)).filter(|&t| t > 0)
    }

    /// Notes that a batch (or a scan) captured changes.
    fn note_changes(&self, changed: u64) {
        if changed > 0 {
            self.last_change_ns.store(now_ns(), Ordering::Relaxed);
        }
    }

    /// Whether no operation holds the project right now.
    pub fn is_idle(&self) -> bool {
        !matches!(
            self.core.try_lock(),
            Err(std::sync::TryLockError::WouldBlock)
        )
    }
}

pub use ckpt_types::now_ns;

/// A project on a new, empty tree at `dir/root`, for unit tests.
#[cfg(test)]
pub fn for_test(dir: &std::path::Path) -> Arc<ProjectHandle> {
    let root = dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    let root = root.canonicalize().unwrap();
    let store = dir.join("store");
    let p = Project::open(&store, &root, ckpt_core::Options::default()).unwrap();
    ProjectHandle::new("id".into(), store, p)
}

impl ProjectHandle {
    /// The settings last resolved (by [`ProjectHandle::refresh_settings`]).
    pub fn settings(&self) -> std::sync::Arc<ckpt_settings::Settings> {
        self.settings.settings()
    }

    /// The retention policy of the settings last resolved.
    pub fn retention_policy(&self) -> ckpt_core::Retention {
        self.settings.retention_policy()
    }

    /// What is wrong with a config file or variable, as last looked at.
    pub fn config_error(&self) -> Option<String> {
        self.settings.config_error()
    }

    /// Looks at the config files again and, when what they hold changed,
    /// hands the capture settings to the core (a change of excludes asks
    /// for a full scan, which captures what they no longer exclude).
    pub fn refresh_settings(
        &self,
        user: &crate::settings::UserSettings,
    ) -> std::sync::Arc<ckpt_settings::Settings> {
        let r = self.settings.refresh(user, &self.root);
        if r.changed {
            let (max, excludes) = (r.settings.max_file_bytes(), r.settings.excludes().to_vec());
            match self.call(|p| Ok(p.set_capture(max, excludes))) {
                Ok(true) if !r.first => self.request_reconcile(),
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(root = %self.root.display(), error = %e.message, "applying the settings")
                }
            }
        }
        r.settings
    }
}
