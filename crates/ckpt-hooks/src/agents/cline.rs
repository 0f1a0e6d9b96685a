//! Cline (the VS Code extension and the `cline` CLI).
//! - Hooks: https://docs.cline.bot/features/hooks and cline/cline `.clinerules/hooks/README.md`:
//!   executable files named after the event, in `~/Documents/Cline/Hooks/` or the project's
//!   `.clinerules/hooks/`; `UserPromptSubmit` gets `taskId`, `workspaceRoots`,
//!   `userPromptSubmit.prompt`; `TaskComplete` ends the turn. The hook may answer with
//!   `{"cancel": false}`; an empty answer is accepted too, with a warning in Cline's log, so
//!   the script prints the answer itself.
//! - MCP: `~/.cline/data/settings/cline_mcp_settings.json` (`mcpServers`), the file the
//!   extension and the CLI share (cline/cline `src/core/storage/disk.ts`).

use serde_json::json;

use super::{Agent, Event, Home, Piece, Spec, Target};
use crate::edit::{Edit, JsonOp, OWN_FILE_TAG};

pub const SPEC: Spec = Spec {
    config_dirs: |h: &Home| vec![h.home.join("Documents/Cline"), h.home.join(".cline")],
    executables: &["cline"],
    files,
    after_install: None,
    pending: None,
};

fn script(t: &Target, e: Event) -> Edit {
    let command = t.hook_command(Agent::Cline, e);
    Edit::File {
        text: format!(
            "#!/bin/sh\n# ckpt: {OWN_FILE_TAG}\n{command}\necho '{{\"cancel\": false}}'\n"
        ),
        executable: true,
    }
}

fn files(t: &Target) -> anyhow::Result<Vec<Piece>> {
    let dir = t.pick(
        t.home.home.join("Documents/Cline/Hooks"),
        ".clinerules/hooks",
    );
    let mut pieces = vec![
        Piece {
            path: dir.join("UserPromptSubmit"),
            edit: script(t, Event::TurnStart),
        },
        Piece {
            path: dir.join("TaskComplete"),
            edit: script(t, Event::TurnEnd),
        },
    ];
    // Cline keeps MCP servers per user only.
    if t.scope == super::Scope::User {
        pieces.push(Piece {
            path: t
                .home
                .home
                .join(".cline/data/settings/cline_mcp_settings.json"),
            edit: Edit::Json(vec![JsonOp::Prop {
                at: &["mcpServers"],
                key: "ckpt",
                value: json!({
                    "command": t.mcp_program(), "args": ["mcp"], "disabled": false,
                    "autoApprove": []
                }),
            }]),
        });
    }
    Ok(pieces)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_payloads() {
        let p = Agent::Cline.payload().unwrap();
        let start = p
            .parse(
                r#"{"clineVersion":"3.40.0","hookName":"UserPromptSubmit",
                "timestamp":"1764580000000","taskId":"1764579990001",
                "workspaceRoots":["/src/app"],"userId":"u1",
                "userPromptSubmit":{"prompt":"add logging","attachments":[]}}"#,
            )
            .unwrap();
        assert_eq!(start.session.as_deref(), Some("1764579990001"));
        assert_eq!(start.prompt.as_deref(), Some("add logging"));
        assert_eq!(start.cwd.unwrap().to_str(), Some("/src/app"));
        let end = p
            .parse(
                r#"{"clineVersion":"3.40.0","hookName":"TaskComplete","timestamp":"1764580100000",
                "taskId":"1764579990001","workspaceRoots":["/src/app"],"userId":"u1",
                "taskComplete":{"taskMetadata":{"taskId":"1764579990001","ulid":""}}}"#,
            )
            .unwrap();
        assert_eq!(end.session.as_deref(), Some("1764579990001"));
        assert!(end.prompt.is_none());
    }
}
