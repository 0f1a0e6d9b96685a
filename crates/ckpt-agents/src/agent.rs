//! The coding agents ckpt wires into, as the hook path knows them: their
//! names, the hook events, what each agent's hook payload calls things
//! (`payloads`), and the user's home where their configs and sessions live.
//! How to install into each is `ckpt-hooks`' (`crates/ckpt-hooks/src/agents/`).

use std::path::PathBuf;

use anyhow::Context;

use crate::payload::Payload;
use crate::payloads;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum Agent {
    ClaudeCode,
    Codex,
    Gemini,
    Cursor,
    Copilot,
    Cline,
    Kiro,
    Opencode,
    /// MCP only: Zed has no hooks.
    Zed,
}

impl Agent {
    pub const ALL: [Agent; 9] = [
        Agent::ClaudeCode,
        Agent::Codex,
        Agent::Gemini,
        Agent::Cursor,
        Agent::Copilot,
        Agent::Cline,
        Agent::Kiro,
        Agent::Opencode,
        Agent::Zed,
    ];

    /// The agents whose installed hooks include tool-start and tool-end
    /// (the others mark turns only).
    pub const WITH_TOOL_HOOKS: [Agent; 3] = [Agent::ClaudeCode, Agent::Codex, Agent::Gemini];

    /// The name on the command line and in `--from-hook=NAME`.
    pub fn name(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "claude-code",
            Agent::Codex => "codex",
            Agent::Gemini => "gemini",
            Agent::Cursor => "cursor",
            Agent::Copilot => "copilot",
            Agent::Cline => "cline",
            Agent::Kiro => "kiro",
            Agent::Opencode => "opencode",
            Agent::Zed => "zed",
        }
    }

    /// Its hook payload's names; None: the agent has no hooks (MCP only).
    /// Apart from its installer (`ckpt-hooks`), which the hook path never links.
    pub fn payload(self) -> Option<&'static Payload> {
        let p = match self {
            Agent::ClaudeCode => &payloads::CLAUDE_CODE,
            Agent::Codex => &payloads::CODEX,
            Agent::Gemini => &payloads::GEMINI,
            Agent::Cursor => &payloads::CURSOR,
            Agent::Copilot => &payloads::COPILOT,
            Agent::Cline => &payloads::CLINE,
            Agent::Kiro => &payloads::KIRO,
            Agent::Opencode => &payloads::OPENCODE,
            Agent::Zed => &payloads::ZED,
        };
        p.as_ref()
    }
}

impl std::fmt::Display for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The hook events ckpt installs: a turn opens before the agent acts on a
/// prompt and closes after it finishes. Every event an agent can end a
/// turn or a tool call with is hooked (success, failure, interrupt, session
/// end): a turn left open takes in everything after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    TurnStart,
    TurnEnd,
    /// Before the agent runs a tool (edit, shell, …).
    ToolStart,
    /// After the tool ran, or failed.
    ToolEnd,
    /// The session ended or its turn was interrupted, with or without a
    /// turn open: close the session's turn if it has one.
    SessionEnd,
}

impl Event {
    /// The ckptctl subcommand the hook runs.
    pub fn command(self) -> &'static str {
        match self {
            Event::TurnStart => "turn-start",
            Event::TurnEnd | Event::SessionEnd => "turn-end",
            Event::ToolStart => "tool-start",
            Event::ToolEnd => "tool-end",
        }
    }

    /// Its name in `hooks status`, `status` and the hook's error line.
    pub fn name(self) -> &'static str {
        match self {
            Event::SessionEnd => "session-end",
            other => other.command(),
        }
    }

    /// The subcommand with the flags that make it this event.
    pub fn args(self) -> &'static str {
        match self {
            Event::SessionEnd => "turn-end --if-open",
            other => other.command(),
        }
    }
}

/// The user's home and config dirs (from the environment, so tests and
/// users can point them elsewhere).
pub struct Home {
    pub home: PathBuf,
    /// `$XDG_CONFIG_HOME`, else `~/.config`.
    pub config: PathBuf,
}

impl Home {
    pub fn from_env() -> anyhow::Result<Home> {
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .context("HOME is not set: cannot find the agents' user config")?;
        let config = std::env::var_os("XDG_CONFIG_HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| home.join(".config"));
        Ok(Home { home, config })
    }

    /// `$VAR` if set (an agent's documented override), else `~/default`.
    pub fn env_or(&self, var: &str, default: &str) -> PathBuf {
        std::env::var_os(var)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| self.home.join(default))
    }
}
/// `$CLAUDE_CONFIG_DIR`, else `~/.claude`: settings.json and the session
/// transcripts (`projects/`).
pub fn claude_dir(h: &Home) -> PathBuf {
    h.env_or("CLAUDE_CONFIG_DIR", ".claude")
}

pub fn codex_home(h: &Home) -> std::path::PathBuf {
    h.env_or("CODEX_HOME", ".codex")
}

pub fn gemini_dir(h: &Home) -> std::path::PathBuf {
    match std::env::var_os("GEMINI_CLI_HOME").filter(|v| !v.is_empty()) {
        Some(home) => std::path::PathBuf::from(home).join(".gemini"),
        None => h.home.join(".gemini"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_hook_agent_has_a_payload_and_names_round_trip() {
        use clap::ValueEnum;
        for a in Agent::ALL {
            assert_eq!(Agent::from_str(a.name(), false).unwrap(), a);
            assert_eq!(a.payload().is_none(), a == Agent::Zed, "{a}");
        }
    }
}
