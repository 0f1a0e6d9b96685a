//! `rewind N` and `redo`: barrier, then the core's journaled restore. The
//! project lock is held throughout, so events caused by our own writes queue
//! up and are checked afterwards, finding the cache already up to date.

use std::sync::Arc;
use std::time::Instant;

use ckpt_core::{RewindOptions, RewindOutcome};
use ckpt_proto::{ErrorKind, Outcome, Redo, Rewind, RewindBody, RewindTo, RewindsBody, WirePath};

use super::gate::Gate;
use super::About;
use crate::daemon::Daemon;
use crate::error::{ReqError, ReqResult};
use crate::project::{DegradedReason, ProjectHandle};

pub fn rewind(d: &Arc<Daemon>, g: Gate, r: Rewind) -> ReqResult<About<RewindBody>> {
    let h = d.project_for_rewind(&r.dir, r.flags.dry_run)?;
    // A path outside the project is refused before the barrier's work.
    let paths = r
        .paths
        .iter()
        .map(|p| Daemon::rel_path(&h, p))
        .collect::<Result<Vec<_>, _>>()?;
    let opts = || RewindOptions {
        paths: paths.clone(),
        flags: r.flags,
        merge: r.merge,
        list: listed(r.list),
        ..RewindOptions::default()
    };
    let start = Instant::now();
    let outcome = apply(d, g, &h, opts, |p, opts| match r.to {
        RewindTo::Before(t) => p.rewind(t, opts),
        RewindTo::After(t) => p.rewind_after(t, opts),
    })?;
    let mut body = reply(&h, false, outcome, start);
    // Said with the plan, so a dry run says it before anything starts.
    body.caveats = h.call(|p| p.caveats(&body.turns))?;
    tracing::debug!(took = ?start.elapsed(), "rewind answered");
    Ok((h, body))
}

pub fn redo(d: &Arc<Daemon>, g: Gate, r: Redo) -> ReqResult<About<RewindBody>> {
    let h = d.project_for(&r.dir)?;
    let opts = || RewindOptions {
        flags: r.flags,
        list: listed(r.list),
        ..RewindOptions::default()
    };
    let start = Instant::now();
    let outcome = apply(d, g, &h, opts, |p, opts| p.redo(opts))?;
    let body = reply(&h, true, outcome, start);
    Ok((h, body))
}

/// The core lists only the actions the client asked for: a rewind of
/// 500,000 paths has as many, and they never all sit in memory.
fn listed(list: Option<u64>) -> Option<usize> {
    list.map(|n| usize::try_from(n).unwrap_or(usize::MAX))
}

/// Barrier, then `op` with `opts()`, on the space reserved for rewinds
/// (tried again, with new options, once the reserve is freed).
fn apply(
    d: &Arc<Daemon>,
    g: Gate,
    h: &ProjectHandle,
    opts: impl Fn() -> RewindOptions,
    op: impl Fn(&mut ckpt_core::Project, RewindOptions) -> ckpt_core::Result<RewindOutcome>,
) -> ReqResult<RewindOutcome> {
    d.with_reserve(crate::reserve::For::Rewind, || {
        let passed = g.pass(d, h)?;
        tracing::debug!(took = ?passed.elapsed, "rewind's barrier passed");
        let opts = RewindOptions {
            // The barrier above brought the cache up to date.
            after_barrier: true,
            ..opts()
        };
        let opts = d.config.hooks.arm(opts);
        h.call(|p| op(p, opts)).inspect_err(|e| failed(h, e))
    })
}

/// The rewinds and redos journaled, newest first (every one without a
/// limit). No barrier: the journal is the daemon's own.
pub fn list(
    d: &Arc<Daemon>,
    dir: &WirePath,
    limit: Option<usize>,
) -> ReqResult<About<RewindsBody>> {
    let h = d.project_for(dir)?;
    h.ensure_available()?;
    let limit = limit.unwrap_or(i64::MAX as usize);
    let records = h.call(|p| p.rewinds(limit))?;
    let body = RewindsBody { rewinds: records };
    Ok((h, body))
}

/// A rewind that failed on the filesystem or the store may have left its
/// journal pending (a full disk can stop the rollback too): the next
/// barrier then scans in full, which finishes it from the journal first.
pub(super) fn failed(h: &ProjectHandle, e: &ReqError) {
    if matches!(e.kind, ErrorKind::Io | ErrorKind::DiskFull) {
        h.mark_degraded(DegradedReason::RewindFailed(e.to_string()));
    }
}

/// The reply to a rewind or redo, its actions as the core listed them
/// (`RewindOptions::list`).
fn reply(h: &ProjectHandle, redo: bool, outcome: RewindOutcome, start: Instant) -> RewindBody {
    let (kind, rewind_id, plan) = match outcome {
        RewindOutcome::DryRun(plan) => (Outcome::DryRun, None, plan),
        RewindOutcome::Refused(plan) => (Outcome::Refused, None, plan),
        RewindOutcome::Applied { rewind_id, plan } => (Outcome::Applied, Some(rewind_id), plan),
    };
    tracing::info!(
        root = %h.root.display(), redo, outcome = ?kind, turn = plan.turn,
        actions = plan.counts.total(), conflicts = plan.conflicts.len(), "rewind"
    );
    RewindBody {
        redo,
        outcome: kind,
        rewind_id,
        turn: plan.turn,
        turns: plan.turns,
        counts: Some(plan.counts),
        actions: plan.actions,
        conflicts: plan.conflicts,
        skipped: plan.skipped,
        blocked: plan.blocked,
        merged: plan.merged,
        continued: plan.continued,
        caveats: Default::default(),
        elapsed_ms: start.elapsed().as_millis() as u64,
    }
}
