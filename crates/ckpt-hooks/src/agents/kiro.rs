//! Kiro CLI.
//! - Hooks: https://kiro.dev/docs/cli/hooks ("Hooks are defined in the agent configuration
//!   file": `~/.kiro/agents/NAME.json` or `.kiro/agents/NAME.json`, `"hooks":
//!   {"userPromptSubmit": [{"command": …}], "stop": [{"command": …}]}`; run with `bash -c`;
//!   input `hook_event_name`, `cwd`, and `prompt` — no session id, no transcript). Hooks run
//!   for the active agent only, and the built-in default agent has no file: ckpt adds its
//!   hooks to every agent file at the scope, or writes its own agent `ckpt` (with every
//!   tool, as the default has) when there is none.
//! - MCP: https://kiro.dev/docs/cli/mcp (`~/.kiro/settings/mcp.json` or
//!   `.kiro/settings/mcp.json`, `mcpServers`).

use serde_json::json;

use super::{Agent, Event, Home, Piece, Spec, Target};
use crate::edit::{Edit, JsonOp};

pub const SPEC: Spec = Spec {
    config_dirs: |h: &Home| vec![h.home.join(".kiro")],
    executables: &["kiro-cli", "kiro"],
    files,
    after_install: Some(
        "Kiro runs hooks of the active agent only: if ckpt wrote its own agent, make it the \
         default with `kiro-cli agent set-default ckpt`",
    ),
    pending: None,
};

fn files(t: &Target) -> anyhow::Result<Vec<Piece>> {
    let kiro = t.pick(t.home.home.join(".kiro"), ".kiro");
    let agents_dir = kiro.join("agents");
    let mut agents: Vec<_> = match std::fs::read_dir(&agents_dir) {
        Ok(rd) => rd
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect(),
        Err(_) => Vec::new(),
    };
    agents.sort();
    let own = agents_dir.join("ckpt.json");
    if agents.is_empty() {
        agents.push(own.clone());
    }
    let mut pieces: Vec<Piece> = agents
        .into_iter()
        .map(|path| {
            let mut ops = Vec::new();
            if path == own {
                ops.push(JsonOp::Default {
                    key: "name",
                    value: json!("ckpt"),
                });
                ops.push(JsonOp::Default {
                    key: "tools",
                    value: json!(["*"]),
                });
                ops.push(JsonOp::Default {
                    key: "includeMcpJson",
                    value: json!(true),
                });
            }
            ops.push(JsonOp::Item {
                at: &["hooks", "userPromptSubmit"],
                value: json!({"command": t.hook_command(Agent::Kiro, Event::TurnStart)}),
            });
            ops.push(JsonOp::Item {
                at: &["hooks", "stop"],
                value: json!({"command": t.hook_command(Agent::Kiro, Event::TurnEnd)}),
            });
            Piece {
                path,
                edit: Edit::Json(ops),
            }
        })
        .collect();
    pieces.push(Piece {
        path: kiro.join("settings/mcp.json"),
        edit: Edit::Json(vec![JsonOp::Prop {
            at: &["mcpServers"],
            key: "ckpt",
            value: json!({"command": t.mcp_program(), "args": ["mcp"]}),
        }]),
    });
    Ok(pieces)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The two samples of the hooks page, verbatim.
    #[test]
    fn parses_the_documented_payloads() {
        let p = Agent::Kiro.payload().unwrap();
        let start = p
            .parse(
                r#"{ "hook_event_name": "userPromptSubmit", "cwd": "/current/working/directory",
                "prompt": "user's input prompt" }"#,
            )
            .unwrap();
        assert_eq!(start.prompt.as_deref(), Some("user's input prompt"));
        assert_eq!(
            start.cwd.unwrap().to_str(),
            Some("/current/working/directory")
        );
        assert_eq!(start.session, None);
        let stop = p
            .parse(r#"{ "hook_event_name": "stop", "cwd": "/current/working/directory" }"#)
            .unwrap();
        assert!(stop.cwd.is_some());
    }
}
