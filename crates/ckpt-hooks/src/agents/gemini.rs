//! Gemini CLI.
//! - Hooks: https://geminicli.com/docs/hooks/reference (google-gemini/gemini-cli
//!   `docs/hooks/reference.md`): `hooks` in `~/.gemini/settings.json` or
//!   `.gemini/settings.json` (JSON with comments: `settings.ts` strips them); events
//!   `BeforeAgent` and `AfterAgent`, `BeforeTool` and `AfterTool` around each tool call (no
//!   `matcher`: every tool, `hookPlanner.ts`; `AfterTool` fires for a failed tool too, with its
//!   `error`, and there is no failure event of its own), `SessionEnd` on exit and `/clear` (an
//!   aborted turn fires no `AfterAgent`; checked against the 0.61.0 bundle); `timeout` in milliseconds; run with `bash -c`; input
//!   `session_id`, `transcript_path`, `cwd`, `hook_event_name`, `timestamp`, plus `prompt`.
//!   Exit 0 with empty output continues; text on stderr with exit 0 is shown to the user.
//! - MCP: `docs/reference/configuration.md`, `mcpServers.NAME` (`command`, `args`) in the same
//!   settings files.
//! - `$GEMINI_CLI_HOME` replaces the home directory.

use serde_json::{json, Value};

use ckpt_agents::gemini_dir;

use super::{Agent, Event, Home, Piece, Spec, Target};
use crate::edit::{Edit, JsonOp};

pub const SPEC: Spec = Spec {
    config_dirs: |h: &Home| vec![gemini_dir(h)],
    executables: &["gemini"],
    files,
    after_install: None,
    pending: None,
};

fn hook(command: String) -> Value {
    json!({"hooks": [{"name": "ckpt", "type": "command", "command": command, "timeout": 30000}]})
}

fn files(t: &Target) -> anyhow::Result<Vec<Piece>> {
    Ok(vec![Piece {
        path: t.pick(
            gemini_dir(t.home).join("settings.json"),
            ".gemini/settings.json",
        ),
        edit: Edit::Json(vec![
            JsonOp::Item {
                at: &["hooks", "BeforeAgent"],
                value: hook(t.hook_command(Agent::Gemini, Event::TurnStart)),
            },
            JsonOp::Item {
                at: &["hooks", "AfterAgent"],
                value: hook(t.hook_command(Agent::Gemini, Event::TurnEnd)),
            },
            JsonOp::Item {
                at: &["hooks", "BeforeTool"],
                value: hook(t.hook_command(Agent::Gemini, Event::ToolStart)),
            },
            JsonOp::Item {
                at: &["hooks", "AfterTool"],
                value: hook(t.hook_command(Agent::Gemini, Event::ToolEnd)),
            },
            JsonOp::Item {
                at: &["hooks", "SessionEnd"],
                value: hook(t.hook_command(Agent::Gemini, Event::SessionEnd)),
            },
            JsonOp::Prop {
                at: &["mcpServers"],
                key: "ckpt",
                value: json!({"command": t.mcp_program(), "args": ["mcp"]}),
            },
        ]),
    }])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_payloads() {
        let p = Agent::Gemini.payload().unwrap();
        let start = p
            .parse(
                r#"{"session_id":"s-1","transcript_path":"","cwd":"/src/app",
                "hook_event_name":"BeforeAgent","timestamp":"2026-12-01T10:00:00Z",
                "prompt":"add a test"}"#,
            )
            .unwrap();
        assert_eq!(start.session.as_deref(), Some("s-1"));
        assert_eq!(start.prompt.as_deref(), Some("add a test"));
        assert_eq!(start.transcript, None);
        let end = p
            .parse(
                r#"{"session_id":"s-1","transcript_path":"/home/u/.gemini/tmp/h/chats/s.json",
                "cwd":"/src/app","hook_event_name":"AfterAgent",
                "timestamp":"2026-12-01T10:01:00Z","prompt":"add a test",
                "prompt_response":"Added.","stop_hook_active":false}"#,
            )
            .unwrap();
        assert_eq!(end.cwd.unwrap().to_str(), Some("/src/app"));
        assert!(end.transcript.is_some());
    }
}
