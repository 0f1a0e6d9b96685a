//! The Linux backend: inotify (the `inotify` crate), one non-recursive watch
//! per directory, with the watched paths in a [`PathMap`] so that
//! forgetting a directory and everything below it is a range, not a scan of
//! every watch (notify's backend scans them all: 30 s to unwatch a project
//! of ~12k directories). Events go out as notify events, in the kernel's
//! order.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, TryLockError};
use std::time::{Duration, Instant};

use inotify::{EventMask, WatchDescriptor, WatchMask, Watches};
use notify::event::{
    AccessKind, AccessMode, CreateKind, DataChange, Flag, MetadataKind, ModifyKind, RemoveKind,
    RenameMode,
};
use notify::{Event, EventKind};

use crate::mutex::lock;
use crate::pathmap::PathMap;

/// Changes only: no open, read or close-without-write events (every read
/// in a watched tree would wake us). Close-after-write stays: it is the only
/// event an mmap write produces. Symlinks are never followed.
const MASK: WatchMask = WatchMask::CREATE
    .union(WatchMask::DELETE)
    .union(WatchMask::MODIFY)
    .union(WatchMask::ATTRIB)
    .union(WatchMask::CLOSE_WRITE)
    .union(WatchMask::MOVED_FROM)
    .union(WatchMask::MOVED_TO)
    .union(WatchMask::DELETE_SELF)
    .union(WatchMask::MOVE_SELF)
    .union(WatchMask::DONT_FOLLOW)
    .union(WatchMask::ONLYDIR);

/// The watches, by path and by descriptor.
struct Map {
    watches: Watches,
    by_path: PathMap<WatchDescriptor>,
    by_wd: HashMap<WatchDescriptor, PathBuf>,
}

impl Map {
    fn insert(&mut self, path: PathBuf, wd: WatchDescriptor) {
        // The kernel gives a directory watched under another name (moved
        // while watched) the same descriptor: that old name is stale.
        // A path watched again after lost events may name a new directory:
        // the old one's descriptor is gone with it.
        if let Some(stale) = self.by_path.insert(&path, wd.clone()) {
            if stale != wd && self.by_wd.get(&stale) == Some(&path) {
                self.by_wd.remove(&stale);
            }
        }
        if let Some(old) = self.by_wd.insert(wd, path.clone()) {
            if old != path {
                self.by_path.remove(&old);
            }
        }
    }

    /// Drops a watch we no longer want.
    fn forget(&mut self, wd: WatchDescriptor) {
        self.by_wd.remove(&wd);
        // Gone already (deleted, or its file system unmounted): fine.
        let _ = self.watches.remove(wd);
    }

    /// Drops the watches of `dir` and everything below it, moved away: the
    /// kernel keeps them, and they would report under the old names.
    fn drop_below(&mut self, dir: &Path) {
        for (_, wd) in self.by_path.remove_below(dir) {
            self.forget(wd);
        }
    }
}

pub struct Inotify {
    map: Arc<Mutex<Map>>,
    reader: QueueReader,
    stop: Arc<AtomicBool>,
    /// Wakes the event thread to stop.
    wake: OwnedFd,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Reads the kernel's queue and hands each event on, in order: on the
/// event thread, or on a barrier's thread that would otherwise wait for it
/// (see [`QueueReader`]). One at a time, so the order holds.
struct Reader {
    inotify: inotify::Inotify,
    buf: Vec<u8>,
    map: Arc<Mutex<Map>>,
    handler: Box<dyn FnMut(notify::Result<Event>) + Send>,
}

impl Reader {
    /// Reads what is queued now and hands it on: the number of kernel
    /// events read (0: none was queued). A failed instance is reported to
    /// the handler, and then as `Err`: nothing more can be read.
    fn read(&mut self) -> Result<usize, ()> {
        let Reader {
            inotify,
            buf,
            map,
            handler,
        } = self;
        let events = match inotify.read_events(buf) {
            Ok(events) => events,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(0),
            Err(e) => {
                handler(Err(notify::Error::io(e)));
                return Err(());
            }
        };
        let mut read = 0;
        for ev in events {
            read += 1;
            for out in translate(map, ev.wd, ev.mask, ev.name) {
                handler(Ok(out));
            }
        }
        Ok(read)
    }
}

/// Reads the queue on the caller's thread. Under load the event thread
/// waited for a core most of the time (on two saturated cores, 0.9 s of
/// every second), and each barrier with it; the barrier's own thread is
/// already running.
#[derive(Clone)]
pub struct QueueReader {
    reader: Arc<Mutex<Reader>>,
    after_read: Arc<dyn Fn() + Send + Sync + std::panic::RefUnwindSafe>,
}

impl QueueReader {
    /// Reads and hands on what is queued until the queue is empty, unless
    /// another thread is reading it (false): that one reads it empty.
    pub fn try_read_all(&self) -> bool {
        let mut reader = match self.reader.try_lock() {
            Ok(reader) => reader,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => return false,
        };
        // Bounded: a flood of events is the event thread's to read.
        for _ in 0..READS_AT_MOST {
            if !matches!(reader.read(), Ok(n) if n > 0) {
                break;
            }
        }
        drop(reader);
        (self.after_read)();
        true
    }
}

/// Most reads [`QueueReader::try_read_all`] makes: each takes up to a
/// buffer's worth (64 KiB, some 2,000 events), more than the kernel's
/// default queue (16,384 events).
const READS_AT_MOST: usize = 16;

impl Inotify {
    /// Starts the event thread; `handler` gets every event, in order, and
    /// `after_read` is called after each read, once the queue is let go.
    pub fn new(
        handler: impl FnMut(notify::Result<Event>) + Send + 'static,
        after_read: impl Fn() + Send + Sync + std::panic::RefUnwindSafe + 'static,
    ) -> io::Result<Inotify> {
        let inotify = inotify::Inotify::init()?;
        let map = Arc::new(Mutex::new(Map {
            watches: inotify.watches(),
            by_path: PathMap::default(),
            by_wd: HashMap::new(),
        }));
        // Polled by the event thread, which holds the reader that owns it.
        let queue = inotify.as_fd().as_raw_fd();
        let reader = Arc::new(Mutex::new(Reader {
            inotify,
            buf: vec![0u8; 64 << 10],
            map: Arc::clone(&map),
            handler: Box::new(handler),
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let wake = rustix::event::eventfd(0, rustix::event::EventfdFlags::CLOEXEC)?;
        let queue_reader = QueueReader {
            reader,
            after_read: Arc::new(after_read),
        };
        let (reader, stop2, wake2) = (queue_reader.clone(), Arc::clone(&stop), wake.try_clone()?);
        let thread = std::thread::Builder::new()
            .name("ckpt-inotify".into())
            .spawn(move || {
                // SAFETY: `reader` owns the instance and lives as long as
                // this thread (a second descriptor would show its watches
                // twice in /proc).
                let queue = unsafe { BorrowedFd::borrow_raw(queue) };
                let mut pace = Pace::default();
                loop {
                    let mut fds = [
                        rustix::event::PollFd::new(&queue, rustix::event::PollFlags::IN),
                        rustix::event::PollFd::new(&wake2, rustix::event::PollFlags::IN),
                    ];
                    match rustix::event::poll(&mut fds, None) {
                        Ok(_) | Err(rustix::io::Errno::INTR) => {}
                        Err(e) => {
                            (lock(&reader.reader).handler)(Err(notify::Error::io(e.into())));
                            return;
                        }
                    }
                    if stop2.load(Ordering::Acquire) {
                        return;
                    }
                    let read = lock(&reader.reader).read();
                    (reader.after_read)();
                    match read {
                        // A barrier read them first.
                        Ok(0) => {}
                        Ok(read) => pace.after_read(read),
                        Err(()) => return,
                    }
                }
            })?;
        Ok(Inotify {
            map,
            reader: queue_reader,
            stop,
            wake,
            thread: Some(thread),
        })
    }

    /// Reads the queue on a caller's thread.
    pub fn queue_reader(&self) -> QueueReader {
        self.reader.clone()
    }

    /// Watches one directory (not its subdirectories).
    pub fn watch_dir(&self, abs: &Path) -> notify::Result<()> {
        let mut map = lock(&self.map);
        match map.watches.add(abs, MASK) {
            Ok(wd) => {
                map.insert(abs.to_path_buf(), wd);
                Ok(())
            }
            Err(e) => Err(match e.raw_os_error() {
                Some(libc::ENOSPC) => notify::Error::new(notify::ErrorKind::MaxFilesWatch),
                Some(libc::ENOENT) => notify::Error::new(notify::ErrorKind::PathNotFound),
                _ => notify::Error::io(e),
            }
            .add_path(abs.to_path_buf())),
        }
    }

    /// The watches held now.
    pub fn watch_count(&self) -> u64 {
        lock(&self.map).by_wd.len() as u64
    }

    /// Drops one directory's watch.
    pub fn unwatch_dir(&self, abs: &Path) {
        let mut map = lock(&self.map);
        if let Some(wd) = map.by_path.remove(abs) {
            map.forget(wd);
        }
    }
}

/// Reads shorter than this, in quick succession, mean a stream of events
/// read about one at a time (a rewind's own writes: a poll and a read per
/// event, and a wake-up of this thread in every writer).
const SHORT_READ: usize = 64;

/// Reads closer together than this are one stream.
const STREAM_GAP: Duration = Duration::from_millis(2);

/// How long a stream's events are left to pile up before the next read:
/// at a rewind's ~100k events a second, some 25 a read, and the kernel
/// merges repeats; short enough that a barrier's cookie behind it waits
/// no more than this.
const SETTLE: Duration = Duration::from_micros(250);

/// When the event thread reads next: at once after an event that came
/// alone (a barrier's cookie after a quiet spell is never held back), a
/// moment later while events stream in.
#[derive(Default)]
struct Pace {
    last_read: Option<Instant>,
}

impl Pace {
    /// After a read of `events`: sleeps if they were few and came right
    /// after the last read.
    fn after_read(&mut self, events: usize) {
        if self.settles(Instant::now(), events) {
            std::thread::sleep(SETTLE);
        }
    }

    /// Whether a read of `events` at `now` is followed by a [`SETTLE`].
    fn settles(&mut self, now: Instant, events: usize) -> bool {
        let streaming = self
            .last_read
            .is_some_and(|t| now.saturating_duration_since(t) < STREAM_GAP);
        self.last_read = Some(now);
        streaming && events < SHORT_READ
    }
}

impl Drop for Inotify {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        let _ = rustix::io::write(self.wake.as_fd(), &1u64.to_ne_bytes());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// One kernel event as notify events (what notify's inotify backend sends
/// for it), keeping the map in step with the kernel.
fn translate(
    map: &Mutex<Map>,
    wd: WatchDescriptor,
    mask: EventMask,
    name: Option<&OsStr>,
) -> Vec<Event> {
    if mask.contains(EventMask::Q_OVERFLOW) {
        return vec![Event::new(EventKind::Other).set_flag(Flag::Rescan)];
    }
    let mut map = lock(map);
    if mask.contains(EventMask::IGNORED) {
        // The kernel dropped this watch (its directory was deleted or
        // unmounted, or we removed it).
        if let Some(path) = map.by_wd.remove(&wd) {
            if map.by_path.get(&path) == Some(&wd) {
                map.by_path.remove(&path);
            }
        }
        return Vec::new();
    }
    let Some(dir) = map.by_wd.get(&wd) else {
        return Vec::new();
    };
    let path = match name {
        Some(name) => dir.join(name),
        None => dir.clone(),
    };
    let is_dir = mask.contains(EventMask::ISDIR);
    if is_dir && mask.contains(EventMask::MOVED_FROM) {
        map.drop_below(&path);
    }
    drop(map);
    let (create, remove) = if is_dir {
        (CreateKind::Folder, RemoveKind::Folder)
    } else {
        (CreateKind::File, RemoveKind::File)
    };
    // A file renamed in is, to the router, a file that appeared: only a
    // directory renamed in can hold entries made before its watches were
    // added, for the next cookie to list again (a full-tree rewind's
    // 50,000 exchanges had the next barrier recheck every path: 0.5 s).
    let renamed_in = if is_dir {
        EventKind::Modify(ModifyKind::Name(RenameMode::To))
    } else {
        EventKind::Create(CreateKind::File)
    };
    let kinds = [
        (EventMask::CREATE, EventKind::Create(create)),
        (
            EventMask::MOVED_FROM | EventMask::MOVE_SELF,
            EventKind::Modify(ModifyKind::Name(RenameMode::From)),
        ),
        (EventMask::MOVED_TO, renamed_in),
        (EventMask::DELETE, EventKind::Remove(remove)),
        (
            EventMask::DELETE_SELF | EventMask::UNMOUNT,
            EventKind::Remove(RemoveKind::Folder),
        ),
        (
            EventMask::MODIFY,
            EventKind::Modify(ModifyKind::Data(DataChange::Any)),
        ),
        (
            EventMask::ATTRIB,
            EventKind::Modify(ModifyKind::Metadata(MetadataKind::Any)),
        ),
        (
            EventMask::CLOSE_WRITE,
            EventKind::Access(AccessKind::Close(AccessMode::Write)),
        ),
    ];
    kinds
        .into_iter()
        .filter(|(bits, _)| mask.intersects(*bits))
        .map(|(_, kind)| Event::new(kind).add_path(path.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::{Duration, Instant};

    /// Events until `done` says enough (or 5 s pass).
    fn collect(rx: &mpsc::Receiver<Event>, done: impl Fn(&[Event]) -> bool) -> Vec<Event> {
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut got = Vec::new();
        while !done(&got) {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(ev) => got.push(ev),
                Err(_) => break,
            }
        }
        got
    }

    fn has(events: &[Event], kind: EventKind, path: &Path) -> bool {
        events.iter().any(|e| e.kind == kind && e.paths == [path])
    }

    /// An event after a quiet spell (a barrier's cookie) is read, and the
    /// next read comes, at once; reads of a few events each in quick
    /// succession are spaced so that a stream is read in batches.
    #[test]
    fn the_thread_pauses_only_inside_a_stream_of_short_reads() {
        let mut pace = Pace::default();
        let t0 = Instant::now();
        assert!(!pace.settles(t0, 1), "the first read after start");
        let soon = t0 + STREAM_GAP / 4;
        assert!(pace.settles(soon, 1), "one event right after another read");
        let later = soon + STREAM_GAP / 4;
        assert!(!pace.settles(later, SHORT_READ), "a full batch: read on");
        let quiet = later + STREAM_GAP * 10;
        assert!(!pace.settles(quiet, 1), "an event after a quiet spell");
        assert!(pace.settles(quiet + STREAM_GAP / 2, SHORT_READ - 1));
    }

    /// A stream of events too fast to read one at a time arrives whole and
    /// in the order made, however the reads batch it.
    #[test]
    fn a_stream_of_events_arrives_whole_and_in_order() {
        stream_arrives_whole_and_in_order(0);
    }

    /// Read by the event thread and by barriers at once, a stream still
    /// arrives whole and in order, and every read is followed by
    /// `after_read`.
    #[test]
    fn a_stream_read_by_callers_and_the_thread_arrives_whole_and_in_order() {
        let (callers_read, after_read) = stream_arrives_whole_and_in_order(3);
        assert!(callers_read > 0);
        assert!(after_read >= callers_read);
    }

    /// Writes 3,000 files while `callers` threads read the queue too;
    /// returns the reads they made and the `after_read` calls.
    fn stream_arrives_whole_and_in_order(callers: usize) -> (usize, usize) {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        let (tx, rx) = mpsc::channel();
        let after = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let after2 = Arc::clone(&after);
        let w = Inotify::new(
            move |res: notify::Result<Event>| {
                let _ = tx.send(res.unwrap());
            },
            move || {
                after2.fetch_add(1, Ordering::SeqCst);
            },
        )
        .unwrap();
        w.watch_dir(&root).unwrap();
        let done = Arc::new(AtomicBool::new(false));
        let readers: Vec<_> = (0..callers)
            .map(|_| {
                let (reader, done) = (w.queue_reader(), Arc::clone(&done));
                std::thread::spawn(move || {
                    let mut read = 0;
                    while !done.load(Ordering::SeqCst) {
                        read += usize::from(reader.try_read_all());
                        // Often, without taking a core from the writer.
                        std::thread::sleep(Duration::from_micros(100));
                    }
                    read
                })
            })
            .collect();
        let n = 3000;
        for i in 0..n {
            std::fs::write(root.join(format!("f{i}")), "x").unwrap();
        }
        let close = EventKind::Access(AccessKind::Close(AccessMode::Write));
        let last = root.join(format!("f{}", n - 1));
        let got = collect(&rx, |e| has(e, close, &last));
        done.store(true, Ordering::SeqCst);
        let callers_read: usize = readers.into_iter().map(|r| r.join().unwrap()).sum();
        let closed: Vec<&PathBuf> = got
            .iter()
            .filter(|e| e.kind == close)
            .map(|e| &e.paths[0])
            .collect();
        let want: Vec<PathBuf> = (0..n).map(|i| root.join(format!("f{i}"))).collect();
        assert_eq!(closed, want.iter().collect::<Vec<_>>());
        assert!(got.iter().all(|e| !e.need_rescan()), "the queue overflowed");
        (callers_read, after.load(Ordering::SeqCst))
    }

    /// A caller's read hands what is queued on, on the caller's thread
    /// (here with the event thread stopped); while another thread reads,
    /// it leaves the queue to that one.
    #[test]
    fn a_caller_reads_the_queue_on_its_own_thread_unless_another_does() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        let (tx, rx) = mpsc::channel();
        let mut w = Inotify::new(
            move |res: notify::Result<Event>| {
                let _ = tx.send((std::thread::current().id(), res.unwrap()));
            },
            || {},
        )
        .unwrap();
        w.watch_dir(&root).unwrap();
        w.stop.store(true, Ordering::Release);
        rustix::io::write(w.wake.as_fd(), &1u64.to_ne_bytes()).unwrap();
        w.thread.take().unwrap().join().unwrap();

        std::fs::write(root.join("f"), "x").unwrap();
        let reader = w.queue_reader();
        let held = lock(&reader.reader);
        assert!(!reader.try_read_all(), "another thread is reading");
        drop(held);
        assert!(rx.try_recv().is_err(), "nothing was read");
        assert!(reader.try_read_all());
        let got: Vec<_> = rx.try_iter().collect();
        let me = std::thread::current().id();
        assert!(
            got.iter()
                .any(|(id, e)| *id == me && e.paths == [root.join("f")]),
            "{got:?}"
        );
    }

    #[test]
    fn reports_changes_by_path_and_forgets_a_moved_directory_with_its_subtree() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        for d in ["a/b/c", "a-b", "ab"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        let (tx, rx) = mpsc::channel();
        let w = Inotify::new(
            move |res: notify::Result<Event>| {
                let _ = tx.send(res.unwrap());
            },
            || {},
        )
        .unwrap();
        for d in ["", "a", "a/b", "a/b/c", "a-b", "ab"] {
            w.watch_dir(&root.join(d)).unwrap();
        }

        let file = root.join("a/b/c/f.txt");
        std::fs::write(&file, "x").unwrap();
        std::fs::create_dir(root.join("ab/new")).unwrap();
        let close = EventKind::Access(AccessKind::Close(AccessMode::Write));
        let new_dir = root.join("ab/new");
        let mkdir = EventKind::Create(CreateKind::Folder);
        let got = collect(&rx, |e| has(e, close, &file) && has(e, mkdir, &new_dir));
        assert!(
            has(&got, EventKind::Create(CreateKind::File), &file),
            "{got:?}"
        );
        assert!(has(&got, close, &file), "{got:?}");
        assert!(has(&got, mkdir, &new_dir), "{got:?}");

        // Renamed in: a file is a file that appeared (nothing below it to
        // list again), a directory a rename.
        let to = EventKind::Modify(ModifyKind::Name(RenameMode::To));
        std::fs::write(root.join("a-b/.tmp"), "t").unwrap();
        std::fs::rename(root.join("a-b/.tmp"), root.join("a-b/saved")).unwrap();
        std::fs::create_dir(root.join("a-b/.dir")).unwrap();
        std::fs::rename(root.join("a-b/.dir"), root.join("a-b/dir")).unwrap();
        let (saved, dir) = (root.join("a-b/saved"), root.join("a-b/dir"));
        let got = collect(&rx, |e| has(e, to, &dir));
        let create = EventKind::Create(CreateKind::File);
        assert!(has(&got, create, &saved), "{got:?}");
        assert!(!has(&got, to, &saved), "{got:?}");
        assert!(has(&got, to, &dir), "{got:?}");

        // Moved away: its watches, and those below it, go; the siblings
        // whose names share its prefix stay.
        std::fs::rename(root.join("a"), root.join("moved")).unwrap();
        let from = EventKind::Modify(ModifyKind::Name(RenameMode::From));
        let got = collect(&rx, |e| has(e, from, &root.join("a")));
        assert!(has(&got, from, &root.join("a")), "{got:?}");
        let watched = lock(&w.map).by_path.paths();
        let want: Vec<PathBuf> = ["", "a-b", "ab"].iter().map(|d| root.join(d)).collect();
        assert_eq!(watched, want);
        // A change in the moved tree is not reported under its old name.
        std::fs::write(root.join("moved/b/c/g.txt"), "y").unwrap();
        std::fs::write(root.join("ab/h.txt"), "z").unwrap();
        let h = root.join("ab/h.txt");
        let got = collect(&rx, |e| has(e, close, &h));
        assert!(has(&got, close, &h), "{got:?}");
        assert!(
            got.iter()
                .all(|e| e.paths.iter().all(|p| !p.starts_with(root.join("a")))),
            "{got:?}"
        );

        // A deleted directory's watch is dropped when the kernel says so.
        std::fs::remove_dir(root.join("ab/new")).ok();
        std::fs::remove_file(&h).unwrap();
        std::fs::remove_dir(root.join("ab")).unwrap();
        let gone = root.join("ab");
        collect(&rx, |e| {
            has(e, EventKind::Remove(RemoveKind::Folder), &gone)
        });
        let deadline = Instant::now() + Duration::from_secs(5);
        while lock(&w.map).by_path.contains(&gone) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(!lock(&w.map).by_path.contains(&gone));
        assert!(lock(&w.map).by_wd.values().all(|p| p != &gone));
    }
}
