//! OpenCode: a plugin file, no hook config.
//! - Plugins: https://opencode.ai/docs/plugins (`.opencode/plugins/` in the project,
//!   `~/.config/opencode/plugins/` for the user; every exported function is a plugin and gets
//!   `{ directory, worktree, … }`; the `chat.message` hook gets `sessionID` and the message's
//!   `parts`; the `event` hook sees `session.idle` (and `session.status` with status `idle` in
//!   newer versions) when the agent has finished).
//! - MCP: https://opencode.ai/docs/mcp-servers (`"mcp": {"ckpt": {"type": "local", "command":
//!   [..]}}` in `~/.config/opencode/opencode.json` or the project's `opencode.json`).
//!
//! The plugin sends ckpt its own payload (the names below), on stdin.

use serde_json::json;

use super::{hook_flag, Agent, Home, Piece, Spec, Target};
use crate::edit::{Edit, JsonOp, OWN_FILE_TAG};

pub const SPEC: Spec = Spec {
    config_dirs: |h: &Home| vec![h.config.join("opencode")],
    executables: &["opencode"],
    files,
    after_install: None,
    pending: None,
};

/// Runs ckptctl without a shell (node:child_process, which OpenCode's Bun
/// and Node runtimes both have), never waits more than 10 s, and swallows
/// every error: a hook must not stop the agent.
const PLUGIN: &str = r#"// ckpt: TAG
import { spawn } from "node:child_process"

const CKPTCTL = PATH

function ckpt(args, payload, cwd) {
  return new Promise((resolve) => {
    let child
    try {
      child = spawn(CKPTCTL, args, { cwd, stdio: ["pipe", "ignore", "ignore"] })
    } catch {
      return resolve()
    }
    const timer = setTimeout(() => { try { child.kill() } catch {} ; resolve() }, 10_000)
    child.on("error", () => { clearTimeout(timer); resolve() })
    child.on("close", () => { clearTimeout(timer); resolve() })
    child.stdin.on("error", () => {})
    child.stdin.end(JSON.stringify(payload))
  })
}

export const CkptPlugin = async ({ directory }) => {
  const open = new Set()
  return {
    "chat.message": async (input, output) => {
      try {
        const prompt = (output?.parts ?? [])
          .filter((p) => p && p.type === "text" && !p.synthetic)
          .map((p) => p.text)
          .join("\n")
        open.add(input.sessionID)
        await ckpt(["turn-start", "FLAG"], { session_id: input.sessionID, prompt, cwd: directory }, directory)
      } catch {}
    },
    event: async ({ event }) => {
      try {
        const p = event?.properties
        const idle = event.type === "session.idle" ||
          (event.type === "session.status" && p?.status?.type === "idle")
        if (!idle || !p?.sessionID || !open.has(p.sessionID)) return
        open.delete(p.sessionID)
        await ckpt(["turn-end", "FLAG"], { session_id: p.sessionID, cwd: directory }, directory)
      } catch {}
    },
  }
}
"#;

fn plugin(t: &Target) -> String {
    PLUGIN
        .replacen("TAG", OWN_FILE_TAG, 1)
        .replacen("PATH", &json!(t.mcp_program()).to_string(), 1)
        .replace("FLAG", &hook_flag(Agent::Opencode))
}

fn files(t: &Target) -> anyhow::Result<Vec<Piece>> {
    let dir = t.pick(t.home.config.join("opencode"), ".opencode");
    let config = t.pick(
        t.home.config.join("opencode/opencode.json"),
        "opencode.json",
    );
    Ok(vec![
        Piece {
            path: dir.join("plugins/ckpt.js"),
            edit: Edit::File {
                text: plugin(t),
                executable: false,
            },
        },
        Piece {
            path: config,
            edit: Edit::Json(vec![JsonOp::Prop {
                at: &["mcp"],
                key: "ckpt",
                value: json!({"type": "local", "command": [t.mcp_program(), "mcp"], "enabled": true}),
            }]),
        },
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_the_plugin_sends() {
        let p = Agent::Opencode.payload().unwrap();
        let start = p
            .parse(r#"{"session_id":"ses_1","prompt":"tidy up","cwd":"/src/app"}"#)
            .unwrap();
        assert_eq!(start.session.as_deref(), Some("ses_1"));
        assert_eq!(start.prompt.as_deref(), Some("tidy up"));
        assert_eq!(start.cwd.unwrap().to_str(), Some("/src/app"));
    }

    #[test]
    fn the_plugin_names_this_ckptctl_and_both_events() {
        let home = Home {
            home: "/h".into(),
            config: "/h/.config".into(),
        };
        let t = Target {
            scope: super::super::Scope::User,
            home: &home,
            project: std::path::Path::new("/p"),
            ckptctl: std::path::Path::new("/opt/ck \"x\"/ckptctl"),
        };
        let text = plugin(&t);
        assert!(
            text.contains(r#"const CKPTCTL = "/opt/ck \"x\"/ckptctl""#),
            "{text}"
        );
        assert!(
            text.contains(r#"["turn-start", "--from-hook=opencode"]"#),
            "{text}"
        );
        assert!(
            text.contains(r#"["turn-end", "--from-hook=opencode"]"#),
            "{text}"
        );
        assert!(text.starts_with(&format!("// ckpt: {OWN_FILE_TAG}")));
    }
}
