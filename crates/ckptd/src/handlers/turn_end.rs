//! `turn-end`: barrier, then close the session's open turn (no session:
//! the default session's, or else the only open turn), recording
//! post-images. When the named session has none open, another session's
//! turn is left open and named.

use std::sync::Arc;

use ckpt_proto::{TurnEnd, TurnEndedBody};

use super::gate::Gate;
use super::About;
use crate::daemon::Daemon;
use crate::error::ReqResult;

pub fn handle(d: &Arc<Daemon>, g: Gate, r: TurnEnd) -> ReqResult<About<TurnEndedBody>> {
    let (session, transcript) = (r.session.as_deref(), r.transcript.as_deref());
    let h = d.project_for(&r.dir)?;
    // A hook lists none of the entries: parsing them all took its client
    // to 78.5 MiB at 50,000 files, and the core keeps only those listed.
    let (detail, left_open) = d.with_reserve(crate::reserve::For::TurnBoundary, || {
        let passed = g.pass(d, &h)?;
        tracing::debug!(took = ?passed.elapsed, "turn-end's barrier passed");
        h.call(|p| match p.turn_end_of(session, transcript, r.list) {
            // Only other sessions' turns are open: left open, and named.
            Err(ckpt_core::Error::NoOpenTurn) if session.is_some() => match p.open_turn()? {
                Some(open) => Ok((p.show_listing(open, r.list)?, true)),
                None => Err(ckpt_core::Error::NoOpenTurn),
            },
            ended => Ok((ended?, false)),
        })
    })?;
    // Debug, as turn-start's: every prompt ends one.
    if left_open {
        tracing::debug!(root = %h.root.display(), turn = detail.info.id, "turn of another session left open");
    } else {
        tracing::debug!(root = %h.root.display(), turn = detail.info.id, paths = detail.total_entries(), "turn ended");
    }
    let body = TurnEndedBody {
        turn: detail,
        left_open,
    };
    Ok((h, body))
}
