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

use crate::error::{Error, IoContext, Result};
use crate::history::ledger as sql;
use crate::project::{now_ns, Project};
use crate::relpath::RelPath;

/// Spells an enum's values once: `as_str`, `parse` (a clear error naming
/// every value), `ALL`.
macro_rules! spelled {
    ($ty:ident, $what:literal, { $($var:ident => $s:literal),+ $(,)? }) => {
        impl $ty {
            pub const ALL: &'static [$ty] = &[$($ty::$var),+];

            pub const fn as_str(self) -> &'static str {
                match self { $($ty::$var => $s),+ }
            }

            pub fn parse(s: &str) -> Result<$ty> {
                Self::ALL.iter().copied().find(|v| v.as_str() == s).ok_or_else(|| {
                    let all: Vec<&str> = Self::ALL.iter().map(|v| v.as_str()).collect();
                    Error::Invalid(format!(
                        concat!("unknown ", $what, " '{}' (one of: {})"),
                        s,
                        all.join(", ")
                    ))
                })
            }
        }

        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

/// What kind of residue an entry records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Bucket {
    CompatShim,
    UnmigratedCallers,
    DuplicateConcept,
    NamingDrift,
    StaleDocsTests,
    SuspectedDeadCode,
    ToolGap,
}

spelled!(Bucket, "bucket", {
    CompatShim => "compat-shim",
    UnmigratedCallers => "unmigrated-callers",
    DuplicateConcept => "duplicate-concept",
    NamingDrift => "naming-drift",
    StaleDocsTests => "stale-docs-tests",
    SuspectedDeadCode => "suspected-dead-code",
    ToolGap => "tool-gap",
});

/// How much it matters, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Low,
    Medium,
    High,
    Critical,
}

spelled!(Severity, "severity", {
    Low => "low",
    Medium => "medium",
    High => "high",
    Critical => "critical",
});

/// An entry's status. `Rewound` is never stored: it is shown while the
/// entry's turn is rewound.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LedgerStatus {
    Open,
    Resolved,
    WontFix,
    Rewound,
}

spelled!(LedgerStatus, "status", {
    Open => "open",
    Resolved => "resolved",
    WontFix => "wont-fix",
    Rewound => "rewound",
});

/// Where the entry's lines are now.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AnchorState {
    /// The span's lines are unchanged, at the same place (whole file: it exists).
    Fresh,
    /// The same lines, elsewhere in the file.
    Moved,
    /// Some of its non-blank lines are still in the file.
    Changed,
    /// The file is gone, or none of its lines are left.
    Gone,
}

spelled!(AnchorState, "anchor state", {
    Fresh => "fresh",
    Moved => "moved",
    Changed => "changed",
    Gone => "gone",
});

/// Lines `start..=end`, 1-based.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Anchor {
    pub state: AnchorState,
    /// Where the lines are now (fresh or moved spans).
    pub span: Option<Span>,
}

/// One change of an entry's status (the first records its adding).
#[derive(Clone, Debug, PartialEq)]
pub struct StatusEvent {
    pub status: LedgerStatus,
    pub who: Option<String>,
    pub why: Option<String>,
    pub at_ns: i64,
}

/// An entry as read.
#[derive(Clone, Debug)]
pub struct LedgerEntry {
    pub id: i64,
    pub bucket: Bucket,
    pub severity: Severity,
    pub confidence: f64,
    pub owner: String,
    pub path: RelPath,
    /// `None`: the whole file.
    pub span: Option<Span>,
    /// The span's text when the entry was added.
    pub span_text: Option<String>,
    pub note: String,
    /// The turn open when it was added.
    pub turn: Option<i64>,
    pub agent: Option<String>,
    pub session: Option<String>,
    pub created_ns: i64,
    pub status: LedgerStatus,
    /// While `status` is rewound: the rewind that did it.
    pub rewound_by: Option<i64>,
    pub anchor: Anchor,
    /// Filled by `ledger_show`, and by `ledger_list` when the filter asks.
    pub history: Vec<StatusEvent>,
}

/// What `ledger_add` records.
#[derive(Clone, Debug)]
pub struct NewLedgerEntry {
    pub path: RelPath,
    pub span: Option<Span>,
    pub bucket: Bucket,
    pub severity: Severity,
    pub confidence: f64,
    /// Default: `agent:<agent of the open turn>`, else `user`.
    pub owner: Option<String>,
    /// The caller's user name, the owner of last resort.
    pub user: Option<String>,
    pub note: String,
}

/// An entry from another clone's export, with its history.
#[derive(Clone, Debug)]
pub struct LedgerRecord {
    pub bucket: Bucket,
    pub severity: Severity,
    pub confidence: f64,
    pub owner: String,
    pub path: RelPath,
    pub span: Option<Span>,
    pub span_text: Option<String>,
    pub note: String,
    pub agent: Option<String>,
    pub session: Option<String>,
    pub created_ns: i64,
    pub history: Vec<StatusEvent>,
}

/// Which entries `ledger_list` returns; every field set must match.
#[derive(Clone, Debug, Default)]
pub struct LedgerFilter {
    pub bucket: Option<Bucket>,
    pub min_severity: Option<Severity>,
    pub min_confidence: Option<f64>,
    /// The path or a directory above it.
    pub path_prefix: Option<RelPath>,
    pub turn: Option<i64>,
    pub agent: Option<String>,
    pub owner: Option<String>,
    pub status: Option<LedgerStatus>,
    pub anchor: Option<AnchorState>,
    /// Read each entry's history too.
    pub history: bool,
}

/// Counts of an import.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ImportReport {
    pub added: u64,
    /// Already here (same path, span text, bucket and note).
    pub skipped: u64,
}

fn check_confidence(c: f64) -> Result<()> {
    if !(0.0..=1.0).contains(&c) {
        return Err(Error::Invalid(format!(
            "confidence must be between 0 and 1, not {c}"
        )));
    }
    Ok(())
}

fn check_text(what: &str, s: &str) -> Result<()> {
    if s.trim().is_empty() {
        return Err(Error::Invalid(format!("the {what} is empty")));
    }
    Ok(())
}

fn check_span(span: Span) -> Result<()> {
    if span.start == 0 {
        return Err(Error::Invalid("lines are numbered from 1, not 0".into()));
    }
    if span.start > span.end {
        return Err(Error::Invalid(format!(
            "span {}-{} starts after it ends",
            span.start, span.end
        )));
    }
    Ok(())
}

/// The lines of `span` in `text`; an error past the file's end.
fn span_text(path: &RelPath, text: &str, span: Span) -> Result<String> {
    check_span(span)?;
    let lines: Vec<&str> = text.lines().collect();
    if span.end as usize > lines.len() {
        return Err(Error::Invalid(format!(
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
pub(crate) fn anchor(span: Option<Span>, was: Option<&str>, now: Option<&str>) -> Anchor {
    let gone = Anchor {
        state: AnchorState::Gone,
        span: None,
    };
    let Some(now) = now else { return gone };
    let (Some(span), Some(was)) = (span, was) else {
        return Anchor {
            state: AnchorState::Fresh,
            span: None,
        };
    };
    let want: Vec<&str> = was.lines().collect();
    let have: Vec<&str> = now.lines().collect();
    let (start, len) = (span.start as usize - 1, want.len());
    if len == 0 {
        return gone;
    }
    let at = |i: usize| have.get(i..i + len) == Some(&want[..]);
    if at(start) {
        return Anchor {
            state: AnchorState::Fresh,
            span: Some(span),
        };
    }
    // The nearest copy of the same lines.
    let found = (0..have.len().saturating_sub(len - 1))
        .filter(|&i| at(i))
        .min_by_key(|&i| i.abs_diff(start));
    if let Some(i) = found {
        return Anchor {
            state: AnchorState::Moved,
            span: Some(Span {
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
        return Anchor {
            state: AnchorState::Changed,
            span: None,
        };
    }
    gone
}

impl Project {
    /// The text of a regular file in the tree now; `None` if nothing (or
    /// not a regular file) is there.
    fn current_text(&self, path: &RelPath) -> Result<Option<String>> {
        let st = self
            .root_fs
            .lstat(path)
            .ctx_in("stat", &self.root, path.as_path())?;
        match st {
            Some(st) if st.kind == crate::confined::StatKind::File => {
                let (bytes, _) =
                    self.root_fs
                        .read_file(path)
                        .ctx_in("read", &self.root, path.as_path())?;
                Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
            }
            _ => Ok(None),
        }
    }

    /// Records an entry in the open turn (if any) and returns its id. The
    /// file must exist and the span lie inside it; call after a barrier.
    pub fn ledger_add(&mut self, e: NewLedgerEntry) -> Result<i64> {
        check_confidence(e.confidence)?;
        check_text("note", &e.note)?;
        if let Some(o) = &e.owner {
            check_text("owner", o)?;
        }
        let name = e.path.display();
        let st = self
            .root_fs
            .lstat(&e.path)
            .ctx_in("stat", &self.root, e.path.as_path())?;
        match st {
            None => return Err(Error::Invalid(format!("{name} does not exist"))),
            Some(st) if st.kind != crate::confined::StatKind::File => {
                return Err(Error::Invalid(format!("{name} is not a regular file")))
            }
            Some(_) => {}
        }
        let text = match e.span {
            None => None,
            Some(span) => {
                let (bytes, _) =
                    self.root_fs
                        .read_file(&e.path)
                        .ctx_in("read", &self.root, e.path.as_path())?;
                let text = std::str::from_utf8(&bytes).map_err(|_| {
                    Error::Invalid(format!(
                        "{name} is not UTF-8 text: record it whole (no :LINE)"
                    ))
                })?;
                Some(span_text(&e.path, text, span)?)
            }
        };
        let turn = self.open_turn()?;
        let meta = match turn {
            Some(t) => self.turn_meta(t)?,
            None => Default::default(),
        };
        let owner = e
            .owner
            .or_else(|| meta.agent.as_ref().map(|a| format!("agent:{a}")))
            .or(e.user)
            .unwrap_or_else(|| "unknown".into());
        let at_ns = now_ns();
        let tx = self.conn.transaction()?;
        let id = sql::insert_entry(
            &tx,
            &sql::NewRow {
                bucket: e.bucket,
                severity: e.severity,
                confidence: e.confidence,
                owner: &owner,
                path: &e.path,
                span: e.span,
                span_text: text.as_deref(),
                note: &e.note,
                turn,
                agent: meta.agent.as_deref(),
                session: meta.session.as_deref(),
                created_ns: at_ns,
            },
        )?;
        sql::insert_event(
            &tx,
            id,
            &StatusEvent {
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
    pub fn ledger_list(&self, f: &LedgerFilter) -> Result<Vec<LedgerEntry>> {
        let rows = sql::entries(&self.conn)?;
        let mut texts: HashMap<RelPath, Option<String>> = HashMap::new();
        let mut out = Vec::new();
        for row in rows {
            let keep = f.bucket.is_none_or(|b| row.bucket == b)
                && f.min_severity.is_none_or(|s| row.severity >= s)
                && f.min_confidence.is_none_or(|c| row.confidence >= c)
                && f.path_prefix
                    .as_ref()
                    .is_none_or(|p| row.path.starts_with(p))
                && f.turn.is_none_or(|t| row.turn == Some(t))
                && f.agent
                    .as_ref()
                    .is_none_or(|a| row.agent.as_ref() == Some(a))
                && f.owner.as_ref().is_none_or(|o| &row.owner == o);
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
        if !texts.contains_key(&row.path) {
            let text = self.current_text(&row.path)?;
            texts.insert(row.path.clone(), text);
        }
        let now = texts.get(&row.path).and_then(|t| t.as_deref());
        let anchor = anchor(row.span, row.span_text.as_deref(), now);
        let (status, rewound_by) = match row.rewound_by {
            Some(by) => (LedgerStatus::Rewound, by),
            None => (row.latest, None),
        };
        let history = if history {
            sql::events(&self.conn, row.id)?
        } else {
            Vec::new()
        };
        Ok(LedgerEntry {
            id: row.id,
            bucket: row.bucket,
            severity: row.severity,
            confidence: row.confidence,
            owner: row.owner,
            path: row.path,
            span: row.span,
            span_text: row.span_text,
            note: row.note,
            turn: row.turn,
            agent: row.agent,
            session: row.session,
            created_ns: row.created_ns,
            status,
            rewound_by,
            anchor,
            history,
        })
    }

    /// One entry with its history.
    pub fn ledger_show(&self, id: i64) -> Result<LedgerEntry> {
        let row = sql::entry(&self.conn, id)?.ok_or_else(|| unknown(id))?;
        self.entry_from(row, &mut HashMap::new(), true)
    }

    /// Appends a status change (open, resolved or wont-fix) to entry `id`
    /// and returns the entry. A change to the status it has is refused.
    pub fn ledger_set_status(
        &mut self,
        id: i64,
        status: LedgerStatus,
        who: Option<String>,
        why: String,
    ) -> Result<LedgerEntry> {
        if status == LedgerStatus::Rewound {
            return Err(Error::Invalid(
                "rewound is not set by hand: it follows the entry's turn".into(),
            ));
        }
        check_text("reason (why)", &why)?;
        let row = sql::entry(&self.conn, id)?.ok_or_else(|| unknown(id))?;
        if row.latest == status {
            return Err(Error::Invalid(format!(
                "ledger entry {id} is already {status}"
            )));
        }
        sql::insert_event(
            &self.conn,
            id,
            &StatusEvent {
                status,
                who: who.filter(|w| !w.trim().is_empty()),
                why: Some(why),
                at_ns: now_ns(),
            },
        )?;
        self.ledger_show(id)
    }

    /// Adds entries exported from another clone, with their history (not
    /// their turns: those are this clone's own). An entry already here
    /// (same path, span text, bucket and note) is skipped. All or nothing.
    pub fn ledger_import(&mut self, records: &[LedgerRecord]) -> Result<ImportReport> {
        for (i, r) in records.iter().enumerate() {
            let bad = |e: Error| Error::Invalid(format!("entry {} of the import: {e}", i + 1));
            check_confidence(r.confidence).map_err(bad)?;
            check_text("note", &r.note).map_err(bad)?;
            check_text("owner", &r.owner).map_err(bad)?;
            if let Some(span) = r.span {
                check_span(span).map_err(bad)?;
            }
            let lines = r.span_text.as_deref().map(|t| t.lines().count().max(1));
            let wanted = r.span.map(|s| (s.end - s.start + 1) as usize);
            if lines.is_some() != wanted.is_some() {
                return Err(bad(Error::Invalid(
                    "a span needs its text, and only a span has one".into(),
                )));
            }
            if r.history.iter().any(|h| h.status == LedgerStatus::Rewound) {
                return Err(bad(Error::Invalid("a history never holds rewound".into())));
            }
        }
        let mut report = ImportReport::default();
        let tx = self.conn.transaction()?;
        for r in records {
            if sql::has_same(&tx, &r.path, r.span_text.as_deref(), r.bucket, &r.note)? {
                report.skipped += 1;
                continue;
            }
            let id = sql::insert_entry(
                &tx,
                &sql::NewRow {
                    bucket: r.bucket,
                    severity: r.severity,
                    confidence: r.confidence,
                    owner: &r.owner,
                    path: &r.path,
                    span: r.span,
                    span_text: r.span_text.as_deref(),
                    note: &r.note,
                    turn: None,
                    agent: r.agent.as_deref(),
                    session: r.session.as_deref(),
                    created_ns: r.created_ns,
                },
            )?;
            let imported = StatusEvent {
                status: LedgerStatus::Open,
                who: Some(r.owner.clone()),
                why: Some("imported".into()),
                at_ns: now_ns(),
            };
            let history = if r.history.is_empty() {
                std::slice::from_ref(&imported)
            } else {
                &r.history[..]
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
    pub fn ledger_count_for_turn(&self, turn: i64) -> Result<u64> {
        sql::count_for_turn(&self.conn, turn)
    }

    /// The open entries about `path` whose lines are still there (fresh or
    /// moved), with their spans now; a whole-file entry spans every line.
    /// For `blame` to mark lines.
    pub fn open_ledger_spans(&self, path: &RelPath) -> Result<Vec<(i64, Span)>> {
        let mut texts = HashMap::new();
        let mut out = Vec::new();
        for row in sql::entries_for_path(&self.conn, path)? {
            let whole = row.span.is_none();
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
                            Span {
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

fn unknown(id: i64) -> Error {
    Error::Invalid(format!("no ledger entry {id} in this project"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{RewindOptions, TurnMeta};
    use crate::project::tests::reconciled;

    fn span(start: u32, end: u32) -> Option<Span> {
        Some(Span { start, end })
    }

    fn new(path: &str, s: Option<Span>) -> NewLedgerEntry {
        NewLedgerEntry {
            path: RelPath::new(path).unwrap(),
            span: s,
            bucket: Bucket::CompatShim,
            severity: Severity::High,
            confidence: 0.8,
            owner: None,
            user: Some("ana".into()),
            note: "old name kept for callers".into(),
        }
    }

    #[test]
    fn anchors_follow_the_lines() {
        let was = Some("b\nc");
        let a = |now: Option<&str>| anchor(span(2, 3), was, now);
        assert_eq!(a(Some("a\nb\nc\nd\n")).state, AnchorState::Fresh);
        let moved = a(Some("x\ny\na\nb\nc\n"));
        assert_eq!(moved.state, AnchorState::Moved);
        assert_eq!(moved.span, span(4, 5));
        assert_eq!(a(Some("a\nb\nC\n")).state, AnchorState::Changed);
        assert_eq!(a(Some("a\nz\n")).state, AnchorState::Gone);
        assert_eq!(a(None).state, AnchorState::Gone);
        // Blank lines alone do not keep an entry "changed".
        assert_eq!(
            anchor(span(1, 2), Some("x\n"), Some("\n\ny\n")).state,
            AnchorState::Gone
        );
        // Whole files: there or not.
        assert_eq!(anchor(None, None, Some("")).state, AnchorState::Fresh);
        assert_eq!(anchor(None, None, None).state, AnchorState::Gone);
        // The nearest copy wins.
        let two = anchor(span(4, 4), Some("k"), Some("k\nx\ny\nz\nk\n"));
        assert_eq!(two.span, span(5, 5));
    }

    #[test]
    fn spellings_read_back_and_severities_are_ordered() {
        for b in Bucket::ALL {
            assert_eq!(Bucket::parse(b.as_str()).unwrap(), *b);
        }
        assert!(Severity::Low < Severity::Medium && Severity::High < Severity::Critical);
        let e = Bucket::parse("shim").unwrap_err().to_string();
        assert!(
            e.contains("unknown bucket 'shim'") && e.contains("tool-gap"),
            "{e}"
        );
    }

    #[test]
    fn an_entry_belongs_to_the_open_turn_and_is_rewound_with_it() {
        let (_t, root, mut p) = reconciled(&[("a.rs", "fn a() {}\nfn b() {}\nfn c() {}\n")]);
        let meta = TurnMeta {
            agent: Some("claude".into()),
            session: Some("s1".into()),
            ..TurnMeta::default()
        };
        let turn = p.turn_start(meta).unwrap();
        std::fs::write(root.join("b.rs"), "x\n").unwrap();
        p.reconcile().unwrap();
        let id = p.ledger_add(new("a.rs", span(2, 2))).unwrap();
        p.turn_end().unwrap();
        let e = p.ledger_show(id).unwrap();
        assert_eq!(e.turn, Some(turn));
        assert_eq!(e.owner, "agent:claude");
        assert_eq!(
            (e.agent.as_deref(), e.session.as_deref()),
            (Some("claude"), Some("s1"))
        );
        assert_eq!(e.span_text.as_deref(), Some("fn b() {}"));
        assert_eq!(e.status, LedgerStatus::Open);
        assert_eq!(e.history.len(), 1);
        assert_eq!(p.ledger_count_for_turn(turn).unwrap(), 1);
        assert_eq!(
            p.open_ledger_spans(&RelPath::new("a.rs").unwrap()).unwrap(),
            vec![(id, Span { start: 2, end: 2 })]
        );

        let out = p.rewind(turn, RewindOptions::default()).unwrap();
        let crate::model::RewindOutcome::Applied { rewind_id, .. } = out else {
            panic!("not applied: {out:?}")
        };
        let e = p.ledger_show(id).unwrap();
        assert_eq!(
            (e.status, e.rewound_by),
            (LedgerStatus::Rewound, Some(rewind_id))
        );
        assert!(p
            .open_ledger_spans(&RelPath::new("a.rs").unwrap())
            .unwrap()
            .is_empty());
        p.redo(RewindOptions::default()).unwrap();
        assert_eq!(p.ledger_show(id).unwrap().status, LedgerStatus::Open);
    }

    #[test]
    fn status_changes_are_appended_with_who_and_why() {
        let (_t, _root, mut p) = reconciled(&[("a.rs", "x\n")]);
        let id = p.ledger_add(new("a.rs", None)).unwrap();
        assert_eq!(p.ledger_show(id).unwrap().owner, "ana", "no turn: the user");
        let e = p
            .ledger_set_status(
                id,
                LedgerStatus::Resolved,
                Some("bo".into()),
                "fixed".into(),
            )
            .unwrap();
        assert_eq!(e.status, LedgerStatus::Resolved);
        let e = p
            .ledger_set_status(id, LedgerStatus::Open, None, "came back".into())
            .unwrap();
        let h: Vec<_> = e
            .history
            .iter()
            .map(|h| (h.status, h.why.clone()))
            .collect();
        assert_eq!(
            h,
            vec![
                (LedgerStatus::Open, Some("added".into())),
                (LedgerStatus::Resolved, Some("fixed".into())),
                (LedgerStatus::Open, Some("came back".into())),
            ]
        );
        assert_eq!(e.history[1].who.as_deref(), Some("bo"));
        for bad in [
            p.ledger_set_status(id, LedgerStatus::Open, None, "again".into()),
            p.ledger_set_status(id, LedgerStatus::Resolved, None, " ".into()),
            p.ledger_set_status(id, LedgerStatus::Rewound, None, "x".into()),
            p.ledger_set_status(99, LedgerStatus::Resolved, None, "x".into()),
        ] {
            assert!(matches!(bad, Err(Error::Invalid(_))), "{bad:?}");
        }
        assert_eq!(p.ledger_show(id).unwrap().history.len(), 3);
    }

    #[test]
    fn bad_entries_are_refused_and_write_nothing() {
        let (_t, root, mut p) = reconciled(&[("a.rs", "1\n2\n3\n")]);
        std::fs::create_dir(root.join("d")).unwrap();
        let cases = [
            (new("a.rs", span(3, 4)), "past the end"),
            (new("a.rs", span(0, 1)), "from 1"),
            (new("a.rs", span(3, 2)), "starts after"),
            (new("missing.rs", None), "does not exist"),
            (new("d", None), "not a regular file"),
            (
                NewLedgerEntry {
                    confidence: 1.5,
                    ..new("a.rs", None)
                },
                "between 0 and 1",
            ),
            (
                NewLedgerEntry {
                    confidence: f64::NAN,
                    ..new("a.rs", None)
                },
                "between 0 and 1",
            ),
            (
                NewLedgerEntry {
                    note: "  ".into(),
                    ..new("a.rs", None)
                },
                "note is empty",
            ),
        ];
        for (e, want) in cases {
            let err = p.ledger_add(e).unwrap_err().to_string();
            assert!(err.contains(want), "{err} (wanted {want})");
        }
        assert!(p.ledger_list(&LedgerFilter::default()).unwrap().is_empty());
    }

    #[test]
    fn filters_select_entries() {
        let (_t, root, mut p) = reconciled(&[("src/a.rs", "1\n2\n"), ("b.md", "doc\n")]);
        let a = p.ledger_add(new("src/a.rs", span(1, 1))).unwrap();
        let b = p
            .ledger_add(NewLedgerEntry {
                bucket: Bucket::StaleDocsTests,
                severity: Severity::Low,
                confidence: 0.3,
                owner: Some("docs-team".into()),
                ..new("b.md", None)
            })
            .unwrap();
        std::fs::write(root.join("src/a.rs"), "9\n").unwrap();
        let ids = |f: LedgerFilter| -> Vec<i64> {
            p.ledger_list(&f).unwrap().iter().map(|e| e.id).collect()
        };
        assert_eq!(ids(LedgerFilter::default()), vec![a, b]);
        assert_eq!(
            ids(LedgerFilter {
                bucket: Some(Bucket::StaleDocsTests),
                ..Default::default()
            }),
            vec![b]
        );
        assert_eq!(
            ids(LedgerFilter {
                min_severity: Some(Severity::Medium),
                ..Default::default()
            }),
            vec![a]
        );
        assert_eq!(
            ids(LedgerFilter {
                min_confidence: Some(0.5),
                ..Default::default()
            }),
            vec![a]
        );
        assert_eq!(
            ids(LedgerFilter {
                path_prefix: Some(RelPath::new("src").unwrap()),
                ..Default::default()
            }),
            vec![a]
        );
        assert_eq!(
            ids(LedgerFilter {
                owner: Some("docs-team".into()),
                ..Default::default()
            }),
            vec![b]
        );
        assert_eq!(
            ids(LedgerFilter {
                anchor: Some(AnchorState::Gone),
                ..Default::default()
            }),
            vec![a]
        );
    }

    #[test]
    fn an_import_skips_what_is_already_here_and_keeps_history() {
        let (_t, _root, mut p) = reconciled(&[("a.rs", "1\n2\n")]);
        let id = p.ledger_add(new("a.rs", span(2, 2))).unwrap();
        let e = p.ledger_show(id).unwrap();
        let record = |note: &str| LedgerRecord {
            bucket: e.bucket,
            severity: e.severity,
            confidence: e.confidence,
            owner: e.owner.clone(),
            path: e.path.clone(),
            span: e.span,
            span_text: e.span_text.clone(),
            note: note.into(),
            agent: None,
            session: None,
            created_ns: 5,
            history: vec![
                StatusEvent {
                    status: LedgerStatus::Open,
                    who: None,
                    why: Some("added".into()),
                    at_ns: 5,
                },
                StatusEvent {
                    status: LedgerStatus::WontFix,
                    who: Some("cy".into()),
                    why: Some("kept on purpose".into()),
                    at_ns: 6,
                },
            ],
        };
        let r = p
            .ledger_import(&[record(&e.note), record("another")])
            .unwrap();
        assert_eq!(
            r,
            ImportReport {
                added: 1,
                skipped: 1
            }
        );
        let all = p.ledger_list(&LedgerFilter::default()).unwrap();
        let new = p.ledger_show(all[1].id).unwrap();
        assert_eq!((new.status, new.turn), (LedgerStatus::WontFix, None));
        assert_eq!(new.history.len(), 2);
        // A bad record refuses the whole import.
        let mut bad = record("third");
        bad.confidence = -1.0;
        assert!(p.ledger_import(&[record("fourth"), bad]).is_err());
        assert_eq!(p.ledger_list(&LedgerFilter::default()).unwrap().len(), 2);
    }
}
