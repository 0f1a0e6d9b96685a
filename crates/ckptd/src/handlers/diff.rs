//! `diff N [PATH…]`: unified diffs of a turn, pre-image to post-image (to now
//! while the turn is open).

use std::sync::Arc;

use ckpt_proto::{DiffReply, WirePath};

use crate::convert;
use crate::daemon::{barrier, Daemon};
use crate::error::ReqResult;

pub fn handle(
    d: &Arc<Daemon>,
    dir: &WirePath,
    turn: i64,
    paths: &[WirePath],
) -> ReqResult<DiffReply> {
    let h = d.project_for(dir)?;
    h.ensure_available()?;
    let rels = paths
        .iter()
        .map(|p| Daemon::rel_path(&h, p))
        .collect::<Result<Vec<_>, _>>()?;
    if h.call(|p| p.open_turn())? == Some(turn) {
        barrier(d, &h)?;
    }
    let files = h.call(|p| p.diff(turn, &rels))?;
    Ok(DiffReply {
        project: convert::abs(&h.root),
        turn,
        files: files.iter().map(convert::file_diff).collect(),
        degraded: h.degraded_reason(),
    })
}
