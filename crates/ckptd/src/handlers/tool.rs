//! `tool-start` and `tool-end`: an agent's tool call opens and closes a
//! window in which a change goes to that session's turn alone. Each is a
//! barrier first, like a turn boundary: what changed before the call is
//! captured before the window opens, what the tool changed before it
//! closes.

use std::sync::Arc;

use ckpt_proto::{ToolBody, WirePath};

use super::gate::Gate;
use super::About;
use crate::daemon::Daemon;
use crate::error::ReqResult;

pub fn handle(
    d: &Arc<Daemon>,
    g: Gate,
    dir: &WirePath,
    session: Option<String>,
    // `Some` for a start, with the command it runs if the hook named one.
    start: Option<Option<String>>,
) -> ReqResult<About<ToolBody>> {
    let h = d.project_for(dir)?;
    let session = session.as_deref();
    g.pass(d, &h)?;
    let (running, turn) = h.call(|p| {
        let running = match &start {
            Some(command) => {
                if let Some(c) = command {
                    p.tool_command(session, c)?;
                }
                p.tool_start(session)?
            }
            None => p.tool_end(session)?,
        };
        Ok((running, p.open_turn_of(session)?))
    })?;
    let start = start.is_some();
    tracing::debug!(root = %h.root.display(), session, start, running, "tool window");
    let body = ToolBody { running, turn };
    Ok((h, body))
}
