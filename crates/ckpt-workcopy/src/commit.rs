//! Committing an applied work copy in the original: exactly the applied
//! paths, with the user's own git config and hooks, non-interactively, on
//! the HEAD the apply saw. Other changes the user has staged stay staged
//! and out of the commit (`git commit --only`).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::Context;

use super::apply::{self, Found};
use super::git;
use super::state::{ApplyRecord, CommitRecord};

/// Checks that a commit may go ahead (HEAD and every applied path as the
/// apply left them) and decides what it stages.
pub fn prepare(
    original: &Path,
    rec: &ApplyRecord,
    message: String,
) -> anyhow::Result<CommitRecord> {
    anyhow::ensure!(
        git::toplevel(original).is_some(),
        "{} is not in a git repository; there is nothing to commit to",
        original.display()
    );
    let head = git::head(original).context("the original has no commit yet; commit it yourself")?;
    if rec.head.as_deref() != Some(head.as_str()) {
        anyhow::bail!(
            "the original's HEAD moved since the apply (from {} to {head}); commit refused: \
             the applied changes are in the tree, commit them yourself",
            rec.head.as_deref().unwrap_or("no commit")
        );
    }
    match apply::inspect(original, &rec.paths)? {
        Found::Applied => {}
        Found::NotApplied => anyhow::bail!(
            "the original no longer holds the applied changes (the apply was rewound?); commit refused"
        ),
        Found::Neither(paths) => anyhow::bail!(
            "{} applied paths changed since the apply ({}); commit refused",
            paths.len(),
            paths.join(", ")
        ),
    }
    let mut left_out = Vec::new();
    let mut candidates = Vec::new();
    for p in &rec.paths {
        let is_dir = |e: &Option<super::fingerprint::Entry>| e.as_ref().is_some_and(|e| e.is_dir());
        if is_dir(&p.after) || (p.after.is_none() && is_dir(&p.before)) {
            let why = "a directory: git records only what it holds";
            left_out.push((p.path.clone(), why.to_string()));
        } else {
            candidates.push(p);
        }
    }
    let names: Vec<&str> = candidates.iter().map(|p| p.path.as_str()).collect();
    let ignored = nul_list(
        original,
        &["check-ignore", "-z", "--stdin"],
        &names,
        &[0, 1],
    )?;
    // Every tracked path (ls-files takes no pathspecs on stdin; listing
    // them all is one read of the index).
    let tracked = nul_list(original, &["ls-files", "-z"], &[], &[0])?;
    let mut paths = Vec::new();
    for p in candidates {
        if ignored.contains(&p.path) {
            left_out.push((p.path.clone(), "ignored by git".into()));
        } else if p.after.is_none() && !tracked.contains(&p.path) {
            left_out.push((p.path.clone(), "deleted, and git never tracked it".into()));
        } else {
            paths.push(p.path.clone());
        }
    }
    anyhow::ensure!(
        !paths.is_empty(),
        "nothing to commit: git tracks none of the applied paths ({} left out)",
        left_out.len()
    );
    Ok(CommitRecord {
        message,
        parent: head,
        paths,
        left_out,
        commit: None,
        trailers: Vec::new(),
    })
}

/// Stages exactly `rec.paths` and commits them; returns the new commit.
pub fn run(original: &Path, rec: &CommitRecord) -> anyhow::Result<String> {
    let names: Vec<&str> = rec.paths.iter().map(String::as_str).collect();
    let before = index_entries(original, &rec.paths)?;
    let mut add = git::user_cmd(original);
    add.env("GIT_LITERAL_PATHSPECS", "1")
        .args(["add", "--all"])
        .args(FROM_STDIN);
    let mut commit = git::user_cmd(original);
    commit
        .env("GIT_LITERAL_PATHSPECS", "1")
        .args(["commit", "--quiet", "--only", "-m", &rec.message])
        .args(rec.trailers.iter().flat_map(|t| ["--trailer", t.as_str()]))
        .args(FROM_STDIN);
    let done = feed(add, &names)
        .context("staging the applied paths")
        .and_then(|_| feed(commit, &names).context("committing the applied paths"));
    if let Err(e) = done {
        // A refused commit (the user's pre-commit hook) leaves the index
        // as the user had it.
        return Err(match restore_index(original, &names, &before) {
            Ok(()) => e.context("the index is as it was"),
            Err(r) => e.context(format!("and restoring the index failed: {r:#}")),
        });
    }
    let head = git::head(original).context("no HEAD after the commit")?;
    anyhow::ensure!(head != rec.parent, "git commit made no commit");
    Ok(head)
}

const FROM_STDIN: [&str; 2] = ["--pathspec-from-file=-", "--pathspec-file-nul"];

/// The index's entries (`MODE SHA STAGE\tPATH`) of `paths`.
fn index_entries(original: &Path, paths: &[String]) -> anyhow::Result<Vec<String>> {
    let wanted: std::collections::HashSet<&str> = paths.iter().map(String::as_str).collect();
    let all = nul_list(original, &["ls-files", "-s", "-z"], &[], &[0])?;
    Ok(all
        .into_iter()
        .filter(|e| e.split_once('\t').is_some_and(|(_, p)| wanted.contains(p)))
        .collect())
}

/// Puts the index entries of `names` back to `before`: HEAD's first, then
/// the entries the user had staged.
fn restore_index(original: &Path, names: &[&str], before: &[String]) -> anyhow::Result<()> {
    let mut reset = git::cmd(original);
    reset
        .env("GIT_LITERAL_PATHSPECS", "1")
        .args(["reset", "-q"])
        .args(FROM_STDIN);
    feed(reset, names)?;
    if !before.is_empty() {
        let mut info = git::cmd(original);
        info.args(["update-index", "-z", "--index-info"]);
        let lines: Vec<&str> = before.iter().map(String::as_str).collect();
        feed(info, &lines)?;
    }
    Ok(())
}

/// What the original shows of a commit that was under way.
#[derive(Debug, PartialEq, Eq)]
pub enum CommitFound {
    Committed(String),
    NotCommitted,
    /// HEAD moved, but not to a commit of ours.
    Other(String),
}

pub fn inspect(original: &Path, rec: &CommitRecord) -> CommitFound {
    let Some(head) = git::head(original) else {
        return CommitFound::NotCommitted;
    };
    if head == rec.parent {
        return CommitFound::NotCommitted;
    }
    let parent = git::text(original, &["rev-parse", "--verify", "-q", "HEAD^"]).ok();
    let message = git::out(original, &["log", "-1", "--format=%B", "HEAD"]).ok();
    let ours = parent.as_deref() == Some(rec.parent.as_str())
        && message.is_some_and(|m| String::from_utf8_lossy(&m).trim() == rec.message.trim());
    if ours {
        CommitFound::Committed(head)
    } else {
        CommitFound::Other(head)
    }
}

/// Runs `c` with `names` NUL-separated on its stdin; its stdout, or an
/// error with its stderr unless it exits with one of `ok` codes.
fn feed_ok(mut c: Command, names: &[&str], ok: &[i32]) -> anyhow::Result<Vec<u8>> {
    c.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().context("running git")?;
    let mut input = Vec::new();
    for n in names {
        input.extend_from_slice(n.as_bytes());
        input.push(0);
    }
    let mut stdin = child.stdin.take().context("git's stdin")?;
    // Written from a thread: git may write (and block on) its output first.
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().context("waiting for git")?;
    let _ = writer.join();
    anyhow::ensure!(
        out.status.code().is_some_and(|c| ok.contains(&c)),
        "git failed: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(out.stdout)
}

fn feed(c: Command, names: &[&str]) -> anyhow::Result<Vec<u8>> {
    feed_ok(c, names, &[0])
}

/// The NUL-separated names git prints for `args` given `names` on stdin;
/// exit codes `ok` are success (`check-ignore` exits 1 when none is).
fn nul_list(
    dir: &Path,
    args: &[&str],
    names: &[&str],
    ok: &[i32],
) -> anyhow::Result<std::collections::HashSet<String>> {
    let mut c = git::cmd(dir);
    c.args(args);
    Ok(feed_ok(c, names, ok)?
        .split(|&b| b == 0)
        .filter(|s| !s.is_empty())
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect())
}
