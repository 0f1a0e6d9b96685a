//! `ckptctl mcp`: replaces this process with the MCP server, `ckpt-mcp`
//! from the same build, found next to this executable.
//!
//! The server lives in its own executable because it links rmcp and an
//! async runtime, which doubled `ckptctl` and slowed the start of every
//! hook call (docs/measurements.md, issue 18).

use std::process::Command;

use super::{sibling, Ctx};

/// The server's executable name, next to `ckptctl`'s.
pub const SERVER: &str = "ckpt-mcp";

/// Execs `ckpt-mcp` with the global flags it acts on; returns only on failure.
pub fn run(ctx: &Ctx) -> anyhow::Result<u8> {
    let mut cmd = Command::new(sibling::path(SERVER)?);
    cmd.arg("-C").arg(&ctx.dir);
    if let Some(socket) = &ctx.g.socket {
        cmd.arg("--socket").arg(socket);
    }
    if let Some(data_dir) = &ctx.g.data_dir {
        cmd.arg("--data-dir").arg(data_dir);
    }
    if ctx.g.json {
        cmd.arg("--json");
    }
    if ctx.g.quiet {
        cmd.arg("--quiet");
    }
    sibling::exec(cmd, SERVER, "the MCP server")
}
