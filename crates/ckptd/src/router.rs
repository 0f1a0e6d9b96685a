//! The event router: hands each backend event to the project it concerns.
//! It runs on the backend's thread and does no IO: it maps each path to
//! its project, forgets the watches of directories that went away (the
//! backend drops them itself), drops what cannot matter (`.git`, what is
//! below default-excluded directories, ckpt's own files), passes cookies to
//! their project, and queues the rest; each project's worker does the
//! stat/read/hash work.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use ckpt_core::names::{is_excluded_by_default, is_internal_name};
use ckpt_core::RelPath;
use notify::event::{AccessKind, AccessMode, CreateKind, ModifyKind, RenameMode};

use crate::backend::{self, Event, EventKind};
use crate::cookie;
use crate::mutex::lock;
use crate::project::{DegradedReason, ProjectHandle};
use crate::registry::Registry;

pub struct Router {
    registry: Arc<Registry>,
    cookie_dir: PathBuf,
    /// Projects whose worker or barriers are to be woken once the events
    /// read are handed on ([`Router::wake`]).
    to_wake: Mutex<Vec<Arc<ProjectHandle>>>,
}

impl Router {
    pub fn new(registry: Arc<Registry>, cookie_dir: PathBuf) -> Router {
        Router {
            registry,
            cookie_dir,
            to_wake: Mutex::new(Vec::new()),
        }
    }

    /// Wakes the workers and barriers of the projects the events handed
    /// on since the last call concern. Called by the backend once it has
    /// let its queue go: a thread woken while the reader holds it may take
    /// the reader's core, and every barrier waiting to read stalls behind
    /// it.
    pub fn wake(&self) {
        let mut to_wake = std::mem::take(&mut *lock(&self.to_wake));
        to_wake.sort_unstable_by_key(Arc::as_ptr);
        to_wake.dedup_by(|a, b| Arc::ptr_eq(a, b));
        for h in to_wake {
            h.wake();
        }
    }

    fn wake_later(&self, h: Arc<ProjectHandle>) {
        lock(&self.to_wake).push(h);
    }

    pub fn handle(&self, res: backend::Result<Event>) {
        let event = match res {
            Ok(ev) => ev,
            Err(e) => {
                let reason = DegradedReason::Watcher(backend::describe(&e));
                let targets = self.targets(&e.paths);
                for h in targets {
                    h.mark_degraded(reason.clone());
                }
                return;
            }
        };
        if event.need_rescan() {
            self.rescan(&event.paths);
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
                    if let Some(h) = cookie::project_of(name).and_then(|id| self.registry.get(id)) {
                        if h.cookie_arrived(name) {
                            self.wake_later(h);
                        }
                    }
                }
                continue;
            }
            // Restore temp files and spares are never captured: dropped
            // first, as half of a rewind's events name them.
            if is_internal_name(name.as_bytes()) {
                continue;
            }
            self.route(path, recheck, &event.kind);
        }
    }

    /// Events were lost: below the paths named (FSEvents' MustScanSubDirs),
    /// that subtree is checked; with no path (an inotify queue overflow), or
    /// at a project's root, the project is scanned whole.
    fn rescan(&self, paths: &[PathBuf]) {
        if paths.is_empty() {
            for h in self.registry.all() {
                h.mark_degraded(DegradedReason::LostEvents);
            }
            return;
        }
        for p in paths {
            let Some((h, rel)) = self.registry.containing_rel(p) else {
                continue;
            };
            if is_excluded_by_default(rel) {
                continue;
            }
            match RelPath::new(rel) {
                Ok(rel) => h.rescan_below(rel),
                // The root itself.
                Err(_) => h.mark_degraded(DegradedReason::LostEvents),
            }
        }
    }

    /// The projects an event concerns: those its paths fall in, or all.
    fn targets(&self, paths: &[PathBuf]) -> Vec<Arc<ProjectHandle>> {
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
            h.forget_watches_below(path);
        }
        if rel.is_empty() {
            if matches!(
                kind,
                EventKind::Remove(_) | EventKind::Modify(ModifyKind::Name(_))
            ) {
                // Whatever is at the root's path from now on is another
                // directory (attached again once there); an event about an
                // old root that was already replaced changes nothing.
                h.check_root();
            }
            return;
        }
        if is_excluded_by_default(rel) {
            return;
        }
        if let Ok(rel) = RelPath::new(rel) {
            if h.enqueue(rel, recheck) {
                self.wake_later(h);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::WatchFailure;
    use notify::event::{AccessKind, Flag, RemoveKind};

    fn setup() -> (tempfile::TempDir, Arc<Registry>, Arc<ProjectHandle>, Router) {
        let t = tempfile::tempdir().unwrap();
        let h = crate::project::for_test(t.path());
        let registry = Arc::new(Registry::default());
        registry.insert(Arc::clone(&h));
        let router = Router::new(Arc::clone(&registry), t.path().join("cookies"));
        (t, registry, h, router)
    }

    fn pending(h: &ProjectHandle) -> Vec<String> {
        let mut v: Vec<String> = h.queue().pending.iter().map(|p| p.display()).collect();
        v.sort();
        v
    }

    /// The worker an event calls for is woken once the read is over
    /// (`wake`), not while the reader holds the watcher's queue.
    #[test]
    fn wakes_the_worker_only_once_the_read_is_over() {
        let (_t, _r, h, router) = setup();
        h.spawn_worker();
        std::fs::write(h.root.join("f"), "1").unwrap();
        // Long enough for the worker to wait for paths, unwoken.
        std::thread::sleep(std::time::Duration::from_millis(50));
        let modify = EventKind::Modify(ModifyKind::Any);
        router.handle(Ok(Event::new(modify).add_path(h.root.join("f"))));
        let seq = h.queue().enqueued;
        std::thread::sleep(std::time::Duration::from_millis(200));
        assert!(h.queue().processed < seq, "woken before the read was over");
        router.wake();
        // Polled: a barrier's wait would check the path itself.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while h.queue().processed < seq {
            assert!(
                std::time::Instant::now() < deadline,
                "the worker was not woken"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        h.stop_worker();
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
            h.queue().recheck.len(),
            1,
            "new dirs are checked again at the next cookie"
        );
    }

    #[test]
    fn directories_that_go_or_come_lose_their_recorded_watches() {
        let (_t, _r, h, router) = setup();
        let names = ["", "a", "a/b", "a/b/c", "a-b", "ab", "c", "d", "e"];
        for n in names {
            h.note_watched(&h.root.join(n));
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
        let left = h.watched_dirs();
        let expected: Vec<PathBuf> = ["", "a-b", "ab"].iter().map(|n| h.root.join(n)).collect();
        assert_eq!(left, expected);
    }

    #[test]
    fn cookies_mark_the_queue_position_and_release_rechecks() {
        let (t, _r, h, router) = setup();
        let cookies = t.path().join("cookies");
        let name = cookie::name(&h.id, 0);
        h.queue().cookies_expected.insert(name.clone());
        // The same name in the project is a file like any other.
        router.handle(Ok(
            Event::new(EventKind::Create(CreateKind::File)).add_path(h.root.join(&name))
        ));
        assert!(h.queue().cookies_seen.is_empty());
        h.queue().pending.clear();
        router.handle(Ok(
            Event::new(EventKind::Create(CreateKind::Folder)).add_path(h.root.join("d"))
        ));
        h.queue().pending.clear();
        router.handle(Ok(
            Event::new(EventKind::Create(CreateKind::File)).add_path(cookies.join(&name))
        ));
        let q = h.queue();
        assert_eq!(
            q.cookies_seen.get(std::ffi::OsStr::new(&name)),
            Some(&q.enqueued)
        );
        assert!(
            q.released.iter().any(|p| p.display() == "d"),
            "recheck queued before the cookie"
        );
        assert!(q.recheck.is_empty());
        drop(q);
        // An unexpected cookie (a late delete, an unknown project) is ignored.
        router.handle(Ok(
            Event::new(EventKind::Remove(RemoveKind::File)).add_path(cookies.join(&name))
        ));
        router.handle(Ok(Event::new(EventKind::Create(CreateKind::File))
            .add_path(cookies.join(cookie::name("0123456789abcdef", 7)))));
        assert!(h.queue().cookies_seen.len() == 1);
        assert!(pending(&h).is_empty(), "cookies are never project content");
    }

    #[test]
    fn a_rescan_for_a_subtree_checks_it_and_one_for_the_root_scans_all() {
        let (_t, _r, h, router) = setup();
        let rescan = |rel: &str| {
            Ok(Event::new(EventKind::Other)
                .set_flag(Flag::Rescan)
                .add_path(h.root.join(rel)))
        };
        router.handle(rescan("src/deep"));
        router.handle(rescan("node_modules/x"));
        let listed: Vec<String> = h.queue().rescan.iter().map(|p| p.display()).collect();
        assert_eq!(listed, ["src/deep"]);
        assert!(
            h.degraded().is_none(),
            "one subtree is no reason to scan all"
        );
        router.handle(Ok(Event::new(EventKind::Other)
            .set_flag(Flag::Rescan)
            .add_path(h.root.clone())));
        assert_eq!(h.degraded(), Some(DegradedReason::LostEvents));
    }

    #[test]
    fn overflow_degrades_until_a_full_scan_and_watch_limit_stays() {
        let (_t, _r, h, router) = setup();
        router.handle(Ok(Event::new(EventKind::Other).set_flag(Flag::Rescan)));
        let d = h.degraded().expect("degraded after an overflow");
        assert_eq!(d, DegradedReason::LostEvents);
        assert!(!d.persistent());
        assert!(h.queue().reconcile_needed, "a full scan is scheduled");
        assert!(h.reconcile_now());
        assert!(h.degraded().is_none(), "a successful scan ends it");

        let err =
            notify::Error::new(notify::ErrorKind::MaxFilesWatch).add_path(h.root.join("deep"));
        router.handle(Err(err));
        let d = h.degraded().expect("degraded at the watch limit");
        assert_eq!(d, DegradedReason::Watcher(WatchFailure::WatchLimit));
        assert!(d.persistent());
        assert!(h.reconcile_now());
        assert!(
            h.degraded().is_some(),
            "a scan does not bring the missing watches back"
        );
    }
}
