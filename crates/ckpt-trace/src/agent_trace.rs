//! Agent Trace 0.1.0 records (github.com/cursor/agent-trace, README
//! section 6): every line of a file in a range of a conversation, each
//! conversation one ckpt turn (an agent's: `ai`), the user's edits made
//! between turns (`human`) or what was there before any turn (`unknown`),
//! exactly as `ckptctl blame` attributes them. What the format has no
//! field for goes under `metadata["dev.ckpt"]`: that capture is by
//! watching the file system, the turns, the lines a formatter re-spaced
//! with where they were before it, and the lines turns deleted.

use std::collections::{BTreeMap, BTreeSet};

use ckpt_proto::{Blame, LineOrigin};
use serde_json::{json, Map, Value};

use crate::facts::{content_hash, Deletion, Turns};

pub const VERSION: &str = "0.1.0";

/// A file as a record shows it: its path there, and its blame.
pub struct FileBlame {
    /// Relative to the repository's top (or the project's root outside git).
    pub path: String,
    pub blame: Blame,
}

/// Where a line came from, as a conversation groups it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Who {
    Turn(i64),
    User,
    Before,
}

fn who(origin: LineOrigin, turn: Option<i64>) -> Who {
    match (origin, turn) {
        (LineOrigin::Turn, Some(t)) => Who::Turn(t),
        (LineOrigin::BetweenTurns, _) => Who::User,
        _ => Who::Before,
    }
}

/// `ckpt:turn/7`: what `related` links a range to (a URI, as the schema
/// wants; ckpt's turns have no web address).
pub fn turn_uri(turn: i64) -> String {
    format!("ckpt:turn/{turn}")
}

fn session_uri(session: &str) -> String {
    format!("ckpt:session/{}", percent_encoded(session, b""))
}

/// `text` as a URI part: unreserved bytes and `keep` as they are, every
/// other byte percent-encoded.
pub fn percent_encoded(text: &str, keep: &[u8]) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) || keep.contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// One record of `files`; `revision` is the commit they are at, if any.
pub fn record(
    files: &[FileBlame],
    turns: &Turns,
    deletions: &[Deletion],
    revision: Option<&str>,
) -> Value {
    let mut used: BTreeSet<i64> = BTreeSet::new();
    let mut reformatted = Vec::new();
    let file_values: Vec<Value> = files
        .iter()
        .map(|f| {
            let (value, turns_used, moved) = file(f, turns);
            used.extend(turns_used);
            reformatted.extend(moved);
            value
        })
        .collect();
    used.extend(deletions.iter().map(|d| d.turn));
    let turn_values: Vec<Value> = used
        .iter()
        .filter_map(|id| turns.by_id.get(id))
        .map(|t| {
            let i = &t.info;
            json!({
                "turn": i.id,
                "agent": i.agent,
                "session": i.session,
                "label": i.label,
                "model": t.model,
                "started": rfc3339(i.started_ns),
                "status": i.status.as_str(),
            })
        })
        .collect();
    let deletion_values: Vec<Value> = deletions
        .iter()
        .map(|d| {
            json!({
                "path": d.path,
                "turn": d.turn,
                "start_line": d.start_line,
                "end_line": d.end_line,
                "content_hash": d.content_hash,
            })
        })
        .collect();
    let mut rec = Map::new();
    rec.insert("version".into(), VERSION.into());
    rec.insert("id".into(), uuid::Uuid::new_v4().to_string().into());
    rec.insert(
        "timestamp".into(),
        chrono::Utc::now()
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            .into(),
    );
    if let Some(rev) = revision {
        rec.insert("vcs".into(), json!({ "type": "git", "revision": rev }));
    }
    rec.insert(
        "tool".into(),
        json!({ "name": "ckpt", "version": env!("CARGO_PKG_VERSION") }),
    );
    rec.insert("files".into(), file_values.into());
    rec.insert(
        "metadata".into(),
        json!({
            "dev.ckpt": {
                // Every range comes from watching the file system (shell
                // commands and formatters included), not from an agent's
                // own report of its edits.
                "captured_by": "watcher",
                "project": turns.root,
                "turns": turn_values,
                "reformatted": reformatted,
                // Agent Trace has no field for lines taken away.
                "deletions": deletion_values,
            }
        }),
    );
    Value::Object(rec)
}

/// A file's entry, the turns it names, and its re-spaced runs.
fn file(f: &FileBlame, turns: &Turns) -> (Value, Vec<i64>, Vec<Value>) {
    // Runs of lines from one source, in file order.
    let mut runs: Vec<(Who, u64, u64)> = Vec::new();
    for l in &f.blame.lines {
        let w = who(l.origin, l.turn);
        match runs.last_mut() {
            Some((rw, _, end)) if *rw == w && *end + 1 == l.line => *end = l.line,
            _ => runs.push((w, l.line, l.line)),
        }
    }
    let text = |s: u64, e: u64| -> Vec<&str> {
        f.blame.lines[(s - 1) as usize..e as usize]
            .iter()
            .map(|l| l.text.as_str())
            .collect()
    };
    let mut order: Vec<Who> = Vec::new();
    let mut ranges: BTreeMap<Who, Vec<Value>> = BTreeMap::new();
    for &(w, s, e) in &runs {
        if !ranges.contains_key(&w) {
            order.push(w);
        }
        ranges.entry(w).or_default().push(json!({
            "start_line": s,
            "end_line": e,
            "content_hash": content_hash(&text(s, e)),
        }));
    }
    let conversations: Vec<Value> = order
        .iter()
        .map(|w| {
            let mut c = Map::new();
            let (contributor, related) = match w {
                Who::Turn(t) => {
                    let facts = turns.by_id.get(t);
                    let info = facts.map(|f| &f.info);
                    let mut contributor = Map::new();
                    let ai = info.is_some_and(|i| i.agent.is_some());
                    contributor.insert("type".into(), if ai { "ai" } else { "unknown" }.into());
                    if let Some(m) = facts.and_then(|f| f.model.as_ref()) {
                        if m.contains('/') {
                            contributor.insert("model_id".into(), m.clone().into());
                        }
                    }
                    let mut related = vec![json!({ "type": "turn", "url": turn_uri(*t) })];
                    if let Some(s) = info.and_then(|i| i.session.as_ref()) {
                        related.push(json!({ "type": "session", "url": session_uri(s) }));
                    }
                    (Value::Object(contributor), related)
                }
                Who::User => (json!({ "type": "human" }), vec![]),
                Who::Before => (json!({ "type": "unknown" }), vec![]),
            };
            c.insert("contributor".into(), contributor);
            c.insert("ranges".into(), ranges[w].clone().into());
            if !related.is_empty() {
                c.insert("related".into(), related.into());
            }
            Value::Object(c)
        })
        .collect();
    let used = order
        .iter()
        .filter_map(|w| match w {
            Who::Turn(t) => Some(*t),
            _ => None,
        })
        .collect();
    (
        json!({ "path": f.path, "conversations": conversations }),
        used,
        reformatted(f),
    )
}

/// The runs of re-spaced lines: where they are, who re-spaced them, and
/// the range they were at before with who had written them.
fn reformatted(f: &FileBlame) -> Vec<Value> {
    let mut runs: Vec<(u64, u64, u64, u64, Who, Who)> = Vec::new();
    for r in &f.blame.reformatted {
        let Some(now) = f.blame.lines.get((r.line - 1) as usize) else {
            continue;
        };
        let by = who(now.origin, now.turn);
        let before = who(r.pre_origin, r.pre_turn);
        match runs.last_mut() {
            Some((_, end, _, pre_end, b, p))
                if *end + 1 == r.line && *pre_end + 1 == r.pre_line && *b == by && *p == before =>
            {
                *end = r.line;
                *pre_end = r.pre_line;
            }
            _ => runs.push((r.line, r.line, r.pre_line, r.pre_line, by, before)),
        }
    }
    let side = |w: Who| match w {
        Who::Turn(t) => json!({ "origin": "turn", "turn": t }),
        Who::User => json!({ "origin": "between-turns" }),
        Who::Before => json!({ "origin": "baseline" }),
    };
    runs.into_iter()
        .map(|(s, e, ps, pe, by, before)| {
            json!({
                "path": f.path,
                "start_line": s,
                "end_line": e,
                "formatted_by": side(by),
                "pre_formatter": {
                    "start_line": ps,
                    "end_line": pe,
                    "written_by": side(before),
                },
            })
        })
        .collect()
}

fn rfc3339(ns: i64) -> String {
    chrono::DateTime::from_timestamp_nanos(ns).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
