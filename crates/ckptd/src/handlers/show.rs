//! `show N`: the paths of one turn.

use std::sync::Arc;

use ckpt_proto::{ShowReply, WirePath};

use crate::convert;
use crate::daemon::{barrier, Daemon};
use crate::error::ReqResult;

pub fn handle(d: &Arc<Daemon>, dir: &WirePath, turn: i64) -> ReqResult<ShowReply> {
    let h = d.project_for(dir)?;
    h.ensure_available()?;
    // An open turn is still growing: see everything up to now.
    if h.call(|p| p.open_turn())? == Some(turn) {
        barrier(d, &h)?;
    }
    let detail = h.call(|p| p.show(turn))?;
    Ok(ShowReply {
        project: convert::abs(&h.root),
        turn: convert::turn_detail(&detail),
        degraded: h.degraded_reason(),
    })
}
