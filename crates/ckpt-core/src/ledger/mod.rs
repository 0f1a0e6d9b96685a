//! The slop ledger: a record of the residue a turn leaves (shims, callers
//! never migrated, dead code…) so the next agent or person does not mistake
//! it for design.
//!
//! Invariants: an entry's row is never updated, and its status changes are
//! only appended (`ledger_events`); its shown status is derived when read,
//! `rewound` while its turn is (so a rewind and a redo need no ledger code);
//! its anchor is computed when read, from the text its span held when it was
//! added and the file as it is now. Nothing is written for bad input.

use std::collections::HashMap;
use std::path::Path;

use rusqlite::Connection;

use crate::confined::Root;
use crate::error::{Error, IoContext, Result};
use crate::model::TurnMeta;
use crate::relpath::RelPath;
use ckpt_types::now_ns;

mod sql;
mod types;

pub use types::*;

fn check_confidence(c: f64) -> Result<()> {
    if !(0.0..=1.0).contains(&c) {
        return Err(Error::BadInput(format!(
            "confidence must be between 0 and 1, not {c}"
        )));
    }
    Ok(())
}

fn check_text(what: &str, s: &str) -> Result<()> {
    if s.trim().is_empty() {
        return Err(Error::BadInput(format!("the {what} is empty")));
    }
    Ok(())
}

fn check_span(span: LineSpan) -> Result<()> {
    if span.start == 0 {
        return Err(Error::BadInput("lines are numbered from 1, not 0".into()));
    }
    if span.start > span.end {
        return Err(Error::BadInput(format!(
            "span {}-{} starts after it ends",
            span.start, span.end
        )));
    }
    Ok(())
}

/// The lines of `span` in `text`; an error past the file's end.
fn span_text(path: &RelPath, text: &str, span: LineSpan) -> Result<String> {
    check_span(span)?;
    let lines: Vec<&str> = text.lines().collect();
    if span.end as usize > lines.len() {
        return Err(Error::BadInput(format!(
            "{}:{}-{} is past the end of the file ({} lines)",
            path.display(),
            span.start,
            span.end,
            lines.len()
        )));
    }
    Ok(lines[span.start as usize - 1..span.end as usize].join("\n"))
}

/// Where `span` (which held `was`) is in `now`. Pure, for the tests.
pub(crate) fn anchor(span: Option<LineSpan>, was: Option<&str>, now: Option<&str>) -> LedgerAnchor {
    let gone = LedgerAnchor {
        state: AnchorState::Gone,
        span: None,
    };
    let Some(now) = now else { return gone };
    let (Some(span), Some(was)) = (span, was) else {
        return LedgerAnchor {
            state: AnchorState::Fresh,
            span: None,
        };
    };
    // `split`, not `lines`: `span_text` joined the span's lines with "\n",
    // and a blank line is one empty line, not none.
    let want: Vec<&str> = was.split('\n').collect();
    let have: Vec<&str> = now.lines().collect();
    let (start, len) = (span.start as usize - 1, want.len());
    if len == 0 {
        return gone;
    }
    let at = |i: usize| have.get(i..i + len) == Some(&want[..]);
    if at(start) {
        return LedgerAnchor {
            state: AnchorState::Fresh,
            span: Some(span),
        };
    }
    // The nearest copy of the same lines.
    let found = (0..have.len().saturating_sub(len - 1))
        .filter(|&i| at(i))
        .min_by_key(|&i| i.abs_diff(start));
    if let Some(i) = found {
        return LedgerAnchor {
            state: AnchorState::Moved,
            span: Some(LineSpan {
                start: i as u32 + 1,
                end: (i + len) as u32,
            }),
        };
    }
    let left: std::collections::HashSet<&str> = have.iter().map(|l| l.trim()).collect();
    if want
        .iter()
        .map(|l| l.trim())
        .any(|l| !l.is_empty() && left.contains(l))
    {
        return LedgerAnchor {
            state: AnchorState::Changed,
            span: None,
        };
    }
    gone
}

/// What the ledger reads and writes: its tables, and the tree its entries
/// point into (to anchor them in the files as they are now).
pub(crate) struct Ledger<'a> {
    pub(crate) conn: &'a Connection,
    pub(crate) root: &'a Path,
    pub(crate) root_fs: &'a Root,
}

impl Ledger<'_> {
    /// The text of a regular file in the tree now; `None` if nothing (or
    /// not a regular file) is there.
    fn current_text(&self, path: &RelPath) -> Result<Option<String>> {
        let st = self
            .root_fs
            .lstat(path)
            .ctx_in("stat", self.root, path.as_path())?;
        match st {
            Some(st) if st.kind == crate::confined::StatKind::File => {
                let (bytes, _) =
                    self.root_fs
                        .read_file(path)
                        .ctx_in("read", self.root, path.as_path())?;
                Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
            }
            _ => Ok(None),
        }
    }

    /// Records an entry in the open turn (if any) and returns its id. The
    /// file must exist and the span lie inside it; call after a barrier.
    /// `open_turn` is the open turn and its meta, asked once the entry is
    /// known to be good.
    pub(crate) fn add(
        &self,
        e: NewLedgerEntry,
        open_turn: impl FnOnce() -> Result<(Option<i64>, TurnMeta)>,
    ) -> Result<i64> {
        check_confidence(e.confidence)?;
        check_text("note", &e.note)?;
        if let Some(o) = &e.owner {
            check_text("owner", o)?;
        }
        let name = e.path.display();
        let st = self
            .root_fs
            .lstat(&e.path)
            .ctx_in("stat", self.root, e.path.as_path())?;
        match st {
            None => return Err(Error::BadInput(format!("{name} does not exist"))),
            Some(st) if st.kind != crate::confined::StatKind::File => {
                return Err(Error::BadInput(format!("{name} is not a regular file")))
            }
            Some(_) => {}
        }
        let text = match e.span {
            None => None,
            Some(span) => {
                let (bytes, _) =
                    self.root_fs
                        .read_file(&e.path)
                        .ctx_in("read", self.root, e.path.as_path())?;
                let text = std::str::from_utf8(&bytes).map_err(|_| {
                    Error::BadInput(format!(
                        "{name} is not UTF-8 text: record it whole (no :LINE)"
                    ))
                })?;
                Some(span_text(&e.path, text, span)?)
            }
        };
        let (turn, meta) = open_turn()?;
        let owner = e
            .owner
            .or_else(|| meta.agent.as_ref().map(|a| format!("agent:{a}")))
            .or(e.user)
            .unwrap_or_else(|| "unknown".into());
        let at_ns = now_ns();
        let tx = self.conn.unchecked_transaction()?;
        let body = EntryBody {
            bucket: e.bucket,
            severity: e.severity,
            confidence: e.confidence,
            owner: owner.clone(),
            path: e.path,
            span: e.span,
            span_text: text,
            note: e.note,
            agent: meta.agent,
            session: meta.session,
            created_ns: at_ns,
        };
        let id = sql::insert_entry(&tx, &body, turn)?;
        sql::insert_event(
            &tx,
            id,
            &LedgerEvent {
                status: LedgerStatus::Open,
                who: Some(owner.clone()),
                why: Some("added".into()),
                at_ns,
            },
        )?;
        tx.commit()?;
        Ok(id)
    }

    /// Entries matching `f`, oldest first, with their anchors now.
    pub(crate) fn list(&self, f: &LedgerFilter) -> Result<Vec<LedgerEntry>> {
        let rows = sql::entries(self.conn)?;
        let mut texts: HashMap<RelPath, Option<String>> = HashMap::new();
        let mut out = Vec::new();
        for row in rows {
            let b = &row.body;
            let keep = f.bucket.is_none_or(|x| b.bucket == x)
                && f.min_severity.is_none_or(|s| b.severity >= s)
                && f.min_confidence.is_none_or(|c| b.confidence >= c)
                && f.path_prefix.as_ref().is_none_or(|p| b.path.starts_with(p))
                && f.turn.is_none_or(|t| row.turn == Some(t))
                && f.agent.as_ref().is_none_or(|a| b.agent.as_ref() == Some(a))
                && f.owner.as_ref().is_none_or(|o| &b.owner == o);
            if !keep {
                continue;
            }
            let e = self.entry_from(row, &mut texts, f.history)?;
            if f.status.is_none_or(|s| e.status == s)
                && f.anchor.is_none_or(|a| e.anchor.state == a)
            {
                out.push(e);
            }
        }
        Ok(out)
    }

    fn entry_from(
        &self,
        row: sql::EntryRow,
        texts: &mut HashMap<RelPath, Option<String>>,
        history: bool,
    ) -> Result<LedgerEntry> {
        let b = &row.body;
        if !texts.contains_key(&b.path) {
            let text = self.current_text(&b.path)?;
            texts.insert(b.path.clone(), text);
        }
        let now = texts.get(&b.path).and_then(|t| t.as_deref());
        let anchor = anchor(b.span, b.span_text.as_deref(), now);
        let (status, rewound_by) = match row.rewound_by {
            Some(by) => (LedgerStatus::Rewound, by),
            None => (row.latest, None),
        };
        let history = if history {
            Some(sql::events(self.conn, row.id)?)
        } else {
            None
        };
        Ok(LedgerEntry {
            id: row.id,
            body: row.body,
            turn: row.turn,
            status,
            rewound_by,
            anchor,
            history,
        })
    }

    /// One entry with its history.
    pub(crate) fn show(&self, id: i64) -> Result<LedgerEntry> {
        let row = sql::entry(self.conn, id)?.ok_or_else(|| unknown(id))?;
        self.entry_from(row, &mut HashMap::new(), true)
    }

    /// Appends a status change (open, resolved or wont-fix) to entry `id`
    /// and returns the entry. A change to the status it has is refused.
    pub(crate) fn set_status(
        &self,
        id: i64,
        status: LedgerStatus,
        who: Option<String>,
        why: String,
    ) -> Result<LedgerEntry> {
        if status == LedgerStatus::Rewound {
            return Err(Error::BadInput(
                "rewound is not set by hand: it follows the entry's turn".into(),
            ));
        }
        check_text("reason (why)", &why)?;
        let row = sql::entry(self.conn, id)?.ok_or_else(|| unknown(id))?;
        if row.latest == status {
            return Err(Error::BadInput(format!(
                "ledger entry {id} is already {status}"
            )));
        }
        sql::insert_event(
            self.conn,
            id,
            &LedgerEvent {
                status,
                who: who.filter(|w| !w.trim().is_empty()),
                why: Some(why),
                at_ns: now_ns(),
            },
        )?;
        self.show(id)
    }

    /// Adds entries exported from another clone, with their history (not
    /// their turns: those are this clone's own). An entry already here
    /// (same path, span text, bucket and note) is skipped. All or nothing.
    pub(crate) fn import(&self, records: &[LedgerRecord]) -> Result<ImportReport> {
        for (i, rec) in records.iter().enumerate() {
            let r = &rec.body;
            let bad = |e: Error| Error::BadInput(format!("entry {} of the import: {e}", i + 1));
            check_confidence(r.confidence).map_err(bad)?;
            check_text("note", &r.note).map_err(bad)?;
            check_text("owner", &r.owner).map_err(bad)?;
            if let Some(span) = r.span {
                check_span(span).map_err(bad)?;
            }
            let lines = r.span_text.as_deref().map(|t| t.lines().count().max(1));
            let wanted = r.span.map(|s| (s.end - s.start + 1) as usize);
            if lines.is_some() != wanted.is_some() {
                return Err(bad(Error::BadInput(
                    "a span needs its text, and only a span has one".into(),
                )));
            }
            if rec
                .history
                .iter()
                .any(|h| h.status == LedgerStatus::Rewound)
            {
                return Err(bad(Error::BadInput("a history never holds rewound".into())));
            }
        }
        let mut report = ImportReport::default();
        let tx = self.conn.unchecked_transaction()?;
        for rec in records {
            let r = &rec.body;
            if sql::has_same(&tx, &r.path, r.span_text.as_deref(), r.bucket, &r.note)? {
                report.skipped += 1;
                continue;
            }
            let id = sql::insert_entry(&tx, r, None)?;
            let imported = LedgerEvent {
                status: LedgerStatus::Open,
                who: Some(r.owner.clone()),
                why: Some("imported".into()),
                at_ns: now_ns(),
            };
            let history = if rec.history.is_empty() {
                std::slice::from_ref(&imported)
            } else {
                &rec.history[..]
            };
            for h in history {
                sql::insert_event(&tx, id, h)?;
            }
            report.added += 1;
        }
        tx.commit()?;
        Ok(report)
    }

    /// How many entries were recorded in `turn` (for `turn-end` and `show`).
    pub(crate) fn count_for_turn(&self, turn: i64) -> Result<u64> {
        count_for_turn(self.conn, turn)
    }

    /// The open entries about `path` whose lines are still there (fresh or
    /// moved), with their spans now; a whole-file entry spans every line.
    /// For `blame` to mark lines.
    pub(crate) fn open_spans(&self, path: &RelPath) -> Result<Vec<(i64, LineSpan)>> {
        let mut texts = HashMap::new();
        let mut out = Vec::new();
        for row in sql::entries_for_path(self.conn, path)? {
            let whole = row.body.span.is_none();
            let e = self.entry_from(row, &mut texts, false)?;
            if e.status != LedgerStatus::Open {
                continue;
            }
            match (e.anchor.state, e.anchor.span) {
                (AnchorState::Fresh | AnchorState::Moved, Some(span)) => out.push((e.id, span)),
                (AnchorState::Fresh, None) if whole => {
                    let n = texts
                        .get(path)
                        .and_then(|t| t.as_deref())
                        .map_or(0, |t| t.lines().count());
                    if n > 0 {
                        out.push((
                            e.id,
                            LineSpan {
                                start: 1,
                                end: n as u32,
                            },
                        ));
                    }
                }
                _ => {}
            }
        }
        Ok(out)
    }
}

/// How many entries were recorded in `turn`.
pub(crate) fn count_for_turn(conn: &Connection, turn: i64) -> Result<u64> {
    sql::count_for_turn(conn, turn)
}

fn unknown(id: i64) -> Error {
    Error::BadInput(format!("no ledger entry {id} in this project"))
}

#[cfg(test)]
mod tests;
