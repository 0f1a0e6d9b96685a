//! `copy-in`: a work copy's apply. Barrier, then the core writes the
//! source's paths as one new turn through the rewind's journaled path; the
//! project lock is held throughout, as for a rewind.

use std::sync::Arc;
use std::time::Instant;

use ckpt_core::{CopyOutcome, CopyPath, RelPath, RewindOptions, TurnMeta};
use ckpt_proto::{self as proto, CopyInBody};

use super::gate::Gate;
use super::rewind::failed;
use super::About;
use crate::daemon::Daemon;
use crate::error::{ReqError, ReqResult};

pub fn handle(d: &Arc<Daemon>, g: Gate, r: proto::CopyIn) -> ReqResult<About<CopyInBody>> {
    let (source, paths) = (&r.source, &r.paths);
    let meta = TurnMeta {
        label: r.label,
        agent: r.agent,
        session: r.session,
        ..TurnMeta::default()
    };
    let h = d.project_for(&r.dir)?;
    h.ensure_available()?;
    let src = source.as_path();
    if !src.is_absolute() || !src.is_dir() {
        return Err(ReqError::bad_request(format!(
            "the source {} is not an absolute path to a directory",
            source.display()
        )));
    }
    let src = src
        .canonicalize()
        .map_err(|e| ReqError::bad_request(format!("the source {}: {e}", source.display())))?;
    if src.starts_with(&h.root) || h.root.starts_with(&src) {
        return Err(ReqError::bad_request(format!(
            "the source {} and the project {} overlap",
            src.display(),
            h.root.display()
        )));
    }
    let paths = paths.iter().map(copy_path).collect::<ReqResult<Vec<_>>>()?;
    let start = Instant::now();
    g.pass(d, &h)?;
    let opts = RewindOptions {
        // The barrier above brought the cache up to date.
        after_barrier: true,
        ..RewindOptions::default()
    };
    let opts = d.config.hooks.arm(opts);
    let workcopy = r.workcopy;
    let outcome = h
        .call(|p| {
            let out = p.copy_in(&src, meta, paths, opts)?;
            // Under the same lock: no gc runs between the apply and this.
            if let (CopyOutcome::Applied { turn, .. }, Some(name)) = (&out, &workcopy) {
                p.keep_for_workcopy(*turn, name)?;
            }
            Ok(out)
        })
        .inspect_err(|e| failed(&h, e))?;
    let mut reply = CopyInBody {
        outcome: proto::Outcome::Refused,
        turn: None,
        rewind_id: None,
        actions: Vec::new(),
        conflicts: Vec::new(),
        blocked: Vec::new(),
        elapsed_ms: 0,
    };
    match outcome {
        CopyOutcome::Refused { conflicts, blocked } => {
            reply.conflicts = conflicts;
            reply.blocked = blocked;
        }
        CopyOutcome::Applied {
            turn,
            rewind_id,
            actions,
        } => {
            reply.outcome = proto::Outcome::Applied;
            reply.turn = Some(turn);
            reply.rewind_id = Some(rewind_id);
            reply.actions = actions;
        }
    }
    reply.elapsed_ms = start.elapsed().as_millis() as u64;
    tracing::info!(
        root = %h.root.display(), source = %src.display(), outcome = ?reply.outcome,
        turn = ?reply.turn, actions = reply.actions.len(), conflicts = reply.conflicts.len(),
        "copy-in"
    );
    Ok((h, reply))
}

fn copy_path(p: &proto::CopyPath) -> ReqResult<CopyPath> {
    let path = RelPath::new(p.path.0.clone())
        .map_err(|e| ReqError::bad_request(format!("copy-in path {}: {e}", p.path.display())))?;
    Ok(CopyPath {
        path,
        base: p.base.clone(),
        copy: p.copy.clone(),
    })
}
