//! Installing ckpt into agents: their hook and MCP configs. Every file is
//! planned (read, parsed, edited in memory) before any is written, so a
//! config that cannot be parsed stops the whole install with nothing
//! changed.

use std::path::PathBuf;

use crate::agents::{Agent, AgentSpec, Scope, Target};
pub use crate::files::Backup;
use crate::{edit, files};

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
    /// What happens to the file's backup (`files::backup_path`).
    pub backup: Backup,
}

impl Change {
    pub fn changes(&self) -> bool {
        self.old != self.new
    }
}

/// Every file the action touches for `agents` at `target`, with its text
/// before and after. Errors name the file and say it is left unchanged.
pub fn plan(agents: &[Agent], target: &Target, action: Action) -> anyhow::Result<Vec<Change>> {
    let mut changes = Vec::new();
    let mut errors = Vec::new();
    for (path, owners, edits) in pieces_by_file(agents, target)? {
        let old = files::read(&path)?;
        let new = match edit_all(&edits, old.clone(), action) {
            Ok(new) => new,
            Err(e) => {
                errors.push(format!("{}: {e}; left unchanged", path.display()));
                continue;
            }
        };
        let mut c = Change {
            agents: owners,
            executable: edits.iter().any(|e| e.executable()),
            path,
            old,
            new,
            backup: Backup::Untouched,
        };
        c.backup = match action {
            Action::Install => backup_at_install(&c, &edits),
            Action::Uninstall => restore_at_uninstall(&mut c, &edits)?,
        };
        changes.push(c);
    }
    if !errors.is_empty() {
        anyhow::bail!("{}", errors.join("\n"));
    }
    Ok(changes)
}

/// One file, the agents with pieces in it, and their edits in order.
type FilePieces = (PathBuf, Vec<Agent>, Vec<edit::Edit>);

/// The agents' pieces grouped by the file they go in, in install order.
fn pieces_by_file(agents: &[Agent], target: &Target) -> anyhow::Result<Vec<FilePieces>> {
    let mut by_file: Vec<FilePieces> = Vec::new();
    for &agent in agents {
        for piece in (agent.spec().files)(target)? {
            let i = match by_file.iter().position(|(p, _, _)| *p == piece.path) {
                Some(i) => i,
                None => {
                    by_file.push((piece.path.clone(), Vec::new(), Vec::new()));
                    by_file.len() - 1
                }
            };
            let (_, owners, edits) = &mut by_file[i];
            if !owners.contains(&agent) {
                owners.push(agent);
            }
            edits.push(piece.edit);
        }
    }
    Ok(by_file)
}

/// `text` with every edit installed or uninstalled in turn.
fn edit_all(
    edits: &[edit::Edit],
    mut text: Option<String>,
    action: Action,
) -> anyhow::Result<Option<String>> {
    for e in edits {
        text = match (action, text.as_deref()) {
            (Action::Install, cur) => Some(e.install(cur)?),
            (Action::Uninstall, Some(cur)) => e.uninstall(cur)?,
            (Action::Uninstall, None) => None,
        };
    }
    Ok(text)
}

/// A backup is written only of a file that holds none of ckpt's pieces
/// yet: a later install (ckptctl moved) keeps the user's original there.
fn backup_at_install(c: &Change, edits: &[edit::Edit]) -> Backup {
    match &c.old {
        Some(old) if c.changes() && !holds_ours(edits, old) => Backup::Write,
        _ => Backup::Untouched,
    }
}

/// Whether `text` holds the edit's piece, in whatever version.
pub fn holds(edit: &edit::Edit, text: &str) -> bool {
    holds_ours(std::slice::from_ref(edit), text)
}

fn holds_ours(edits: &[edit::Edit], text: &str) -> bool {
    edits
        .iter()
        .any(|e| !matches!(e.uninstall(text), Ok(Some(t)) if t == text))
}

/// When the file is exactly what install made of its backup, the backup
/// goes back byte for byte (a one-line JSON stays one line); otherwise the
/// surgical uninstall in `c.new` keeps what the user changed since.
fn restore_at_uninstall(c: &mut Change, edits: &[edit::Edit]) -> anyhow::Result<Backup> {
    if !c.changes() {
        return Ok(Backup::Untouched);
    }
    let Some(original) = files::read(&files::backup_path(&files::resolve(&c.path)))
        .ok()
        .flatten()
    else {
        return Ok(Backup::Untouched);
    };
    if holds_ours(edits, &original) {
        return Ok(Backup::Stale);
    }
    let reinstalled = edit_all(edits, Some(original.clone()), Action::Install).ok();
    if reinstalled.flatten() != c.old {
        return Ok(Backup::Kept);
    }
    c.new = Some(original);
    Ok(Backup::Restored)
}

/// Writes the planned changes. At project scope, a folder left empty by
/// removing ckpt's last file in it (`.claude/`, `.gemini/`) goes too.
pub fn apply(changes: &[Change], target: &Target) -> anyhow::Result<()> {
    for c in changes.iter().filter(|c| c.changes()) {
        files::replace(
            &c.path,
            c.old.as_deref(),
            c.new.as_deref(),
            c.executable,
            c.backup,
        )?;
        if c.new.is_none() && target.scope == Scope::Project {
            files::remove_empty_parents(&c.path, target.project);
        }
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

/// The ckptctl paths the agent's installed pieces at a scope run (hook
/// commands, MCP servers): every absolute path ending in `/ckptctl` in the
/// files that hold ckpt's pieces.
pub fn installed_ckptctls(agent: Agent, target: &Target) -> anyhow::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    for piece in (agent.spec().files)(target)? {
        let Some(text) = files::read(&piece.path)? else {
            continue;
        };
        if !holds_ours(std::slice::from_ref(&piece.edit), &text) {
            continue;
        }
        for p in ckptctl_paths(&text) {
            if !found.contains(&p) {
                found.push(p);
            }
        }
    }
    Ok(found)
}

/// Absolute paths ending in `/ckptctl` in `text`, each delimited by a
/// quote, a space or the start of a line (as hook commands, JSON, TOML and
/// scripts hold them).
pub fn ckptctl_paths(text: &str) -> Vec<PathBuf> {
    const END: &str = "/ckptctl";
    let mut out = Vec::new();
    for (i, _) in text.match_indices(END) {
        let end = i + END.len();
        let after = text[end..].chars().next();
        if after.is_some_and(|c| !matches!(c, '"' | '\'' | ' ' | '\n' | '\\' | ',')) {
            continue;
        }
        let start = text[..i]
            .rfind(['"', '\'', ' ', '\n', '=', '`', '('])
            .map_or(0, |d| d + 1);
        let path = &text[start..end];
        if path.starts_with('/') {
            out.push(PathBuf::from(path));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ckptctl_paths_finds_the_commands_and_programs() {
        let text = r#"{"command": "/opt/ckpt/bin/ckptctl turn-start --from-hook=x",
  "mcp": {"command": "/usr/local/bin/ckptctl", "args": ["mcp"]},
  "other": "ckptctl mcp", "x": "/a/ckptctl-old"}
exec /home/u/bin/ckptctl turn-end --from-hook=cline
"#;
        assert_eq!(
            ckptctl_paths(text),
            [
                PathBuf::from("/opt/ckpt/bin/ckptctl"),
                PathBuf::from("/usr/local/bin/ckptctl"),
                PathBuf::from("/home/u/bin/ckptctl"),
            ]
        );
    }
}
