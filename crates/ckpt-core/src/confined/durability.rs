//! Durability of a batch: written files are fsynced on sync threads while
//! the writer goes on, or, for a large batch, the filesystem is synced whole.

use std::io;
use std::os::fd::OwnedFd;
use std::sync::atomic::Ordering;

use rustix::fs::{Mode, OFlags};

use super::root::Root;

/// Runs `sync(i)` for every `i < n` on up to `threads` threads; the first
/// error wins.
pub(crate) fn parallel_fsync(
    n: usize,
    threads: usize,
    sync: impl Fn(usize) -> io::Result<()> + Sync,
) -> io::Result<()> {
    let threads = threads.clamp(1, n.max(1));
    if threads == 1 {
        return (0..n).try_for_each(sync);
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        return Ok(());
                    }
                    sync(i)?;
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("an fsync worker does not panic"))
            .collect::<io::Result<Vec<()>>>()
            .map(|_| ())
    })
}

#[cfg(test)]
thread_local! {
    /// Calls of `WholeFs::sync`, and files handed to a sync thread, on
    /// this thread (for tests of which way a batch is synced).
    pub(crate) static SYNCFS_CALLS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    pub(crate) static FILE_FSYNCS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Runs `sync` on a thread of its own while `meanwhile` runs on this one,
/// so work that needs no disk is done while the disk is waited for.
pub(crate) fn sync_beside<R>(
    sync: impl FnOnce() -> io::Result<()> + Send,
    meanwhile: impl FnOnce() -> R,
) -> (io::Result<()>, R) {
    std::thread::scope(|s| {
        let syncing = s.spawn(|| {
            let synced = sync();
            // The test counters are per thread: counted as this caller's.
            #[cfg(test)]
            return (synced, SYNCFS_CALLS.with(|n| n.get()));
            #[cfg(not(test))]
            synced
        });
        let during = meanwhile();
        let synced = syncing
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        #[cfg(test)]
        let synced = {
            let (synced, calls) = synced;
            SYNCFS_CALLS.with(|n| n.set(n.get() + calls));
            synced
        };
        (synced, during)
    })
}

/// A filesystem made durable with one `syncfs` instead of an fsync per file
/// and directory. For a batch of thousands of files this spares an inode
/// write and a device flush per file: 20% of a full-tree rewind's CPU went
/// to those fsyncs. Linux only; elsewhere there is no `WholeFs`.
pub(crate) struct WholeFs {
    fd: OwnedFd,
    dev: u64,
}

impl WholeFs {
    /// The filesystem of `root`, through a handle opened now: `syncfs`
    /// reports the write errors its filesystem had since its handle was
    /// opened, so these are this batch's, not older ones.
    pub fn open(root: &Root) -> io::Result<Option<WholeFs>> {
        if !cfg!(target_os = "linux") {
            return Ok(None);
        }
        let fd = rustix::fs::openat(
            &root.fd,
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        let dev = rustix::fs::fstat(&fd)?.st_dev as u64;
        Ok(Some(WholeFs { fd, dev }))
    }

    /// Whether `fd` is on this filesystem (else it needs its own fsync: a
    /// directory under the root can be another mount).
    #[allow(clippy::unnecessary_cast)] // st_dev's type differs across platforms
    pub fn holds(&self, fd: impl std::os::fd::AsFd) -> io::Result<bool> {
        Ok(rustix::fs::fstat(fd)?.st_dev as u64 == self.dev)
    }

    /// Writes out everything the filesystem has pending and flushes the
    /// device.
    pub fn sync(&self) -> io::Result<()> {
        #[cfg(test)]
        SYNCFS_CALLS.with(|n| n.set(n.get() + 1));
        #[cfg(target_os = "linux")]
        return rustix::fs::syncfs(&self.fd).map_err(Into::into);
        #[cfg(not(target_os = "linux"))]
        unreachable!("no WholeFs outside Linux");
    }
}

/// Where written files go to be made durable (`sync_while`).
pub(crate) struct SyncQueue<'w> {
    /// A file to fsync; `None`: synced here, as it is pushed.
    tx: Option<std::sync::mpsc::SyncSender<std::fs::File>>,
    whole: Option<&'w WholeFs>,
}

impl SyncQueue<'_> {
    /// fsyncs and closes `file`, on device `dev` (`Staged::dev`), on a sync
    /// thread; on the filesystem synced whole, closes it here: the one
    /// `syncfs` writes it out with the rest, in fewer and larger writes
    /// than a writeback started per file, and with no thread woken per file.
    pub fn push(&self, file: std::fs::File, dev: u64) -> io::Result<()> {
        let fsync = self.whole.is_none_or(|whole| whole.dev != dev);
        #[cfg(test)]
        FILE_FSYNCS.with(|n| n.set(n.get() + usize::from(fsync)));
        if !fsync {
            return Ok(());
        }
        match &self.tx {
            Some(tx) => match tx.send(file) {
                Ok(()) => Ok(()),
                // Unreachable while `sync_while` runs; sync here rather than lose it.
                Err(std::sync::mpsc::SendError(file)) => file.sync_all(),
            },
            None => file.sync_all(),
        }
    }
}

/// Runs `work` while `threads` threads fsync the files it pushes, so writing
/// and syncing overlap (and concurrent fsyncs share the device's flushes);
/// with fewer than two, each is synced as it is pushed (a thread started
/// for one file, as a one-file rewind did, costs more than it overlaps).
/// Files on `whole`'s filesystem are closed at once and left to its
/// caller's `syncfs`.
/// Returns `work`'s result and the first sync error, after every pushed
/// file is synced.
pub(crate) fn sync_while<R>(
    threads: usize,
    whole: Option<&WholeFs>,
    work: impl FnOnce(&SyncQueue) -> R,
) -> (R, io::Result<()>) {
    if threads < 2 {
        return (work(&SyncQueue { tx: None, whole }), Ok(()));
    }
    // Bounds the open handles waiting for a sync thread.
    const QUEUE: usize = 256;
    let (tx, rx) = std::sync::mpsc::sync_channel::<std::fs::File>(QUEUE);
    let rx = std::sync::Mutex::new(rx);
    let failed: std::sync::Mutex<Option<io::Error>> = std::sync::Mutex::new(None);
    let r = std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let next = rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
                let Ok(file) = next else { return };
                // All metadata too: a restore may change only the mode.
                if let Err(e) = file.sync_all() {
                    failed
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .get_or_insert(e);
                }
            });
        }
        let queue = SyncQueue {
            tx: Some(tx),
            whole,
        };
        let r = work(&queue);
        drop(queue);
        r
    });
    let failed = failed.into_inner().unwrap_or_else(|e| e.into_inner());
    (r, failed.map_or(Ok(()), Err))
}
