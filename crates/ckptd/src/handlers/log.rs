//! `log`: turns, newest first, of one session or all.

use std::sync::Arc;

use ckpt_proto::{LogReply, WirePath};

use crate::convert;
use crate::daemon::Daemon;
use crate::error::ReqResult;

/// Turns listed when the client gives no limit.
const DEFAULT_LIMIT: usize = 50;

pub fn handle(
    d: &Arc<Daemon>,
    dir: &WirePath,
    limit: Option<usize>,
    session: Option<&str>,
) -> ReqResult<LogReply> {
    let h = d.project_for(dir)?;
    h.ensure_available()?;
    let turns = h.call(|p| p.log_of(limit.unwrap_or(DEFAULT_LIMIT), session))?;
    Ok(LogReply {
        project: convert::abs(&h.root),
        turns: turns.iter().map(convert::turn_info).collect(),
        degraded: h.degraded_reason(),
    })
}
