//! `turn-end`: barrier, then close the open turn, recording post-images.

use std::sync::Arc;

use ckpt_proto::{TurnEnded, WirePath};

use crate::convert;
use crate::daemon::{barrier, Daemon};
use crate::error::ReqResult;

pub fn handle(d: &Arc<Daemon>, dir: &WirePath) -> ReqResult<TurnEnded> {
    let h = d.project_for(dir)?;
    barrier(d, &h)?;
    let detail = h.call(|p| p.turn_end())?;
    tracing::info!(root = %h.root.display(), turn = detail.info.id, paths = detail.entries.len(), "turn ended");
    Ok(TurnEnded {
        project: convert::abs(&h.root),
        turn: convert::turn_detail(&detail),
        degraded: h.degraded_reason(),
    })
}
