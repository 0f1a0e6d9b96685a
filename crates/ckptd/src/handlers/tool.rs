//! `tool-start` and `tool-end`: an agent's tool call opens and closes a
//! window in which a change goes to that session's turn alone. Each is a
//! barrier first, like a turn boundary: what changed before the call is
//! captured before the window opens, what the tool changed before it
//! closes.

use std::sync::Arc;

use ckpt_proto::{ToolReply, WirePath};

use crate::convert;
use crate::daemon::{barrier, Daemon};
use crate::error::ReqResult;

pub fn handle(
    d: &Arc<Daemon>,
    dir: &WirePath,
    session: Option<&str>,
    start: bool,
) -> ReqResult<ToolReply> {
    let h = d.project_for(dir)?;
    barrier(d, &h)?;
    let (running, turn) = h.call(|p| {
        let running = if start {
            p.tool_start(session)?
        } else {
            p.tool_end(session)?
        };
        Ok((running, p.open_turn_of(session)?))
    })?;
    tracing::debug!(root = %h.root.display(), session, start, running, "tool window");
    Ok(ToolReply {
        project: convert::abs(&h.root),
        running,
        turn,
        degraded: h.degraded_reason(),
    })
}
