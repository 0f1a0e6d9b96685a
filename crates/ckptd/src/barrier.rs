//! The barrier every turn boundary passes: after it, the core has seen every
//! change made before the call.
//!
//! Fast path: create a cookie file in the daemon's watched cookie directory
//! (outside the project, so the project and other tools watching it see
//! nothing), wait until its event comes through the watcher, then until
//! every path queued before it has been checked; remove the cookie. One
//! inotify instance has one event queue, so every change made before the
//! cookie was created is read before the cookie's event. Slow path
//! (degraded, no cookie directory, or the cookie did not arrive in time):
//! a full stat-scan.

use std::ffi::OsString;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use ckpt_proto::BarrierMethod;

use crate::daemon::Daemon;
use crate::error::{ReqError, ReqResult};
use crate::handle::{lock, ProjectHandle};

/// How long to wait for the paths queued before the cookie to be checked
/// once the cookie has arrived (a big batch may take a while).
const DRAIN_TIMEOUT: Duration = Duration::from_secs(120);

pub struct BarrierOutcome {
    pub method: BarrierMethod,
    pub elapsed: Duration,
}

pub fn barrier(d: &Daemon, h: &ProjectHandle) -> ReqResult<BarrierOutcome> {
    h.ensure_available()?;
    let start = Instant::now();
    let Some(dir) = d.watcher.cookie_dir() else {
        return full_scan(h, start);
    };
    if h.degraded().is_some() {
        return full_scan(h, start);
    }
    let n = h.cookie_counter.fetch_add(1, Ordering::Relaxed);
    let name = OsString::from(cookie_name(&h.id, n));
    let path = dir.join(&name);
    lock(&h.queue).cookies_expected.insert(name.clone());
    if let Err(e) = std::fs::write(&path, b"") {
        lock(&h.queue).cookies_expected.remove(&name);
        tracing::warn!(cookie = %path.display(), error = %e, "cannot write barrier cookie; scanning");
        return full_scan(h, start);
    }
    let arrived = wait_for_cookie(h, &name, d.config.barrier_timeout);
    if let Err(e) = std::fs::remove_file(&path) {
        tracing::warn!(cookie = %path.display(), error = %e, "cannot remove barrier cookie");
    }
    match arrived.map(|seq| wait_processed(h, seq)) {
        // Events lost in an overflow read before the cookie, or a capture
        // that failed meanwhile (a full disk), left the cache behind the
        // disk: only a full scan catches it up, before the turn boundary.
        Some(true) if h.degraded().is_some() => full_scan(h, start),
        Some(true) => Ok(BarrierOutcome {
            method: BarrierMethod::Cookie,
            elapsed: start.elapsed(),
        }),
        Some(false) => {
            tracing::warn!(root = %h.root.display(), "queued paths not checked in time; scanning");
            full_scan(h, start)
        }
        None => {
            tracing::warn!(root = %h.root.display(), "barrier cookie did not arrive in time; scanning");
            full_scan(h, start)
        }
    }
}

/// `<project id>-<n>`: the watcher routes a cookie's event by the id.
pub fn cookie_name(project_id: &str, n: u64) -> String {
    format!("{project_id}-{n}")
}

/// The project id a cookie name carries.
pub fn cookie_project(name: &std::ffi::OsStr) -> Option<&str> {
    name.to_str()?.rsplit_once('-').map(|(id, _)| id)
}

/// Waits for the cookie's event; returns the queue position it marks.
fn wait_for_cookie(h: &ProjectHandle, name: &OsString, timeout: Duration) -> Option<u64> {
    let deadline = Instant::now() + timeout;
    let mut q = lock(&h.queue);
    loop {
        if let Some(seq) = q.cookies_seen.remove(name) {
            return Some(seq);
        }
        let now = Instant::now();
        if now >= deadline {
            q.cookies_expected.remove(name);
            return None;
        }
        q = h
            .cond
            .wait_timeout(q, deadline - now)
            .map(|(g, _)| g)
            .unwrap_or_else(|p| p.into_inner().0);
    }
}

/// Waits until the worker has checked everything queued up to `seq`.
fn wait_processed(h: &ProjectHandle, seq: u64) -> bool {
    let deadline = Instant::now() + DRAIN_TIMEOUT;
    let mut q = lock(&h.queue);
    loop {
        if q.processed >= seq {
            return true;
        }
        let now = Instant::now();
        if now >= deadline || q.stop {
            return false;
        }
        q = h
            .cond
            .wait_timeout(q, deadline - now)
            .map(|(g, _)| g)
            .unwrap_or_else(|p| p.into_inner().0);
    }
}

fn full_scan(h: &ProjectHandle, start: Instant) -> ReqResult<BarrierOutcome> {
    if !h.reconcile_now() {
        h.ensure_available()?;
        let reason = h
            .degraded_reason()
            .unwrap_or_else(|| "the full scan failed".to_string());
        return Err(ReqError::new(ckpt_proto::ErrorKind::Io, reason));
    }
    Ok(BarrierOutcome {
        method: BarrierMethod::Scan,
        elapsed: start.elapsed(),
    })
}
