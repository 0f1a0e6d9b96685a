//! A project's queue: the paths the router reported, waiting for the
//! worker, and the bookkeeping a barrier waits on (cookies expected and
//! seen, how far the worker got).

use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::time::{Duration, Instant};

use ckpt_core::RelPath;

use super::ProjectHandle;
use crate::cookie;
use crate::mutex::{lock, wait_until};

/// Most paths waiting for the worker. Past it, a path's event only
/// names its directory, each of whose entries is then checked: the queue
/// stays a few MiB (~70 B a path) however many files a rewind writes
/// while it holds the project, or a writer makes while the worker lags.
pub const PENDING_MAX: usize = 65_536;

/// Paths waiting for the worker, and the bookkeeping barriers wait on.
#[derive(Default)]
pub struct Queue {
    pub pending: HashSet<RelPath>,
    /// At most this many `pending` (`PENDING_MAX` but in tests).
    pub pending_max: usize,
    /// Directories (`None`: the root) of the paths whose events came
    /// while `pending` was full: every entry of each is checked.
    pub crowded: HashSet<Option<RelPath>>,
    /// Counts every enqueue; a barrier waits until `processed` reaches the
    /// value this had when its cookie arrived.
    pub enqueued: u64,
    pub processed: u64,
    /// New directories and renamed-in paths: checked again, with everything
    /// in them then, when the next cookie arrives, because watches on a new
    /// directory are added only after it was reported, and files made in
    /// that gap send no event.
    pub recheck: HashSet<RelPath>,
    /// Paths among `pending` an event says may be directories now (made
    /// or renamed in): only these, of the events' paths, can need a watch.
    pub maybe_dirs: HashSet<RelPath>,
    /// Rechecks released by a cookie, for the worker's next batch.
    pub released: HashSet<RelPath>,
    /// Subtrees whose events the watcher lost (FSEvents' MustScanSubDirs):
    /// everything below each, on disk or in the cache, is checked.
    pub rescan: HashSet<RelPath>,
    /// When the router last queued a path here: a barrier on a backend
    /// that may deliver events after its cookie waits for a quiet spell.
    pub last_event: Option<Instant>,
    pub cookies_expected: HashSet<OsString>,
    pub cookies_seen: HashMap<OsString, u64>,
    /// Barriers waiting for the worker to reach their cookie's position.
    pub draining: usize,
    /// Numbers this project's cookies.
    next_cookie: u64,
    /// Run a full `reconcile` instead of the next batch.
    pub reconcile_needed: bool,
    pub stop: bool,
}

impl Queue {
    pub fn new(pending_max: usize) -> Queue {
        Queue {
            pending_max,
            ..Queue::default()
        }
    }

    /// Whether paths or directories wait for the worker's check.
    pub fn has_paths(&self) -> bool {
        !self.pending.is_empty() || !self.crowded.is_empty()
    }

    /// Whether anything waits for a round of the worker.
    pub fn has_work(&self) -> bool {
        self.has_paths()
            || !self.released.is_empty()
            || !self.rescan.is_empty()
            || self.reconcile_needed
    }

    /// Whether a barrier waits for its cookie or for the worker.
    pub fn barrier_waits(&self) -> bool {
        !self.cookies_expected.is_empty() || !self.cookies_seen.is_empty() || self.draining > 0
    }
}

impl ProjectHandle {
    /// Queues a path for the worker; true when a [`Self::wake`] is due
    /// (the router wakes once it has let the watcher's queue go).
    #[must_use]
    pub fn enqueue(&self, path: RelPath, recheck_at_cookie: bool) -> bool {
        let mut q = lock(&self.queue);
        if recheck_at_cookie {
            q.recheck.insert(path.clone());
            q.maybe_dirs.insert(path.clone());
        }
        // Only the worker waits for paths, and only on an empty queue: a
        // wake-up per event would be a syscall per event, and a full rewind
        // makes one event per file.
        let wake = q.pending.is_empty() && q.crowded.is_empty();
        if q.pending.len() < q.pending_max || q.pending.contains(&path) {
            q.pending.insert(path);
        } else {
            q.crowded.insert(path.parent());
        }
        q.enqueued += 1;
        q.last_event = Some(Instant::now());
        wake
    }

    /// Wakes whoever waits on what was queued: the worker for paths or
    /// rechecks, barriers for a cookie.
    pub fn wake(&self) {
        let (work, barriers) = {
            let q = lock(&self.queue);
            (q.has_work(), q.barrier_waits())
        };
        if work {
            self.work.notify_all();
        }
        if barriers {
            self.progress.notify_all();
        }
    }

    /// Queues a path and wakes the worker if it waits, as the router does.
    #[cfg(test)]
    pub fn enqueue_now(&self, path: RelPath, recheck_at_cookie: bool) {
        if self.enqueue(path, recheck_at_cookie) {
            self.wake();
        }
    }

    /// The watcher lost events below `dir`: the worker checks the subtree.
    pub fn rescan_below(&self, dir: RelPath) {
        let mut q = lock(&self.queue);
        q.rescan.insert(dir);
        q.enqueued += 1;
        q.last_event = Some(Instant::now());
        drop(q);
        self.work.notify_all();
    }

    /// Paths to check again at the next cookie.
    pub(super) fn recheck_at_cookie(&self, paths: impl IntoIterator<Item = RelPath>) {
        lock(&self.queue).recheck.extend(paths);
    }

    /// Names this project's next cookie and expects its event.
    pub fn expect_cookie(&self) -> OsString {
        let mut q = lock(&self.queue);
        let name = cookie::name(&self.id, q.next_cookie);
        q.next_cookie += 1;
        q.cookies_expected.insert(name.clone());
        name
    }

    /// A cookie that will not come (it could not be created).
    pub fn forget_cookie(&self, name: &OsStr) {
        lock(&self.queue).cookies_expected.remove(name);
    }

    /// A cookie's event came through the watcher: it marks the queue
    /// position a barrier waits for, and releases the rechecks. True when
    /// a [`Self::wake`] is due, as for [`Self::enqueue`].
    #[must_use]
    pub fn cookie_arrived(&self, name: &OsStr) -> bool {
        let mut q = lock(&self.queue);
        if !q.cookies_expected.remove(name) {
            return false;
        }
        let recheck = std::mem::take(&mut q.recheck);
        for p in recheck {
            q.released.insert(p);
            q.enqueued += 1;
        }
        let seq = q.enqueued;
        q.cookies_seen.insert(name.to_os_string(), seq);
        true
    }

    /// Whether the cookie's event comes within `timeout`; it stays for
    /// [`Self::wait_cookie`] to take.
    pub fn cookie_came_within(&self, name: &OsStr, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        wait_until(&self.queue, &self.progress, deadline, |q| {
            q.cookies_seen.contains_key(name).then_some(())
        })
        .is_ok()
    }

    /// Waits for the cookie's event; returns the queue position it marks,
    /// or `None` (and expects it no more) after `timeout`.
    pub fn wait_cookie(&self, name: &OsStr, timeout: Duration) -> Option<u64> {
        let deadline = Instant::now() + timeout;
        match wait_until(&self.queue, &self.progress, deadline, |q| {
            q.cookies_seen.remove(name)
        }) {
            Ok(seq) => Some(seq),
            Err(mut q) => {
                q.cookies_expected.remove(name);
                None
            }
        }
    }

    /// Waits until the worker has checked everything queued up to `seq`;
    /// false after `timeout` or when the worker stops.
    pub fn wait_processed(&self, seq: u64, timeout: Duration) -> bool {
        let behind = {
            let mut q = lock(&self.queue);
            q.draining += 1;
            q.processed < seq && !q.stop
        };
        // Unless the worker is in a round, this thread runs it: waking the
        // worker and being woken back took two context switches per turn
        // boundary on saturated cores.
        if behind && !self.try_round() {
            // A worker waiting for a burst's next events ends its round.
            self.work.notify_all();
        }
        let deadline = Instant::now() + timeout;
        let done = wait_until(&self.queue, &self.progress, deadline, |q| {
            if q.processed >= seq {
                Some(true)
            } else if q.stop {
                Some(false)
            } else {
                None
            }
        })
        .unwrap_or(false);
        lock(&self.queue).draining -= 1;
        done
    }

    /// Waits until no path has been queued for `quiet` (or `cap` has
    /// passed); returns the queue position then, for [`Self::wait_processed`].
    pub fn wait_quiet(&self, quiet: Duration, cap: Duration) -> u64 {
        let deadline = Instant::now() + cap;
        let mut q = lock(&self.queue);
        loop {
            let now = Instant::now();
            let calm_at = q.last_event.map_or(now, |t| t + quiet);
            if calm_at <= now || deadline <= now || q.stop {
                return q.enqueued;
            }
            let wait = calm_at.min(deadline) - now;
            q = self
                .progress
                .wait_timeout(q, wait)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    pub fn request_reconcile(&self) {
        lock(&self.queue).reconcile_needed = true;
        self.work.notify_all();
    }

    /// Enqueued paths the worker has not finished checking (those of the
    /// batch it is checking now included).
    pub fn unchecked(&self) -> u64 {
        let q = lock(&self.queue);
        q.enqueued.saturating_sub(q.processed)
    }

    pub fn backlog(&self) -> u64 {
        lock(&self.queue).pending.len() as u64
    }

    /// The queue itself, for tests that look inside.
    #[cfg(test)]
    pub fn queue(&self) -> std::sync::MutexGuard<'_, Queue> {
        lock(&self.queue)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Past `pending_max` paths, an event keeps only its directory (the
    /// root's as `None`); a path already waiting is not crowded out.
    #[test]
    fn a_full_queue_keeps_the_directories_of_further_events() {
        let t = tempfile::tempdir().unwrap();
        let h = crate::project::for_test(t.path());
        h.queue().pending_max = 2;
        let rel = |p: &str| RelPath::new(p).unwrap();
        for p in ["a/1", "a/2", "a/1", "a/3", "b/c/4", "top", "b/c/5"] {
            h.enqueue_now(rel(p), false);
        }
        let q = h.queue();
        let mut pending: Vec<_> = q.pending.iter().map(|p| p.display()).collect();
        pending.sort();
        assert_eq!(pending, ["a/1", "a/2"]);
        let mut crowded: Vec<_> = q.crowded.iter().cloned().collect();
        crowded.sort();
        assert_eq!(crowded, [None, Some(rel("a")), Some(rel("b/c"))]);
        assert_eq!(q.enqueued, 7);
    }

    /// The recursive shape's barrier waits for a quiet spell after the
    /// last queued path, and no longer than its cap while paths keep coming.
    #[test]
    fn wait_quiet_waits_out_the_last_event_and_stops_at_the_cap() {
        let t = tempfile::tempdir().unwrap();
        let h = crate::project::for_test(t.path());
        let quiet = Duration::from_millis(100);
        let start = Instant::now();
        assert_eq!(h.wait_quiet(quiet, Duration::from_secs(5)), 0);
        assert!(start.elapsed() < quiet, "nothing queued: no wait");

        h.enqueue_now(RelPath::new("a").unwrap(), false);
        let queued = Instant::now();
        assert_eq!(h.wait_quiet(quiet, Duration::from_secs(5)), 1);
        assert!(queued.elapsed() >= quiet);

        let busy = std::sync::Arc::clone(&h);
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stop2 = std::sync::Arc::clone(&stop);
        let writer = std::thread::spawn(move || {
            while !stop2.load(std::sync::atomic::Ordering::Relaxed) {
                busy.enqueue_now(RelPath::new("b").unwrap(), false);
                std::thread::sleep(Duration::from_millis(10));
            }
        });
        h.enqueue_now(RelPath::new("b").unwrap(), false);
        let start = Instant::now();
        h.wait_quiet(quiet, Duration::from_millis(400));
        let waited = start.elapsed();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        writer.join().unwrap();
        assert!(waited >= Duration::from_millis(400), "{waited:?}");
        assert!(waited < Duration::from_secs(3), "{waited:?}");
    }
}
