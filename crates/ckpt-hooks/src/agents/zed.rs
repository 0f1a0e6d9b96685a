//! Zed: no hooks, so ckpt reaches its agent through MCP only.
//! - https://zed.dev/docs/ai/mcp ("context_servers" in `~/.config/zed/settings.json` or the
//!   project's `.zed/settings.json`, JSON with comments; a local server is
//!   `{"source": "custom", "command": …, "args": […], "env": {}}`).

use serde_json::json;

use super::{Home, Piece, Spec, Target};
use crate::edit::{Edit, JsonOp};

pub const SPEC: Spec = Spec {
    config_dirs: |h: &Home| vec![h.config.join("zed")],
    executables: &["zed", "zeditor"],
    files,
    after_install: None,
    pending: None,
};

fn files(t: &Target) -> anyhow::Result<Vec<Piece>> {
    Ok(vec![Piece {
        path: t.pick(
            t.home.config.join("zed/settings.json"),
            ".zed/settings.json",
        ),
        edit: Edit::Json(vec![JsonOp::Prop {
            at: &["context_servers"],
            key: "ckpt",
            value: json!({
                "source": "custom", "command": t.mcp_program(), "args": ["mcp"], "env": {}
            }),
        }]),
    }])
}
