//! The daemon's shared state and the project lifecycle: start-up loading
//! (recover, reconcile), watching a new tree, forgetting one.

use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use ckpt_core::{Options, Project, RelPath};
use ckpt_proto::{ErrorKind, WirePath};
use sha2::Digest;

use crate::admission::Admission;
use crate::backend::Shape;
use crate::barrier::{self, BarrierConfig, BarrierOutcome};
use crate::config::Config;
use crate::cookie;
use crate::error::{panic_message, ReqError, ReqResult};
use crate::freer::Freer;
use crate::mutex::lock;
use crate::project::{DegradedReason, ProjectHandle, Unavailable};
use crate::registry::{BrokenStore, Registry};
use crate::reserve::{self, Reserve};
use crate::test_hooks::TestHooks;
use crate::watcher::Watcher;

pub struct Daemon {
    pub config: Config,
    pub registry: Arc<Registry>,
    pub watcher: Watcher,
    barrier: BarrierConfig,
    pub started: Instant,
    /// The user's config file and the `CKPT_<KEY>` variables.
    pub user_settings: crate::settings::UserSettings,
    /// Space set aside in the data dir for turn boundaries and rewinds on
    /// a full disk.
    reserve: Reserve,
    /// Serializes watch and unwatch, so two requests cannot open one store twice.
    watch_lock: Mutex<()>,
    /// Set once every stored project is registered (not yet recovered);
    /// requests wait for it so none sees a half-filled registry.
    registered: Mutex<bool>,
    registered_cv: Condvar,
    /// Closes what rewinds removed.
    pub freer: Freer,
    /// How many requests are handled at once, and who is next.
    pub admission: Admission,
}

/// The store id of a root: the first 16 hex digits of SHA-256 of its
/// canonical path.
pub fn project_id(root: &Path) -> String {
    let digest = sha2::Sha256::digest(root.as_os_str().as_bytes());
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

pub fn core_options(hooks: &TestHooks, freer: &Freer) -> Options {
    Options {
        free_removed: Some(freer.free_removed()),
        plan_window: hooks.plan_window(),
        ..Options::default()
    }
}

/// Passes the barrier for `h` with this daemon's cookie directory and the
/// project's `barrier.timeout_ms`.
pub fn barrier(d: &Daemon, h: &ProjectHandle) -> ReqResult<BarrierOutcome> {
    barrier::pass(&d.barrier, h.settings().barrier_timeout(), h)
}

impl Daemon {
    pub fn new(config: Config) -> Arc<Daemon> {
        let registry = Arc::new(Registry::default());
        let watcher = Watcher::new(
            Arc::clone(&registry),
            config.watcher,
            cookie::dir_beside(&config.socket),
            config.hooks.fake_watch_limit(),
        );
        let barrier = BarrierConfig {
            cookie_dir: watcher.cookie_dir().map(Path::to_path_buf),
            reader: watcher.queue_reader(),
            quiet: (watcher.shape() == Some(Shape::Recursive)).then_some(barrier::QUIET_WINDOW),
        };
        Arc::new(Daemon {
            reserve: Reserve::new(&config.data_dir),
            user_settings: crate::settings::UserSettings::new(
                config.settings_env.clone(),
                config.hooks.gc_grace_secs(),
            ),
            config,
            registry,
            watcher,
            barrier,
            started: Instant::now(),
            watch_lock: Mutex::new(()),
            registered: Mutex::new(false),
            registered_cv: Condvar::new(),
            freer: Freer::new(),
            admission: Admission::for_this_machine(),
        })
    }

    /// Runs `op` (a turn boundary or a rewind); when it fails for lack of
    /// space and the space reserve can be given back, runs it once more, so
    /// the database can commit what needs no new content. Makes the reserve
    /// again after a success, once there is room.
    pub fn with_reserve<T>(
        &self,
        who: reserve::For,
        mut op: impl FnMut() -> ReqResult<T>,
    ) -> ReqResult<T> {
        let mut result = op();
        while matches!(&result, Err(e) if e.kind == ErrorKind::DiskFull)
            && self.reserve.release(who)
        {
            result = op();
        }
        if result.is_ok() {
            self.reserve.refill();
        }
        result
    }

    /// Waits until start-up has registered every stored project.
    pub fn wait_registered(&self) {
        let mut done = lock(&self.registered);
        while !*done {
            done = self
                .registered_cv
                .wait(done)
                .unwrap_or_else(|p| p.into_inner());
        }
    }

    fn set_registered(&self) {
        *lock(&self.registered) = true;
        self.registered_cv.notify_all();
    }

    pub fn projects_dir(&self) -> PathBuf {
        self.config.data_dir.join("projects")
    }

    fn unwatched_marker(&self, id: &str) -> PathBuf {
        self.config.data_dir.join("unwatched").join(id)
    }

    /// The daemon's own record of a store's root, so a store whose root is
    /// gone (and so cannot be opened) can still be named.
    fn root_record(&self, id: &str) -> PathBuf {
        self.config.data_dir.join("roots").join(id)
    }

    fn read_root_record(&self, id: &str) -> Option<PathBuf> {
        let bytes = std::fs::read(self.root_record(id)).ok()?;
        Some(PathBuf::from(std::ffi::OsStr::from_bytes(&bytes)))
    }

    fn write_root_record(&self, id: &str, root: &Path) {
        let path = self.root_record(id);
        let written = path
            .parent()
            .map(std::fs::create_dir_all)
            .unwrap_or(Ok(()))
            .and_then(|()| std::fs::write(&path, root.as_os_str().as_bytes()));
        if let Err(e) = written {
            tracing::warn!(path = %path.display(), error = %e, "cannot record the project root");
        }
    }

    /// Reopens every stored project that was not unwatched: each recovers an
    /// interrupted rewind and reconciles with the tree, in the background;
    /// requests for a project wait until its turn is done.
    pub fn load_projects(self: &Arc<Self>) {
        self.reserve.refill();
        self.register_stored();
        self.set_registered();
    }

    fn register_stored(self: &Arc<Self>) {
        let dir = self.projects_dir();
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
            Err(e) => {
                tracing::error!(dir = %dir.display(), error = %e, "cannot list stored projects");
                return;
            }
        };
        for entry in entries.flatten() {
            let store_dir = entry.path();
            let Some(id) = entry.file_name().to_str().map(str::to_string) else {
                continue;
            };
            if !store_dir.is_dir() || self.unwatched_marker(&id).exists() {
                continue;
            }
            self.open_stored(id, store_dir);
        }
    }

    /// Opens a stored project and starts loading it (recover, reconcile) in
    /// the background; a store that cannot be opened is listed as broken.
    fn open_stored(self: &Arc<Self>, id: String, store_dir: PathBuf) {
        let opened = std::panic::catch_unwind(|| {
            Project::open_existing(&store_dir, core_options(&self.config.hooks, &self.freer))
        });
        let project = match opened {
            Ok(Ok(p)) => p,
            Ok(Err(e)) => {
                let retry = e.is_disk_full();
                self.broken(id, store_dir, ReqError::from(e).message, retry);
                return;
            }
            Err(panic) => {
                self.broken(id, store_dir, panic_message(panic.as_ref()), false);
                return;
            }
        };
        let h = ProjectHandle::new(id, store_dir, project, self.config.hooks.pending_max());
        h.refresh_settings(&self.user_settings);
        if !h.root.is_dir() {
            h.set_unavailable(Some(Unavailable::RootGone));
            self.registry.insert(h);
            return;
        }
        h.set_loading(true);
        self.registry.insert(Arc::clone(&h));
        h.spawn_worker();
        let name = format!("ckpt-load-{}", h.id);
        let loader = Arc::clone(&h);
        let me = Arc::clone(self);
        let spawned = std::thread::Builder::new().name(name).spawn(move || {
            // Watch first, then scan: nothing changed in between is lost.
            me.watcher.add(&loader);
            recover_and_reconcile(&loader);
            loader.set_loading(false);
        });
        if let Err(e) = spawned {
            h.set_loading(false);
            h.mark_degraded(DegradedReason::NoLoader(e.to_string()));
        }
    }

    /// Opens again the stores that failed for lack of space and whose root
    /// contains `dir`.
    fn retry_broken(self: &Arc<Self>, dir: &Path) {
        let due = self
            .registry
            .broken()
            .into_iter()
            .filter(|b| b.retry && b.root.as_deref().is_some_and(|r| dir.starts_with(r)));
        for b in due {
            // Whoever removes it opens it (a request racing it may get "not
            // watched" that once).
            if let Some(b) = self.registry.remove_broken(&b.id) {
                tracing::info!(store = %b.store_dir.display(), "opening a store again");
                self.open_stored(b.id, b.store_dir);
            }
        }
    }

    fn broken(&self, id: String, store_dir: PathBuf, error: String, retry: bool) {
        let root = self.read_root_record(&id);
        // A root that is gone is opened again once a request names it.
        let root_gone = root.as_deref().is_some_and(|r| !r.exists());
        let retry = retry || root_gone;
        let error = match &root {
            Some(r) if root_gone => Unavailable::RootGone.message(r),
            _ => format!("store cannot be opened: {error}"),
        };
        tracing::error!(store = %store_dir.display(), %error, "cannot open stored project");
        self.registry.add_broken(BrokenStore {
            id,
            store_dir,
            root,
            error,
            retry,
        });
    }

    /// Forgets a store that could not be opened at start-up.
    pub fn unwatch_broken(&self, b: &BrokenStore, drop_data: bool) -> ReqResult<()> {
        let _serial = lock(&self.watch_lock);
        self.registry.remove_broken(&b.id);
        if drop_data {
            std::fs::remove_dir_all(&b.store_dir).map_err(|e| {
                ReqError::new(
                    ErrorKind::Io,
                    format!("removing {}: {e}", b.store_dir.display()),
                )
            })?;
            let _ = std::fs::remove_file(self.root_record(&b.id));
            let _ = std::fs::remove_file(self.unwatched_marker(&b.id));
        } else {
            self.write_unwatched_marker(&b.id, b.root.as_deref().unwrap_or(&b.store_dir))?;
        }
        Ok(())
    }

    /// Canonicalizes a directory named by a client.
    pub fn canonical_dir(dir: &WirePath) -> ReqResult<PathBuf> {
        let p = dir.as_path();
        if !p.is_absolute() {
            return Err(ReqError::bad_request(format!(
                "{} is not an absolute path",
                dir.display()
            )));
        }
        std::fs::canonicalize(p).map_err(|e| {
            ReqError::new(
                ErrorKind::NotWatched,
                format!("cannot open directory {}: {e}", dir.display()),
            )
        })
    }

    /// The watched project containing `dir`.
    pub fn project_for(self: &Arc<Self>, dir: &WirePath) -> ReqResult<Arc<ProjectHandle>> {
        let canonical = Daemon::canonical_dir(dir)?;
        let found = self.registry.containing(&canonical).or_else(|| {
            self.retry_broken(&canonical);
            self.registry.containing(&canonical)
        });
        match found {
            Some(h) => {
                h.refresh_settings(&self.user_settings);
                Ok(h)
            }
            None => Err(ReqError::new(
                ErrorKind::NotWatched,
                format!(
                    "{} is not inside a watched project (run `ckptctl watch` there first)",
                    canonical.display()
                ),
            )),
        }
    }

    /// The project a rewind names. A root that no longer exists is made
    /// again (the project's own path, and only it: its parent must be
    /// there, unchanged) and attached, so a rewind of the turn that deleted
    /// it brings the tree back; a dry run changes nothing and is refused.
    pub fn project_for_rewind(
        self: &Arc<Self>,
        dir: &WirePath,
        dry_run: bool,
    ) -> ReqResult<Arc<ProjectHandle>> {
        let err = match self.project_for(dir) {
            Ok(h) => return Ok(h),
            Err(e) if e.kind == ErrorKind::NotWatched => e,
            Err(e) => return Err(e),
        };
        let wanted = normalize(dir.as_path());
        let Some(root) = self.missing_root_containing(&wanted) else {
            return Err(err);
        };
        if dry_run {
            return Err(ReqError::new(
                ErrorKind::ProjectUnavailable,
                format!(
                    "project {} is unavailable: its root no longer exists; a rewind without --dry-run makes the directory again",
                    root.display()
                ),
            ));
        }
        recreate_root(&root)?;
        tracing::warn!(root = %root.display(), "made the deleted project root again for a rewind");
        self.project_for(&WirePath::from(root.as_path()))
    }

    /// The root of a watched (or stored) project that contains `path` and
    /// no longer exists.
    fn missing_root_containing(&self, path: &Path) -> Option<PathBuf> {
        let watched = self.registry.all().into_iter().map(|h| h.root.clone());
        let stored = self.registry.broken().into_iter().filter_map(|b| b.root);
        watched
            .chain(stored)
            .filter(|r| path.starts_with(r) && !r.exists())
            .max_by_key(|r| r.as_os_str().len())
    }

    /// Watches `root` (canonical): opens or creates its store, starts
    /// watching, then takes the baseline. Returns the handle and whether it
    /// was watched already (then nothing is scanned).
    pub fn watch(
        self: &Arc<Self>,
        root: &Path,
    ) -> ReqResult<(Arc<ProjectHandle>, Option<ckpt_core::ScanSummary>)> {
        let serial = lock(&self.watch_lock);
        if let Some(h) = self.registry.containing(root) {
            drop(serial);
            // Watched, but its root was deleted and is there again.
            h.check_root();
            let report = h.reattach_if_back()?;
            return Ok((h, report));
        }
        self.check_watchable(root)?;
        let id = project_id(root);
        let store_dir = self.projects_dir().join(&id);
        std::fs::create_dir_all(self.projects_dir()).map_err(|e| {
            ReqError::new(
                ErrorKind::Io,
                format!("creating {}: {e}", self.projects_dir().display()),
            )
        })?;
        let opened = std::panic::catch_unwind(|| {
            Project::open(
                &store_dir,
                root,
                core_options(&self.config.hooks, &self.freer),
            )
        });
        let project = match opened {
            Ok(r) => r?,
            Err(panic) => {
                return Err(ReqError::internal(format!(
                    "internal error in the capture engine: {}",
                    panic_message(panic.as_ref())
                )))
            }
        };
        let _ = std::fs::remove_file(self.unwatched_marker(&id));
        self.registry.remove_broken(&id);
        self.write_root_record(&id, root);
        let h = ProjectHandle::new(id, store_dir, project, self.config.hooks.pending_max());
        h.refresh_settings(&self.user_settings);
        self.registry.insert(Arc::clone(&h));
        // From here on a second request finds the project and waits for the
        // baseline on its lock; other projects need not wait for it.
        drop(serial);
        // Watch first, then scan: a change made during the scan is either
        // seen by it or reported by the watcher.
        self.watcher.add(&h);
        h.spawn_worker();
        let report = match h.call(|p| p.reconcile()) {
            Ok(r) => r,
            Err(e) => {
                self.forget(&h);
                return Err(e);
            }
        };
        tracing::info!(root = %root.display(), entries = report.entries, "watching");
        Ok((h, Some(report)))
    }

    fn check_watchable(&self, root: &Path) -> ReqResult<()> {
        if !root.is_dir() {
            return Err(ReqError::bad_request(format!(
                "{} is not a directory",
                root.display()
            )));
        }
        if root.parent().is_none() {
            return Err(ReqError::bad_request(
                "refusing to watch the filesystem root",
            ));
        }
        let data = std::fs::canonicalize(&self.config.data_dir)
            .unwrap_or_else(|_| self.config.data_dir.clone());
        if data.starts_with(root) || root.starts_with(&data) {
            return Err(ReqError::bad_request(format!(
                "refusing to watch {}: it overlaps ckpt's data directory {}",
                root.display(),
                data.display()
            )));
        }
        if let Some(inner) = self.registry.inside(root).first() {
            return Err(ReqError::bad_request(format!(
                "{} contains the watched project {}; unwatch that first",
                root.display(),
                inner.root.display()
            )));
        }
        Ok(())
    }

    /// Stops watching a project; keeps its store unless `drop_data`.
    pub fn unwatch(&self, h: &Arc<ProjectHandle>, drop_data: bool) -> ReqResult<()> {
        let _serial = lock(&self.watch_lock);
        self.forget(h);
        if drop_data {
            std::fs::remove_dir_all(&h.store_dir).map_err(|e| {
                ReqError::new(
                    ErrorKind::Io,
                    format!("removing {}: {e}", h.store_dir.display()),
                )
            })?;
            let _ = std::fs::remove_file(self.unwatched_marker(&h.id));
            let _ = std::fs::remove_file(self.root_record(&h.id));
        } else {
            self.write_unwatched_marker(&h.id, &h.root)?;
        }
        Ok(())
    }

    fn write_unwatched_marker(&self, id: &str, root: &Path) -> ReqResult<()> {
        let marker = self.unwatched_marker(id);
        let written = marker
            .parent()
            .map(std::fs::create_dir_all)
            .unwrap_or(Ok(()))
            .and_then(|()| std::fs::write(&marker, root.as_os_str().as_bytes()));
        written
            .map_err(|e| ReqError::new(ErrorKind::Io, format!("writing {}: {e}", marker.display())))
    }

    fn forget(&self, h: &Arc<ProjectHandle>) {
        self.watcher.remove(h);
        self.registry.remove(&h.id);
        h.stop_worker();
    }

    /// Resolves a client's absolute path to a project-relative one.
    pub fn rel_path(h: &ProjectHandle, p: &WirePath) -> ReqResult<RelPath> {
        let abs = normalize(p.as_path());
        let outside = || {
            ReqError::bad_request(format!(
                "{} is not inside the project {}",
                p.display(),
                h.root.display()
            ))
        };
        let rel = if abs.starts_with(&h.root) {
            RelPath::from_abs(&h.root, &abs)
        } else {
            // The client's cwd may be a symlinked spelling of the root:
            // canonicalize the longest existing ancestor.
            let mut existing = abs.clone();
            let mut rest = Vec::new();
            while !existing.exists() {
                let Some(name) = existing.file_name().map(|n| n.to_os_string()) else {
                    return Err(outside());
                };
                rest.push(name);
                if !existing.pop() {
                    return Err(outside());
                }
            }
            let mut canon = std::fs::canonicalize(&existing).map_err(|_| outside())?;
            for name in rest.into_iter().rev() {
                canon.push(name);
            }
            if !canon.starts_with(&h.root) {
                return Err(outside());
            }
            RelPath::from_abs(&h.root, &canon)
        };
        rel.map_err(|e| ReqError::bad_request(e.to_string()))
    }
}

/// Makes a project's deleted root directory again: only the root itself,
/// under a parent that exists and is still the directory it was (no
/// symlink in the way, since the recorded root is canonical).
fn recreate_root(root: &Path) -> ReqResult<()> {
    let refuse = |why: String| {
        ReqError::new(
            ErrorKind::ProjectUnavailable,
            format!(
                "project root {} no longer exists and is not made again: {why}",
                root.display()
            ),
        )
    };
    let parent = root
        .parent()
        .ok_or_else(|| refuse("it has no parent".into()))?;
    match std::fs::canonicalize(parent) {
        Ok(p) if p == parent && p.is_dir() => {}
        Ok(p) => return Err(refuse(format!("its parent now leads to {}", p.display()))),
        Err(e) => return Err(refuse(format!("its parent {}: {e}", parent.display()))),
    }
    match std::fs::create_dir(root) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && root.is_dir() => Ok(()),
        Err(e) => Err(ReqError::new(
            ErrorKind::Io,
            format!("making {}: {e}", root.display()),
        )),
    }
}

/// Removes `.` and resolves `..` lexically.
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Start-up for one project: finish an interrupted rewind, then scan.
fn recover_and_reconcile(h: &ProjectHandle) {
    match h.call(|p| p.recover()) {
        Ok(Some(r)) => {
            tracing::warn!(
                root = %h.root.display(), rewind = r.rewind_id, redo = r.redo, paths = r.paths,
                "finished an interrupted rewind"
            );
            h.note_recovered(recovery_note(&r));
        }
        Ok(None) => {}
        Err(e) => h.mark_degraded(DegradedReason::RecoveryFailed(e.to_string())),
    }
    // `watcher.add` has just walked the tree.
    h.reconcile_after_watching();
}

/// What `status` says once about a rewind finished at start-up.
fn recovery_note(r: &ckpt_core::RecoveryReport) -> String {
    let what = if r.redo { "redo" } else { "rewind" };
    let paths = if r.paths == 1 { "path" } else { "paths" };
    format!(
        "the daemon's start-up finished an interrupted {what} (rewind {} in the journal; \
         {} {paths} put as it planned): the daemon had stopped in the middle of it",
        r.rewind_id, r.paths
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_is_16_hex_digits_and_stable() {
        let a = project_id(Path::new("/home/u/app"));
        assert_eq!(a.len(), 16);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(a, project_id(Path::new("/home/u/app")));
        assert_ne!(a, project_id(Path::new("/home/u/app2")));
    }

    #[test]
    fn normalize_is_lexical() {
        assert_eq!(normalize(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
    }
}
