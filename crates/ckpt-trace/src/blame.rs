//! `ckptctl blame FILE --rev REV` (the file as committed, attributed to
//! the turns that wrote it) and `ckptctl blame FILE --notes` (from git-ai
//! notes, with no ckpt history needed).

use std::collections::HashMap;
use std::io::Write;

use ckpt_proto::BlameAt;
use ckptctl::commands::blame::BlameArgs;
use ckptctl::commands::{absolute, Ctx};
use serde::Serialize;

use crate::facts;
use crate::git::Repo;
use crate::notes::{Author, AuthorshipLog};
use crate::trace::short;

pub fn run(ctx: &Ctx, args: BlameArgs) -> anyhow::Result<u8> {
    let file = absolute(&args.file)?;
    let dir = file.parent().unwrap_or(&ctx.dir);
    let repo = Repo::containing(dir)?;
    let rel = repo.relative(&file)?;
    match args.rev {
        Some(rev) => at_rev(ctx, &repo, &file, &rel, &rev),
        None => from_notes(ctx, &repo, &rel),
    }
}

fn at_rev(
    ctx: &Ctx,
    repo: &Repo,
    file: &std::path::Path,
    rel: &str,
    rev: &str,
) -> anyhow::Result<u8> {
    let commit = repo.commit(rev)?;
    let Some(text) = repo.show(&commit, rel)? else {
        anyhow::bail!("cannot blame {rel} at {rev}: not a text file there");
    };
    let before_ns = repo.made_by_ns(&commit)?;
    let b = facts::blame(ctx, file, Some(BlameAt { text, before_ns }))?;
    ckptctl::commands::blame::print(ctx, &b)
}

/// A line of `blame --notes`.
#[derive(Serialize)]
struct NotedLine {
    line: u64,
    text: String,
    /// The commit that last changed the line (`git blame`).
    commit: String,
    /// Who that commit's note says wrote it; `null`: untracked.
    author: Option<Author>,
}

fn from_notes(ctx: &Ctx, repo: &Repo, rel: &str) -> anyhow::Result<u8> {
    let mut logs: HashMap<String, Option<AuthorshipLog>> = HashMap::new();
    let mut lines = Vec::new();
    for (i, l) in repo.blame("HEAD", rel)?.into_iter().enumerate() {
        if !logs.contains_key(&l.commit) {
            let log = match repo.note(&l.commit)? {
                Some(text) => Some(AuthorshipLog::parse(&text)?),
                None => None,
            };
            logs.insert(l.commit.clone(), log);
        }
        let author = logs[&l.commit]
            .as_ref()
            .and_then(|log| log.author(&l.path, l.orig_line));
        lines.push(NotedLine {
            line: i as u64 + 1,
            text: l.text,
            commit: l.commit,
            author,
        });
    }
    if ctx.g.json {
        ckptctl::output::json(&serde_json::json!({ "path": rel, "lines": lines }))?;
        return Ok(0);
    }
    let who = |l: &NotedLine| -> (String, String) {
        match &l.author {
            None => ("untracked".into(), String::new()),
            Some(a) => match &a.agent_id {
                Some(id) => (id.tool.clone(), id.model.clone()),
                None => (a.kind.into(), String::new()),
            },
        }
    };
    let cols: Vec<(String, String)> = lines.iter().map(who).collect();
    let w_who = cols.iter().map(|c| c.0.len()).max().unwrap_or(0);
    let w_model = cols.iter().map(|c| c.1.len()).max().unwrap_or(0);
    let w_line = lines.len().to_string().len();
    let mut out = std::io::stdout().lock();
    for (l, (who, model)) in lines.iter().zip(&cols) {
        writeln!(
            out,
            "{:>w_line$} {} {who:<w_who$}  {model:<w_model$} | {}",
            l.line,
            &short(&l.commit)[..8],
            l.text
        )?;
    }
    Ok(0)
}
