//! One watched project inside the daemon: its core `Project` behind a lock,
//! the queue of paths the watcher reported, its health, and the worker
//! thread that drains the queue into `check_paths`.

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ckpt_core::{is_internal_name, Project, ProjectStatus, RelPath, Retention, DEFAULT_EXCLUDES};
use ckpt_proto::{ErrorKind, Health};

use crate::error::{panic_message, ReqError, ReqResult};
use crate::watcher::{self, DirWatches};

/// How often a project's retention policy is applied (after a batch of
/// changes has been captured, never on a timer).
const GC_INTERVAL: Duration = Duration::from_secs(3600);

/// Locks a mutex, carrying on after a panic elsewhere poisoned it: the data
/// behind our mutexes stays consistent (the core's own state is transactional).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Paths waiting for the worker, and the bookkeeping barriers wait on.
#[derive(Default)]
pub struct Queue {
    pub pending: HashSet<RelPath>,
    /// Counts every enqueue; a barrier waits until `processed` reaches the
    /// value this had when its cookie arrived.
    pub enqueued: u64,
    pub processed: u64,
    /// New directories and renamed-in paths: checked again, with everything
    /// below them, when the next cookie arrives, because the watcher adds
    /// its watches on a new directory only after reporting it, and files
    /// made in that gap send no event.
    pub recheck: HashSet<RelPath>,
    /// Rechecks released by a cookie: the worker walks each subtree.
    pub deep: HashSet<RelPath>,
    pub cookies_expected: HashSet<OsString>,
    pub cookies_seen: HashMap<OsString, u64>,
    /// Run a full `reconcile` instead of the next batch.
    pub reconcile_needed: bool,
    pub stop: bool,
}

/// Why capture for a project cannot be fully trusted.
#[derive(Clone, Debug)]
pub struct Degraded {
    pub reason: String,
    /// Lasts until the project is watched again (watch limit, watcher
    /// error); otherwise cleared by the next successful full scan.
    pub persistent: bool,
}

#[derive(Default)]
struct HealthState {
    loading: bool,
    unavailable: Option<String>,
    degraded: Option<Degraded>,
}

pub struct ProjectHandle {
    pub id: String,
    /// Canonical root.
    pub root: PathBuf,
    pub store_dir: PathBuf,
    core: Mutex<Project>,
    pub queue: Mutex<Queue>,
    /// Signalled on every queue change: new paths, cookies, progress, stop.
    pub cond: Condvar,
    health: Mutex<HealthState>,
    loaded: Condvar,
    status_cache: Mutex<Option<ProjectStatus>>,
    pub cookie_counter: AtomicU64,
    worker: Mutex<Option<JoinHandle<()>>>,
    /// The directories watched for this project.
    pub watches: Mutex<DirWatches>,
    last_gc: Mutex<Option<Instant>>,
}

impl ProjectHandle {
    pub fn new(id: String, store_dir: PathBuf, project: Project) -> Arc<ProjectHandle> {
        Arc::new(ProjectHandle {
            id,
            root: project.root().to_path_buf(),
            store_dir,
            core: Mutex::new(project),
            queue: Mutex::new(Queue::default()),
            cond: Condvar::new(),
            health: Mutex::new(HealthState::default()),
            loaded: Condvar::new(),
            status_cache: Mutex::new(None),
            cookie_counter: AtomicU64::new(0),
            worker: Mutex::new(None),
            watches: Mutex::new(DirWatches::default()),
            last_gc: Mutex::new(None),
        })
    }

    /// Runs `f` on the core project, holding its lock. A panic in the core
    /// becomes an internal error instead of taking the daemon down. (The
    /// status cache is refreshed by `status_nowait`, off the hot path.)
    pub fn call<T>(&self, f: impl FnOnce(&mut Project) -> ckpt_core::Result<T>) -> ReqResult<T> {
        let mut guard = lock(&self.core);
        let result = std::panic::catch_unwind(AssertUnwindSafe(|| f(&mut guard)));
        let out = match result {
            Ok(r) => r.map_err(ReqError::from),
            Err(payload) => Err(ReqError::internal(format!(
                "internal error in the capture engine: {}",
                panic_message(payload.as_ref())
            ))),
        };
        out
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

    /// Whether no operation holds the project right now.
    pub fn is_idle(&self) -> bool {
        !matches!(
            self.core.try_lock(),
            Err(std::sync::TryLockError::WouldBlock)
        )
    }

    // ---- health ----

    pub fn set_loading(&self, loading: bool) {
        lock(&self.health).loading = loading;
        self.loaded.notify_all();
    }

    /// Waits until start-up recovery of this project has finished.
    pub fn wait_loaded(&self) {
        let mut h = lock(&self.health);
        while h.loading {
            h = self.loaded.wait(h).unwrap_or_else(|p| p.into_inner());
        }
    }

    pub fn set_unavailable(&self, reason: Option<String>) {
        if let Some(r) = &reason {
            tracing::warn!(root = %self.root.display(), reason = %r, "project unavailable");
        }
        lock(&self.health).unavailable = reason;
    }

    pub fn unavailable(&self) -> Option<String> {
        lock(&self.health).unavailable.clone()
    }

    /// Marks capture untrustworthy and schedules a full scan.
    pub fn mark_degraded(&self, reason: String, persistent: bool) {
        {
            let mut h = lock(&self.health);
            let keep_old = matches!(&h.degraded, Some(d) if d.persistent && !persistent);
            if !keep_old {
                if h.degraded.as_ref().map(|d| &d.reason) != Some(&reason) {
                    tracing::warn!(root = %self.root.display(), %reason, "capture degraded");
                }
                h.degraded = Some(Degraded { reason, persistent });
            }
        }
        self.request_reconcile();
    }

    /// A full scan succeeded: a passing degradation is over.
    pub fn clear_transient(&self) {
        let mut h = lock(&self.health);
        if matches!(&h.degraded, Some(d) if !d.persistent) {
            tracing::info!(root = %self.root.display(), "capture recovered after a full scan");
            h.degraded = None;
        }
    }

    pub fn degraded(&self) -> Option<Degraded> {
        lock(&self.health).degraded.clone()
    }

    /// What every reply about this project says when capture is not fully
    /// trusted.
    pub fn degraded_reason(&self) -> Option<String> {
        let h = lock(&self.health);
        if let Some(u) = &h.unavailable {
            return Some(u.clone());
        }
        h.degraded.as_ref().map(|d| d.reason.clone())
    }

    pub fn health(&self) -> Health {
        let h = lock(&self.health);
        if h.unavailable.is_some() {
            Health::Unavailable
        } else if h.loading {
            Health::Loading
        } else if h.degraded.is_some() {
            Health::Degraded
        } else {
            Health::Ok
        }
    }

    /// Fails when requests cannot be served for this project.
    pub fn ensure_available(&self) -> ReqResult<()> {
        self.wait_loaded();
        self.check_root();
        match self.unavailable() {
            Some(reason) => Err(ReqError::new(
                ErrorKind::ProjectUnavailable,
                format!("project {} is unavailable: {reason}", self.root.display()),
            )),
            None => Ok(()),
        }
    }

    // ---- queue ----

    pub fn enqueue(&self, path: RelPath, recheck_at_cookie: bool) {
        let mut q = lock(&self.queue);
        if recheck_at_cookie {
            q.recheck.insert(path.clone());
        }
        // Only the worker waits for paths, and only on an empty queue: a
        // wake-up per event would be a syscall per event (a full rewind
        // makes tens of thousands).
        let wake = q.pending.is_empty();
        q.pending.insert(path);
        q.enqueued += 1;
        drop(q);
        if wake {
            self.cond.notify_all();
        }
    }

    /// A cookie's event came through the watcher.
    pub fn cookie_seen(&self, name: &std::ffi::OsStr) {
        let mut q = lock(&self.queue);
        if !q.cookies_expected.remove(name) {
            return;
        }
        let recheck = std::mem::take(&mut q.recheck);
        for p in recheck {
            q.deep.insert(p);
            q.enqueued += 1;
        }
        let seq = q.enqueued;
        q.cookies_seen.insert(name.to_os_string(), seq);
        drop(q);
        self.cond.notify_all();
    }

    pub fn request_reconcile(&self) {
        lock(&self.queue).reconcile_needed = true;
        self.cond.notify_all();
    }

    pub fn backlog(&self) -> u64 {
        lock(&self.queue).pending.len() as u64
    }

    // ---- worker ----

    /// Starts the thread that turns queued paths into `check_paths` calls.
    pub fn spawn_worker(self: &Arc<Self>) {
        let me = Arc::clone(self);
        let name = format!("ckpt-worker-{}", &self.id);
        match std::thread::Builder::new()
            .name(name)
            .spawn(move || me.worker_loop())
        {
            Ok(j) => *lock(&self.worker) = Some(j),
            Err(e) => self.mark_degraded(format!("cannot start the capture worker: {e}"), true),
        }
    }

    pub fn stop_worker(&self) {
        lock(&self.queue).stop = true;
        self.cond.notify_all();
        if let Some(j) = lock(&self.worker).take() {
            let _ = j.join();
        }
    }

    fn worker_loop(&self) {
        loop {
            let (batch, seq, reconcile) = {
                let mut q = lock(&self.queue);
                // No timeout: an idle daemon does not wake up. (A deleted
                // root sends no event while we hold it open; every request
                // checks the root instead.)
                while q.pending.is_empty() && q.deep.is_empty() && !q.reconcile_needed && !q.stop {
                    q = self.cond.wait(q).unwrap_or_else(|p| p.into_inner());
                }
                if q.stop {
                    return;
                }
                let reconcile = std::mem::take(&mut q.reconcile_needed);
                let mut batch: Vec<RelPath> = q.pending.drain().collect();
                let deep: Vec<RelPath> = q.deep.drain().collect();
                let seq = q.enqueued;
                drop(q);
                if !reconcile {
                    batch.extend(walk_subtrees(&self.root, deep));
                }
                (batch, seq, reconcile)
            };
            if self.unavailable().is_none() {
                if reconcile {
                    self.reconcile_now();
                } else {
                    let n = batch.len();
                    match self.call(|p| p.check_paths(batch.clone())) {
                        Ok(report) => tracing::debug!(
                            root = %self.root.display(), paths = n, changed = report.changed,
                            "checked paths"
                        ),
                        Err(e) => self.capture_failed(&e),
                    }
                    // Watches for directories that appeared. Files made in
                    // one before its watch existed send no event: it is
                    // checked again, whole, at the next cookie.
                    let fresh = watcher::sync_dirs(self, &batch);
                    if !fresh.is_empty() {
                        lock(&self.queue).recheck.extend(fresh);
                    }
                }
            }
            self.check_root();
            let mut q = lock(&self.queue);
            q.processed = q.processed.max(seq);
            drop(q);
            self.cond.notify_all();
            if self.unavailable().is_none() {
                self.maybe_gc();
            }
            // Let a burst settle a little so batches are not one path each.
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Applies the retention policy when the project is idle, at most once
    /// per [`GC_INTERVAL`] (and once soon after start-up).
    fn maybe_gc(&self) {
        {
            let mut last = lock(&self.last_gc);
            if last.is_some_and(|t| t.elapsed() < GC_INTERVAL) {
                return;
            }
            *last = Some(Instant::now());
        }
        match self.call(|p| p.gc(&Retention::default())) {
            Ok(r) if r.turns_dropped > 0 || r.blobs_removed > 0 => tracing::info!(
                root = %self.root.display(), turns = r.turns_dropped, blobs = r.blobs_removed,
                bytes = r.bytes_freed, "retention applied"
            ),
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(root = %self.root.display(), error = %e, "garbage collection failed")
            }
        }
    }

    /// Marks the project unavailable when its root is gone; true if it is there.
    pub fn check_root(&self) -> bool {
        if self.root.is_dir() {
            return true;
        }
        if self.unavailable().is_none() {
            self.set_unavailable(Some(format!(
                "project root {} no longer exists",
                self.root.display()
            )));
        }
        false
    }

    /// A full stat-scan; clears a passing degradation when it succeeds.
    pub fn reconcile_now(&self) -> bool {
        if !self.check_root() {
            return false;
        }
        // Lost events may have hidden new directories: watch them before
        // the scan lists them, so a change made in one after the scan's
        // listing still comes as an event.
        watcher::resync(self);
        // A rewind that could neither finish nor roll back (a full disk)
        // is finished from its journal first, or the scan would take its
        // half-way tree for changes.
        match self.call(|p| {
            p.recover()?;
            p.reconcile()
        }) {
            Ok(report) => {
                tracing::debug!(root = %self.root.display(), entries = report.entries,
                    changed = report.changed, "full scan");
                self.clear_transient();
                true
            }
            Err(e) => {
                self.capture_failed(&e);
                false
            }
        }
    }

    fn capture_failed(&self, e: &ReqError) {
        if !self.check_root() {
            return;
        }
        let mut h = lock(&self.health);
        if h.degraded.as_ref().is_none_or(|d| !d.persistent) {
            h.degraded = Some(Degraded {
                reason: format!("capture failed: {e}"),
                persistent: false,
            });
        }
        tracing::error!(root = %self.root.display(), error = %e, "capture failed");
    }
}

/// Every path at and below `dirs` (not following symlinks, skipping `.git`,
/// default-excluded directories and ckpt's own files), for a recheck that
/// must not trust a directory's unchanged mtime to mean its subtree is
/// unchanged.
fn walk_subtrees(root: &Path, dirs: Vec<RelPath>) -> Vec<RelPath> {
    let mut out = Vec::new();
    let mut stack = dirs;
    while let Some(rel) = stack.pop() {
        let abs = root.join(rel.as_path());
        let is_dir = std::fs::symlink_metadata(&abs).is_ok_and(|m| m.is_dir());
        out.push(rel.clone());
        if !is_dir {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&abs) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let bytes = name.as_bytes();
            let excluded = name == ".git"
                || is_internal_name(bytes)
                || name.to_str().is_some_and(|n| DEFAULT_EXCLUDES.contains(&n));
            if excluded {
                continue;
            }
            if let Ok(child) = rel.join(bytes) {
                stack.push(child);
            }
        }
    }
    out
}
