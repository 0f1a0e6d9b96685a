//! `watch`: start watching a tree and take its baseline.

use std::sync::Arc;
use std::time::Instant;

use ckpt_proto::{WatchedBody, WirePath};

use ckpt_proto::paths::discover_root;

use super::About;
use crate::daemon::Daemon;
use crate::error::ReqResult;

pub fn handle(d: &Arc<Daemon>, dir: &WirePath, discover: bool) -> ReqResult<About<WatchedBody>> {
    let start = Instant::now();
    let dir = Daemon::canonical_dir(dir)?;
    let root = if discover { discover_root(&dir) } else { dir };
    let (h, report) = d.watch(&root)?;
    let already = report.is_none();
    let mut scan = report.unwrap_or_default();
    if !already {
        // What the store holds as not captured, as `status` counts it: this
        // scan's own list misses what the worker captured before it.
        let (skipped, status) = h.call(|p| Ok((p.not_captured()?, p.status()?)))?;
        scan.skipped = skipped;
        // A `status` while a scan that follows (a degraded watcher's) holds
        // the project answers from this, not from nothing.
        h.remember_status(status);
    }
    let body = WatchedBody {
        id: h.id.clone(),
        already,
        scan,
        elapsed_ms: start.elapsed().as_millis() as u64,
    };
    Ok((h, body))
}
