//! One `notify` watcher for every project. The event callback does no IO: it
//! maps each path to its project, drops what cannot matter (opens and reads,
//! `.git`, default-excluded directories) and queues the rest; each
//! project's worker does the stat/read/hash work.

use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::{Arc, Mutex};

use ckpt_core::{is_internal_name, RelPath, COOKIE_PREFIX, DEFAULT_EXCLUDES};
use notify::event::{AccessKind, AccessMode, CreateKind, ModifyKind, RenameMode};
use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher as _};

use crate::handle::{lock, ProjectHandle};
use crate::registry::Registry;

/// The advice given when the kernel runs out of inotify watches.
pub const WATCH_LIMIT_ADVICE: &str = "inotify watch limit reached; raise fs.inotify.max_user_watches \
     (e.g. `sudo sysctl fs.inotify.max_user_watches=524288`); falling back to full scans at turn boundaries";

pub struct Watcher {
    inner: Mutex<Option<RecommendedWatcher>>,
    fake_limit: bool,
}

impl Watcher {
    /// Creates the watcher; when the backend cannot start, every project is
    /// degraded and barriers scan.
    pub fn new(registry: Arc<Registry>, fake_limit: bool) -> Watcher {
        let router = Router { registry };
        let config = notify::Config::default().with_follow_symlinks(false);
        let inner = match RecommendedWatcher::new(move |res| router.handle(res), config) {
            Ok(w) => Some(w),
            Err(e) => {
                tracing::error!(error = %e, "cannot start the file watcher; capture falls back to scans");
                None
            }
        };
        Watcher {
            inner: Mutex::new(inner),
            fake_limit,
        }
    }

    /// Watches a project's tree (the project must already be in the
    /// registry, so early events find it). Failures degrade the project.
    pub fn add(&self, h: &ProjectHandle) {
        if self.fake_limit {
            h.mark_degraded(WATCH_LIMIT_ADVICE.to_string(), true);
            return;
        }
        let mut guard = lock(&self.inner);
        let Some(w) = guard.as_mut() else {
            h.mark_degraded("the file watcher could not be started".into(), true);
            return;
        };
        if let Err(e) = w.watch(&h.root, RecursiveMode::Recursive) {
            drop(guard);
            h.mark_degraded(describe(&e), true);
        }
    }

    pub fn remove(&self, root: &Path) {
        if let Some(w) = lock(&self.inner).as_mut() {
            if let Err(e) = w.unwatch(root) {
                tracing::debug!(root = %root.display(), error = %e, "unwatch");
            }
        }
    }

    /// Stops the backend (its thread ends).
    pub fn shutdown(&self) {
        lock(&self.inner).take();
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
            // The daemon's own reads cause these; they change nothing.
            EventKind::Access(AccessKind::Close(AccessMode::Write)) => false,
            EventKind::Access(_) => return,
            EventKind::Create(CreateKind::Folder) => true,
            EventKind::Modify(ModifyKind::Name(RenameMode::To | RenameMode::Both)) => true,
            _ => false,
        };
        for path in &event.paths {
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
        let Some(h) = self.registry.containing(path) else {
            return;
        };
        let Ok(rel) = path.strip_prefix(&h.root) else {
            return;
        };
        if rel.as_os_str().is_empty() {
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
        let mut components = rel.components().peekable();
        let mut depth = 0;
        while let Some(c) = components.next() {
            depth += 1;
            let name = c.as_os_str();
            if name == ".git" {
                return;
            }
            let is_last = components.peek().is_none();
            // A path *named* like an excluded directory is still a file we
            // capture; only components above it exclude it.
            if !is_last && name.to_str().is_some_and(|n| DEFAULT_EXCLUDES.contains(&n)) {
                return;
            }
            if is_last && is_internal_name(name.as_bytes()) {
                // Our own cookies and restore temp files: never captured.
                if depth == 1 && name.as_bytes().starts_with(COOKIE_PREFIX.as_bytes()) {
                    h.cookie_seen(name);
                }
                return;
            }
        }
        if let Ok(rel) = RelPath::from_abs(&h.root, path) {
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
    fn cookies_mark_the_queue_position_and_release_rechecks() {
        let (_t, _r, h, router) = setup();
        let name = format!("{COOKIE_PREFIX}1-0");
        lock(&h.queue).cookies_expected.insert(name.clone().into());
        router.handle(Ok(
            Event::new(EventKind::Create(CreateKind::Folder)).add_path(h.root.join("d"))
        ));
        lock(&h.queue).pending.clear();
        router.handle(Ok(
            Event::new(EventKind::Create(CreateKind::File)).add_path(h.root.join(&name))
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
        // An unexpected cookie (another daemon's, or a late delete) is ignored.
        router.handle(Ok(
            Event::new(EventKind::Remove(RemoveKind::File)).add_path(h.root.join(&name))
        ));
        assert!(lock(&h.queue).cookies_seen.len() == 1);
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
