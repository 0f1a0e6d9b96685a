//! What each agent's hook payload calls things, read on every hook call.
//! Each agent's file in `crates/ckpt-hooks/src/agents/` cites the
//! documentation these names come from.

use crate::payload::Payload;

/// Claude Code (`crates/ckpt-hooks/src/agents/claude_code.rs`).
pub const CLAUDE_CODE: Option<Payload> = Some(Payload {
    session: &[&["session_id"]],
    prompt: &[&["prompt"]],
    cwd: &[&["cwd"]],
    transcript: &[&["transcript_path"]],
    command: &[&["tool_input", "command"]],
    // Cursor runs Claude Code's hooks as well, adding `cursor_version`
    // (https://cursor.com/docs/agent/hooks, "Claude Code hooks").
    sent_by_other: Some("cursor_version"),
});

/// Codex (`crates/ckpt-hooks/src/agents/codex/mod.rs`).
pub const CODEX: Option<Payload> = Some(Payload {
    session: &[&["session_id"]],
    prompt: &[&["prompt"]],
    cwd: &[&["cwd"]],
    transcript: &[&["transcript_path"]],
    command: &[&["tool_input", "command"]],
    sent_by_other: None,
});

/// Gemini (`crates/ckpt-hooks/src/agents/gemini.rs`).
pub const GEMINI: Option<Payload> = Some(Payload {
    session: &[&["session_id"]],
    prompt: &[&["prompt"]],
    cwd: &[&["cwd"]],
    transcript: &[&["transcript_path"]],
    command: &[&["tool_input", "command"]],
    sent_by_other: None,
});

/// Cursor (`crates/ckpt-hooks/src/agents/cursor.rs`).
pub const CURSOR: Option<Payload> = Some(Payload {
    session: &[&["conversation_id"]],
    prompt: &[&["prompt"]],
    cwd: &[&["workspace_roots"], &["cwd"]],
    transcript: &[&["transcript_path"]],
    command: &[&["command"]],
    sent_by_other: None,
});

/// Copilot (`crates/ckpt-hooks/src/agents/copilot.rs`).
pub const COPILOT: Option<Payload> = Some(Payload {
    session: &[&["sessionId"], &["session_id"]],
    prompt: &[&["prompt"]],
    cwd: &[&["cwd"]],
    transcript: &[&["transcriptPath"], &["transcript_path"]],
    command: &[],
    sent_by_other: None,
});

/// Cline (`crates/ckpt-hooks/src/agents/cline.rs`).
pub const CLINE: Option<Payload> = Some(Payload {
    session: &[&["taskId"]],
    prompt: &[&["userPromptSubmit", "prompt"]],
    cwd: &[&["workspaceRoots"]],
    transcript: &[],
    command: &[],
    sent_by_other: None,
});

/// Kiro (`crates/ckpt-hooks/src/agents/kiro.rs`).
pub const KIRO: Option<Payload> = Some(Payload {
    session: &[&["session_id"]],
    prompt: &[&["prompt"]],
    cwd: &[&["cwd"]],
    transcript: &[],
    command: &[],
    sent_by_other: None,
});

/// Opencode (`crates/ckpt-hooks/src/agents/opencode.rs`).
pub const OPENCODE: Option<Payload> = Some(Payload {
    session: &[&["session_id"]],
    prompt: &[&["prompt"]],
    cwd: &[&["cwd"]],
    transcript: &[],
    command: &[],
    sent_by_other: None,
});

/// Zed (`crates/ckpt-hooks/src/agents/zed.rs`). No hooks: MCP only.
pub const ZED: Option<Payload> = None;
