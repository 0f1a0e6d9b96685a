//! `pin`, `unpin` and `gc`: with the retention policy of the project's
//! settings (settings.rs), resolved as the request came in.

use std::sync::Arc;

use ckpt_proto::{GcReport, Pinned, Released, WirePath};

use super::About;
use crate::daemon::Daemon;
use crate::error::ReqResult;

pub fn pin(d: &Arc<Daemon>, dir: &WirePath, turn: i64, pinned: bool) -> ReqResult<About<Pinned>> {
    let h = d.project_for(dir)?;
    let policy = h.retention_policy();
    let retention = h.call(|p| {
        p.pin(turn, pinned)?;
        p.retention(&policy)
    })?;
    Ok((
        h,
        Pinned {
            turn,
            pinned,
            retention,
        },
    ))
}

pub fn release_workcopy(d: &Arc<Daemon>, dir: &WirePath, name: &str) -> ReqResult<About<Released>> {
    let h = d.project_for(dir)?;
    let policy = h.retention_policy();
    let (turns, retention) = h.call(|p| Ok((p.release_workcopy(name)?, p.retention(&policy)?)))?;
    Ok((h, Released { turns, retention }))
}

pub fn gc(d: &Arc<Daemon>, dir: &WirePath, dry_run: bool) -> ReqResult<About<GcReport>> {
    let h = d.project_for(dir)?;
    let policy = h.retention_policy();
    let report = h.call(|p| p.gc(&policy, dry_run))?;
    if !dry_run {
        tracing::info!(root = %h.root.display(), turns = report.turns_dropped,
            bytes = report.bytes_freed, "gc asked for");
    }
    Ok((h, report))
}
