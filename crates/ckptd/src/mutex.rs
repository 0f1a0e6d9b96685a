//! Mutex and condvar helpers that carry on after a panic elsewhere poisoned
//! the lock: the data behind the daemon's mutexes stays consistent (the
//! core's own state is transactional), so a poisoning is no reason to stop.

use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Instant;

/// Locks a mutex, ignoring poisoning.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Waits on `cond` until `ready` gives a value or `deadline` passes. On
/// timeout the guard comes back, so the caller can clean up under the same
/// lock (nothing can slip in between).
pub fn wait_until<'a, T, R>(
    m: &'a Mutex<T>,
    cond: &Condvar,
    deadline: Instant,
    mut ready: impl FnMut(&mut T) -> Option<R>,
) -> Result<R, MutexGuard<'a, T>> {
    let mut guard = lock(m);
    loop {
        if let Some(r) = ready(&mut guard) {
            return Ok(r);
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(guard);
        }
        guard = cond
            .wait_timeout(guard, deadline - now)
            .map(|(g, _)| g)
            .unwrap_or_else(|p| p.into_inner().0);
    }
}
