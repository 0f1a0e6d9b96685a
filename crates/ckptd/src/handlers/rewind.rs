//! `rewind N` and `redo`: barrier, then the core's journaled restore. The
//! project lock is held throughout, so events caused by our own writes queue
//! up and are checked afterwards, finding the cache already up to date.

use std::sync::Arc;
use std::time::Instant;

use ckpt_core::{RewindOptions, RewindOutcome};
use ckpt_proto::{ErrorKind, RewindReply, RewindsReply, WirePath};

use crate::convert;
use crate::daemon::{barrier, Daemon};
use crate::error::{ReqError, ReqResult};
use crate::project::{DegradedReason, ProjectHandle};

pub fn rewind(
    d: &Arc<Daemon>,
    dir: &WirePath,
    turn: i64,
    paths: &[WirePath],
    dry_run: bool,
    force: bool,
    merge: Option<ckpt_proto::MergeMode>,
) -> ReqResult<RewindReply> {
    let h = d.project_for_rewind(dir, dry_run)?;
    // A path outside the project is refused before the barrier's work.
    let rels = paths
        .iter()
        .map(|p| Daemon::rel_path(&h, p))
        .collect::<Result<Vec<_>, _>>()?;
    let start = Instant::now();
    let outcome = d.with_reserve(crate::reserve::For::Rewind, || {
        barrier(d, &h)?;
        // (The update sets `before_op` when ckpt-core has its test hooks.)
        #[allow(clippy::needless_update)]
        let opts = RewindOptions {
            paths: rels.clone(),
            dry_run,
            force,
            merge: merge.map(|m| match m {
                ckpt_proto::MergeMode::Clean => ckpt_core::MergeMode::Clean,
                ckpt_proto::MergeMode::Markers => ckpt_core::MergeMode::Markers,
            }),
            // The barrier above brought the cache up to date.
            after_barrier: true,
            ..RewindOptions::default()
        };
        let opts = d.config.hooks.arm(opts);
        h.call(|p| p.rewind(turn, opts))
            .inspect_err(|e| failed(&h, e))
    })?;
    Ok(reply(&h, false, &outcome, start))
}

pub fn redo(d: &Arc<Daemon>, dir: &WirePath, dry_run: bool, force: bool) -> ReqResult<RewindReply> {
    let h = d.project_for(dir)?;
    let start = Instant::now();
    let outcome = d.with_reserve(crate::reserve::For::Rewind, || {
        barrier(d, &h)?;
        // (The update sets `before_op` when ckpt-core has its test hooks.)
        #[allow(clippy::needless_update)]
        #[allow(clippy::needless_update)] // as in `rewind`
        let opts = RewindOptions {
            paths: Vec::new(),
            dry_run,
            force,
            merge: None,
            // The barrier above brought the cache up to date.
            after_barrier: true,
            ..RewindOptions::default()
        };
        let opts = d.config.hooks.arm(opts);
        h.call(|p| p.redo(opts)).inspect_err(|e| failed(&h, e))
    })?;
    Ok(reply(&h, true, &outcome, start))
}

/// The rewinds and redos journaled, newest first (every one without a
/// limit). No barrier: the journal is the daemon's own.
pub fn list(d: &Arc<Daemon>, dir: &WirePath, limit: Option<usize>) -> ReqResult<RewindsReply> {
    let h = d.project_for(dir)?;
    h.ensure_available()?;
    let limit = limit.unwrap_or(i64::MAX as usize);
    let records = h.call(|p| p.rewinds(limit))?;
    Ok(RewindsReply {
        project: convert::abs(&h.root),
        rewinds: records.iter().map(convert::rewind_record).collect(),
        degraded: h.degraded_reason(),
    })
}

/// A rewind that failed on the filesystem or the store may have left its
/// journal pending (a full disk can stop the rollback too): the next
/// barrier then scans in full, which finishes it from the journal first.
pub(super) fn failed(h: &ProjectHandle, e: &ReqError) {
    if matches!(e.kind, ErrorKind::Io | ErrorKind::DiskFull) {
        h.mark_degraded(DegradedReason::RewindFailed(e.to_string()));
    }
}

fn reply(h: &ProjectHandle, redo: bool, outcome: &RewindOutcome, start: Instant) -> RewindReply {
    let (kind, rewind_id, plan) = convert::outcome(outcome);
    tracing::info!(
        root = %h.root.display(), redo, outcome = ?kind, turn = plan.turn,
        actions = plan.actions.len(), conflicts = plan.conflicts.len(), "rewind"
    );
    RewindReply {
        project: convert::abs(&h.root),
        redo,
        outcome: kind,
        rewind_id,
        turn: plan.turn,
        turns: plan.turns.clone(),
        actions: plan.actions.iter().map(convert::action).collect(),
        conflicts: plan.conflicts.iter().map(convert::conflict).collect(),
        skipped: convert::skipped(&plan.skipped),
        blocked: convert::skipped(&plan.blocked),
        merged: plan.merged.iter().map(convert::merged).collect(),
        continued: plan.continued.iter().map(convert::continued).collect(),
        elapsed_ms: start.elapsed().as_millis() as u64,
        degraded: h.degraded_reason(),
    }
}
