//! The barrier every turn boundary passes: after it, the core has seen every
//! change made before the call.
//!
//! Fast path: create a cookie (see [`crate::cookie`]), wait until its event
//! comes through the watcher (with inotify, read on this thread when no
//! other is reading), then until every path queued before it has been
//! checked; remove the cookie. One inotify instance has one event queue,
//! so every change made before the cookie was created is read before the
//! cookie's event. A recursive backend promises no such order
//! (FSEvents may deliver a change after a later cookie): there the barrier
//! also waits for a quiet spell with no event for the project. Slow path
//! (degraded, no cookie directory, or the cookie did not arrive in time): a
//! full stat-scan.

use std::ffi::OsStr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use ckpt_proto::BarrierMethod;

use crate::backend::QueueReader;
use crate::cookie;
use crate::error::ReqResult;
use crate::project::ProjectHandle;

/// How long to wait for the paths queued before the cookie to be checked
/// once the cookie has arrived (a big batch may take a while).
const DRAIN_TIMEOUT: Duration = Duration::from_secs(120);

/// The quiet spell a recursive backend's barrier waits for: notify's events
/// came at most 11 ms after their write at p99 (25-172 ms at p99.9 under load).
pub const QUIET_WINDOW: Duration = Duration::from_millis(50);

/// The longest a barrier waits for that spell while the tree keeps
/// changing (a build in the background): the cookie's order is all it has.
const QUIET_CAP: Duration = Duration::from_secs(1);

/// What a barrier needs to know of the daemon.
pub struct BarrierConfig {
    /// The watched cookie directory; `None` when it could not be watched
    /// (every barrier scans).
    pub cookie_dir: Option<PathBuf>,
    /// Reads the watcher's queue up to the cookie on the barrier's own
    /// thread; `None`: the cookie is waited for.
    pub reader: Option<QueueReader>,
    /// The quiet spell to wait for after the cookie, on a backend that may
    /// deliver events after it ([`QUIET_WINDOW`]); `None` when its order
    /// is enough.
    pub quiet: Option<Duration>,
}

pub struct BarrierOutcome {
    pub method: BarrierMethod,
    pub elapsed: Duration,
}

/// Passes the barrier for `h`, waiting up to `timeout` for the cookie
/// before scanning instead.
pub fn pass(
    cfg: &BarrierConfig,
    timeout: Duration,
    h: &ProjectHandle,
) -> ReqResult<BarrierOutcome> {
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
    // One deadline for reading and waiting.
    let deadline = Instant::now() + timeout;
    if let Some(reader) = &cfg.reader {
        read_to_cookie(reader, h, &name, deadline);
    }
    let arrived = h.wait_cookie(&name, deadline.saturating_duration_since(Instant::now()));
    if let Err(e) = std::fs::remove_file(&path) {
        tracing::warn!(cookie = %path.display(), error = %e, "cannot remove barrier cookie");
    }
    let drained = arrived.map(|seq| {
        h.wait_processed(seq, DRAIN_TIMEOUT)
            && cfg
                .quiet
                .is_none_or(|quiet| h.wait_processed(h.wait_quiet(quiet, QUIET_CAP), DRAIN_TIMEOUT))
    });
    match drained {
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

/// How long a barrier waits for another thread reading the watcher's
/// queue to hand its cookie on before it tries to read the queue itself:
/// that reader reads the queue empty, so this passes only when the cookie
/// came just after it had.
const READ_RETRY: Duration = Duration::from_millis(1);

/// Reads the watcher's queue on this thread until the cookie has come, or
/// waits for whoever is reading it to hand the cookie on. (Waiting for the
/// lock instead, each barrier woke to find it taken again: on two
/// saturated cores, 20 ms at p99.)
fn read_to_cookie(reader: &QueueReader, h: &ProjectHandle, name: &OsStr, deadline: Instant) {
    while !h.cookie_came_within(name, Duration::ZERO) && Instant::now() < deadline {
        if reader.try_read_all() {
            return;
        }
        h.cookie_came_within(name, READ_RETRY);
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
