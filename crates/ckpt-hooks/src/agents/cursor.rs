//! Cursor (the editor's agent and the `cursor-agent` CLI).
//! - Hooks: https://cursor.com/docs/agent/hooks (`~/.cursor/hooks.json` or
//!   `<project>/.cursor/hooks.json`, `{"version": 1, "hooks": {EVENT: [{"command": …}]}}`;
//!   events `beforeSubmitPrompt` and `stop`; input `conversation_id`, `generation_id`,
//!   `workspace_roots`, `transcript_path`, plus `prompt`). Exit 0 with no output lets the
//!   prompt through (the docs' own quickstart hook prints nothing).
//! - MCP: https://cursor.com/docs/context/mcp (`mcpServers` in `~/.cursor/mcp.json` or
//!   `.cursor/mcp.json`).

use serde_json::json;

use super::{Agent, Event, Home, Piece, Spec, Target};
use crate::edit::{Edit, JsonOp};

pub const SPEC: Spec = Spec {
    config_dirs: |h: &Home| vec![h.home.join(".cursor")],
    executables: &["cursor", "cursor-agent"],
    files,
    after_install: None,
    pending: None,
};

fn files(t: &Target) -> anyhow::Result<Vec<Piece>> {
    let dir = t.pick(t.home.home.join(".cursor"), ".cursor");
    Ok(vec![
        Piece {
            path: dir.join("hooks.json"),
            edit: Edit::Json(vec![
                JsonOp::Default {
                    key: "version",
                    value: json!(1),
                },
                JsonOp::Item {
                    at: &["hooks", "beforeSubmitPrompt"],
                    value: json!({"command": t.hook_command(Agent::Cursor, Event::TurnStart)}),
                },
                JsonOp::Item {
                    at: &["hooks", "stop"],
                    value: json!({"command": t.hook_command(Agent::Cursor, Event::TurnEnd)}),
                },
            ]),
        },
        Piece {
            path: dir.join("mcp.json"),
            edit: Edit::Json(vec![JsonOp::Prop {
                at: &["mcpServers"],
                key: "ckpt",
                value: json!({"type": "stdio", "command": t.mcp_program(), "args": ["mcp"]}),
            }]),
        },
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_payloads() {
        let p = Agent::Cursor.payload().unwrap();
        let start = p
            .parse(
                r#"{"conversation_id":"c-9","generation_id":"g-1","model":"gpt-5",
                "hook_event_name":"beforeSubmitPrompt","cursor_version":"1.7.2",
                "workspace_roots":["/src/app","/src/lib"],"user_email":null,
                "transcript_path":null,"prompt":"rename Foo","attachments":[]}"#,
            )
            .unwrap();
        assert_eq!(start.session.as_deref(), Some("c-9"));
        assert_eq!(start.cwd.unwrap().to_str(), Some("/src/app"));
        assert_eq!(start.prompt.as_deref(), Some("rename Foo"));
        assert!(!start.other_agent);
        let stop = p
            .parse(
                r#"{"conversation_id":"c-9","generation_id":"g-1","hook_event_name":"stop",
                "workspace_roots":["/src/app"],"status":"completed","loop_count":0}"#,
            )
            .unwrap();
        assert_eq!(stop.session.as_deref(), Some("c-9"));
    }
}
