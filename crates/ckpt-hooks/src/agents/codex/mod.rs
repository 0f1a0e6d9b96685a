//! OpenAI Codex CLI.
//! - Hooks: https://developers.openai.com/codex/hooks (`~/.codex/hooks.json` and
//!   `<repo>/.codex/hooks.json`, Claude Code's shape; events `UserPromptSubmit` and `Stop`,
//!   and `PreToolUse`/`PostToolUse` around each tool call (openai/codex
//!   `codex-rs/hooks/src/events/pre_tool_use.rs`, `post_tool_use.rs`: same input fields;
//!   exit 0 with empty stdout decides nothing); `SessionEnd` and `Interrupt` (a turn the user
//!   interrupted), whose timeouts Codex clamps to 3 s; no failure event of its own
//!   (`PostToolUse` carries a failed tool's output); `timeout` in seconds; run as
//!   `$SHELL -lc`; input fields `session_id`, `turn_id`, `transcript_path` (nullable), `cwd`,
//!   `prompt` — schemas in openai/codex `codex-rs/hooks/schema/generated/`, and the 0.171.0
//!   binary's, whose `app-server` `hooks/list` lists what it loaded). Codex runs a hook only
//!   once the user trusts it in `/hooks` (`trust.rs`).
//! - MCP: https://developers.openai.com/codex/mcp (`[mcp_servers.NAME]` with `command`,
//!   `args`, and `env_vars`: the names of variables passed through to the server, which
//!   otherwise gets only HOME, LOGNAME, PATH, SHELL, USER, LANG, LC_ALL, TERM, TMPDIR and TZ
//!   (openai/codex `codex-rs/config/src/mcp_types.rs`), in `~/.codex/config.toml`, or
//!   `.codex/config.toml` of a trusted project).
//! - `$CODEX_HOME` replaces `~/.codex`.

use serde_json::json;

use ckpt_agents::codex_home;

use super::claude_code::nested_hook;
use super::{Agent, Event, Home, Piece, Spec, Target};
use crate::edit::Edit;

mod trust;

pub const SPEC: Spec = Spec {
    config_dirs: |h: &Home| vec![codex_home(h)],
    executables: &["codex"],
    files,
    after_install: None,
    pending: Some(trust::pending),
};

/// Codex clamps the timeout of `SessionEnd` and `Interrupt` hooks to 3 s
/// (and warns); installed with it, they are hashed as written (`trust.rs`).
const SHORT_TIMEOUT: u64 = 3;

/// What a stripped environment must still pass to `ckptctl mcp` for it to
/// find the daemon and agree with it on the data dir (`ckpt_proto::paths`).
const MCP_ENV_VARS: [&str; 4] = [
    "CKPT_SOCKET",
    "CKPT_DATA_DIR",
    "XDG_RUNTIME_DIR",
    "XDG_DATA_HOME",
];

/// The `hooks.json` an install at the target's scope writes.
fn hooks_json(t: &Target) -> std::path::PathBuf {
    t.pick(codex_home(t.home).join("hooks.json"), ".codex/hooks.json")
}

fn files(t: &Target) -> anyhow::Result<Vec<Piece>> {
    let dir = codex_home(t.home);
    Ok(vec![
        Piece {
            path: hooks_json(t),
            edit: Edit::Json(vec![
                nested_hook(
                    &["hooks", "UserPromptSubmit"],
                    t.hook_command(Agent::Codex, Event::TurnStart),
                    30,
                ),
                nested_hook(
                    &["hooks", "Stop"],
                    t.hook_command(Agent::Codex, Event::TurnEnd),
                    30,
                ),
                nested_hook(
                    &["hooks", "PreToolUse"],
                    t.hook_command(Agent::Codex, Event::ToolStart),
                    30,
                ),
                nested_hook(
                    &["hooks", "PostToolUse"],
                    t.hook_command(Agent::Codex, Event::ToolEnd),
                    30,
                ),
                nested_hook(
                    &["hooks", "SessionEnd"],
                    t.hook_command(Agent::Codex, Event::SessionEnd),
                    SHORT_TIMEOUT,
                ),
                nested_hook(
                    &["hooks", "Interrupt"],
                    t.hook_command(Agent::Codex, Event::SessionEnd),
                    SHORT_TIMEOUT,
                ),
            ]),
        },
        Piece {
            path: t.pick(dir.join("config.toml"), ".codex/config.toml"),
            edit: Edit::Toml {
                at: &["mcp_servers"],
                key: "ckpt",
                value: json!({"command": t.mcp_program(), "args": ["mcp"],
                              "env_vars": MCP_ENV_VARS}),
            },
        },
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Built from the input schemas (`additionalProperties: false`, every
    /// field required); the docs print no sample.
    #[test]
    fn parses_the_schema_payloads() {
        let p = Agent::Codex.payload().unwrap();
        let start = p
            .parse(
                r#"{"session_id":"0199a0b2","turn_id":"t1",
                "transcript_path":"/home/u/.codex/sessions/2026/12/01/rollout-1.jsonl",
                "cwd":"/home/u/proj","hook_event_name":"UserPromptSubmit","model":"gpt-5",
                "permission_mode":"default","prompt":"fix the tests"}"#,
            )
            .unwrap();
        assert_eq!(start.session.as_deref(), Some("0199a0b2"));
        assert_eq!(start.prompt.as_deref(), Some("fix the tests"));
        assert_eq!(start.cwd.unwrap().to_str(), Some("/home/u/proj"));
        assert!(start.transcript.unwrap().ends_with("rollout-1.jsonl"));
        let stop = p
            .parse(
                r#"{"session_id":"0199a0b2","turn_id":"t1","transcript_path":null,
                "cwd":"/home/u/proj","hook_event_name":"Stop","model":"gpt-5",
                "permission_mode":"default","stop_hook_active":false,
                "last_assistant_message":null}"#,
            )
            .unwrap();
        assert_eq!(stop.session.as_deref(), Some("0199a0b2"));
        assert_eq!(stop.transcript, None);
    }
}
