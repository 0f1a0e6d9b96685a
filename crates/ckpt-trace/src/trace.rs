//! `ckptctl trace export|notes write|notes read`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use ckpt_proto::{BlameAt, LineOrigin};
use ckptctl::commands::{absolute, Ctx};
use clap::Subcommand;

use crate::agent_trace::{self, FileBlame};
use crate::facts::{self, Deletion, Turns};
use crate::git::Repo;
use crate::notes::{self, AgentId, Attestation, AuthorshipLog, Metadata, SessionRecord};

ckptctl::family_cli!(
    TraceCli,
    "ckptctl trace",
    TraceAction,
    "Provenance that travels with the code: Agent Trace records, git-ai notes."
);

#[derive(Subcommand, Debug)]
pub enum TraceAction {
    /// An Agent Trace 0.1.0 record (JSON) of every line of the files the
    /// turns touched, as `blame` attributes them; or of the files a commit
    /// changed, as committed.
    Export {
        /// A turn (`4`) or a range (`4..7`, both included) [default: every
        /// live turn].
        #[arg(value_parser = ckptctl::cli::turn_range, value_name = "TURN[..TURN]", conflicts_with = "commit")]
        range: Option<(i64, i64)>,
        /// The files this commit added or changed, as committed (read
        /// with `git show`).
        #[arg(long, value_name = "REV")]
        commit: Option<String>,
        /// Write the record to FILE instead of stdout.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// git-ai authorship notes (refs/notes/ai), written only on request.
    #[command(subcommand)]
    Notes(NotesAction),
}

#[derive(Subcommand, Debug)]
pub enum NotesAction {
    /// Attach to each commit of REV..REV (or one REV) a git-ai
    /// `authorship/3.0.0` note of the lines ckpt's agent turns wrote,
    /// through `git notes --ref=ai add -f`; share them with `git push
    /// origin refs/notes/ai`.
    Write {
        /// Commits: `A..B`, or one revision.
        #[arg(value_name = "REV..REV")]
        range: String,
    },
    /// The note of REV under refs/notes/ai (made by ckpt or by git-ai, here
    /// or on another machine).
    Read {
        /// [default: HEAD]
        rev: Option<String>,
    },
}

pub fn run(ctx: &Ctx, action: TraceAction) -> anyhow::Result<u8> {
    match action {
        TraceAction::Export { range, commit, out } => {
            let record = match commit {
                Some(rev) => export_commit(ctx, &rev)?,
                None => export_turns(ctx, range)?,
            };
            write_record(ctx, &record, out.as_deref())
        }
        TraceAction::Notes(NotesAction::Write { range }) => notes_write(ctx, &range),
        TraceAction::Notes(NotesAction::Read { rev }) => notes_read(ctx, rev.as_deref()),
    }
}

fn write_record(ctx: &Ctx, record: &serde_json::Value, out: Option<&Path>) -> anyhow::Result<u8> {
    let text = serde_json::to_string_pretty(record)?;
    let Some(out) = out else {
        println!("{text}");
        return Ok(0);
    };
    let out = absolute(out)?;
    std::fs::write(&out, format!("{text}\n"))
        .with_context(|| format!("writing {}", out.display()))?;
    let files = record["files"].as_array().map_or(0, Vec::len);
    if ctx.g.json {
        ckptctl::output::json(&serde_json::json!({ "out": out, "files": files }))?;
    } else if !ctx.g.quiet {
        println!(
            "wrote an Agent Trace record of {files} files to {}",
            out.display()
        );
    }
    Ok(0)
}

/// Every line of the files the live turns of `range` touched.
fn export_turns(ctx: &Ctx, range: Option<(i64, i64)>) -> anyhow::Result<serde_json::Value> {
    let turns = Turns::read(ctx)?;
    let (from, to) = range.unwrap_or((1, i64::MAX));
    let ids = turns.live_in(from, to);
    if ids.is_empty() {
        anyhow::bail!("no live turn in {from}..{to}: nothing to trace (`ckptctl log` lists them)");
    }
    let mut paths = std::collections::BTreeSet::new();
    let mut deletions: Vec<Deletion> = Vec::new();
    for &id in &ids {
        let shown = ckptctl::commands::show::query(ctx, id, None)?;
        paths.extend(shown.turn.entries.iter().map(|e| e.path.clone()));
        deletions.extend(facts::deletions(ctx, id)?);
    }
    let root = PathBuf::from(&turns.root);
    let mut files = Vec::new();
    for p in paths {
        let abs = root.join(p.as_path());
        match facts::blame(ctx, &abs, None) {
            Ok(b) => files.push(FileBlame {
                path: p.display(),
                blame: b.body,
            }),
            // Gone, a directory, binary: no lines to attribute.
            Err(e) if format!("{e:#}").contains("cannot blame") => {}
            Err(e) => return Err(e),
        }
    }
    Ok(agent_trace::record(&files, &turns, &deletions, None))
}

/// The blame of each text file `commit` added or changed, as committed.
fn committed_blames(ctx: &Ctx, repo: &Repo, commit: &str) -> anyhow::Result<Vec<FileBlame>> {
    let before_ns = repo.made_by_ns(commit)?;
    let mut files = Vec::new();
    for path in repo.changed_files(commit)? {
        let Some(text) = repo.show(commit, &path)? else {
            continue;
        };
        let abs = repo.top.join(&path);
        match facts::blame(ctx, &abs, Some(BlameAt { text, before_ns })) {
            Ok(b) => files.push(FileBlame {
                path,
                blame: b.body,
            }),
            Err(e) => {
                // Outside the watched project, or excluded from capture.
                eprintln!("ckptctl: {path} at {}: skipped: {e:#}", short(commit));
            }
        }
    }
    Ok(files)
}

fn export_commit(ctx: &Ctx, rev: &str) -> anyhow::Result<serde_json::Value> {
    let repo = Repo::containing(&ctx.dir)?;
    let commit = repo.commit(rev)?;
    let turns = Turns::read(ctx)?;
    let files = committed_blames(ctx, &repo, &commit)?;
    Ok(agent_trace::record(&files, &turns, &[], Some(&commit)))
}

/// The authorship log of `commit`: the lines of its files that agent turns
/// wrote; `None` when there are none.
fn authorship(
    ctx: &Ctx,
    repo: &Repo,
    turns: &Turns,
    commit: &str,
) -> anyhow::Result<Option<AuthorshipLog>> {
    let mut log = AuthorshipLog {
        files: BTreeMap::new(),
        metadata: Metadata {
            schema_version: notes::SCHEMA_VERSION.into(),
            base_commit_sha: commit.into(),
            ..Metadata::default()
        },
    };
    for f in committed_blames(ctx, repo, commit)? {
        let mut by_turn: BTreeMap<i64, Vec<u64>> = BTreeMap::new();
        for l in &f.blame.lines {
            if let (LineOrigin::Turn, Some(t)) = (l.origin, l.turn) {
                by_turn.entry(t).or_default().push(l.line);
            }
        }
        let mut atts = Vec::new();
        for (turn, lines) in by_turn {
            let Some(facts) = turns.by_id.get(&turn) else {
                continue;
            };
            // A turn no agent made (`ckptctl run -- make`) is not AI's.
            let Some(agent) = &facts.info.agent else {
                continue;
            };
            let tool = notes::tool_name(agent);
            let conversation = facts
                .info
                .session
                .clone()
                .unwrap_or_else(|| format!("ckpt-turn-{turn}"));
            let session = notes::session_id(tool, &conversation);
            let model = facts
                .model
                .as_deref()
                .map(|m| m.rsplit('/').next().unwrap_or(m).to_owned())
                .unwrap_or_else(|| "unknown".into());
            log.metadata.sessions.insert(
                session.clone(),
                SessionRecord {
                    agent_id: AgentId {
                        tool: tool.into(),
                        id: conversation,
                        model,
                    },
                    human_author: None,
                },
            );
            atts.push(Attestation {
                key: format!("{session}::{}", notes::trace_id(&turns.root, turn)),
                ranges: notes::to_ranges(lines),
            });
        }
        atts.sort_by_key(|a| a.ranges[0]);
        if !atts.is_empty() {
            log.files.insert(f.path, atts);
        }
    }
    Ok((!log.files.is_empty()).then_some(log))
}

fn notes_write(ctx: &Ctx, range: &str) -> anyhow::Result<u8> {
    let repo = Repo::containing(&ctx.dir)?;
    let commits = if range.contains("..") {
        repo.rev_list(range)?
    } else {
        vec![repo.commit(range)?]
    };
    let turns = Turns::read(ctx)?;
    let mut written = Vec::new();
    for commit in &commits {
        let Some(log) = authorship(ctx, &repo, &turns, commit)? else {
            if !ctx.g.json && !ctx.g.quiet {
                println!("{}: no line by an agent's turn: no note", short(commit));
            }
            continue;
        };
        repo.add_note(commit, &log.render()?)?;
        let lines: u64 = log
            .files
            .values()
            .flatten()
            .flat_map(|a| &a.ranges)
            .map(|(s, e)| e - s + 1)
            .sum();
        if !ctx.g.json && !ctx.g.quiet {
            println!(
                "{}: note written ({lines} lines by agents in {} files)",
                short(commit),
                log.files.len()
            );
        }
        written.push(
            serde_json::json!({ "commit": commit, "files": log.files.len(), "lines": lines }),
        );
    }
    if ctx.g.json {
        ckptctl::output::json(&serde_json::json!({ "notes": written }))?;
    } else if !ctx.g.quiet && !written.is_empty() {
        println!("share them: git push origin refs/notes/ai");
    }
    Ok(0)
}

fn notes_read(ctx: &Ctx, rev: Option<&str>) -> anyhow::Result<u8> {
    let repo = Repo::containing(&ctx.dir)?;
    let commit = repo.commit(rev.unwrap_or("HEAD"))?;
    let Some(text) = repo.note(&commit)? else {
        anyhow::bail!(
            "{} has no note under refs/notes/ai (fetch them: git fetch origin +refs/notes/ai:refs/notes/ai)",
            short(&commit)
        );
    };
    if !ctx.g.json {
        print!("{text}");
        return Ok(0);
    }
    let log = AuthorshipLog::parse(&text)?;
    let files: serde_json::Map<String, serde_json::Value> = log
        .files
        .iter()
        .map(|(path, atts)| {
            let v: Vec<serde_json::Value> = atts
                .iter()
                .map(|a| {
                    let first = a.ranges[0].0;
                    serde_json::json!({
                        "key": a.key,
                        "ranges": a.ranges.iter().map(|&(s, e)| [s, e]).collect::<Vec<_>>(),
                        "author": log.author(path, first),
                    })
                })
                .collect();
            (path.clone(), v.into())
        })
        .collect();
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{}",
        serde_json::to_string_pretty(&serde_json::json!({
            "commit": commit,
            "files": files,
            "metadata": log.metadata,
        }))?
    )?;
    Ok(0)
}

pub fn short(commit: &str) -> &str {
    &commit[..12.min(commit.len())]
}
