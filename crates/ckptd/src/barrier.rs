//! The barrier every turn boundary passes: after it, the core has seen every
//! change made before the call.
//!
//! Fast path: create a cookie (see [`crate::cookie`]), wait until its event
//! comes through the watcher, then until every path queued before it has
//! been checked; remove the cookie. One inotify instance has one event
//! queue, so every change made before the cookie was created is read
//! before the cookie's event. Slow path (degraded, no cookie directory, or
//! the cookie did not arrive in time): a full stat-scan.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use ckpt_proto::BarrierMethod;

use crate::cookie;
use crate::error::ReqResult;
use crate::project::ProjectHandle;

/// How long to wait for the paths queued before the cookie to be checked
/// once the cookie has arrived (a big batch may take a while).
const DRAIN_TIMEOUT: Duration = Duration::from_secs(120);

/// What a barrier needs to know of the daemon.
pub struct BarrierConfig {
    /// The watched cookie directory; `None` when it could not be watched
    /// (every barrier scans).
    pub cookie_dir: Option<PathBuf>,
    /// How long to wait for the cookie before scanning instead.
    pub timeout: Duration,
}

pub struct BarrierOutcome {
    pub method: BarrierMethod,
    pub elapsed: Duration,
}

pub fn pass(cfg: &BarrierConfig, h: &ProjectHandle) -> ReqResult<BarrierOutcome> {
    h.ensure_available()?;
    let start = Instant::now();
    let Some(dir) = &cfg.cookie_dir else {
        return full_scan(h, start);
    };
    if h.degraded().is_some() {
        return full_scan(h, start);
    }
    let name = h.expect_cookie();
    let path = match cookie::create(dir, &name) {
        Ok(path) => path,
        Err(e) => {
            h.forget_cookie(&name);
            tracing::warn!(cookie = %dir.join(&name).display(), error = %e, "cannot write barrier cookie; scanning");
            return full_scan(h, start);
        }
    };
    let arrived = h.wait_cookie(&name, cfg.timeout);
    if let Err(e) = std::fs::remove_file(&path) {
        tracing::warn!(cookie = %path.display(), error = %e, "cannot remove barrier cookie");
    }
    match arrived.map(|seq| h.wait_processed(seq, DRAIN_TIMEOUT)) {
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

fn full_scan(h: &ProjectHandle, start: Instant) -> ReqResult<BarrierOutcome> {
    h.ensure_available()?;
    // Its own error, so a full disk is reported as one.
    h.full_scan()?;
    Ok(BarrierOutcome {
        method: BarrierMethod::Scan,
        elapsed: start.elapsed(),
    })
}
