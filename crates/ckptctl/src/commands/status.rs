//! What `ckptctl status` (run by `ckpt-doctor`), `hooks status` and the
//! MCP server share: the daemon's status, and a hook's last call in words.

use ckpt_proto::{Request, StatusReply};

use super::Ctx;
use crate::output;
use ckpt_agents::calls::Calls;
use ckpt_agents::Agent;

/// The daemon and every project: the document `--json` prints.
pub fn query(ctx: &Ctx) -> anyhow::Result<StatusReply> {
    ctx.ask(&Request::Status)
}

/// "never", "3m ago, turn-end in /src/app", or the failure.
pub fn last_call(agent: Agent, calls: &Calls) -> String {
    if agent.payload().is_none() {
        return "(no hooks; MCP only)".to_string();
    }
    let ago = |at_ms: u64| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        format!("{} ago", output::duration(now.saturating_sub(at_ms) / 1000))
    };
    if let Some(e) = calls.failing() {
        return format!(
            "FAILED {}, {}: {}",
            ago(e.at_ms),
            e.event,
            e.error.as_deref().unwrap_or("?")
        );
    }
    match &calls.last_ok {
        Some(ok) => format!(
            "{}, {} in {}{}",
            ago(ok.at_ms),
            ok.event,
            ok.project.as_deref().unwrap_or("?"),
            ok.note
                .as_deref()
                .map_or(String::new(), |n| format!(" (ok: {n})"))
        ),
        None => "never".to_string(),
    }
}
