//! Admission: at most a few requests are handled at once, the others wait
//! their turn in arrival order.
//!
//! With every request let in, 50 clients calling back to back kept some
//! 50 threads runnable on two cores, and the scheduler, not the order of
//! arrival, decided who waited: p99 turn-start 25-28 ms where the median
//! was 6.6-7 ms. Let in eight at a time, in order, each runs on a machine
//! that is not crowded and waits about as long as the others: 15-16 ms at
//! p99, at the same turns a second.
//!
//! A request handled for longer than [`LONG`] (a full-tree rewind, a
//! first watch, a client slow to read its reply) stops counting, so it
//! never holds the others up for longer than that.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::mutex::{lock, wait_until};

/// How long a request counts against the limit: hook calls take a few
/// milliseconds; past this one is a long operation.
pub const LONG: Duration = Duration::from_millis(50);

pub struct Admission {
    slots: usize,
    long: Duration,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The requests being handled that count, by id, with when each
    /// was let in.
    counted: Vec<(u64, Instant)>,
    /// Requests waiting, first come first.
    waiting: VecDeque<Arc<Waiter>>,
    next_id: u64,
}

/// One waiting request: `Some(id)` once let in.
#[derive(Default)]
struct Waiter {
    admitted: Mutex<Option<u64>>,
    cond: Condvar,
}

/// A request being handled; the next in line is let in when it drops.
pub struct Admitted<'a> {
    admission: &'a Admission,
    id: u64,
}

impl Admission {
    /// `slots` requests at once (at least one); one counts until `long`.
    pub fn new(slots: usize, long: Duration) -> Admission {
        Admission {
            slots: slots.max(1),
            long,
            state: Mutex::new(State::default()),
        }
    }

    /// Four requests per core: most of a hook call's time is spent waiting
    /// (for the watcher, the disk), not computing.
    pub fn for_this_machine() -> Admission {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        Admission::new(4 * cores, LONG)
    }

    /// Waits until this request may be handled.
    pub fn enter(&self) -> Admitted<'_> {
        let (waiter, mut until) = {
            let mut s = lock(&self.state);
            if s.counted.len() < self.slots && s.waiting.is_empty() {
                let id = s.admit();
                return Admitted {
                    admission: self,
                    id,
                };
            }
            let waiter = Arc::new(Waiter::default());
            s.waiting.push_back(Arc::clone(&waiter));
            (waiter, s.long_at(self.long))
        };
        loop {
            // Woken when let in, or once the oldest counted request has
            // run for `long`, to let the first in line in past it.
            match wait_until(&waiter.admitted, &waiter.cond, until, |a| *a) {
                Ok(id) => {
                    return Admitted {
                        admission: self,
                        id,
                    }
                }
                // Let go of it: letting in locks it.
                Err(unadmitted) => drop(unadmitted),
            }
            until = self.pass_long_ones();
        }
    }

    /// Stops counting requests handled for `long` or more, letting in as
    /// many of those waiting; returns when the oldest still counted will
    /// have run for `long`.
    fn pass_long_ones(&self) -> Instant {
        let mut let_in = Vec::new();
        let until = {
            let mut s = lock(&self.state);
            let now = Instant::now();
            s.counted
                .retain(|&(_, since)| now.duration_since(since) < self.long);
            while s.counted.len() < self.slots {
                let Some(next) = s.waiting.pop_front() else {
                    break;
                };
                let_in.push((next, s.admit()));
            }
            s.long_at(self.long)
        };
        for (next, id) in let_in {
            next.let_in(id);
        }
        until
    }

    fn leave(&self, id: u64) {
        let next = {
            let mut s = lock(&self.state);
            let Some(at) = s.counted.iter().position(|&(i, _)| i == id) else {
                // No longer counted: its place was given away already.
                return;
            };
            s.counted.swap_remove(at);
            s.waiting.pop_front().map(|next| (next, s.admit()))
        };
        // Woken outside the lock: with the wake-up inside it, every
        // request that came or left meanwhile waited for that syscall.
        if let Some((next, id)) = next {
            next.let_in(id);
        }
    }
}

impl State {
    fn admit(&mut self) -> u64 {
        self.next_id += 1;
        self.counted.push((self.next_id, Instant::now()));
        self.next_id
    }

    /// When the oldest request counted will have run for `long` (in
    /// `long` when none is).
    fn long_at(&self, long: Duration) -> Instant {
        let oldest = self.counted.iter().map(|&(_, since)| since).min();
        oldest.unwrap_or_else(Instant::now) + long
    }
}

impl Waiter {
    fn let_in(&self, id: u64) {
        *lock(&self.admitted) = Some(id);
        self.cond.notify_one();
    }
}

impl Drop for Admitted<'_> {
    fn drop(&mut self) {
        self.admission.leave(self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Never more than the slots at once, and those waiting are let in in
    /// the order they came.
    #[test]
    fn at_most_the_slots_run_and_the_others_go_in_order() {
        let a = Arc::new(Admission::new(2, Duration::from_secs(600)));
        let first = a.enter();
        let second = a.enter();
        let running = Arc::new(AtomicUsize::new(2));
        let most = Arc::new(AtomicUsize::new(2));
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut threads = Vec::new();
        for i in 0..6 {
            let (adm, running, most, order) = (
                Arc::clone(&a),
                Arc::clone(&running),
                Arc::clone(&most),
                Arc::clone(&order),
            );
            threads.push(std::thread::spawn(move || {
                let admitted = adm.enter();
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                lock(&order).push((i, admitted.id));
                std::thread::sleep(Duration::from_millis(5));
                running.fetch_sub(1, Ordering::SeqCst);
            }));
            // Queued before the next one comes.
            while lock(&a.state).waiting.len() < i + 1 {
                std::thread::yield_now();
            }
        }
        running.fetch_sub(2, Ordering::SeqCst);
        drop(first);
        drop(second);
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(most.load(Ordering::SeqCst), 2);
        // Let in in the order they came: the first two held ids 1 and 2.
        let mut order = lock(&order).clone();
        order.sort();
        assert_eq!(order, (0..6).map(|i| (i, i as u64 + 3)).collect::<Vec<_>>());
        assert!(lock(&a.state).counted.is_empty());
    }

    /// A request handled for `long` stops counting: the next one goes in
    /// without waiting for it, and its end gives no second place away.
    #[test]
    fn a_long_request_stops_holding_the_others_up() {
        let long = Duration::from_millis(50);
        let a = Admission::new(1, long);
        let slow = a.enter();
        let t0 = Instant::now();
        let next = a.enter();
        let waited = t0.elapsed();
        assert!(waited >= long / 2, "let in past a request of {waited:?}");
        assert!(waited < Duration::from_secs(10));
        drop(slow);
        assert_eq!(
            lock(&a.state).counted.len(),
            1,
            "the slow one's end gave nothing away"
        );
        drop(next);
        assert!(lock(&a.state).counted.is_empty());
        let _again = a.enter();
    }
}
