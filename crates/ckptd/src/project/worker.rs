//! A project's worker thread: drains the queue into `check_paths`, gives
//! new directories their watches, runs full scans when asked, and applies
//! the retention policy after a batch.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ckpt_core::{RelPath, Retention, CACHE_TAG};

use super::{DegradedReason, ProjectHandle};
use crate::mutex::{lock, wait_until};

/// Most paths one `check_paths` call is given: what a check holds per path
/// (its worklist, cache rows, contents) is bounded by this window, not by a
/// burst of events (a formatter over 50,000 files); the batch is only
/// marked processed once every window is checked, as before.
const CHECK_WINDOW: usize = 4096;

/// Paths taken at once, or one after another without the queue running
/// dry, that start a burst (see `Project::burst_begin`): it lasts until
/// the queue stays empty for `BURST_QUIET` or a barrier waits.
const BURST_PATHS: usize = 256;

/// Within a burst, the paths a batch waits for (if they come within
/// `BURST_SETTLE`): beside a fast writer (5,000 files on tmpfs), waiting
/// for a whole window (4,096) left the worker idle while the files were
/// written, 1.8x the floor against 1.5x.
const BURST_BATCH: usize = 2048;

/// How long a burst's drained queue waits for more events before the
/// burst ends.
const BURST_QUIET: Duration = Duration::from_millis(100);

/// Within a burst, how long the worker lets events gather between
/// batches (unless a barrier waits, `BURST_BATCH` paths are queued or the
/// events pause): each batch is one commit, and each commit writes every
/// page it touched, about one per new blob in the index by hash. Writing
/// 5,000 files a second on ext4, in batches of a few dozen, the daemon
/// wrote 1 GiB for a 50,000-file turn and slowed the writer 1.6x; 300 ms:
/// 0.2 GiB and 1.2x.
const BURST_SETTLE: Duration = Duration::from_millis(300);

/// How long events gather between batches outside a burst.
const GATHER: Duration = Duration::from_millis(1);

/// How often a project's retention policy is applied (after a batch of
/// changes has been captured, never on a timer).
const GC_INTERVAL: Duration = Duration::from_secs(3600);

/// How often a project with a store budget compares its store with it.
const BUDGET_CHECK: Duration = Duration::from_secs(60);

/// How often a project whose root is gone checks whether it is back: one
/// stat, only for such projects.
const ROOT_POLL: Duration = Duration::from_secs(1);

/// What the worker's rounds carry from one to the next. Held while a
/// round runs, by the worker or by a barrier that runs one itself.
#[derive(Default)]
pub(super) struct Rounds {
    /// The cache size a burst restores when it ends.
    burst: Option<i64>,
    /// Paths taken since the queue was last found empty.
    run: usize,
}

impl ProjectHandle {
    /// Starts the thread that turns queued paths into `check_paths` calls.
    pub fn spawn_worker(self: &Arc<Self>) {
        let me = Arc::clone(self);
        let name = format!("ckpt-worker-{}", &self.id);
        match std::thread::Builder::new()
            .name(name)
            .spawn(move || me.worker_loop())
        {
            Ok(j) => *lock(&self.worker) = Some(j),
            Err(e) => self.mark_degraded(DegradedReason::NoWorker(e.to_string())),
        }
    }

    pub fn stop_worker(&self) {
        lock(&self.queue).stop = true;
        self.work.notify_all();
        self.progress.notify_all();
        if let Some(j) = lock(&self.worker).take() {
            let _ = j.join();
        }
    }

    fn worker_loop(&self) {
        loop {
            self.poll_root();
            let drained = {
                let mut q = lock(&self.queue);
                let drained = !q.has_paths();
                // No timeout: an idle daemon does not wake up. (A deleted
                // root sends no event while we hold it open; every request
                // checks the root instead.) Only a project whose root is
                // gone looks for it again, once per ROOT_POLL.
                while !q.has_work() && !q.stop {
                    if self.unavailable().is_some() {
                        q = self
                            .work
                            .wait_timeout(q, ROOT_POLL)
                            .unwrap_or_else(|p| p.into_inner())
                            .0;
                        break;
                    }
                    q = self.work.wait(q).unwrap_or_else(|p| p.into_inner());
                }
                if q.stop {
                    return;
                }
                drained
            };
            let in_burst = {
                let mut rounds = lock(&self.rounds);
                if drained {
                    rounds.run = 0;
                }
                self.round(&mut rounds);
                rounds.burst.is_some()
            };
            if self.unavailable().is_none() {
                self.maybe_gc();
            }
            // Let events gather a little so batches are not one path each,
            // unless a barrier waits for what came meanwhile.
            if in_burst {
                self.settle(BURST_SETTLE);
            } else {
                let _ = wait_until(&self.queue, &self.work, Instant::now() + GATHER, |q| {
                    let waited_for = q.draining > 0 && (q.has_paths() || !q.released.is_empty());
                    (waited_for || q.stop).then_some(())
                });
            }
        }
    }

    /// Runs a round on this thread if nobody is running one: a barrier
    /// waiting on the queue drains it itself rather than wake the worker
    /// and wait to be woken back. False when another thread runs one.
    pub(super) fn try_round(&self) -> bool {
        let mut rounds = match self.rounds.try_lock() {
            Ok(rounds) => rounds,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return false,
        };
        self.round(&mut rounds);
        true
    }

    /// Takes everything queued and checks it: the paths, the directories
    /// crowded out of the queue, the rechecks a cookie released, the
    /// subtrees to rescan (or a full scan when one is due), and gives new
    /// directories their watches; then marks it processed. The caller
    /// holds `rounds`, so one round runs at a time, in queue order.
    fn round(&self, rounds: &mut Rounds) {
        let (mut batch, crowded, mut maybe_dirs, released, rescan, seq, reconcile) = {
            let mut q = lock(&self.queue);
            if !q.has_work() {
                return;
            }
            let reconcile = std::mem::take(&mut q.reconcile_needed);
            let batch: Vec<RelPath> = q.pending.drain().collect();
            let crowded = std::mem::take(&mut q.crowded);
            let maybe_dirs: Vec<RelPath> = q.maybe_dirs.drain().collect();
            let released = std::mem::take(&mut q.released);
            let rescan = std::mem::take(&mut q.rescan);
            let seq = q.enqueued;
            (batch, crowded, maybe_dirs, released, rescan, seq, reconcile)
        };
        let Rounds { burst, run } = rounds;
        // Every path checked in this round.
        let mut taken = 0;
        if self.unavailable().is_none() {
            if reconcile {
                self.reconcile_now();
            } else {
                let mut check = |window: &mut [RelPath]| {
                    if window.is_empty() {
                        return;
                    }
                    taken += window.len();
                    *run += window.len();
                    if burst.is_none() && *run >= BURST_PATHS {
                        // Without it the batches are checked as before.
                        *burst = self.call(|p| p.burst_begin()).ok();
                    }
                    // In path order, so a window holds neighbours.
                    window.sort_unstable();
                    self.check_window(window);
                };
                // Each as if its events had come in a batch of their own.
                batch.sort_unstable();
                for window in batch.chunks_mut(CHECK_WINDOW) {
                    check(window);
                }
                // What is in the directories crowded out of the queue,
                // made, renamed in or lost to the watcher, checked a
                // window at a time as it is listed: a turn that made
                // 200,000 files listed them all at once, twice.
                let mut listed: Vec<RelPath> = Vec::new();
                let mut found = |path: RelPath, is_dir: bool| {
                    if is_dir || path.file_name() == CACHE_TAG {
                        maybe_dirs.push(path.clone());
                    }
                    listed.push(path);
                    if listed.len() == CHECK_WINDOW {
                        check(&mut listed);
                        listed.clear();
                    }
                };
                // (A directory made or renamed in among the entries
                // came with an event of its own: `maybe_dirs` has it.)
                if !crowded.is_empty() {
                    tracing::debug!(
                        root = %self.root.display(), dirs = crowded.len(),
                        "the queue was full: checking every entry of the directories of the events past it"
                    );
                }
                for dir in crowded {
                    match self.call(|p| p.entries_of(dir.as_ref())) {
                        Ok(entries) => entries.into_iter().for_each(|p| found(p, false)),
                        Err(e) => self.capture_failed(&e),
                    }
                }
                self.each_below_released(released.into_iter().collect(), &mut found);
                for dir in rescan {
                    match self.call(|p| p.cached_below(&dir)) {
                        // Any of them may have become a directory.
                        Ok(cached) => cached.into_iter().for_each(|p| found(p, true)),
                        Err(e) => self.capture_failed(&e),
                    }
                    self.each_below_released(vec![dir], &mut found);
                }
                check(&mut listed);
                // Watches for directories that appeared; what is in
                // them is listed again at the next cookie. (A stat of
                // every event's path cost 5% of a 50,000-file turn's
                // capture; a file's event cannot make a directory.)
                maybe_dirs.extend(batch.iter().filter(|p| p.file_name() == CACHE_TAG).cloned());
                maybe_dirs.sort_unstable();
                let fresh = self.sync_dirs(&maybe_dirs);
                if !fresh.is_empty() {
                    self.recheck_at_cookie(fresh);
                }
            }
        }
        // A burst ends once the queue stays drained, or its events
        // thin out to a trickle (a log written to now and then), and
        // before the barrier waiting on this batch returns: the WAL is
        // as after any batch.
        let trickle = taken < BURST_PATHS / 16;
        if burst.is_some() && (trickle || !self.more_events_soon()) {
            if let Some(cache_size) = burst.take() {
                if let Err(e) = self.call(|p| p.burst_end(cache_size)) {
                    tracing::debug!(root = %self.root.display(), error = %e, "ending a burst");
                }
            }
        }
        self.check_root();
        let mut q = lock(&self.queue);
        q.processed = q.processed.max(seq);
        drop(q);
        self.progress.notify_all();
    }

    /// Checks one window of paths and notes what changed.
    fn check_window(&self, window: &[RelPath]) {
        match self.call(|p| p.check_paths(window.iter().cloned())) {
            Ok(report) => {
                self.note_changes(report.changed);
                tracing::debug!(
                    root = %self.root.display(), paths = window.len(), changed = report.changed,
                    "checked paths"
                )
            }
            Err(e) => self.capture_failed(&e),
        }
    }

    /// Whether more events came within `BURST_QUIET` of the queue running
    /// dry: not when a barrier waits (it returns once the burst ended), or
    /// a full scan is due (it has a bulk mode of its own).
    fn more_events_soon(&self) -> bool {
        let deadline = Instant::now() + BURST_QUIET;
        wait_until(&self.queue, &self.work, deadline, |q| {
            if q.stop || q.reconcile_needed || q.barrier_waits() {
                Some(false)
            } else if q.has_paths() || !q.rescan.is_empty() {
                Some(true)
            } else {
                None
            }
        })
        .unwrap_or(false)
    }

    /// Waits `d`, or until a window's worth of events is queued, the
    /// events pause for `SETTLE_STEP` (the writer is done, or between
    /// bursts: what came is checked now, not when the next barrier
    /// asks), a barrier waits or the worker is stopped. (Looked at every
    /// `SETTLE_STEP`: an event wakes the worker only on an empty queue.)
    fn settle(&self, d: Duration) {
        const SETTLE_STEP: Duration = Duration::from_millis(10);
        let deadline = Instant::now() + d;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            let step = Instant::now() + left.min(SETTLE_STEP);
            let done = wait_until(&self.queue, &self.work, step, |q| {
                let paused = q.last_event.is_some_and(|t| t.elapsed() >= SETTLE_STEP);
                (q.stop || q.barrier_waits() || q.pending.len() >= BURST_BATCH || paused)
                    .then_some(())
            });
            if done.is_ok() {
                return;
            }
        }
    }

    /// Applies the retention policy when the project is idle, at most once
    /// per [`GC_INTERVAL`] (and once soon after start-up); with a store
    /// budget, also when the store is over it (looked at at most once per
    /// [`BUDGET_CHECK`]).
    fn maybe_gc(&self) {
        let policy = self.retention_policy();
        {
            let mut last = lock(&self.last_gc);
            let since = last.map(|t| t.elapsed());
            let due = since.is_none_or(|s| s >= GC_INTERVAL)
                || (policy.budget_bytes.is_some()
                    && since.is_none_or(|s| s >= BUDGET_CHECK)
                    && self.over_budget(&policy));
            if !due {
                return;
            }
            *last = Some(Instant::now());
        }
        match self.call(|p| p.gc(&policy, false)) {
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

    fn over_budget(&self, policy: &Retention) -> bool {
        let budget = policy.budget_bytes.unwrap_or(u64::MAX);
        self.call(|p| p.status())
            .is_ok_and(|s| s.store_bytes > budget)
    }

    /// A full stat-scan; clears a passing degradation when it succeeds.
    pub fn reconcile_now(&self) -> bool {
        if !self.check_root() {
            return false;
        }
        self.full_scan().is_ok()
    }

    /// A full stat-scan of a root that is there; a failure degrades the
    /// project.
    pub fn full_scan(&self) -> crate::error::ReqResult<ckpt_core::ScanSummary> {
        // Lost events may have hidden new directories: watch them before
        // the scan lists them, so a change made in one after the scan's
        // listing still comes as an event.
        self.resync_watches();
        self.scan_watched()
    }

    /// At start-up, right after every directory got its watch: the full
    /// scan without looking for directories that lack one (at a million
    /// files that second walk cost as much as the scan's own).
    pub fn reconcile_after_watching(&self) -> bool {
        self.check_root() && self.scan_watched().is_ok()
    }

    /// The full scan, once the watches are there.
    fn scan_watched(&self) -> crate::error::ReqResult<ckpt_core::ScanSummary> {
        // A rewind that could neither finish nor roll back (a full disk)
        // is finished from its journal first, or the scan would take its
        // half-way tree for changes.
        // What went wrong before this scan is noted on the turns open now,
        // once the scan has captured what it could.
        let note = self.degraded().and_then(|d| d.capture_note());
        let scanned = self.call(|p| {
            p.recover()?;
            let report = p.reconcile()?;
            if let Some(note) = &note {
                p.note_capture(note)?;
            }
            Ok(report)
        });
        match &scanned {
            Ok(report) => {
                self.note_changes(report.changed);
                tracing::debug!(root = %self.root.display(), entries = report.entries,
                    changed = report.changed, "full scan");
                self.clear_transient();
            }
            Err(e) => self.capture_failed(e),
        }
        scanned
    }

    /// While the root is gone: attaches it again once it is back (a
    /// request would too; this catches a root made again with no request).
    fn poll_root(&self) {
        if self.unavailable().is_none() {
            return;
        }
        if let Err(e) = self.reattach_if_back() {
            tracing::warn!(root = %self.root.display(), error = %e, "cannot watch the root again");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Letting a burst's events gather, and waiting for more before it
    /// ends, stop at once for a barrier (its cookie expected, or waiting
    /// on the worker), a full window, a pause in the events, or new
    /// events; otherwise they wait.
    #[test]
    fn a_burst_waits_for_events_but_never_for_a_barrier() {
        let t = tempfile::tempdir().unwrap();
        let h = crate::project::for_test(t.path());
        let long = Duration::from_secs(600);
        // Nothing comes: it waits its time (100 ms) and says so.
        let t0 = Instant::now();
        assert!(!h.more_events_soon());
        assert!(t0.elapsed() >= BURST_QUIET);
        h.enqueue_now(RelPath::new("a").unwrap(), false);
        assert!(h.more_events_soon(), "an event came");
        let name = h.expect_cookie();
        assert!(!h.more_events_soon(), "a barrier waits for its cookie");
        let t0 = Instant::now();
        h.settle(long);
        h.forget_cookie(&name);
        h.queue().draining += 1;
        h.settle(long);
        assert!(!h.more_events_soon(), "a barrier waits on the worker");
        h.queue().draining -= 1;
        // The events paused: what came is checked now.
        h.enqueue_now(RelPath::new("b").unwrap(), false);
        std::thread::sleep(Duration::from_millis(20));
        h.settle(long);
        for i in 0..CHECK_WINDOW {
            h.enqueue_now(RelPath::new(format!("f{i}")).unwrap(), false);
        }
        h.settle(long);
        assert!(t0.elapsed() < long / 2, "none of them waited");
    }

    /// A barrier finding the worker between rounds checks the queued
    /// paths on its own thread (no worker runs here at all), but never
    /// while another round runs: it waits for that one.
    #[test]
    fn a_barrier_runs_the_round_itself_unless_one_is_running() {
        let t = tempfile::tempdir().unwrap();
        let h = crate::project::for_test(t.path());
        h.call(|p| p.reconcile()).unwrap();
        let turn = h
            .call(|p| p.turn_start(ckpt_core::TurnMeta::default()))
            .unwrap();
        std::fs::write(h.root.join("f"), "1").unwrap();
        h.enqueue_now(RelPath::new("f").unwrap(), false);
        let seq = h.queue().enqueued;

        let held = lock(&h.rounds);
        let t0 = Instant::now();
        assert!(!h.wait_processed(seq, Duration::from_millis(100)));
        assert!(t0.elapsed() >= Duration::from_millis(100), "it waited");
        assert_eq!(h.unchecked(), 1, "nothing checked beside the running round");
        drop(held);

        assert!(h.wait_processed(seq, Duration::from_secs(30)));
        assert_eq!(h.unchecked(), 0);
        let entries = h.call(|p| p.show(turn)).unwrap().entries;
        assert_eq!(entries.len(), 1, "the change was captured: {entries:?}");
    }

    /// `ckptctl run --bursts` polls this time: it must move when a batch
    /// captured a change, and only then.
    #[test]
    fn last_change_moves_only_when_a_batch_changed_something() {
        let t = tempfile::tempdir().unwrap();
        let h = crate::project::for_test(t.path());
        h.spawn_worker();
        let f = RelPath::new("f").unwrap();
        let settle = |h: &ProjectHandle| {
            let seq = h.queue().enqueued;
            assert!(h.wait_processed(seq, Duration::from_secs(30)));
            assert_eq!(h.unchecked(), 0);
        };
        assert_eq!(h.last_change_ns(), None);

        std::fs::write(h.root.join("f"), "1").unwrap();
        h.enqueue_now(f.clone(), false);
        settle(&h);
        let first = h.last_change_ns().expect("a captured change is noted");

        // An event for a path that did not change (a touch of nothing).
        h.enqueue_now(f.clone(), false);
        settle(&h);
        assert_eq!(h.last_change_ns(), Some(first));

        std::fs::write(h.root.join("f"), "22").unwrap();
        h.enqueue_now(f, false);
        settle(&h);
        assert!(h.last_change_ns().expect("noted") > first);
        h.stop_worker();
    }

    /// Thousands of events taken at once are checked in bulk mode, which
    /// ends, its WAL checkpointed and truncated, before the batch counts as
    /// processed: a barrier returns on a store as after any batch.
    #[test]
    fn a_burst_is_captured_whole_and_ends_before_its_barrier_returns() {
        let t = tempfile::tempdir().unwrap();
        let h = crate::project::for_test(t.path());
        h.call(|p| p.reconcile()).unwrap();
        h.call(|p| p.turn_start(ckpt_core::TurnMeta::default()))
            .unwrap();
        let n = BURST_PATHS * 2;
        let content = |i: usize| format!("file {i}\n").repeat(300);
        for i in 0..n {
            std::fs::write(h.root.join(format!("f{i}")), content(i)).unwrap();
            h.enqueue_now(RelPath::new(format!("f{i}")).unwrap(), false);
        }
        // Queued before the worker starts, so it takes them at once.
        let seq = h.queue().enqueued;
        h.spawn_worker();
        assert!(h.wait_processed(seq, Duration::from_secs(60)));
        let wal = t.path().join("store").join("ckpt.db-wal");
        assert_eq!(std::fs::metadata(&wal).map_or(0, |m| m.len()), 0);
        h.stop_worker();
        let ended = h.call(|p| p.turn_end()).unwrap();
        assert_eq!(ended.entries.len(), n);
        for e in &ended.entries {
            let Some(ckpt_core::State::File { hash, .. }) = &e.post else {
                panic!("{}: {:?}", e.path.display(), e.post);
            };
            let i: usize = e.path.display()[1..].parse().unwrap();
            assert_eq!(
                h.call(|p| p.read_blob(hash)).unwrap(),
                content(i).as_bytes()
            );
        }
    }

    /// A subtree whose events were lost is checked whole: what appeared on
    /// disk and what left it, seen by no event.
    #[test]
    fn a_rescan_of_a_subtree_finds_what_no_event_told() {
        let t = tempfile::tempdir().unwrap();
        let h = crate::project::for_test(t.path());
        for f in ["sub/old", "sub/deep/kept"] {
            let p = h.root.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, f).unwrap();
        }
        h.call(|p| p.reconcile()).unwrap();
        h.spawn_worker();
        std::fs::remove_file(h.root.join("sub/old")).unwrap();
        std::fs::write(h.root.join("sub/deep/new"), "n").unwrap();
        h.rescan_below(RelPath::new("sub").unwrap());
        let seq = h.queue().enqueued;
        assert!(h.wait_processed(seq, Duration::from_secs(30)));
        let below = |dir: &str| -> Vec<String> {
            let dir = RelPath::new(dir).unwrap();
            let mut v: Vec<String> = h
                .call(|p| p.cached_below(&dir))
                .unwrap()
                .iter()
                .map(|p| p.display())
                .collect();
            v.sort();
            v
        };
        assert_eq!(below("sub"), ["sub/deep", "sub/deep/kept", "sub/deep/new"]);
        h.stop_worker();
    }
}
