//! `ckptctl ledger add|list|show|resolve|reopen|export|import`: the slop
//! ledger. Buckets, severities and statuses are `ckpt_types::ledger`'s
//! values from the command line on; the daemon checks the rest (spans,
//! paths, notes). This file parses the command line and prints.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use ckpt_proto::{
    AnchorState, Bucket, LedgerAdded, LedgerEntry, LedgerEntryReply, LedgerFilter, LedgerImported,
    LedgerRecord, LedgerReply, LedgerStatus, LineSpan, Request, Severity, WirePath,
};
use clap::{Args, Subcommand};
use serde::{Deserialize, Serialize};

use super::Ctx;
use crate::cli::turn_id;
use crate::output;

crate::family_cli!(
    LedgerCli,
    "ckptctl ledger",
    LedgerAction,
    "The slop ledger: residue a turn left, recorded so nobody mistakes it for design."
);

#[derive(Subcommand, Debug)]
pub enum LedgerAction {
    /// Record residue at PATH (the whole file), PATH:LINE or PATH:START-END,
    /// in the open turn if there is one.
    Add {
        /// PATH[:LINE[-LINE]], PATH relative to the current directory.
        target: String,
        /// compat-shim, unmigrated-callers, duplicate-concept, naming-drift,
        /// stale-docs-tests, suspected-dead-code or tool-gap.
        #[arg(long, value_parser = ckpt_types::Bucket::parse)]
        bucket: ckpt_types::Bucket,
        /// low, medium, high or critical.
        #[arg(long, value_parser = ckpt_types::Severity::parse)]
        severity: ckpt_types::Severity,
        /// How sure you are, from 0 to 1.
        #[arg(long, value_parser = confidence)]
        confidence: f64,
        /// A person, a team or agent:NAME [default: agent:<the open
        /// turn's agent>, else $USER].
        #[arg(long)]
        owner: Option<String>,
        /// What it is and what should become of it.
        #[arg(long)]
        note: String,
    },
    /// Entries, oldest first, with where their lines are now.
    List(LedgerListArgs),
    /// One entry with its history.
    Show {
        /// An entry id, as `ckptctl ledger list` lists them.
        id: i64,
    },
    /// Mark an entry resolved (or won't fix).
    Resolve {
        /// An entry id, as `ckptctl ledger list` lists them.
        id: i64,
        /// Won't fix rather than resolved.
        #[arg(long)]
        wont_fix: bool,
        /// Why: what fixed it, or why it stays.
        #[arg(long)]
        why: String,
        /// Who decided [default: $USER].
        #[arg(long)]
        who: Option<String>,
    },
    /// Open a resolved or won't-fix entry again.
    Reopen {
        /// An entry id, as `ckptctl ledger list` lists them.
        id: i64,
        /// Why it is open again.
        #[arg(long)]
        why: String,
        /// Who decided [default: $USER].
        #[arg(long)]
        who: Option<String>,
    },
    /// Every entry, with its history: JSON (for `ledger import` in another
    /// clone) or Markdown (for a pull-request description).
    Export {
        /// JSON for `ledger import`, Markdown for people, SARIF for code
        /// scanning.
        #[arg(long, value_enum, default_value_t = ExportFormat::Json)]
        format: ExportFormat,
    },
    /// Add the entries of a JSON export from another clone of the project;
    /// entries already here are skipped.
    Import {
        /// A file written by `ckptctl ledger export --format json`.
        file: PathBuf,
    },
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormat {
    Json,
    Markdown,
    /// SARIF 2.1.0, for code scanning (GitHub's and others').
    Sarif,
}

#[derive(Args, Debug, Clone, Default)]
pub struct LedgerListArgs {
    /// Only this bucket (as `ledger add --bucket` takes).
    #[arg(long, value_parser = ckpt_types::Bucket::parse)]
    pub bucket: Option<ckpt_types::Bucket>,
    /// This severity or worse.
    #[arg(long, value_name = "SEVERITY", value_parser = ckpt_types::Severity::parse)]
    pub min_severity: Option<ckpt_types::Severity>,
    /// This confidence or more, from 0 to 1.
    #[arg(long, value_name = "C", value_parser = confidence)]
    pub min_confidence: Option<f64>,
    /// Entries about this path or below it (relative to the current directory).
    #[arg(long, value_name = "PREFIX")]
    pub path: Option<PathBuf>,
    /// Entries recorded in this turn.
    #[arg(long, value_parser = turn_id)]
    pub turn: Option<i64>,
    /// Entries recorded in turns of this agent.
    #[arg(long)]
    pub agent: Option<String>,
    /// Entries owned by this person, team or agent:NAME.
    #[arg(long)]
    pub owner: Option<String>,
    /// open, resolved, wont-fix or rewound.
    #[arg(long, value_parser = ckpt_types::LedgerStatus::parse)]
    pub status: Option<ckpt_types::LedgerStatus>,
    /// fresh, moved, changed or gone.
    #[arg(long, value_parser = ckpt_types::AnchorState::parse)]
    pub anchor: Option<ckpt_types::AnchorState>,
}

fn confidence(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(c) if (0.0..=1.0).contains(&c) => Ok(c),
        _ => Err("a confidence is a number between 0 and 1".into()),
    }
}

/// What `export` writes and `import` takes.
const FORMAT: &str = "ckpt-ledger";
const VERSION: u32 = 1;

#[derive(Serialize)]
struct Export<'a> {
    format: &'static str,
    version: u32,
    entries: &'a [LedgerEntry],
}

#[derive(Deserialize)]
struct Import {
    format: String,
    version: u32,
    entries: Vec<LedgerRecord>,
}

pub fn run(ctx: &Ctx, action: LedgerAction) -> anyhow::Result<u8> {
    match action {
        LedgerAction::Add {
            target,
            bucket,
            severity,
            confidence,
            owner,
            note,
        } => add(ctx, &target, bucket, severity, confidence, owner, note),
        LedgerAction::List(args) => list(ctx, &args),
        LedgerAction::Show { id } => show(ctx, id),
        LedgerAction::Resolve {
            id,
            wont_fix,
            why,
            who,
        } => {
            let status = if wont_fix {
                LedgerStatus::WontFix
            } else {
                LedgerStatus::Resolved
            };
            set_status(ctx, id, status, who, why)
        }
        LedgerAction::Reopen { id, why, who } => set_status(ctx, id, LedgerStatus::Open, who, why),
        LedgerAction::Export {
            format: ExportFormat::Sarif,
        } => super::sibling::forward(super::sibling::TRACE, "the provenance tool"),
        LedgerAction::Export { format } => export(ctx, format),
        LedgerAction::Import { file } => import(ctx, &file),
    }
}

/// Who runs this: `$USER`, `$LOGNAME`, the account's name, else `uid N`
/// (a service or a container often sets neither variable).
fn user() -> Option<String> {
    let var = |name| std::env::var(name).ok().filter(|u: &String| !u.is_empty());
    var("USER").or_else(|| var("LOGNAME")).or_else(|| {
        // SAFETY: getuid has no preconditions.
        let uid = unsafe { libc::getuid() };
        Some(account_name(uid).unwrap_or_else(|| format!("uid {uid}")))
    })
}

fn account_name(uid: libc::uid_t) -> Option<String> {
    let mut buf = vec![0u8; 4096];
    // SAFETY: an all-zero passwd is a valid value for getpwuid_r to fill.
    let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: buf outlives the call and pw's pointers into it are read
    // before buf is dropped.
    let rc =
        unsafe { libc::getpwuid_r(uid, &mut pw, buf.as_mut_ptr().cast(), buf.len(), &mut found) };
    if rc != 0 || found.is_null() || pw.pw_name.is_null() {
        return None;
    }
    // SAFETY: getpwuid_r succeeded, so pw_name is a NUL-terminated string in buf.
    let name = unsafe { std::ffi::CStr::from_ptr(pw.pw_name) };
    Some(name.to_string_lossy().into_owned()).filter(|n| !n.is_empty())
}

/// `PATH`, `PATH:LINE` or `PATH:START-END`. A suffix of digits and `-`
/// after the last `:` is a span and must be well formed.
pub fn parse_target(target: &str) -> anyhow::Result<(PathBuf, Option<LineSpan>)> {
    let Some((path, suffix)) = target.rsplit_once(':') else {
        return Ok((PathBuf::from(target), None));
    };
    if suffix.is_empty() || !suffix.bytes().all(|b| b.is_ascii_digit() || b == b'-') {
        return Ok((PathBuf::from(target), None));
    }
    let bad = || {
        anyhow::anyhow!("bad line span '{suffix}' in '{target}': give PATH:LINE or PATH:START-END")
    };
    let num = |s: &str| s.parse::<u32>().map_err(|_| bad());
    let (start, end) = match suffix.split_once('-') {
        None => (num(suffix)?, num(suffix)?),
        Some((a, b)) => (num(a)?, num(b)?),
    };
    if path.is_empty() {
        bail!("no path before ':{suffix}'");
    }
    Ok((PathBuf::from(path), Some(LineSpan { start, end })))
}

fn add(
    ctx: &Ctx,
    target: &str,
    bucket: Bucket,
    severity: Severity,
    confidence: f64,
    owner: Option<String>,
    note: String,
) -> anyhow::Result<u8> {
    // JSON has no NaN or infinity: refused here, the range in the daemon.
    if !confidence.is_finite() {
        bail!("confidence must be between 0 and 1, not {confidence}");
    }
    let (path, span) = parse_target(target)?;
    let entry = NewEntry {
        path: ctx.wire_path(&path)?,
        span,
        bucket,
        severity,
        confidence,
        owner,
        note,
    };
    let reply = request_add(ctx, entry)?;
    if ctx.g.json {
        output::json(&serde_json::json!({ "id": reply.id }))?;
    } else if !ctx.g.quiet {
        println!("ledger entry {} added", reply.id);
    }
    Ok(0)
}

/// An entry to add, as `ledger add` and the MCP server's `ledger_add` take it.
pub struct NewEntry {
    pub path: WirePath,
    pub span: Option<LineSpan>,
    pub bucket: Bucket,
    pub severity: Severity,
    pub confidence: f64,
    pub owner: Option<String>,
    pub note: String,
}

pub fn request_add(ctx: &Ctx, e: NewEntry) -> anyhow::Result<LedgerAdded> {
    ctx.reply(&Request::LedgerAdd(ckpt_proto::LedgerAdd {
        dir: ctx.wire_dir(),
        path: e.path,
        span: e.span,
        bucket: e.bucket,
        severity: e.severity,
        confidence: e.confidence,
        owner: e.owner,
        user: user(),
        note: e.note,
    }))
}

pub fn query(ctx: &Ctx, filter: LedgerFilter) -> anyhow::Result<LedgerReply> {
    ctx.reply(&Request::LedgerList {
        dir: ctx.wire_dir(),
        filter,
    })
}

fn list(ctx: &Ctx, a: &LedgerListArgs) -> anyhow::Result<u8> {
    if a.min_confidence.is_some_and(|c| !c.is_finite()) {
        bail!("--min-confidence takes a number between 0 and 1");
    }
    let filter = LedgerFilter {
        bucket: a.bucket,
        min_severity: a.min_severity,
        min_confidence: a.min_confidence,
        path: a.path.as_deref().map(|p| ctx.wire_path(p)).transpose()?,
        turn: a.turn,
        agent: a.agent.clone(),
        owner: a.owner.clone(),
        status: a.status,
        anchor: a.anchor,
        history: false,
    };
    let l = query(ctx, filter)?;
    if ctx.g.json {
        output::json(&serde_json::json!({ "entries": l.entries }))?;
        return Ok(0);
    }
    let mut out = std::io::stdout().lock();
    for e in &l.entries {
        writeln!(
            out,
            "#{:<4} {:<9} {:<8} {:<8} {:.2}  {:<19} {}  {}",
            e.id,
            e.status,
            anchor(e),
            e.body.severity,
            e.body.confidence,
            e.body.bucket,
            location(e),
            e.body.note.lines().next().unwrap_or("")
        )?;
    }
    Ok(0)
}

/// `path`, `path:3` or `path:3-5`.
fn location(e: &LedgerEntry) -> String {
    match e.body.span {
        None => e.body.path.display(),
        Some(s) if s.start == s.end => format!("{}:{}", e.body.path, s.start),
        Some(s) => format!("{}:{}-{}", e.body.path, s.start, s.end),
    }
}

/// `fresh`, `moved→7-9`, `changed`, `gone`.
fn anchor(e: &LedgerEntry) -> String {
    match (e.anchor.state, e.anchor.span) {
        (AnchorState::Moved, Some(s)) => format!("moved→{}-{}", s.start, s.end),
        (state, _) => state.to_string(),
    }
}

fn status(e: &LedgerEntry) -> String {
    match e.rewound_by {
        Some(r) if e.status == LedgerStatus::Rewound => format!("rewound by rewind {r}"),
        _ => e.status.to_string(),
    }
}

fn show(ctx: &Ctx, id: i64) -> anyhow::Result<u8> {
    let r: LedgerEntryReply = ctx.reply(&Request::LedgerShow {
        dir: ctx.wire_dir(),
        id,
    })?;
    print_entry(ctx, &r)
}

fn print_entry(ctx: &Ctx, r: &LedgerEntryReply) -> anyhow::Result<u8> {
    if ctx.g.json {
        output::json(&r.entry)?;
        return Ok(0);
    }
    let e = &r.entry;
    println!("ledger entry {}: {} ({})", e.id, e.body.bucket, status(e));
    println!("at:         {} ({})", location(e), anchor(e));
    println!(
        "severity:   {}, confidence {:.2}",
        e.body.severity, e.body.confidence
    );
    println!("owner:      {}", e.body.owner);
    if let Some(t) = e.turn {
        println!("turn:       {t}");
    }
    if let Some(a) = &e.body.agent {
        println!("agent:      {a}");
    }
    if let Some(s) = &e.body.session {
        println!("session:    {s}");
    }
    println!("note:       {}", e.body.note);
    for h in e.history.iter().flatten() {
        println!(
            "  {}  {:<9} by {}: {}",
            output::time(h.at_ns),
            h.status,
            h.who.as_deref().unwrap_or("?"),
            h.why.as_deref().unwrap_or("")
        );
    }
    Ok(0)
}

fn set_status(
    ctx: &Ctx,
    id: i64,
    status: LedgerStatus,
    who: Option<String>,
    why: String,
) -> anyhow::Result<u8> {
    let r: LedgerEntryReply =
        ctx.reply(&Request::LedgerSetStatus(ckpt_proto::LedgerSetStatus {
            dir: ctx.wire_dir(),
            id,
            status,
            who: who.or_else(user),
            why,
        }))?;
    if ctx.g.quiet && !ctx.g.json {
        return Ok(0);
    }
    print_entry(ctx, &r)
}

fn export(ctx: &Ctx, format: ExportFormat) -> anyhow::Result<u8> {
    let l = query(
        ctx,
        LedgerFilter {
            history: true,
            ..LedgerFilter::default()
        },
    )?;
    match format {
        ExportFormat::Json => output::json(&Export {
            format: FORMAT,
            version: VERSION,
            entries: &l.entries,
        })?,
        // --json is one JSON document on every command.
        ExportFormat::Markdown if ctx.g.json => {
            output::json(&serde_json::json!({ "markdown": markdown(&l.entries) }))?
        }
        ExportFormat::Markdown if ctx.g.quiet => {}
        ExportFormat::Markdown => print!("{}", markdown(&l.entries)),
        ExportFormat::Sarif => unreachable!("run hands SARIF to ckpt-trace"),
    }
    Ok(0)
}

/// A table per bucket, for a pull-request description.
pub fn markdown(entries: &[LedgerEntry]) -> String {
    let cell = |s: &str| s.replace('|', "\\|").replace(['\n', '\r'], " ");
    let mut out = format!(
        "## Slop ledger ({})\n",
        output::count(entries.len() as u64, "entry")
    );
    // Grouped in the order the buckets are defined in.
    let rank = |b: &Bucket| Bucket::ALL.iter().position(|x| x == b);
    let mut buckets: Vec<Bucket> = entries.iter().map(|e| e.body.bucket).collect();
    buckets.sort_by_key(rank);
    buckets.dedup();
    for b in buckets {
        out.push_str(&format!(
            "\n### {b}\n\n| # | severity | confidence | where | note | owner | status |\n|---|---|---|---|---|---|---|\n"
        ));
        for e in entries.iter().filter(|e| e.body.bucket == b) {
            out.push_str(&format!(
                "| {} | {} | {:.2} | `{}` | {} | {} | {} |\n",
                e.id,
                e.body.severity,
                e.body.confidence,
                cell(&location(e)),
                cell(&e.body.note),
                cell(&e.body.owner),
                cell(&status(e))
            ));
        }
    }
    out
}

fn import(ctx: &Ctx, file: &Path) -> anyhow::Result<u8> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let not_export = || {
        format!(
            "{} is not a ledger export (make one with `ckptctl ledger export --format json`)",
            file.display()
        )
    };
    let doc: serde_json::Value = serde_json::from_str(&text).with_context(not_export)?;
    if doc.get("format").and_then(|f| f.as_str()) != Some(FORMAT) {
        bail!(not_export());
    }
    let doc: Import = serde_json::from_value(doc).with_context(not_export)?;
    if doc.format != FORMAT || doc.version != VERSION {
        bail!(
            "{}: ledger export version {} (this ckptctl reads {VERSION})",
            file.display(),
            doc.version
        );
    }
    let r: LedgerImported = ctx.reply(&Request::LedgerImport {
        dir: ctx.wire_dir(),
        entries: doc.entries,
    })?;
    if ctx.g.json {
        output::json(&serde_json::json!({ "added": r.added, "skipped": r.skipped }))?;
    } else if !ctx.g.quiet {
        println!(
            "imported {}; skipped {} already in the ledger",
            output::count(r.added as u64, "entry"),
            r.skipped
        );
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_split_into_path_and_span() {
        let t = |s| parse_target(s).unwrap();
        assert_eq!(t("a.rs"), (PathBuf::from("a.rs"), None));
        assert_eq!(
            t("src/a.rs:3"),
            (
                PathBuf::from("src/a.rs"),
                Some(LineSpan { start: 3, end: 3 })
            )
        );
        assert_eq!(
            t("a.rs:3-7"),
            (PathBuf::from("a.rs"), Some(LineSpan { start: 3, end: 7 }))
        );
        // Not a span: part of the name.
        assert_eq!(t("a:b.rs"), (PathBuf::from("a:b.rs"), None));
        for bad in ["a.rs:3-", "a.rs:-3", "a.rs:1-2-3", ":3"] {
            assert!(parse_target(bad).is_err(), "{bad}");
        }
    }
}
