//! The coding agents ckpt wires into: where each keeps its hook and MCP
//! config, what its hook payload calls things, and how to tell it is
//! installed here. One file per agent, each citing the documentation its
//! names come from.

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::hooks::edit::Edit;

mod claude_code;
mod cline;
mod codex;
mod copilot;
mod cursor;
mod gemini;
mod kiro;
mod opencode;
pub mod payload;
mod zed;

// The agents' homes, where their session files live too (`conversation`).
pub(crate) use claude_code::claude_dir;
pub(crate) use codex::codex_home;
pub(crate) use gemini::gemini_dir;

pub use payload::{HookInput, Payload};

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
    /// Apart from [`Spec`] so that the hook path links no installer.
    pub fn payload(self) -> Option<&'static Payload> {
        let p = match self {
            Agent::ClaudeCode => &claude_code::PAYLOAD,
            Agent::Codex => &codex::PAYLOAD,
            Agent::Gemini => &gemini::PAYLOAD,
            Agent::Cursor => &cursor::PAYLOAD,
            Agent::Copilot => &copilot::PAYLOAD,
            Agent::Cline => &cline::PAYLOAD,
            Agent::Kiro => &kiro::PAYLOAD,
            Agent::Opencode => &opencode::PAYLOAD,
            Agent::Zed => &zed::PAYLOAD,
        };
        p.as_ref()
    }

    /// How to install into it.
    pub fn spec(self) -> &'static Spec {
        match self {
            Agent::ClaudeCode => &claude_code::SPEC,
            Agent::Codex => &codex::SPEC,
            Agent::Gemini => &gemini::SPEC,
            Agent::Cursor => &cursor::SPEC,
            Agent::Copilot => &copilot::SPEC,
            Agent::Cline => &cline::SPEC,
            Agent::Kiro => &kiro::SPEC,
            Agent::Opencode => &opencode::SPEC,
            Agent::Zed => &zed::SPEC,
        }
    }

    /// Whether the agent is on this machine: a config dir or its
    /// executable on PATH.
    pub fn detect(self, home: &Home) -> Option<String> {
        let spec = self.spec();
        if let Some(dir) = (spec.config_dirs)(home).into_iter().find(|d| d.is_dir()) {
            return Some(dir.display().to_string());
        }
        spec.executables
            .iter()
            .find_map(|exe| on_path(exe))
            .map(|p| p.display().to_string())
    }
}

impl std::fmt::Display for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What installing into one agent takes.
pub struct Spec {
    /// Directories whose presence means the agent is installed.
    pub config_dirs: fn(&Home) -> Vec<PathBuf>,
    pub executables: &'static [&'static str],
    /// The files `hooks install` changes at a scope, and how.
    pub files: fn(&Target) -> anyhow::Result<Vec<Piece>>,
    /// What the user still has to do after an install, if anything.
    pub after_install: Option<&'static str>,
    /// Whether the agent will run the hooks installed at a scope, read
    /// from its own config (Codex runs only hooks the user trusted): None
    /// when nothing is pending, else what to do.
    pub pending: Option<PendingCheck>,
}

/// Reads what an agent still needs before it runs the hooks installed at a
/// target's scope (`Spec::pending`).
pub type PendingCheck = fn(&Target) -> anyhow::Result<Option<String>>;

/// A change to one file.
#[derive(Debug, Clone)]
pub struct Piece {
    pub path: PathBuf,
    pub edit: Edit,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// The user's own config: every project.
    User,
    /// The project's config (often committed; shared with its team).
    Project,
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
    fn args(self) -> &'static str {
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

/// Where an install goes and what its hooks run.
pub struct Target<'a> {
    pub scope: Scope,
    pub home: &'a Home,
    /// The project's root (for `Scope::Project`).
    pub project: &'a Path,
    /// The ckptctl the hooks run: this one, by absolute path, so an agent
    /// started from a desktop launcher (another PATH) still finds it.
    pub ckptctl: &'a Path,
}

impl Target<'_> {
    /// `user` at user scope, else `rel` below the project root.
    pub fn pick(&self, user: PathBuf, rel: &str) -> PathBuf {
        match self.scope {
            Scope::User => user,
            Scope::Project => self.project.join(rel),
        }
    }

    /// The shell command a hook runs.
    pub fn hook_command(&self, agent: Agent, event: Event) -> String {
        format!(
            "{} {} {}",
            shell_quote(&self.ckptctl.to_string_lossy()),
            event.args(),
            hook_flag(agent)
        )
    }

    /// The program an MCP client starts, with its argument `mcp`.
    pub fn mcp_program(&self) -> String {
        self.ckptctl.to_string_lossy().into_owned()
    }
}

/// `--from-hook=AGENT`: the flag every installed hook passes.
pub fn hook_flag(agent: Agent) -> String {
    format!("{}{}", crate::hooks::edit::MARKER, agent.name())
}

/// Quotes `s` for a POSIX shell when it holds anything but plain path
/// characters.
pub fn shell_quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The first executable `exe` in `$PATH`.
pub(crate) fn on_path(exe: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(exe))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_quote_leaves_plain_paths_and_quotes_the_rest() {
        assert_eq!(shell_quote("/usr/bin/ckptctl"), "/usr/bin/ckptctl");
        assert_eq!(shell_quote("/my tools/ckptctl"), "'/my tools/ckptctl'");
        assert_eq!(shell_quote("/it's/x"), r"'/it'\''s/x'");
    }

    #[test]
    fn every_hook_agent_has_a_payload_and_names_round_trip() {
        use clap::ValueEnum;
        for a in Agent::ALL {
            assert_eq!(Agent::from_str(a.name(), false).unwrap(), a);
            assert_eq!(a.payload().is_none(), a == Agent::Zed, "{a}");
        }
    }

    /// `WITH_TOOL_HOOKS` lists exactly the agents whose install writes a
    /// tool-start hook.
    #[test]
    fn agents_with_tool_hooks_are_those_install_gives_tool_hooks() {
        let t = tempfile::tempdir().unwrap();
        let home = Home {
            home: t.path().join("home"),
            config: t.path().join("config"),
        };
        for scope in [Scope::User, Scope::Project] {
            let target = Target {
                scope,
                home: &home,
                project: t.path(),
                ckptctl: Path::new("/bin/ckptctl"),
            };
            for a in Agent::ALL {
                let text: String = (a.spec().files)(&target)
                    .unwrap()
                    .iter()
                    .map(|p| p.edit.install(None).unwrap_or_default())
                    .collect();
                assert_eq!(
                    text.contains("tool-start"),
                    Agent::WITH_TOOL_HOOKS.contains(&a),
                    "{a}"
                );
            }
        }
    }
}
