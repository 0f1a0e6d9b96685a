//! `log`: turns, newest first, of one session or all.

use std::sync::Arc;

use ckpt_proto::{Log, LogBody};

use super::About;
use crate::daemon::Daemon;
use crate::error::ReqResult;

/// Turns listed when the client gives no limit.
const DEFAULT_LIMIT: usize = 50;

pub fn handle(d: &Arc<Daemon>, r: Log) -> ReqResult<About<LogBody>> {
    let (limit, session) = (r.limit, r.session.as_deref());
    let h = d.project_for(&r.dir)?;
    h.ensure_available()?;
    let turns = h.call(|p| p.log_of(limit.unwrap_or(DEFAULT_LIMIT), session))?;
    let body = LogBody { turns };
    Ok((h, body))
}
