//! `workcopy push`: the work copy's commit to the original's remote, as a
//! state of its own (`committed → pushing → pushed`), the intent recorded
//! before git runs and, after a crash, settled from the remote's ref.
//!
//! Never forced (no `+`, no `--force`); a remote branch that is not an
//! ancestor of the commit is a refusal that says the remote moved ahead.
//! git runs with the user's config and hooks (a pre-push hook is their
//! policy) but never asks: `GIT_TERMINAL_PROMPT=0`, `GCM_INTERACTIVE=never`,
//! stdin closed. A remote whose URL holds credentials is refused, and no
//! URL is printed (git's own output is not passed on).

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::Context;
use serde_json::json;

use super::git;
use super::remote;
use super::state::{Phase, PushRecord, Store, WorkCopy};
use ckptctl::commands::Ctx;
use ckptctl::output;

/// git as the user runs it for a push, never waiting for a password.
fn push_git(dir: &Path) -> Command {
    let mut c = git::user_cmd(dir);
    c.env("GCM_INTERACTIVE", "never")
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// The commit the remote's `branch` names (`None`: no such branch).
pub fn remote_tip(original: &Path, remote: &str, branch: &str) -> anyhow::Result<Option<String>> {
    let refname = format!("refs/heads/{branch}");
    let out = push_git(original)
        .args(["ls-remote", "--", remote, &refname])
        .output()
        .context("running git ls-remote")?;
    anyhow::ensure!(
        out.status.success(),
        "reading {refname} of remote '{remote}' failed (git ls-remote exited {}); nothing was pushed",
        out.status.code().unwrap_or(-1)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(text
        .lines()
        .find_map(|l| l.split_once('\t').filter(|(_, r)| *r == refname))
        .map(|(id, _)| id.to_string()))
}

pub fn push_cmd(
    ctx: &Ctx,
    store: &Store,
    wc: WorkCopy,
    remote: Option<String>,
    branch: Option<String>,
) -> anyhow::Result<u8> {
    let mut wc = crate::command::settle(ctx, store, wc)?;
    match wc.state {
        Phase::Committed => {}
        Phase::Pushed => {
            let p = wc.push.as_ref().context("a pushed work copy has its push record")?;
            anyhow::bail!(
                "work copy '{}' is already pushed to {} {} as {}",
                wc.name,
                p.remote,
                p.branch,
                p.commit
            )
        }
        Phase::Ready | Phase::Applied => anyhow::bail!(
            "work copy '{}' is not committed yet (`ckptctl workcopy commit {0}`): only its commit is pushed",
            wc.name
        ),
        Phase::Applying | Phase::Committing | Phase::Pushing => unreachable!("settled above"),
    }
    let commit = wc
        .commit
        .as_ref()
        .and_then(|c| c.commit.clone())
        .context("a committed work copy has its commit")?;
    let original = wc.original.clone();
    let branch = match branch {
        Some(b) => b,
        None => remote::branch(&original).with_context(|| {
            format!(
                "{} is on a detached HEAD; name the remote branch with --branch",
                original.display()
            )
        })?,
    };
    let remote = match remote {
        Some(r) => r,
        None => remote::default_remote(&original, Some(&branch)).with_context(|| {
            format!(
                "{} has no upstream remote for {branch} and no origin; name one with --remote",
                original.display()
            )
        })?,
    };
    for url in remote::urls(&original, &remote)? {
        anyhow::ensure!(
            !remote::has_credentials(&url),
            "the URL of remote '{remote}' holds credentials (not shown); push refused: keep them in \
             a credential helper and set the URL without them (`git remote set-url {remote} URL`)"
        );
    }
    let before = remote_tip(&original, &remote, &branch)?;
    if before.as_deref() == Some(commit.as_str()) {
        return finish(
            ctx,
            store,
            wc,
            PushRecord {
                remote,
                branch,
                commit,
                before,
            },
            true,
        );
    }
    if let Some(tip) = &before {
        anyhow::ensure!(
            is_ancestor(&original, tip, &commit),
            "the remote moved ahead: {remote} {branch} is at {}, which the commit {} does not \
             contain; push refused (never forced): fetch, integrate, and push yourself",
            &tip[..tip.len().min(12)],
            &commit[..commit.len().min(12)]
        );
    }
    let rec = PushRecord {
        remote,
        branch,
        commit,
        before,
    };
    wc.state = Phase::Pushing;
    wc.push = Some(rec.clone());
    store.save(&wc)?;
    let out = push_git(&original)
        .args([
            "push",
            "--porcelain",
            "--",
            &rec.remote,
            &format!("{}:refs/heads/{}", rec.commit, rec.branch),
        ])
        .output()
        .context("running git push")?;
    // Whatever git said, the remote's ref is the truth.
    settle(store, &mut wc)?;
    if wc.state != Phase::Pushed {
        let said = String::from_utf8_lossy(&out.stderr);
        let why = said
            .lines()
            .find(|l| l.contains("rejected") || l.contains("error") || l.contains("fatal"))
            .map(|l| remote::shown(l.trim()))
            .unwrap_or_else(|| format!("git push exited {}", out.status.code().unwrap_or(-1)));
        anyhow::bail!(
            "push of work copy '{}' to {} {} failed: {why}; nothing changed there",
            wc.name,
            rec.remote,
            rec.branch
        );
    }
    finish(ctx, store, wc, rec, false)
}

fn finish(
    ctx: &Ctx,
    store: &Store,
    mut wc: WorkCopy,
    rec: PushRecord,
    already: bool,
) -> anyhow::Result<u8> {
    if wc.state != Phase::Pushed {
        wc.state = Phase::Pushed;
        wc.push = Some(rec.clone());
        store.save(&wc)?;
    }
    if ctx.g.json {
        output::json(&json!({ "workcopy": wc.name, "push": rec, "already": already }))?;
    } else if !ctx.g.quiet {
        let was = match (&rec.before, already) {
            (_, true) => " (it was there already)".to_string(),
            (Some(b), _) => format!(" (was {})", &b[..b.len().min(12)]),
            (None, _) => " (a new branch)".to_string(),
        };
        println!(
            "pushed work copy '{}' as {} to {} {}{was}",
            wc.name, rec.commit, rec.remote, rec.branch
        );
    }
    Ok(0)
}

/// Replaces a `pushing` state by what the remote's ref shows: the commit
/// (pushed), or anything else (committed: the push did not happen).
pub fn settle(store: &Store, wc: &mut WorkCopy) -> anyhow::Result<()> {
    let rec = wc
        .push
        .clone()
        .context("a pushing work copy has its push record")?;
    let tip = remote_tip(&wc.original, &rec.remote, &rec.branch).with_context(|| {
        format!(
            "work copy '{}' was being pushed; reading the remote to tell whether it was",
            wc.name
        )
    })?;
    if tip.as_deref() == Some(rec.commit.as_str()) {
        wc.state = Phase::Pushed;
    } else {
        wc.state = Phase::Committed;
        wc.push = None;
    }
    store.save(wc)
}

fn is_ancestor(dir: &Path, a: &str, b: &str) -> bool {
    git::cmd(dir)
        .args(["merge-base", "--is-ancestor", a, b])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A push never waits for a password: not git's prompt, not the
    /// credential manager's window, not stdin.
    #[test]
    fn push_git_never_asks() {
        let c = push_git(Path::new("/"));
        let envs: Vec<(String, String)> = c
            .get_envs()
            .filter_map(|(k, v)| Some((k.to_str()?.to_string(), v?.to_str()?.to_string())))
            .collect();
        for want in [("GIT_TERMINAL_PROMPT", "0"), ("GCM_INTERACTIVE", "never")] {
            assert!(
                envs.contains(&(want.0.to_string(), want.1.to_string())),
                "{envs:?}"
            );
        }
    }
}
