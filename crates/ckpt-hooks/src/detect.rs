//! What ckpt finds of itself in each coding agent: found on this machine
//! or not, its hooks and MCP server installed at user and project scope,
//! whether the agent will run them, and which `ckptctl` they run. The one
//! definition that `hooks status`, `status` and `doctor` read.

use std::path::PathBuf;

use serde_json::{json, Value};

use crate::agents::{on_path, Agent, AgentSpec, Scope, Target};
use crate::files;
use crate::install::{self, Installed};

/// One agent as ckpt finds it.
pub struct AgentReport {
    pub agent: Agent,
    /// How it was found (its config dir or executable); None: not here.
    pub found: Option<String>,
    pub user: ScopeReport,
    pub project: ScopeReport,
}

/// ckpt's pieces in one agent at one scope.
pub struct ScopeReport {
    pub scope: Scope,
    /// Hooks and MCP server together, as `hooks install` writes them.
    pub installed: Installed,
    /// What keeps the agent from running them ("what — what to do"), read
    /// from its own config (Codex's trust); None where nothing is installed.
    pub pending: Option<String>,
    /// What is wrong with the ckptctl they run, if anything.
    pub ckptctl: Option<CkptctlProblem>,
    /// The programs the agent's MCP entry for ckpt names (empty: none).
    pub mcp: Vec<PathBuf>,
    /// The command that installs (again) at this scope.
    pub install: String,
}

/// The ckptctl an agent's hooks run is not the one to run.
pub struct CkptctlProblem {
    /// It no longer exists (the hooks fail), rather than differing from
    /// the ckptctl on PATH (they run an older build).
    pub gone: bool,
    pub message: String,
}

impl AgentReport {
    /// Reads the agent's configs at user and project scope.
    pub fn read(agent: Agent, user: &Target, project: &Target) -> anyhow::Result<AgentReport> {
        Ok(AgentReport {
            agent,
            found: agent.detect(user.home),
            user: ScopeReport::read(agent, user)?,
            project: ScopeReport::read(agent, project)?,
        })
    }

    /// Every agent ckpt supports, in `Agent::ALL`'s order.
    pub fn all(user: &Target, project: &Target) -> anyhow::Result<Vec<AgentReport>> {
        Agent::ALL
            .iter()
            .map(|&a| AgentReport::read(a, user, project))
            .collect()
    }

    /// Found here, or installed at either scope.
    pub fn relevant(&self) -> bool {
        self.found.is_some()
            || self.user.installed != Installed::No
            || self.project.installed != Installed::No
    }

    /// The scopes with anything of ckpt's installed.
    pub fn scopes(&self) -> impl Iterator<Item = &ScopeReport> {
        [&self.user, &self.project]
            .into_iter()
            .filter(|s| s.installed != Installed::No)
    }

    /// "hooks installed (user), mcp: yes", as `status` says it.
    pub fn summary(&self) -> String {
        let has_hooks = self.agent.payload().is_some();
        let scopes: Vec<&str> = self.scopes().map(|s| scope_name(s.scope)).collect();
        let what = if has_hooks { "hooks" } else { "MCP only" };
        let mut line = match (
            scopes.is_empty(),
            self.scopes().any(|s| s.installed == Installed::Partly),
        ) {
            (true, _) => format!("{what} not installed"),
            (false, false) => format!("{what} installed ({})", scopes.join(", ")),
            (false, true) => format!("{what} partly installed ({})", scopes.join(", ")),
        };
        if has_hooks {
            let mcp = self.scopes().any(|s| !s.mcp.is_empty());
            line.push_str(if mcp { ", mcp: yes" } else { ", mcp: no" });
        }
        if let Some(p) = self.scopes().find_map(|s| s.pending.as_deref()) {
            line.push_str(&format!(", pending: {p}"));
        }
        line
    }

    pub fn json(&self) -> Value {
        json!({
            "agent": self.agent.name(),
            "found": self.found,
            "hooks": self.agent.payload().is_some(),
            "user": self.user.json(),
            "project": self.project.json(),
        })
    }
}

impl ScopeReport {
    fn read(agent: Agent, target: &Target) -> anyhow::Result<ScopeReport> {
        let installed = install::installed(agent, target)?;
        let pending = match agent.spec().pending {
            Some(check) if installed != Installed::No => check(target)?,
            _ => None,
        };
        Ok(ScopeReport {
            scope: target.scope,
            installed,
            pending,
            ckptctl: ckptctl_problem(agent, target)?,
            mcp: mcp_programs(agent, target)?,
            install: match target.scope {
                Scope::User => format!("ckptctl hooks install {agent}"),
                Scope::Project => format!("ckptctl hooks install {agent} --project"),
            },
        })
    }

    fn json(&self) -> Value {
        json!({
            "installed": self.installed.name(),
            "pending": self.pending,
            "ckptctl_warning": self.ckptctl.as_ref().map(|c| &c.message),
            "mcp": self.mcp,
        })
    }
}

pub fn scope_name(scope: Scope) -> &'static str {
    match scope {
        Scope::User => "user",
        Scope::Project => "project",
    }
}

/// What is wrong with the ckptctl the agent's installed pieces at the
/// target's scope run: it is gone, or it is not the ckptctl on PATH.
fn ckptctl_problem(agent: Agent, target: &Target) -> anyhow::Result<Option<CkptctlProblem>> {
    let on_path = on_path("ckptctl").and_then(|p| p.canonicalize().ok());
    let again = match target.scope {
        Scope::User => format!("ckptctl hooks install {agent}"),
        Scope::Project => format!("ckptctl hooks install {agent} --project"),
    };
    for used in install::installed_ckptctls(agent, target)? {
        let Ok(real) = used.canonicalize() else {
            return Ok(Some(CkptctlProblem {
                gone: true,
                message: format!(
                    "its hooks run {}, which no longer exists; reinstall them with the ckptctl \
                     you use: {again}",
                    used.display()
                ),
            }));
        };
        if let Some(p) = on_path.as_ref().filter(|p| **p != real) {
            return Ok(Some(CkptctlProblem {
                gone: false,
                message: format!(
                    "its hooks run {}, but the ckptctl on PATH is {}; to run that one: {again}",
                    used.display(),
                    p.display()
                ),
            }));
        }
    }
    Ok(None)
}

/// The programs named by the agent's MCP entries for ckpt at the target's
/// scope, as the files hold them now.
fn mcp_programs(agent: Agent, target: &Target) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for piece in (agent.spec().files)(target)? {
        if piece.edit.mcp_program().is_none() {
            continue;
        }
        let Some(text) = files::read(&piece.path)? else {
            continue;
        };
        if piece.edit.installed(Some(&text))? {
            out.push(target.ckptctl.to_path_buf());
        } else if install::holds(&piece.edit, &text) {
            out.extend(install::ckptctl_paths(&text));
        }
    }
    out.dedup();
    Ok(out)
}
