//! One file-system watcher for every project (our inotify loop on Linux,
//! `notify` elsewhere), with one non-recursive watch per captured directory,
//! subscribed to changes only (no open or read events). The event callback
//! does no IO: it maps each path to its project, forgets the watches of
//! directories that went away (the backend drops them itself), drops what
//! cannot matter (`.git`, default-excluded directories) and queues the rest;
//! each project's worker does the stat/read/hash work and adds watches for
//! new directories.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use ckpt_core::{is_internal_name, RelPath, DEFAULT_EXCLUDES};
use notify::event::{AccessKind, AccessMode, CreateKind, ModifyKind, RenameMode};
use notify::{Event, EventKind};
#[cfg(not(target_os = "linux"))]
use notify::{EventKindMask, RecommendedWatcher, RecursiveMode, Watcher as _};

use crate::barrier::cookie_project;
use crate::handle::{lock, ProjectHandle};
use crate::pathmap::PathMap;
use crate::registry::Registry;

/// The file that tags a cache or build directory (the core excludes such
/// directories; its walk applies the same test).
const CACHE_TAG: &str = "CACHEDIR.TAG";

/// The advice given when the kernel runs out of inotify watches.
pub const WATCH_LIMIT_ADVICE: &str = "inotify watch limit reached; raise fs.inotify.max_user_watches \
     (e.g. `sudo sysctl fs.inotify.max_user_watches=524288`); falling back to full scans at turn boundaries";

/// The file-system watcher, shared by the daemon and every project's worker
/// (which adds watches for directories that appear): our own inotify loop
/// on Linux, notify's recommended watcher elsewhere.
pub struct Backend {
    inner: Mutex<Option<Imp>>,
}

#[cfg(target_os = "linux")]
type Imp = crate::inotify::Inotify;
#[cfg(not(target_os = "linux"))]
type Imp = RecommendedWatcher;

impl Backend {
    fn start(router: Router) -> notify::Result<Backend> {
        let handler = move |res| router.handle(res);
        #[cfg(target_os = "linux")]
        let imp = crate::inotify::Inotify::new(handler).map_err(notify::Error::io)?;
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
    fn watch_dir(&self, abs: &Path) -> notify::Result<()> {
        match lock(&self.inner).as_mut() {
            #[cfg(target_os = "linux")]
            Some(w) => w.watch_dir(abs),
            #[cfg(not(target_os = "linux"))]
            Some(w) => w.watch(abs, RecursiveMode::NonRecursive),
            None => Err(notify::Error::generic("the file watcher has stopped")),
        }
    }

    fn unwatch_dir(&self, abs: &Path) {
        if let Some(w) = lock(&self.inner).as_mut() {
            #[cfg(target_os = "linux")]
            w.unwatch_dir(abs);
            #[cfg(not(target_os = "linux"))]
            if let Err(e) = w.unwatch(abs) {
                tracing::trace!(dir = %abs.display(), error = %e, "unwatch");
            }
        }
    }
}

/// One watcher for every project. Each *captured* directory gets its own
/// non-recursive watch: excluded trees (`.git`, `node_modules`, tagged build
/// directories, `.ckptignore` matches) cost no watch and send no events.
pub struct Watcher {
    backend: Option<Arc<Backend>>,
    /// Where barriers create their cookies; `None` if it cannot be watched.
    cookie_dir: Option<PathBuf>,
    fake_limit: bool,
}

impl Watcher {
    /// Creates the watcher; when the backend cannot start, every project is
    /// degraded and barriers scan.
    pub fn new(registry: Arc<Registry>, cookie_dir: PathBuf, fake_limit: bool) -> Watcher {
        let router = Router {
            registry,
            cookie_dir: cookie_dir.clone(),
        };
        let backend = match Backend::start(router) {
            Ok(b) => Some(Arc::new(b)),
            Err(e) => {
                tracing::error!(error = %e, "cannot start the file watcher; capture falls back to scans");
                None
            }
        };
        let cookie_dir = backend
            .as_ref()
            .and_then(|b| match prepare_cookie_dir(b, &cookie_dir) {
                Ok(()) => Some(cookie_dir),
                Err(e) => {
                    tracing::error!(dir = %cookie_dir.display(), error = %e,
                        "cannot watch the cookie directory; turn boundaries fall back to scans");
                    None
                }
            });
        Watcher {
            backend,
            cookie_dir,
            fake_limit,
        }
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
            h.mark_degraded(WATCH_LIMIT_ADVICE.to_string(), true);
            return;
        }
        let Some(backend) = &self.backend else {
            h.mark_degraded("the file watcher could not be started".into(), true);
            return;
        };
        lock(&h.watches).backend = Some(Arc::clone(backend));
        let root = h.root.clone();
        if let Err(e) = add_dir(h, backend, &root, Again::No) {
            h.mark_degraded(describe(&e), true);
            return;
        }
        watch_below(h, backend, &root, Again::No);
    }

    /// Drops every watch of a project.
    pub fn remove(&self, h: &ProjectHandle) {
        let (backend, dirs) = {
            let mut w = lock(&h.watches);
            (w.backend.take(), w.dirs.take_all())
        };
        if let Some(backend) = backend {
            for (dir, ()) in &dirs {
                backend.unwatch_dir(dir);
            }
        }
    }

    /// Stops the backend (its thread ends).
    pub fn shutdown(&self) {
        if let Some(b) = &self.backend {
            lock(&b.inner).take();
        }
    }
}

/// Creates the cookie directory (private), empties it of cookies a killed
/// daemon left, and watches it.
fn prepare_cookie_dir(backend: &Backend, dir: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    for e in std::fs::read_dir(dir)?.flatten() {
        let _ = std::fs::remove_file(e.path());
    }
    backend.watch_dir(dir)?;
    Ok(())
}

/// The directories of a project that have a watch, and the backend to add
/// more with. Never held while calling the backend: the backend's thread
/// runs the router, which updates `dirs`.
#[derive(Default)]
pub struct DirWatches {
    pub backend: Option<Arc<Backend>>,
    /// Absolute paths, root included.
    pub dirs: PathMap<()>,
}

/// Adds one directory's watch unless it has one. A vanished directory is
/// not an error (it is gone, nothing to watch).
fn add_dir(h: &ProjectHandle, backend: &Backend, abs: &Path, again: Again) -> notify::Result<bool> {
    let known = lock(&h.watches).dirs.insert(abs, ()).is_some();
    if known && again == Again::No {
        return Ok(false);
    }
    match backend.watch_dir(abs) {
        Ok(()) => Ok(!known),
        Err(e) => {
            lock(&h.watches).dirs.remove(abs);
            match &e.kind {
                notify::ErrorKind::PathNotFound => Ok(false),
                notify::ErrorKind::Io(io)
                    if matches!(
                        io.raw_os_error(),
                        Some(libc::ENOENT | libc::ENOTDIR | libc::EACCES | libc::ELOOP)
                    ) =>
                {
                    tracing::debug!(dir = %abs.display(), error = %e, "not watched");
                    Ok(false)
                }
                _ => Err(e),
            }
        }
    }
}

/// Watches every captured directory below `top` (already watched): each
/// one is watched before it is listed, so a subdirectory made meanwhile
/// either is listed or sends its own create event. Symlinks are never
/// followed; `Project::is_excluded` decides, plus the `CACHEDIR.TAG` test
/// the core's walk applies. Returns how many watches were added; a watch
/// limit degrades the project and stops.
/// Whether a directory already in the watch table is watched again.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Again {
    No,
    /// After lost events: the table is keyed by path, and the directory at
    /// a path may have been replaced unseen (its watch went with the old
    /// one). Watching an inode again only returns its watch.
    Yes,
}

pub fn watch_below(h: &ProjectHandle, backend: &Backend, top: &Path, again: Again) -> usize {
    let mut added = 0;
    let mut stack = vec![top.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut children: Vec<(PathBuf, RelPath)> = Vec::new();
        for entry in entries.flatten() {
            if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let abs = entry.path();
            if let Ok(rel) = RelPath::from_abs(&h.root, &abs) {
                children.push((abs, rel));
            }
        }
        if children.is_empty() {
            continue;
        }
        let keep = h.call(|p| {
            Ok(children
                .iter()
                .map(|(_, rel)| !p.is_excluded(rel, true))
                .collect::<Vec<bool>>())
        });
        let Ok(keep) = keep else {
            continue;
        };
        for ((abs, _), keep) in children.into_iter().zip(keep) {
            if !keep || abs.join(CACHE_TAG).is_file() {
                continue;
            }
            match add_dir(h, backend, &abs, again) {
                Ok(true) => added += 1,
                Ok(false) => {}
                Err(e) => {
                    watch_failed(h, &e);
                    return added;
                }
            }
            stack.push(abs);
        }
    }
    added
}

/// After the worker checked `paths`: gives every captured directory among
/// them (new ones, renamed-in ones, whose watches the router dropped) a
/// watch, with its subdirectories, and drops the watches of directories
/// that became excluded (a `CACHEDIR.TAG` appeared). Returns the
/// directories that got new watches: files made in them before the watch
/// existed are found by rechecking them at the next cookie.
pub fn sync_dirs(h: &ProjectHandle, paths: &[RelPath]) -> Vec<RelPath> {
    let Some(backend) = lock(&h.watches).backend.clone() else {
        return Vec::new();
    };
    if scans_only(h) {
        return Vec::new();
    }
    let mut fresh = Vec::new();
    for rel in paths {
        let abs = h.root.join(rel.as_path());
        if rel.file_name() == CACHE_TAG {
            if let Some(dir) = rel.parent() {
                let dir_abs = h.root.join(dir.as_path());
                let watched = lock(&h.watches).dirs.contains(&dir_abs);
                if watched && h.call(|p| Ok(p.is_excluded(&dir, true))).unwrap_or(false) {
                    let gone = lock(&h.watches).dirs.remove_below(&dir_abs);
                    for (d, ()) in gone.iter().rev() {
                        backend.unwatch_dir(d);
                    }
                }
            }
            continue;
        }
        if lock(&h.watches).dirs.contains(&abs) {
            continue;
        }
        if !std::fs::symlink_metadata(&abs).is_ok_and(|m| m.is_dir()) {
            continue;
        }
        // Only below a watched parent: an excluded or vanished parent's
        // children stay unwatched.
        let parent_watched = abs
            .parent()
            .is_some_and(|p| lock(&h.watches).dirs.contains(p));
        if !parent_watched
            || abs.join(CACHE_TAG).is_file()
            || h.call(|p| Ok(p.is_excluded(rel, true))).unwrap_or(true)
        {
            continue;
        }
        match add_dir(h, &backend, &abs, Again::No) {
            Ok(true) => {}
            Ok(false) => continue,
            Err(e) => {
                watch_failed(h, &e);
                break;
            }
        }
        watch_below(h, &backend, &abs, Again::No);
        fresh.push(rel.clone());
    }
    fresh
}

/// A watch could not be added (the watch limit, mostly): capture relies on
/// full scans from now on. Already persistently degraded: nothing more to
/// say (and no new scan to schedule, or scans and retries would loop).
fn watch_failed(h: &ProjectHandle, e: &notify::Error) {
    if h.degraded().is_some_and(|d| d.persistent) {
        return;
    }
    h.mark_degraded(describe(e), true);
}

/// Whether adding watches is pointless: the project already relies on scans.
fn scans_only(h: &ProjectHandle) -> bool {
    h.degraded().is_some_and(|d| d.persistent)
}

/// Before a full scan: watches whatever directory lacks a watch (events
/// lost in an overflow may have hidden new directories).
pub fn resync(h: &ProjectHandle) {
    let Some(backend) = lock(&h.watches).backend.clone() else {
        return;
    };
    if scans_only(h) {
        return;
    }
    let root = h.root.clone();
    if !lock(&h.watches).dirs.contains(&root) {
        return;
    }
    let added = watch_below(h, &backend, &root, Again::Yes);
    if added > 0 {
        tracing::debug!(root = %root.display(), added, "watches added after a full scan");
    }
}

fn describe(e: &notify::Error) -> String {
    match &e.kind {
        notify::ErrorKind::MaxFilesWatch => WATCH_LIMIT_ADVICE.to_string(),
        notify::ErrorKind::Io(io) if io.raw_os_error() == Some(libc::EMFILE) => {
            "inotify instance limit reached; raise fs.inotify.max_user_instances; \
             falling back to full scans at turn boundaries"
                .to_string()
        }
        _ => format!("file watcher error: {e}; falling back to full scans at turn boundaries"),
    }
}

struct Router {
    registry: Arc<Registry>,
    cookie_dir: PathBuf,
}

impl Router {
    fn handle(&self, res: notify::Result<Event>) {
        let event = match res {
            Ok(ev) => ev,
            Err(e) => {
                let reason = describe(&e);
                let targets = self.targets(&e.paths);
                for h in targets {
                    h.mark_degraded(reason.clone(), true);
                }
                return;
            }
        };
        if event.need_rescan() {
            for h in self.targets(&event.paths) {
                h.mark_degraded(
                    "the file watcher lost events (queue overflow); rescanning".into(),
                    false,
                );
            }
        }
        let recheck = match event.kind {
            EventKind::Access(AccessKind::Close(AccessMode::Write)) => false,
            EventKind::Access(_) => return,
            EventKind::Create(CreateKind::Folder) => true,
            EventKind::Modify(ModifyKind::Name(RenameMode::To | RenameMode::Both)) => true,
            _ => false,
        };
        for path in &event.paths {
            let bytes = path.as_os_str().as_bytes();
            let (dir, name) = match bytes.iter().rposition(|&b| b == b'/') {
                Some(i) => (&bytes[..i], OsStr::from_bytes(&bytes[i + 1..])),
                None => (&b""[..], path.as_os_str()),
            };
            if dir == self.cookie_dir.as_os_str().as_bytes() {
                if let EventKind::Create(_) = &event.kind {
                    if let Some(h) = cookie_project(name).and_then(|id| self.registry.get(id)) {
                        h.cookie_seen(name);
                    }
                }
                continue;
            }
            // Restore temp files and spares (and cookies of older daemons)
            // are never captured: dropped first, as half of a rewind's
            // events name them.
            if is_internal_name(name.as_bytes()) {
                continue;
            }
            self.route(path, recheck, &event.kind);
        }
    }

    /// The projects an event concerns: those its paths fall in, or all.
    fn targets(&self, paths: &[std::path::PathBuf]) -> Vec<Arc<ProjectHandle>> {
        if paths.is_empty() {
            return self.registry.all();
        }
        let mut out: Vec<Arc<ProjectHandle>> = Vec::new();
        for p in paths {
            if let Some(h) = self.registry.containing(p) {
                if !out.iter().any(|o| o.id == h.id) {
                    out.push(h);
                }
            }
        }
        out
    }

    fn route(&self, path: &Path, recheck: bool, kind: &EventKind) {
        let Some((h, rel)) = self.registry.containing_rel(path) else {
            return;
        };
        if !rel.is_empty()
            && matches!(
                kind,
                EventKind::Remove(_)
                    | EventKind::Create(CreateKind::Folder)
                    | EventKind::Modify(ModifyKind::Name(
                        RenameMode::From | RenameMode::To | RenameMode::Any
                    ))
            )
        {
            // The backend drops the watches of a directory that went away (and
            // of everything below it); one that appeared, or was renamed
            // in, is (re)watched by the worker with its subdirectories.
            lock(&h.watches).dirs.remove_below(path);
        }
        if rel.is_empty() {
            if matches!(
                kind,
                EventKind::Remove(_) | EventKind::Modify(ModifyKind::Name(_))
            ) {
                h.mark_degraded(
                    format!("the project root {} was removed or moved", h.root.display()),
                    true,
                );
            }
            return;
        }
        let mut names = rel.split(|&b| b == b'/').peekable();
        while let Some(name) = names.next() {
            if name == b".git" {
                return;
            }
            // A path *named* like an excluded directory is still a file we
            // capture; only components above it exclude it.
            if names.peek().is_some() && DEFAULT_EXCLUDES.iter().any(|e| e.as_bytes() == name) {
                return;
            }
        }
        if let Ok(rel) = RelPath::new(rel) {
            h.enqueue(rel, recheck);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use notify::event::{AccessKind, Flag, RemoveKind};

    fn setup() -> (tempfile::TempDir, Arc<Registry>, Arc<ProjectHandle>, Router) {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("root");
        std::fs::create_dir_all(&root).unwrap();
        let root = root.canonicalize().unwrap();
        let store = t.path().join("store");
        let p = ckpt_core::Project::open(&store, &root, ckpt_core::Options::default()).unwrap();
        let h = ProjectHandle::new("id".into(), store, p);
        let registry = Arc::new(Registry::default());
        registry.insert(Arc::clone(&h));
        let router = Router {
            registry: Arc::clone(&registry),
            cookie_dir: t.path().join("cookies"),
        };
        (t, registry, h, router)
    }

    fn pending(h: &ProjectHandle) -> Vec<String> {
        let mut v: Vec<String> = lock(&h.queue).pending.iter().map(|p| p.display()).collect();
        v.sort();
        v
    }

    #[test]
    fn queues_content_events_and_drops_the_rest() {
        let (_t, _r, h, router) = setup();
        let ev = |kind: EventKind, rel: &str| Ok(Event::new(kind).add_path(h.root.join(rel)));
        let modify = EventKind::Modify(ModifyKind::Any);
        router.handle(ev(modify, "src/a.rs"));
        router.handle(ev(
            EventKind::Access(AccessKind::Close(AccessMode::Write)),
            "w",
        ));
        router.handle(ev(
            EventKind::Access(AccessKind::Open(AccessMode::Any)),
            "opened",
        ));
        router.handle(ev(
            EventKind::Access(AccessKind::Close(AccessMode::Read)),
            "read",
        ));
        router.handle(ev(modify, ".git/index"));
        router.handle(ev(modify, "sub/.git/HEAD"));
        router.handle(ev(modify, "node_modules/x/index.js"));
        router.handle(ev(modify, "node_modules"));
        router.handle(ev(modify, ".ckpt-tmp-123"));
        router.handle(ev(EventKind::Create(CreateKind::Folder), "newdir"));
        // Outside every project.
        router.handle(Ok(Event::new(modify).add_path("/elsewhere/file".into())));
        assert_eq!(pending(&h), ["newdir", "node_modules", "src/a.rs", "w"]);
        assert_eq!(
            lock(&h.queue).recheck.len(),
            1,
            "new dirs are checked again at the next cookie"
        );
    }

    #[test]
    fn directories_that_go_or_come_lose_their_recorded_watches() {
        let (_t, _r, h, router) = setup();
        let names = ["", "a", "a/b", "a/b/c", "a-b", "ab", "c", "d", "e"];
        for n in names {
            lock(&h.watches).dirs.insert(&h.root.join(n), ());
        }
        let ev = |kind: EventKind, rel: &str| Ok(Event::new(kind).add_path(h.root.join(rel)));
        router.handle(ev(EventKind::Remove(RemoveKind::Folder), "a"));
        router.handle(ev(EventKind::Create(CreateKind::Folder), "c"));
        router.handle(ev(
            EventKind::Modify(ModifyKind::Name(RenameMode::From)),
            "d",
        ));
        router.handle(ev(EventKind::Modify(ModifyKind::Name(RenameMode::To)), "e"));
        router.handle(ev(EventKind::Modify(ModifyKind::Any), "ab"));
        router.handle(ev(EventKind::Create(CreateKind::File), "a-b"));
        let left = lock(&h.watches).dirs.paths();
        let expected: Vec<PathBuf> = ["", "a-b", "ab"].iter().map(|n| h.root.join(n)).collect();
        assert_eq!(left, expected);
    }

    #[test]
    fn cookies_mark_the_queue_position_and_release_rechecks() {
        let (t, _r, h, router) = setup();
        let cookies = t.path().join("cookies");
        let name = crate::barrier::cookie_name(&h.id, 0);
        lock(&h.queue).cookies_expected.insert(name.clone().into());
        // The same name in the project is a file like any other.
        router.handle(Ok(
            Event::new(EventKind::Create(CreateKind::File)).add_path(h.root.join(&name))
        ));
        assert!(lock(&h.queue).cookies_seen.is_empty());
        lock(&h.queue).pending.clear();
        router.handle(Ok(
            Event::new(EventKind::Create(CreateKind::Folder)).add_path(h.root.join("d"))
        ));
        lock(&h.queue).pending.clear();
        router.handle(Ok(
            Event::new(EventKind::Create(CreateKind::File)).add_path(cookies.join(&name))
        ));
        let q = lock(&h.queue);
        assert_eq!(
            q.cookies_seen.get(std::ffi::OsStr::new(&name)),
            Some(&q.enqueued)
        );
        assert!(
            q.deep.iter().any(|p| p.display() == "d"),
            "recheck queued before the cookie"
        );
        assert!(q.recheck.is_empty());
        drop(q);
        // An unexpected cookie (a late delete, an unknown project) is ignored.
        router.handle(Ok(
            Event::new(EventKind::Remove(RemoveKind::File)).add_path(cookies.join(&name))
        ));
        router.handle(Ok(Event::new(EventKind::Create(CreateKind::File))
            .add_path(
                cookies.join(crate::barrier::cookie_name("0123456789abcdef", 7)),
            )));
        assert!(lock(&h.queue).cookies_seen.len() == 1);
        assert!(pending(&h).is_empty(), "cookies are never project content");
    }

    #[test]
    fn overflow_degrades_until_a_full_scan_and_watch_limit_stays() {
        let (_t, _r, h, router) = setup();
        router.handle(Ok(Event::new(EventKind::Other).set_flag(Flag::Rescan)));
        let d = h.degraded().expect("degraded after an overflow");
        assert!(!d.persistent && d.reason.contains("lost events"), "{d:?}");
        assert!(lock(&h.queue).reconcile_needed, "a full scan is scheduled");
        assert!(h.reconcile_now());
        assert!(h.degraded().is_none(), "a successful scan ends it");

        let err =
            notify::Error::new(notify::ErrorKind::MaxFilesWatch).add_path(h.root.join("deep"));
        router.handle(Err(err));
        let d = h.degraded().expect("degraded at the watch limit");
        assert!(
            d.persistent && d.reason.contains("fs.inotify.max_user_watches"),
            "{d:?}"
        );
        assert!(h.reconcile_now());
        assert!(
            h.degraded().is_some(),
            "a scan does not bring the missing watches back"
        );
    }
}
