//! Installing ckpt into agents: their hook and MCP configs. Every file is
//! planned (read, parsed, edited in memory) before any is written, so a
//! config that cannot be parsed stops the whole install with nothing
//! changed.

use std::path::PathBuf;

use crate::agents::{Agent, Target};

pub mod calls;
pub mod edit;
pub mod files;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Install,
    Uninstall,
}

/// What an install or uninstall does to one file.
#[derive(Debug)]
pub struct Change {
    pub agents: Vec<Agent>,
    pub path: PathBuf,
    pub old: Option<String>,
    /// None: the file is removed.
    pub new: Option<String>,
    pub executable: bool,
}

impl Change {
    pub fn changes(&self) -> bool {
        self.old != self.new
    }
}

/// Every file the action touches for `agents` at `target`, with its text
/// before and after. Errors name the file and say it is left unchanged.
pub fn plan(agents: &[Agent], target: &Target, action: Action) -> anyhow::Result<Vec<Change>> {
    let mut changes: Vec<Change> = Vec::new();
    let mut errors = Vec::new();
    for &agent in agents {
        for piece in (agent.spec().files)(target)? {
            let i = match changes.iter().position(|c| c.path == piece.path) {
                Some(i) => i,
                None => {
                    let old = files::read(&piece.path)?;
                    changes.push(Change {
                        agents: Vec::new(),
                        path: piece.path.clone(),
                        new: old.clone(),
                        old,
                        executable: false,
                    });
                    changes.len() - 1
                }
            };
            let c = &mut changes[i];
            if !c.agents.contains(&agent) {
                c.agents.push(agent);
            }
            c.executable |= piece.edit.executable();
            let edited = match (action, c.new.as_deref()) {
                (Action::Install, cur) => piece.edit.install(cur).map(Some),
                (Action::Uninstall, Some(cur)) => piece.edit.uninstall(cur),
                (Action::Uninstall, None) => Ok(None),
            };
            match edited {
                Ok(new) => c.new = new,
                Err(e) => errors.push(format!("{}: {e}; left unchanged", piece.path.display())),
            }
        }
    }
    if !errors.is_empty() {
        anyhow::bail!("{}", errors.join("\n"));
    }
    Ok(changes)
}

/// Writes the planned changes.
pub fn apply(changes: &[Change]) -> anyhow::Result<()> {
    for c in changes.iter().filter(|c| c.changes()) {
        files::replace(&c.path, c.old.as_deref(), c.new.as_deref(), c.executable)?;
    }
    Ok(())
}

/// How much of an agent's install is in place at a scope.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Installed {
    Yes,
    Partly,
    No,
}

impl Installed {
    pub fn name(self) -> &'static str {
        match self {
            Installed::Yes => "yes",
            Installed::Partly => "partly",
            Installed::No => "no",
        }
    }
}

pub fn installed(agent: Agent, target: &Target) -> anyhow::Result<Installed> {
    let pieces = (agent.spec().files)(target)?;
    let mut present = 0;
    for piece in &pieces {
        let text = files::read(&piece.path)?;
        if piece.edit.installed(text.as_deref()).unwrap_or(false) {
            present += 1;
        }
    }
    Ok(match present {
        0 => Installed::No,
        n if n == pieces.len() => Installed::Yes,
        _ => Installed::Partly,
    })
}
