//! One watched project inside the daemon: its core `Project` behind a lock,
//! its health, the directories watched for it, the queue of paths the
//! router reported, and the worker thread that drains the queue into
//! `check_paths`. The project knows the watcher backend (to add watches)
//! but not the router or the registry, which sit above it.

mod health;
mod queue;
pub use queue::PENDING_MAX;
mod reasons;
pub use reasons::{DegradedReason, Unavailable};
mod watches;
mod worker;

use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ckpt_core::{Project, ProjectStatus, Retention, RetentionView};

use crate::error::{panic_message, ReqError, ReqResult};
use crate::mutex::lock;

use watches::DirWatches;

/// How often a `status` waiting for a held project tries it again.
const STATUS_POLL: Duration = Duration::from_millis(2);

/// What [`ProjectHandle::status_until`] found.
pub struct StatusNow {
    pub status: Option<ProjectStatus>,
    pub retention: Option<RetentionView>,
    /// Held past the deadline: `status` is the last one seen.
    pub busy: bool,
}

pub struct ProjectHandle {
    pub id: String,
    /// Canonical root.
    pub root: PathBuf,
    pub store_dir: PathBuf,
    core: Mutex<Project>,
    queue: Mutex<queue::Queue>,
    /// The worker waits on this: signalled when work is queued, a barrier
    /// waits on a round it cannot run, or the worker stops.
    work: Condvar,
    /// Barriers wait on this: signalled when a cookie arrives, a round
    /// ends, or the worker stops. (One condition for both woke the worker
    /// at every cookie and every barrier's wait.)
    progress: Condvar,
    health: Mutex<health::HealthState>,
    loaded: Condvar,
    status_cache: Mutex<Option<ProjectStatus>>,
    worker: Mutex<Option<JoinHandle<()>>>,
    /// Held while a round of the worker runs (worker.rs).
    rounds: Mutex<worker::Rounds>,
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
    /// `pending_max`: the most paths its queue holds ([`queue::PENDING_MAX`]).
    pub fn new(
        id: String,
        store_dir: PathBuf,
        project: Project,
        pending_max: usize,
    ) -> Arc<ProjectHandle> {
        let root_identity = project.root_identity().ok();
        let settings = crate::settings::ProjectSettings::new(project.root());
        Arc::new(ProjectHandle {
            id,
            root: project.root().to_path_buf(),
            store_dir,
            core: Mutex::new(project),
            queue: Mutex::new(queue::Queue::new(pending_max)),
            work: Condvar::new(),
            progress: Condvar::new(),
            health: Mutex::new(health::HealthState::default()),
            loaded: Condvar::new(),
            status_cache: Mutex::new(None),
            worker: Mutex::new(None),
            rounds: Mutex::new(worker::Rounds::default()),
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
    /// status cache is refreshed by `status_until`, off the hot path.)
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

    /// The status and the retention view under `policy`, read in one hold
    /// of the project. An operation holding it (a worker's batch, a turn
    /// boundary) is waited for until `deadline`; past it (a long rewind)
    /// the answer is the status last seen, no view, and `busy = true`.
    pub fn status_until(&self, policy: &Retention, deadline: Instant) -> StatusNow {
        let guard = loop {
            match self.core.try_lock() {
                Ok(guard) => break guard,
                Err(std::sync::TryLockError::Poisoned(p)) => break p.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) if Instant::now() < deadline => {
                    std::thread::sleep(STATUS_POLL);
                }
                Err(std::sync::TryLockError::WouldBlock) => {
                    return StatusNow {
                        status: lock(&self.status_cache).clone(),
                        retention: None,
                        busy: true,
                    };
                }
            }
        };
        let read = std::panic::catch_unwind(AssertUnwindSafe(|| {
            (guard.status(), guard.retention(policy))
        }));
        drop(guard);
        let (status, retention) = match read {
            Ok((status, retention)) => (status.ok(), retention.ok()),
            Err(_) => (None, None),
        };
        if let Some(s) = &status {
            *lock(&self.status_cache) = Some(s.clone());
        }
        StatusNow {
            status: status.or_else(|| lock(&self.status_cache).clone()),
            retention,
            busy: false,
        }
    }

    /// What [`status_until`](Self::status_until) answers while the
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
    ProjectHandle::new("id".into(), store, p, queue::PENDING_MAX)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `status` waits out a short hold of the project (a worker's batch)
    /// and answers fresh, retention included; past its deadline it answers
    /// busy from the status last seen.
    #[test]
    fn status_waits_for_a_short_hold_and_answers_busy_past_its_deadline() {
        let t = tempfile::tempdir().unwrap();
        let h = for_test(t.path());
        let policy = Retention::default();
        let first = h.status_until(&policy, Instant::now());
        assert!(!first.busy && first.status.is_some() && first.retention.is_some());

        let held = Arc::clone(&h);
        let (tx, rx) = std::sync::mpsc::channel();
        let holder = std::thread::spawn(move || {
            let _g = lock(&held.core);
            tx.send(()).unwrap();
            std::thread::sleep(Duration::from_millis(100));
        });
        rx.recv().unwrap();
        let now = h.status_until(&policy, Instant::now() + Duration::from_secs(30));
        assert!(!now.busy, "a hold of 100 ms is waited for");
        assert_eq!(now.retention.map(|r| r.policy), Some(policy.clone()));
        holder.join().unwrap();

        let held = Arc::clone(&h);
        let (tx, rx) = std::sync::mpsc::channel();
        let (release, released) = std::sync::mpsc::channel::<()>();
        let holder = std::thread::spawn(move || {
            let _g = lock(&held.core);
            tx.send(()).unwrap();
            let _ = released.recv();
        });
        rx.recv().unwrap();
        let now = h.status_until(&policy, Instant::now() + Duration::from_millis(20));
        assert!(now.busy && now.retention.is_none());
        assert_eq!(
            now.status.map(|s| s.entries),
            first.status.map(|s| s.entries),
            "the status last seen"
        );
        release.send(()).unwrap();
        holder.join().unwrap();
    }
}
