//! GitHub Copilot CLI.
//! - Hooks: https://docs.github.com/en/copilot/reference/cli-hooks-reference (files
//!   `.github/hooks/*.json` in the repository, `~/.copilot/hooks/*.json` for the user;
//!   `{"version": 1, "hooks": {EVENT: [{"type": "command", "bash": …, "timeoutSec": …}]}}`;
//!   `userPromptSubmitted` gets `sessionId`, `timestamp`, `cwd`, `prompt`; `agentStop` ("the
//!   main agent finishes a turn") gets `sessionId`, `cwd`, `transcriptPath`, `stopReason`.
//!   "Hook failures … never block agent execution"). The file is ckpt's own: `ckpt.json`.
//! - MCP: https://docs.github.com/en/copilot/how-tos/copilot-cli/customize-copilot/add-mcp-servers
//!   (`~/.copilot/mcp-config.json`; in a repository `.github/mcp.json`).
//! - `$COPILOT_HOME` replaces `~/.copilot`.

use serde_json::{json, Value};

use super::{Agent, Event, Home, Piece, Spec, Target};
use crate::edit::{Edit, JsonOp};

pub const SPEC: Spec = Spec {
    config_dirs: |h: &Home| vec![copilot_home(h)],
    executables: &["copilot"],
    files,
    after_install: None,
    pending: None,
};

fn copilot_home(h: &Home) -> std::path::PathBuf {
    h.env_or("COPILOT_HOME", ".copilot")
}

fn hook(command: String) -> Value {
    json!({"type": "command", "bash": command, "timeoutSec": 30})
}

fn files(t: &Target) -> anyhow::Result<Vec<Piece>> {
    let home = copilot_home(t.home);
    Ok(vec![
        Piece {
            path: t.pick(home.join("hooks/ckpt.json"), ".github/hooks/ckpt.json"),
            edit: Edit::Json(vec![
                JsonOp::Default {
                    key: "version",
                    value: json!(1),
                },
                JsonOp::Item {
                    at: &["hooks", "userPromptSubmitted"],
                    value: hook(t.hook_command(Agent::Copilot, Event::TurnStart)),
                },
                JsonOp::Item {
                    at: &["hooks", "agentStop"],
                    value: hook(t.hook_command(Agent::Copilot, Event::TurnEnd)),
                },
            ]),
        },
        Piece {
            path: t.pick(home.join("mcp-config.json"), ".github/mcp.json"),
            edit: Edit::Json(vec![JsonOp::Prop {
                at: &["mcpServers"],
                key: "ckpt",
                value: json!({
                    "type": "local", "command": t.mcp_program(), "args": ["mcp"], "tools": ["*"]
                }),
            }]),
        },
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_payloads() {
        let p = Agent::Copilot.payload().unwrap();
        let start = p
            .parse(
                r#"{"sessionId":"4f1e","timestamp":1764580000000,"cwd":"/src/app",
                "prompt":"bump the version"}"#,
            )
            .unwrap();
        assert_eq!(start.session.as_deref(), Some("4f1e"));
        assert_eq!(start.prompt.as_deref(), Some("bump the version"));
        assert_eq!(start.cwd.unwrap().to_str(), Some("/src/app"));
        let stop = p
            .parse(
                r#"{"sessionId":"4f1e","timestamp":1764580009000,"cwd":"/src/app",
                "transcriptPath":"/home/u/.copilot/session-state/4f1e/events.jsonl",
                "stopReason":"end_turn"}"#,
            )
            .unwrap();
        assert!(stop.transcript.unwrap().ends_with("events.jsonl"));
    }
}
