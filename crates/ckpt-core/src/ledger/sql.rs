//! The ledger's tables: `ledger_entries` (one row per entry, never updated)
//! and `ledger_events` (its status changes, appended). Every SQL statement
//! on them is here. An entry's shown status is derived when read: `rewound`
//! while its turn is, else its latest event's.

use rusqlite::{params, Connection, OptionalExtension, Row};

use super::{Bucket, EntryBody, LedgerEvent, LedgerStatus, LineSpan, Severity};
use crate::error::{Error, Result};
use crate::model::TurnStatus;
use crate::relpath::RelPath;

/// An entry as stored, with the status its turn and latest event give it.
pub(crate) struct EntryRow {
    pub id: i64,
    pub body: EntryBody,
    pub turn: Option<i64>,
    /// The rewind that marked the entry's turn rewound, while it is.
    pub rewound_by: Option<Option<i64>>,
    /// The latest event's status.
    pub latest: LedgerStatus,
}

/// Adds an entry recorded in `turn`; returns its id (events are added by
/// the callers).
pub(crate) fn insert_entry(conn: &Connection, b: &EntryBody, turn: Option<i64>) -> Result<i64> {
    conn.prepare_cached(
        "INSERT INTO ledger_entries (bucket, severity, confidence, owner, path, line_start,
         line_end, span_text, note, turn, agent, session, created_ns)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
    )?
    .execute(params![
        b.bucket.as_str(),
        b.severity.as_str(),
        b.confidence,
        b.owner,
        b.path.as_bytes(),
        b.span.map(|s| s.start),
        b.span.map(|s| s.end),
        b.span_text,
        b.note,
        turn,
        b.agent,
        b.session,
        b.created_ns
    ])?;
    Ok(conn.last_insert_rowid())
}

pub(crate) fn insert_event(conn: &Connection, entry: i64, e: &LedgerEvent) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO ledger_events (entry, status, who, why, at_ns) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![entry, e.status.as_str(), e.who, e.why, e.at_ns])?;
    Ok(())
}

const SELECT: &str = "SELECT e.id, e.bucket, e.severity, e.confidence, e.owner, e.path,
     e.line_start, e.line_end, e.span_text, e.note, e.turn, e.agent, e.session, e.created_ns,
     t.status = ?1, t.rewound_by,
     (SELECT status FROM ledger_events WHERE entry = e.id ORDER BY id DESC LIMIT 1)
     FROM ledger_entries e LEFT JOIN turns t ON t.id = e.turn";

fn decode(r: &Row) -> rusqlite::Result<Result<EntryRow>> {
    let id: i64 = r.get(0)?;
    let bucket: String = r.get(1)?;
    let severity: String = r.get(2)?;
    let path: Vec<u8> = r.get(5)?;
    let start: Option<u32> = r.get(6)?;
    let end: Option<u32> = r.get(7)?;
    let rewound: Option<bool> = r.get(14)?;
    let rewound_by: Option<i64> = r.get(15)?;
    let latest: Option<String> = r.get(16)?;
    let (confidence, owner, span_text, note, turn, agent, session, created_ns) = (
        r.get(3)?,
        r.get(4)?,
        r.get(8)?,
        r.get(9)?,
        r.get(10)?,
        r.get(11)?,
        r.get(12)?,
        r.get(13)?,
    );
    Ok((|| {
        let bad = |what: &str| Error::Corrupt(format!("ledger entry {id}: undecodable {what}"));
        let span = match (start, end) {
            (Some(start), Some(end)) => Some(LineSpan { start, end }),
            (None, None) => None,
            _ => return Err(bad("span")),
        };
        Ok(EntryRow {
            id,
            body: EntryBody {
                bucket: Bucket::parse(&bucket).map_err(|_| bad("bucket"))?,
                severity: Severity::parse(&severity).map_err(|_| bad("severity"))?,
                confidence,
                owner,
                path: crate::relpath::stored(path)?,
                span,
                span_text,
                note,
                agent,
                session,
                created_ns,
            },
            turn,
            rewound_by: (rewound == Some(true)).then_some(rewound_by),
            latest: match latest {
                Some(s) => LedgerStatus::parse(&s).map_err(|_| bad("status"))?,
                None => LedgerStatus::Open,
            },
        })
    })())
}

/// Every entry, oldest first.
pub(crate) fn entries(conn: &Connection) -> Result<Vec<EntryRow>> {
    let mut stmt = conn.prepare_cached(&format!("{SELECT} ORDER BY e.id"))?;
    let rows = stmt.query_map([TurnStatus::Rewound.as_str()], decode)?;
    let mut out = Vec::new();
    for r in rows {
        out.push(r??);
    }
    Ok(out)
}

/// The entries about `path`, oldest first.
pub(crate) fn entries_for_path(conn: &Connection, path: &RelPath) -> Result<Vec<EntryRow>> {
    let mut stmt = conn.prepare_cached(&format!("{SELECT} WHERE e.path = ?2 ORDER BY e.id"))?;
    let rows = stmt.query_map(
        params![TurnStatus::Rewound.as_str(), path.as_bytes()],
        decode,
    )?;
    let mut out = Vec::new();
    for r in rows {
        out.push(r??);
    }
    Ok(out)
}

pub(crate) fn entry(conn: &Connection, id: i64) -> Result<Option<EntryRow>> {
    conn.prepare_cached(&format!("{SELECT} WHERE e.id = ?2"))?
        .query_row(params![TurnStatus::Rewound.as_str(), id], decode)
        .optional()?
        .transpose()
}

/// An entry's status changes, oldest first.
pub(crate) fn events(conn: &Connection, entry: i64) -> Result<Vec<LedgerEvent>> {
    let mut stmt = conn.prepare_cached(
        "SELECT status, who, why, at_ns FROM ledger_events WHERE entry = ?1 ORDER BY id",
    )?;
    let rows = stmt.query_map([entry], |r| {
        Ok((r.get::<_, String>(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
    })?;
    let mut out = Vec::new();
    for r in rows {
        let (status, who, why, at_ns) = r?;
        let status = LedgerStatus::parse(&status)
            .map_err(|_| Error::Corrupt(format!("ledger entry {entry}: undecodable event")))?;
        out.push(LedgerEvent {
            status,
            who,
            why,
            at_ns,
        });
    }
    Ok(out)
}

/// How many entries were recorded in `turn`.
pub(crate) fn count_for_turn(conn: &Connection, turn: i64) -> Result<u64> {
    let n: i64 = conn
        .prepare_cached("SELECT count(*) FROM ledger_entries WHERE turn = ?1")?
        .query_row([turn], |r| r.get(0))?;
    Ok(n as u64)
}

/// Whether an entry with this path, span text, bucket and note exists: what
/// an import takes for the same entry.
pub(crate) fn has_same(
    conn: &Connection,
    path: &RelPath,
    span_text: Option<&str>,
    bucket: Bucket,
    note: &str,
) -> Result<bool> {
    Ok(conn
        .prepare_cached(
            "SELECT 1 FROM ledger_entries
             WHERE path = ?1 AND span_text IS ?2 AND bucket = ?3 AND note = ?4 LIMIT 1",
        )?
        .query_row(
            params![path.as_bytes(), span_text, bucket.as_str(), note],
            |_| Ok(()),
        )
        .optional()?
        .is_some())
}
