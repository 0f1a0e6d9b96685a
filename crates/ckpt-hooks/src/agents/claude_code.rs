//! Claude Code.
//! - Hooks: https://code.claude.com/docs/en/hooks ("Hook locations": `~/.claude/settings.json`,
//!   `.claude/settings.json`; events `UserPromptSubmit`, `Stop`, and `StopFailure`, which
//!   replaces `Stop` when a turn ends on an API error; `PreToolUse` and `PostToolUse` around
//!   each tool call, every tool when `matcher` is left out, and `PostToolUseFailure` instead of
//!   `PostToolUse` when the tool fails or is interrupted; `SessionEnd` when the session ends,
//!   the only event an interrupted turn (Esc, SIGINT) still fires; `timeout` in seconds; the
//!   command runs with `sh -c`; common input fields `session_id`, `transcript_path`, `cwd`, plus
//!   `prompt`; a sub-agent's (the Agent tool, formerly Task) hooks carry its parent's
//!   `session_id` and its own `agent_id` and `agent_type` — all checked against the 2.1.197
//!   CLI's bundle).
//! - MCP: https://code.claude.com/docs/en/mcp (user scope: top-level `mcpServers` in
//!   `~/.claude.json`; project scope: `.mcp.json` at the project root).
//! - `$CLAUDE_CONFIG_DIR` replaces `~/.claude` (settings.json, projects/) and the home dir as
//!   the place of `.claude.json`; a `.config.json` in the config dir (older installs) is read
//!   instead of `.claude.json` (the 2.1.197 bundle).
//! - Exit 0 with empty stdout is "no decision"; stdout of `UserPromptSubmit` would become
//!   model context, so the hook prints nothing.

use std::path::PathBuf;

use serde_json::json;

use ckpt_agents::claude_dir;

use super::{Agent, Event, Home, Piece, Spec, Target};
use crate::edit::{Edit, JsonOp};

pub const SPEC: Spec = Spec {
    config_dirs: |h: &Home| vec![claude_dir(h)],
    executables: &["claude"],
    files,
    after_install: None,
    pending: None,
};

/// Seconds: a turn-end of thousands of files takes about one; longer would
/// only hold up the agent's exit.
const SESSION_END_TIMEOUT: u64 = 5;

/// Claude Code's global config, which holds the user's MCP servers.
fn global_config(h: &Home) -> PathBuf {
    let legacy = claude_dir(h).join(".config.json");
    if legacy.is_file() {
        return legacy;
    }
    match std::env::var_os("CLAUDE_CONFIG_DIR").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir).join(".claude.json"),
        None => h.home.join(".claude.json"),
    }
}

fn files(t: &Target) -> anyhow::Result<Vec<Piece>> {
    let start = t.hook_command(Agent::ClaudeCode, Event::TurnStart);
    let end = t.hook_command(Agent::ClaudeCode, Event::TurnEnd);
    let tool_end = t.hook_command(Agent::ClaudeCode, Event::ToolEnd);
    Ok(vec![
        Piece {
            path: t.pick(
                claude_dir(t.home).join("settings.json"),
                ".claude/settings.json",
            ),
            edit: Edit::Json(vec![
                nested_hook(&["hooks", "UserPromptSubmit"], start.clone(), 30),
                nested_hook(&["hooks", "Stop"], end.clone(), 30),
                nested_hook(&["hooks", "StopFailure"], end, 30),
                nested_hook(
                    &["hooks", "PreToolUse"],
                    t.hook_command(Agent::ClaudeCode, Event::ToolStart),
                    30,
                ),
                nested_hook(&["hooks", "PostToolUse"], tool_end.clone(), 30),
                nested_hook(&["hooks", "PostToolUseFailure"], tool_end, 30),
                // Claude Code's exit waits for its SessionEnd hooks up to the
                // longest timeout among them (1.5 s when none is set).
                nested_hook(
                    &["hooks", "SessionEnd"],
                    t.hook_command(Agent::ClaudeCode, Event::SessionEnd),
                    SESSION_END_TIMEOUT,
                ),
            ]),
        },
        Piece {
            path: t.pick(global_config(t.home), ".mcp.json"),
            edit: Edit::Json(vec![JsonOp::Prop {
                at: &["mcpServers"],
                key: "ckpt",
                value: json!({"type": "stdio", "command": t.mcp_program(), "args": ["mcp"]}),
            }]),
        },
    ])
}

/// `{"hooks": {EVENT: [{"hooks": [{"type": "command", …}]}]}}`: the shape
/// Claude Code set and Codex and Gemini CLI follow.
pub fn nested_hook(at: &'static [&'static str], command: String, timeout: u64) -> JsonOp {
    JsonOp::Item {
        at,
        value: json!({"hooks": [{"type": "command", "command": command, "timeout": timeout}]}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both samples from the hooks reference, as printed there.
    #[test]
    fn parses_the_documented_payloads() {
        let p = Agent::ClaudeCode.payload().unwrap();
        let start = p
            .parse(
                r#"{"session_id": "abc123",
  "transcript_path": "/Users/u/.claude/projects/p/00893aaf-19fa-41d2-8238-13269b9b3ca0.jsonl",
  "cwd": "/Users/u/app", "permission_mode": "default",
  "hook_event_name": "UserPromptSubmit",
  "prompt": "Write a function to calculate the factorial of a number"}"#,
            )
            .unwrap();
        assert_eq!(start.session.as_deref(), Some("abc123"));
        assert_eq!(start.cwd.unwrap().to_str(), Some("/Users/u/app"));
        assert!(start.transcript.unwrap().ends_with("13269b9b3ca0.jsonl"));
        assert_eq!(
            start.prompt.as_deref(),
            Some("Write a function to calculate the factorial of a number")
        );
        let stop = p
            .parse(
                r#"{"session_id": "abc123", "transcript_path": "~/.claude/projects/x.jsonl",
  "cwd": "/Users/u/app", "permission_mode": "default", "hook_event_name": "Stop",
  "stop_hook_active": true, "last_assistant_message": "Done.",
  "background_tasks": [], "session_crons": []}"#,
            )
            .unwrap();
        assert_eq!(stop.session.as_deref(), Some("abc123"));
        assert!(stop.prompt.is_none());
        assert!(p.parse(r#"{"cursor_version":"1.7"}"#).unwrap().other_agent);
    }
}
