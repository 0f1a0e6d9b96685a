//! `show N`: the paths of one turn.

use std::sync::Arc;

use ckpt_proto::{ShowBody, WirePath};

use super::gate::Gate;
use super::About;
use crate::daemon::Daemon;
use crate::error::ReqResult;

/// `list`: as [`ckpt_proto::TurnEnd::list`].
pub fn handle(
    d: &Arc<Daemon>,
    g: Gate,
    dir: &WirePath,
    turn: i64,
    list: Option<u64>,
) -> ReqResult<About<ShowBody>> {
    let h = d.project_for(dir)?;
    h.ensure_available()?;
    g.pass_if_open(d, &h, turn)?;
    let detail = h.call(|p| p.show_listing(turn, list))?;
    let body = ShowBody { turn: detail };
    Ok((h, body))
}
