//! How ckpt installs into each coding agent: where each keeps its hook and
//! MCP config and how to tell it is installed here. One file per agent,
//! each citing the documentation its names come from (its payload's names
//! are `ckpt_agents::payloads`, which the hook path links).

use std::path::{Path, PathBuf};

pub use ckpt_agents::{Agent, Event, Home, Payload};

use crate::edit::Edit;

mod claude_code;
mod cline;
mod codex;
mod copilot;
mod cursor;
mod gemini;
mod kiro;
mod opencode;
mod zed;

/// An agent's installer: the part of an agent the hook path never links.
pub trait AgentSpec {
    /// How to install into it.
    fn spec(self) -> &'static Spec;
    /// Whether the agent is on this machine: a config dir or its
    /// executable on PATH.
    fn detect(self, home: &Home) -> Option<String>;
}

impl AgentSpec for Agent {
    fn spec(self) -> &'static Spec {
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

    fn detect(self, home: &Home) -> Option<String> {
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
    format!("{}{}", crate::edit::MARKER, agent.name())
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
