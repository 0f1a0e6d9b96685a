//! The copy's HEAD stays at the base: the result of a work copy is its
//! files against the base commit, so a `git commit`, `reset` or `checkout`
//! the agent ran in the copy is found and refused before a preview, an
//! export or an apply, never taken silently.
//!
//! There is no `--include-commits`: the files on disk already are the
//! result (a commit adds only a message the apply would drop), while a
//! reset or checkout changes files under the base, so the patch would no
//! longer be what the agent did on it. `git reset --soft BASE` in the copy
//! puts HEAD back and keeps the files.

use anyhow::Context;

use super::git;
use super::state::WorkCopy;

/// Where the copy's HEAD is, when it is not at the base.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Moved {
    pub base: String,
    /// `None`: HEAD names no commit (an orphan branch, a broken ref).
    pub now: Option<String>,
    /// What moved it, in words.
    pub what: String,
}

impl Moved {
    /// The refusal for `action`, with how to put HEAD back.
    pub fn refusal(&self, wc: &WorkCopy, action: &str) -> String {
        format!(
            "the copy's HEAD moved from the base {} to {}: {}; {action} refused. \
             The result is the copy's files against the base: `git -C {} reset --soft {}` \
             puts HEAD back and keeps the files",
            short(&self.base),
            self.now.as_deref().map_or("no commit".into(), short),
            self.what,
            wc.copy.display(),
            self.base
        )
    }
}

fn short(c: &str) -> String {
    c[..c.len().min(12)].to_string()
}

/// `Some` when the copy's HEAD is not the base commit (a copy made outside
/// git has no HEAD to watch).
pub fn moved(wc: &WorkCopy) -> anyhow::Result<Option<Moved>> {
    let Some(base) = wc.base_commit.clone() else {
        return Ok(None);
    };
    let now = git::head(&wc.copy);
    if now.as_deref() == Some(base.as_str()) {
        return Ok(None);
    }
    let what = match &now {
        None => "HEAD names no commit (an orphan branch?)".to_string(),
        Some(now) if is_ancestor(wc, &base, now)? => {
            let n = git::text(
                &wc.copy,
                &["rev-list", "--count", &format!("{base}..{now}")],
            )?;
            format!("{n} commit(s) made on top of it in the copy")
        }
        Some(now) if is_ancestor(wc, now, &base)? => "reset to an older commit".to_string(),
        Some(_) => "checked out elsewhere".to_string(),
    };
    Ok(Some(Moved { base, now, what }))
}

/// Refuses `action` when the copy's HEAD moved.
pub fn ensure_at_base(wc: &WorkCopy, action: &str) -> anyhow::Result<()> {
    match moved(wc)? {
        Some(m) => anyhow::bail!(m.refusal(wc, action)),
        None => Ok(()),
    }
}

fn is_ancestor(wc: &WorkCopy, a: &str, b: &str) -> anyhow::Result<bool> {
    let st = git::cmd(&wc.copy)
        .args(["merge-base", "--is-ancestor", a, b])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .context("running git merge-base in the copy")?;
    Ok(st.success())
}
