//! `turn-end`: barrier, then close the open turn, recording post-images;
//! unless the request names a session and another session opened the turn
//! (two agents in one project), which leaves it open.

use std::sync::Arc;

use ckpt_proto::{TurnEnded, WirePath};

use crate::convert;
use crate::daemon::{barrier, Daemon};
use crate::error::ReqResult;

pub fn handle(
    d: &Arc<Daemon>,
    dir: &WirePath,
    session: Option<&str>,
    transcript: Option<&str>,
) -> ReqResult<TurnEnded> {
    let h = d.project_for(dir)?;
    barrier(d, &h)?;
    let (detail, left_open) = h.call(|p| {
        if let (Some(ours), Some(open)) = (session, p.open_turn()?) {
            let theirs = p.turn_meta(open)?.session;
            if theirs.is_some_and(|theirs| theirs != ours) {
                return Ok((p.show(open)?, true));
            }
        }
        if let (Some(t), Some(open)) = (transcript, p.open_turn()?) {
            p.note_transcript(open, t)?;
        }
        Ok((p.turn_end()?, false))
    })?;
    if left_open {
        tracing::info!(root = %h.root.display(), turn = detail.info.id, "turn of another session left open");
    } else {
        tracing::info!(root = %h.root.display(), turn = detail.info.id, paths = detail.entries.len(), "turn ended");
    }
    Ok(TurnEnded {
        project: convert::abs(&h.root),
        turn: convert::turn_detail(&detail),
        left_open,
        degraded: h.degraded_reason(),
    })
}
