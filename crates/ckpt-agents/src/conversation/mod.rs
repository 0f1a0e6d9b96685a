//! Rewinding an agent's conversation with the code: session adapters for
//! the agents' transcript files (Claude Code, Codex CLI, Gemini CLI).
//!
//! Invariant: the original transcript is only ever read, and nothing an
//! adapter does can fail a file rewind or a hook call. Every adapter error
//! stops at this module's boundary (`record`, `fork`, `resume_original`) and
//! becomes one line of text: `ckptctl: conversation not rewound: <why>`.
//!
//! How: at a turn-start the hook call records a [`Position`] with the turn
//! (the bytes of the transcript that hold the conversation before the
//! turn's prompt, and the id of the last entry in them), read from the
//! file's last [`TAIL_BYTES`] at most. A rewind to turn N then writes a new
//! transcript next to the original holding the entries before turn N began
//! (its prompt, and what the agent wrote for it ahead of the prompt), under
//! a new session id, and names the command that resumes it.

mod claude_code;
mod codex;
mod gemini;
mod jsonl;
mod model;
mod status;

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Home;
pub use model::model_of;
pub use status::{adapters_status, AdapterStatus};

/// How much of a transcript's end a turn-start reads to find the last
/// complete entry: the hook path must stay in the low milliseconds
/// however long the conversation is.
pub const TAIL_BYTES: u64 = 64 << 10;

/// The first, smaller read of the tail, enough for the last entry of most
/// transcripts: reading 64 KiB every time made a hook call on a large
/// transcript ~0.1 ms slower (docs/measurements.md, issue 21).
const TAIL_FIRST: u64 = 8 << 10;

/// One agent's transcript format. The generic reading, cutting and writing
/// is this module's; an adapter says what its entries mean.
pub trait Adapter: Sync {
    /// The agent's name on turns (`crate::Agent::name`).
    fn agent(&self) -> &'static str;
    /// Checks that `entries` (the transcript's complete entries, in order)
    /// are a format this adapter knows and returns its version (the
    /// agent's own version where entries carry one).
    fn detect(&self, entries: &[Value]) -> anyhow::Result<String>;
    /// An entry's own id, when it has one: a position names the entry it
    /// ends after, so a rewritten transcript is noticed.
    fn entry_id(&self, entry: &Value) -> Option<String>;
    /// The user's prompt: the entry a turn's conversation begins with.
    fn is_prompt(&self, entry: &Value) -> bool;
    /// How many of the entries at the end of `before` (those just before a
    /// turn's prompt, or where it would be) the agent wrote for that turn
    /// ahead of its prompt: the fork leaves them out with the prompt,
    /// whether the hook's position fell before or after them.
    fn lead_in(&self, _before: &[Value]) -> usize {
        0
    }
    /// The fork's entries: what becomes of each of `kept` in a session
    /// `new_session` forked from `original_session`.
    fn fork_entries(
        &self,
        kept: &[Value],
        new_session: &str,
        original_session: &str,
    ) -> anyhow::Result<Vec<ForkEntry>>;
    /// The file name of the fork's transcript, which goes next to the
    /// original.
    fn fork_name(&self, new_session: &str) -> String;
    /// The command that resumes a session.
    fn resume_command(&self, session: &str) -> String;
    /// The directories its sessions live in (for `status`).
    fn session_dirs(&self, home: &Home) -> Vec<PathBuf>;
    /// The transcripts in one of those directories, for `status`.
    fn transcripts(&self, dir: &Path) -> Vec<PathBuf>;
}

/// What becomes of one entry in the fork.
pub enum ForkEntry {
    Dropped,
    /// Copied as its bytes are.
    Unchanged,
    /// Written as this value (its keys in their order: `preserve_order`).
    Changed(Value),
}

/// Every adapter, in `status`'s order.
pub const ADAPTERS: &[&dyn Adapter] = &[&claude_code::ClaudeCode, &codex::Codex, &gemini::Gemini];

/// The adapter for an agent named on a turn.
pub fn adapter(agent: &str) -> Option<&'static dyn Adapter> {
    ADAPTERS.iter().copied().find(|a| a.agent() == agent)
}

/// Where a conversation stood just before a turn's prompt; stored on the
/// turn as JSON.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Position {
    /// The transcript's first `bytes` bytes hold the conversation before
    /// the prompt (they end with a complete entry, or are empty).
    pub bytes: u64,
    /// The id of the entry those bytes end with, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last: Option<String>,
}

/// What `rewind --conversation` did (or would do) to the conversation:
/// the `conversation` of the rewind's JSON document.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Report {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_session: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_session: Option<String>,
    /// The fork's transcript (for a redo: the original's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Entries in the fork.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entries: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_command: Option<String>,
    /// Nothing was written: a dry run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dry_run: bool,
    /// Other sessions among the rewound turns, left as they are.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_sessions: Vec<String>,
    /// Why the conversation was not rewound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

impl Report {
    pub fn skipped(why: impl Into<String>) -> Report {
        Report {
            skipped: Some(why.into()),
            ..Report::default()
        }
    }
}

/// The turn whose conversation is forked, as the daemon keeps it.
pub struct TurnConversation<'a> {
    pub turn: i64,
    pub agent: Option<&'a str>,
    pub session: Option<&'a str>,
    pub transcript: Option<&'a str>,
    /// The turn's recorded [`Position`] (JSON).
    pub position: Option<&'a str>,
}

/// The position to record at a turn-start, as JSON; `None` (with one line
/// on stderr) when the agent has no adapter or the transcript cannot be
/// read: the turn starts either way.
pub fn record(agent: &str, transcript: &str) -> Option<String> {
    let adapter = adapter(agent)?;
    match position(adapter, &expand(transcript)) {
        Ok(p) => serde_json::to_string(&p).ok(),
        Err(e) => {
            eprintln!("ckptctl: {agent} conversation position not recorded: {e:#}");
            None
        }
    }
}

/// Reads where the transcript's conversation stands now, from its last
/// [`TAIL_BYTES`] only. If the agent already wrote the prompt (it writes
/// asynchronously), the position ends before it.
pub fn position(adapter: &dyn Adapter, path: &Path) -> anyhow::Result<Position> {
    // Claude Code and Codex create the file with its first entry, which
    // can come after the first prompt's hook call: no file is an empty
    // conversation.
    if !path.exists() {
        return Ok(Position {
            bytes: 0,
            last: None,
        });
    }
    // Most entries are a few KiB: a small read first, the whole window
    // only when it holds too little.
    let (tail, whole) = jsonl::read_tail(path, TAIL_FIRST)?;
    let (p, sure) = position_in(adapter, &tail)?;
    if sure || whole {
        return Ok(p);
    }
    let (tail, _) = jsonl::read_tail(path, TAIL_BYTES)?;
    Ok(position_in(adapter, &tail)?.0)
}

/// The position as the tail tells it, and whether the tail held enough to
/// be sure (its last complete entry, and the one before when that is a
/// prompt).
fn position_in(adapter: &dyn Adapter, tail: &jsonl::Chunk) -> anyhow::Result<(Position, bool)> {
    let mut lines = tail.lines.iter().rev();
    let Some(last) = lines.next() else {
        let p = Position {
            bytes: tail.complete_end,
            last: None,
        };
        return Ok((p, false));
    };
    let value = tail.parse(last)?;
    if !adapter.is_prompt(&value) {
        let p = Position {
            bytes: last.end,
            last: adapter.entry_id(&value),
        };
        return Ok((p, true));
    }
    // End at the entry before the prompt (blank lines between them are
    // no entries); at the prompt's start when it is the window's first.
    Ok(match lines.next() {
        Some(before) => {
            let p = Position {
                bytes: before.end,
                last: adapter.entry_id(&tail.parse(before)?),
            };
            (p, true)
        }
        None => {
            let p = Position {
                bytes: last.start,
                last: None,
            };
            (p, false)
        }
    })
}

/// Forks turn N's conversation (`dry_run`: says what it would write). Every
/// failure is a `Report` with `skipped`.
pub fn fork(t: &TurnConversation, dry_run: bool) -> Report {
    let Some(agent) = t.agent else {
        return Report::skipped(format!("turn {} names no agent", t.turn));
    };
    let mut report = Report {
        agent: Some(agent.to_string()),
        original_session: t.session.map(str::to_string),
        dry_run,
        ..Report::default()
    };
    let Some(adapter) = adapter(agent) else {
        report.skipped = Some(format!(
            "{agent} has no session adapter (there are: {})",
            ADAPTERS
                .iter()
                .map(|a| a.agent())
                .collect::<Vec<_>>()
                .join(", ")
        ));
        return report;
    };
    match try_fork(adapter, t, dry_run) {
        // The new session's id is made when the fork is written: a dry
        // run names none (nor its file, nor the command naming it).
        Ok(f) if dry_run => report.entries = Some(f.entries),
        Ok(f) => {
            report.forked_session = Some(f.session.clone());
            report.path = Some(f.path.display().to_string());
            report.entries = Some(f.entries);
            report.resume_command = Some(adapter.resume_command(&f.session));
        }
        Err(e) => report.skipped = Some(format!("{e:#}")),
    }
    report
}

/// For a redo: the original session still holds every turn (it is never
/// modified), so resuming it is the conversation that matches the files.
pub fn resume_original(t: &TurnConversation) -> Report {
    let mut report = Report {
        agent: t.agent.map(str::to_string),
        original_session: t.session.map(str::to_string),
        path: t.transcript.map(str::to_string),
        ..Report::default()
    };
    match (t.agent.and_then(adapter), t.session) {
        (Some(a), Some(s)) => report.resume_command = Some(a.resume_command(s)),
        (None, _) => {
            report.skipped = Some(format!(
                "turn {} has no agent with a session adapter",
                t.turn
            ))
        }
        (_, None) => report.skipped = Some(format!("turn {} names no session", t.turn)),
    }
    report
}

struct Forked {
    session: String,
    path: PathBuf,
    entries: usize,
}

fn try_fork(adapter: &dyn Adapter, t: &TurnConversation, dry_run: bool) -> anyhow::Result<Forked> {
    let turn = t.turn;
    let transcript = t
        .transcript
        .with_context(|| format!("turn {turn} recorded no transcript"))?;
    let position: Position = serde_json::from_str(t.position.with_context(|| {
        format!("turn {turn} recorded no conversation position (its hook call predates this ckpt, or the transcript was unreadable then)")
    })?)
    .with_context(|| format!("turn {turn}'s conversation position is not one this ckpt reads"))?;
    let original_session = t
        .session
        .with_context(|| format!("turn {turn} names no session"))?;
    let path = &expand(transcript);
    let file = jsonl::read_all(path)?;
    let values = cut(adapter, &file, &position, turn)?;
    if !values.iter().any(|v| adapter.is_prompt(v)) {
        bail!("the conversation holds no prompt before turn {turn}: nothing to resume (start a new session)");
    }
    adapter
        .detect(&values)
        .with_context(|| format!("{}", path.display()))?;
    let session = uuid::Uuid::new_v4().to_string();
    let rewritten = adapter.fork_entries(&values, &session, original_session)?;
    let fork_path = path
        .parent()
        .with_context(|| format!("{} has no directory", path.display()))?
        .join(adapter.fork_name(&session));
    let mut out = Vec::with_capacity(file.data.len());
    let mut entries = 0;
    for (line, new) in file.lines[..values.len()].iter().zip(rewritten) {
        match new {
            ForkEntry::Dropped => continue,
            ForkEntry::Unchanged => out.extend_from_slice(file.bytes(line)),
            ForkEntry::Changed(v) => {
                out.extend_from_slice(&serde_json::to_vec(&v)?);
                out.push(b'\n');
            }
        }
        entries += 1;
    }
    if !dry_run {
        jsonl::write_new(&fork_path, &out)?;
    }
    Ok(Forked {
        session,
        path: fork_path,
        entries,
    })
}

/// The entries the fork keeps (the file's first complete lines): those
/// before turn N began. The recorded position is checked (the transcript
/// still holds the same entry there), then extended over entries the agent
/// wrote late (they precede the prompt: the previous turn's last replies),
/// and the entries the agent wrote for turn N ahead of its prompt are left
/// out with it.
fn cut(
    adapter: &dyn Adapter,
    file: &jsonl::Chunk,
    position: &Position,
    turn: i64,
) -> anyhow::Result<Vec<Value>> {
    let len = file.data.len() as u64;
    if len < position.bytes {
        bail!(
            "the transcript is shorter ({len} bytes) than when turn {turn} started ({} bytes): it was truncated or rewritten",
            position.bytes
        );
    }
    let at = file.lines.partition_point(|l| l.end <= position.bytes);
    let boundary = if at == 0 { 0 } else { file.lines[at - 1].end };
    if boundary != position.bytes {
        bail!(
            "the transcript has no entry ending at byte {} where turn {turn}'s position was recorded: it was rewritten",
            position.bytes
        );
    }
    if let (Some(want), Some(line)) = (&position.last, at.checked_sub(1).map(|i| &file.lines[i])) {
        let found = adapter.entry_id(&file.parse(line)?);
        if found.as_deref() != Some(want.as_str()) {
            bail!(
                "the transcript's entry before turn {turn} is {} where {want} was recorded: it was rewritten",
                found.as_deref().unwrap_or("an entry without an id")
            );
        }
    }
    let mut prompt = None;
    for (i, line) in file.lines.iter().enumerate().skip(at) {
        if adapter.is_prompt(&file.parse(line)?) {
            prompt = Some(i);
            break;
        }
    }
    // Turn N's prompt never reached the transcript: it would have come
    // where the position was recorded.
    let mut kept = file.values(&file.lines[..prompt.unwrap_or(at)])?;
    kept.truncate(kept.len().saturating_sub(adapter.lead_in(&kept)));
    Ok(kept)
}

/// A transcript path as a hook names it: Claude Code's samples show
/// `~/.claude/…` too.
fn expand(path: &str) -> PathBuf {
    match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => PathBuf::from(path),
    }
}

/// The agent's own version in a `MAJOR.MINOR.PATCH` string, refused when
/// its major is above what the adapter was written against.
pub(crate) fn check_version(agent: &str, version: &str, max_major: u64) -> anyhow::Result<()> {
    let major = version
        .split('.')
        .next()
        .and_then(|m| m.parse::<u64>().ok())
        .with_context(|| format!("{agent} version {version:?} is not MAJOR.MINOR.PATCH"))?;
    if major > max_major {
        bail!("written by {agent} {version}, a format newer than this ckpt knows (up to {max_major}.x)");
    }
    Ok(())
}

/// `YYYY-MM-DDTHH-MM-SS` (UTC, now): the agents' file names use it.
pub(crate) fn file_time() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let [y, m, d, h, mi, s] = ckpt_core::utc_fields(secs);
    format!("{y:04}-{m:02}-{d:02}T{h:02}-{mi:02}-{s:02}")
}

/// The user's text in a message's content: a string, or the `text` of its
/// parts (Claude Code's and Codex's content blocks, Gemini's parts).
pub(crate) fn content_text(content: &Value) -> Option<String> {
    match content {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect();
            (!texts.is_empty()).then(|| texts.join(""))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests;
