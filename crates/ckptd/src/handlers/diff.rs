//! `diff N [PATH…]`: unified diffs of a turn, pre-image to post-image (to now
//! while the turn is open).

use std::sync::Arc;

use ckpt_proto::{Diff, DiffBody};

use super::gate::Gate;
use super::About;
use crate::daemon::Daemon;
use crate::error::ReqResult;

pub fn handle(d: &Arc<Daemon>, g: Gate, r: Diff) -> ReqResult<About<DiffBody>> {
    let (turn, paths) = (r.turn, &r.paths);
    let h = d.project_for(&r.dir)?;
    h.ensure_available()?;
    let rels = paths
        .iter()
        .map(|p| Daemon::rel_path(&h, p))
        .collect::<Result<Vec<_>, _>>()?;
    g.pass_if_open(d, &h, turn)?;
    let files = h.call(|p| p.diff(turn, &rels))?;
    let body = DiffBody { turn, files };
    Ok((h, body))
}
