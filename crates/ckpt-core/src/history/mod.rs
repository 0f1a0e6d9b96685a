//! The history tables: turns and their entries, the rewind journal and its
//! actions. Every SQL statement on them is here, and so is each status they
//! store, spelled once. Callers say what they want (open a turn, journal a
//! plan, drop old turns); the rules of when to do it live with them.

use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSql, ToSqlOutput, ValueRef};
use rusqlite::{params, Connection, OptionalExtension};

use crate::action_list::{ActionList, Builder, Spill};
use crate::db;
use crate::error::{Error, Result};
use crate::model::{Action, RewindRecord, RewindState, Skipped, TurnEntry, TurnMeta, TurnStatus};
use crate::relpath::RelPath;
use crate::state::State;

mod audit;
mod beyond;
mod close;

pub(crate) use audit::{audit_actions, audit_entries, audit_rewinds, audit_turns};
pub(crate) use beyond::{
    add_command, capture_notes, commands, integrity_counts, note_capture, RESCANNED,
};
pub(crate) use close::{close_turn, closing, resync_open_posts};

/// A turn's status as `turns.status` holds it; an unknown one reads as
/// closed (fsck reports it).
fn read_status(s: &str) -> TurnStatus {
    TurnStatus::parse(s).unwrap_or(TurnStatus::Closed)
}

/// A rewind's status in the journal (`rewinds.status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RewindStatus {
    /// Journaled and being applied; recovery finishes it at the next start.
    Pending,
    Applied,
    /// Applying it failed and was rolled back.
    Failed,
    /// Being undone by applying its own journal backwards: only older
    /// versions wrote it (a redo is now a rewind of its own); recovery
    /// finishes it.
    Redoing,
    /// Undone by a redo: its turns are live again.
    Redone,
}

impl RewindStatus {
    const ALL: [RewindStatus; 5] = [
        RewindStatus::Pending,
        RewindStatus::Applied,
        RewindStatus::Failed,
        RewindStatus::Redoing,
        RewindStatus::Redone,
    ];

    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            RewindStatus::Pending => "pending",
            RewindStatus::Applied => "applied",
            RewindStatus::Failed => "failed",
            RewindStatus::Redoing => "redoing",
            RewindStatus::Redone => "redone",
        }
    }

    /// `None` for a status ckpt never writes (a tampered row).
    pub(crate) fn parse(s: &str) -> Option<RewindStatus> {
        Self::ALL.into_iter().find(|r| r.as_str() == s)
    }

    /// Left by a process that died while applying it: recovery finishes it.
    pub(crate) fn is_unfinished(self) -> bool {
        matches!(self, RewindStatus::Pending | RewindStatus::Redoing)
    }

    /// As `rewinds` shows it: a legacy redo under way is pending too.
    pub(crate) fn state(self) -> RewindState {
        match self {
            RewindStatus::Pending | RewindStatus::Redoing => RewindState::Pending,
            RewindStatus::Applied => RewindState::Applied,
            RewindStatus::Failed => RewindState::Failed,
            RewindStatus::Redone => RewindState::Redone,
        }
    }

    /// Its turns stay marked rewound.
    pub(crate) fn marks_turns(self) -> bool {
        matches!(self, RewindStatus::Applied | RewindStatus::Redoing)
    }
}

impl ToSql for RewindStatus {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::from(self.as_str()))
    }
}

impl FromSql for RewindStatus {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        let s = value.as_str()?;
        RewindStatus::parse(s)
            .ok_or_else(|| FromSqlError::Other(format!("rewind status {s:?}").into()))
    }
}

// ---- turns ----

/// Served by the partial index `turns_open`: a project keeps thousands of
/// turns, and every turn boundary and capture batch asks. `'open'` is
/// spelled out because SQLite uses a partial index only for a query that
/// names its value (a test checks it is `TurnStatus::Open`).
const OPEN_TURN: &str = "SELECT id, session FROM turns WHERE status = 'open'";

/// Runs one statement, parsed once per connection (`Connection::execute`
/// parses it at every call: with 50 clients, 3% of the daemon's time).
fn exec(conn: &Connection, sql: &str, p: impl rusqlite::Params) -> rusqlite::Result<usize> {
    conn.prepare_cached(sql)?.execute(p)
}

/// The open turns (one per session at most), oldest first, with their
/// sessions.
pub(crate) fn open_turns(conn: &Connection) -> Result<Vec<(i64, Option<String>)>> {
    let mut turns: Vec<(i64, Option<String>)> = conn
        .prepare_cached(OPEN_TURN)?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    turns.sort_unstable();
    Ok(turns)
}

/// The newest open turn, of any session.
pub(crate) fn open_turn(conn: &Connection) -> Result<Option<i64>> {
    Ok(open_turns(conn)?.last().map(|(id, _)| *id))
}

/// The open turn of `session` (`None`: the default session).
pub(crate) fn open_turn_of(conn: &Connection, session: Option<&str>) -> Result<Option<i64>> {
    Ok(open_turns(conn)?
        .into_iter()
        .find(|(_, s)| s.as_deref() == session)
        .map(|(id, _)| id))
}

/// The open turns with whether their session runs a tool call, for
/// attribution; the same partial index as [`open_turns`].
const OPEN_TURN_TOOLS: &str = "SELECT id, tools > 0 FROM turns WHERE status = 'open'";

/// The open turns, each with whether its session runs a tool call now.
pub(crate) fn open_turns_running_tools(conn: &Connection) -> Result<Vec<(i64, bool)>> {
    Ok(conn
        .prepare_cached(OPEN_TURN_TOOLS)?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?)
}

/// Counts a tool call of `session` in or out (`delta` +1 or -1, never
/// below 0) on its open turn; returns the calls now running, `None` when
/// the session has no open turn (a window outside a turn narrows nothing).
pub(crate) fn add_tool_call(
    conn: &Connection,
    session: Option<&str>,
    delta: i64,
) -> Result<Option<u32>> {
    Ok(conn
        .prepare_cached(
            "UPDATE turns SET tools = max(tools + ?2, 0) \
             WHERE status = 'open' AND session IS ?1 RETURNING tools",
        )?
        .query_row(params![session, delta], |r| r.get(0))
        .optional()?)
}

/// The tool calls recorded as running on `turn`.
pub(crate) fn tool_calls(conn: &Connection, turn: i64) -> Result<u32> {
    Ok(conn
        .prepare_cached("SELECT tools FROM turns WHERE id = ?1")?
        .query_row([turn], |r| r.get(0))?)
}

/// Records `n` tool calls as running on `turn` (a turn that continues
/// another keeps its session's window).
pub(crate) fn set_tool_calls(conn: &Connection, turn: i64, n: u32) -> Result<()> {
    conn.prepare_cached("UPDATE turns SET tools = ?2 WHERE id = ?1")?
        .execute(params![turn, n])?;
    Ok(())
}

/// Opens a turn and returns its id. Prepared once, as every statement of a
/// hook call is: parsing them was a tenth of the daemon's CPU in a
/// turn-start/turn-end loop.
pub(crate) fn insert_turn(conn: &Connection, meta: &TurnMeta, started_ns: i64) -> Result<i64> {
    conn.prepare_cached(
        "INSERT INTO turns (started_ns, label, agent, session, transcript, conversation, status) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        started_ns,
        meta.label,
        meta.agent,
        meta.session,
        meta.transcript,
        meta.conversation,
        TurnStatus::Open.as_str()
    ])?;
    Ok(conn.last_insert_rowid())
}

/// Records a change of `path` in the open `turn`: `pre`, the state
/// before it, unless the turn already has one (only the first change of a
/// path in a turn counts), and `post`, its state now, which the entry
/// carries until the turn closes. A `shared` change (seen while several
/// sessions had turns open) marks the entry shared, whenever it came.
pub(crate) fn record_change(
    conn: &Connection,
    turn: i64,
    path: &RelPath,
    pre: &State,
    post: &State,
    shared: bool,
) -> Result<()> {
    let (kind, mode, data, size) = crate::state::encode(pre);
    let (post_kind, post_mode, post_data, post_size) = crate::state::encode(post);
    conn.prepare_cached(
        "INSERT INTO turn_entries (turn, path, pre_kind, pre_mode, pre_data, pre_size, shared,
                                   post_kind, post_mode, post_data, post_size)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
         ON CONFLICT (turn, path) DO UPDATE SET shared = shared OR excluded.shared,
             post_kind = excluded.post_kind, post_mode = excluded.post_mode,
             post_data = excluded.post_data, post_size = excluded.post_size",
    )?
    .execute(params![
        turn,
        path.as_bytes(),
        kind,
        mode,
        data,
        size,
        shared,
        post_kind,
        post_mode,
        post_data,
        post_size
    ])?;
    Ok(())
}

/// Gives `path`'s entry in each of `turns` (open turns a change was not
/// recorded in) `post`, its state now, where it has one.
pub(crate) fn set_post(
    conn: &Connection,
    turns: &[i64],
    path: &RelPath,
    post: &State,
) -> Result<()> {
    if turns.is_empty() {
        return Ok(());
    }
    let (kind, mode, data, size) = crate::state::encode(post);
    let mut stmt = conn.prepare_cached(
        "UPDATE turn_entries SET post_kind = ?3, post_mode = ?4, post_data = ?5, post_size = ?6
         WHERE turn = ?1 AND path = ?2",
    )?;
    for &turn in turns {
        stmt.execute(params![turn, path.as_bytes(), kind, mode, data, size])?;
    }
    Ok(())
}

/// Every entry of `turn`, ordered by path. A row that does not decode (a
/// tampered database) is an error.
pub(crate) fn entries(conn: &Connection, turn: i64) -> Result<Vec<TurnEntry>> {
    let mut out = Vec::new();
    each_entry(conn, turn, |e| {
        out.push(e);
        Ok(())
    })?;
    Ok(out)
}

/// Calls `f` with each of `turn`'s entries, in path order, as they are
/// read: a caller that keeps a part of each holds no list of them all.
pub(crate) fn each_entry(
    conn: &Connection,
    turn: i64,
    f: impl FnMut(TurnEntry) -> Result<()>,
) -> Result<()> {
    let mut stmt =
        conn.prepare_cached(&format!("{ENTRY_COLUMNS} WHERE turn = ?1 ORDER BY path"))?;
    decode_entries(turn, stmt.query([turn])?, f)?;
    Ok(())
}

/// The columns [`decode_entries`] reads, from `turn_entries`.
pub(super) const ENTRY_COLUMNS: &str = "SELECT path, pre_kind, pre_mode, pre_data, pre_size,
        post_kind, post_mode, post_data, post_size, shared
    FROM turn_entries";

/// Calls `f` with each row of `turn`'s entries in `rows` (read with
/// [`ENTRY_COLUMNS`]). A row that does not decode (a tampered database)
/// is an error.
pub(super) fn decode_entries(
    turn: i64,
    mut rows: rusqlite::Rows<'_>,
    mut f: impl FnMut(TurnEntry) -> Result<()>,
) -> Result<()> {
    while let Some(r) = rows.next()? {
        let path = r.get::<_, Vec<u8>>(0)?;
        let pre = crate::state::from_row(r, 1)?;
        let post = match r.get::<_, Option<i64>>(5)? {
            Some(_) => Some(crate::state::from_row(r, 5)?),
            None => None,
        };
        let shared = r.get::<_, bool>(9)?;
        let path = crate::relpath::stored(path)?;
        let bad = || Error::Corrupt(format!("turn {turn}: undecodable entry for {path}"));
        let pre = pre.ok_or_else(bad)?;
        let post = match post {
            Some(p) => Some(p.ok_or_else(bad)?),
            None => None,
        };
        f(TurnEntry {
            path,
            pre,
            post,
            shared,
        })?;
    }
    Ok(())
}

/// One live turn's entry for a path, with who ran the turn.
pub(crate) struct PathTouch {
    pub turn: i64,
    pub started_ns: i64,
    pub meta: TurnMeta,
    pub pre: State,
    /// `None` while the turn is open.
    pub post: Option<State>,
}

/// The entries for `path` of every turn not rewound, oldest turn first
/// (served by the index `turn_entries_path`).
pub(crate) fn live_touches(conn: &Connection, path: &RelPath) -> Result<Vec<PathTouch>> {
    let mut stmt = conn.prepare_cached(
        "SELECT e.turn, t.started_ns, t.label, t.agent, t.session,
                e.pre_kind, e.pre_mode, e.pre_data, e.pre_size,
                e.post_kind, e.post_mode, e.post_data, e.post_size
         FROM turn_entries e JOIN turns t ON t.id = e.turn
         WHERE e.path = ?1 AND t.status <> ?2 ORDER BY e.turn",
    )?;
    let rows = stmt.query_map(
        params![path.as_bytes(), TurnStatus::Rewound.as_str()],
        |r| {
            let post = match r.get::<_, Option<i64>>(9)? {
                Some(_) => Some(crate::state::from_row(r, 9)?),
                None => None,
            };
            let meta = TurnMeta {
                label: r.get(2)?,
                agent: r.get(3)?,
                session: r.get(4)?,
                transcript: None,
                conversation: None,
            };
            Ok((
                r.get::<_, i64>(0)?,
                r.get(1)?,
                meta,
                crate::state::from_row(r, 5)?,
                post,
            ))
        },
    )?;
    let mut out = Vec::new();
    for row in rows {
        let (turn, started_ns, meta, pre, post) = row?;
        let bad = || Error::Corrupt(format!("turn {turn}: undecodable entry for {path}"));
        let pre = pre.ok_or_else(bad)?;
        let post = match post {
            Some(p) => Some(p.ok_or_else(bad)?),
            None => None,
        };
        out.push(PathTouch {
            turn,
            started_ns,
            meta,
            pre,
            post,
        });
    }
    Ok(out)
}

/// A turn's own row.
pub(crate) struct TurnRow {
    pub started_ns: i64,
    pub ended_ns: Option<i64>,
    pub meta: TurnMeta,
    pub status: TurnStatus,
}

pub(crate) fn turn(conn: &Connection, id: i64) -> Result<Option<TurnRow>> {
    Ok(conn
        .prepare_cached(
            "SELECT started_ns, ended_ns, label, agent, session, transcript, status, \
             conversation FROM turns WHERE id = ?1",
        )?
        .query_row([id], |r| {
            Ok(TurnRow {
                started_ns: r.get(0)?,
                ended_ns: r.get(1)?,
                meta: TurnMeta {
                    label: r.get(2)?,
                    agent: r.get(3)?,
                    session: r.get(4)?,
                    transcript: r.get(5)?,
                    conversation: r.get(7)?,
                },
                status: read_status(&r.get::<_, String>(6)?),
            })
        })
        .optional()?)
}

pub(crate) fn note_transcript(conn: &Connection, turn: i64, transcript: &str) -> Result<()> {
    exec(
        conn,
        "UPDATE turns SET transcript = ?2 WHERE id = ?1 AND transcript IS NULL",
        params![turn, transcript],
    )?;
    Ok(())
}

/// The ids of the newest `limit` turns, newest first.
pub(crate) fn newest_turns(
    conn: &Connection,
    limit: usize,
    session: Option<&str>,
) -> Result<Vec<i64>> {
    Ok(conn
        .prepare_cached(
            "SELECT id FROM turns WHERE ?2 IS NULL OR session = ?2 ORDER BY id DESC LIMIT ?1",
        )?
        .query_map(params![limit as i64, session], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?)
}

pub(crate) fn count_turns(conn: &Connection) -> Result<u64> {
    let n: i64 = conn.query_row("SELECT count(*) FROM turns", [], |r| r.get(0))?;
    Ok(n as u64)
}

/// The closed turns of `session` from `turn` on, oldest first: what a
/// rewind to `turn` undoes.
pub(crate) fn live_turns_from(
    conn: &Connection,
    turn: i64,
    session: Option<&str>,
) -> Result<Vec<i64>> {
    Ok(conn
        .prepare_cached(
            "SELECT id FROM turns WHERE id >= ?1 AND status = ?2 AND session IS ?3 ORDER BY id",
        )?
        .query_map(params![turn, TurnStatus::Closed.as_str(), session], |r| {
            r.get(0)
        })?
        .collect::<rusqlite::Result<_>>()?)
}

/// Each term of the `OR` is served by an index (the primary key,
/// `turns_open`, `turns_ended`): a project keeps thousands of turns.
const OTHER_SESSIONS_TURNS: &str = "SELECT id, session FROM turns
     WHERE status <> ?1 AND session IS NOT ?2
       AND (id > ?3 OR status = 'open' OR ended_ns > ?4)";

/// The live turns of sessions other than `session` that ran during or
/// after `turn` (started after it, still open, or ended after it started),
/// with their sessions: their changes are not a rewind of `turn`'s to undo.
pub(crate) fn other_sessions_turns(
    conn: &Connection,
    turn: i64,
    started_ns: i64,
    session: Option<&str>,
) -> Result<Vec<(i64, Option<String>)>> {
    Ok(conn
        .prepare_cached(OTHER_SESSIONS_TURNS)?
        .query_map(
            params![TurnStatus::Rewound.as_str(), session, turn, started_ns],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map(|mut turns| {
            turns.sort_unstable();
            turns
        })?)
}

/// Served by the partial index `turns_rewound`, as [`bring_back`]'s update.
const TURNS_REWOUND_BY: &str = "SELECT id FROM turns WHERE rewound_by = ?1 ORDER BY id";

/// The turns rewind `rewind` marked rewound, oldest first.
pub(crate) fn turns_rewound_by(conn: &Connection, rewind: i64) -> Result<Vec<i64>> {
    Ok(conn
        .prepare_cached(TURNS_REWOUND_BY)?
        .query_map([rewind], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?)
}

/// Marks `turns` rewound by rewind `by`.
pub(crate) fn mark_rewound(conn: &Connection, turns: &[i64], by: i64) -> Result<()> {
    for &t in turns {
        exec(
            conn,
            "UPDATE turns SET status = ?3, rewound_by = ?2 WHERE id = ?1",
            params![t, by, TurnStatus::Rewound.as_str()],
        )?;
    }
    Ok(())
}

/// Marks rewind `id` redone and its turns live again.
pub(crate) fn bring_back(conn: &Connection, id: i64) -> Result<()> {
    exec(
        conn,
        "UPDATE turns SET status = ?2, rewound_by = NULL WHERE rewound_by = ?1",
        params![id, TurnStatus::Closed.as_str()],
    )?;
    set_rewind_status(conn, id, RewindStatus::Redone)
}

// ---- the rewind journal ----

/// Journals a rewind (to `turn`; marking `marked` once applied; undoing
/// rewind `redoes`, for a redo) and its actions, pending, durably: before
/// any file is touched, with `before` run first in the same transaction
/// (it ends the open turns the rewind writes across). Returns its id.
#[allow(clippy::too_many_arguments)]
pub(crate) fn journal(
    conn: &mut Connection,
    turn: i64,
    actions: &ActionList,
    marked: &[i64],
    redoes: Option<i64>,
    note: &JournalNote,
    created_ns: i64,
    before: impl FnOnce(&Connection) -> Result<()>,
) -> Result<i64> {
    db::durably(conn, |tx| {
        before(tx)?;
        let id = insert_journal(tx, turn, actions, marked, redoes, None, created_ns)?;
        note_journal(tx, id, note)?;
        Ok(id)
    })
}

/// What a rewind or redo did beyond its actions, for `log`, `show` and
/// `rewinds` (migration 12).
#[derive(Debug, Default)]
pub(crate) struct JournalNote {
    /// Turns it undid in whole or in part (a redo: brought back).
    pub undone: Vec<i64>,
    /// Paths it was limited to (`--path`).
    pub scope: Vec<RelPath>,
    /// Paths of its turns it left as they were, with why.
    pub left: Vec<Skipped>,
}

fn json_text<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("ids, paths and strings serialize")
}

/// `rewinds.left` holds `[path, why]` pairs (migration 12's form).
fn left_pairs(left: &[Skipped]) -> Vec<(&RelPath, &str)> {
    left.iter().map(|s| (&s.path, s.reason.as_str())).collect()
}

fn note_journal(tx: &Connection, id: i64, note: &JournalNote) -> Result<()> {
    let optional = |empty: bool, text: String| (!empty).then_some(text);
    exec(
        tx,
        "UPDATE rewinds SET undone = ?2, scope = ?3, left = ?4 WHERE id = ?1",
        params![
            id,
            json_text(&note.undone),
            optional(note.scope.is_empty(), json_text(&note.scope)),
            optional(note.left.is_empty(), json_text(&left_pairs(&note.left))),
        ],
    )?;
    if !note.scope.is_empty() || !note.left.is_empty() {
        let mut link = tx.prepare_cached(
            "INSERT OR IGNORE INTO partly_rewound (turn, rewind) VALUES (?1, ?2)",
        )?;
        for &turn in &note.undone {
            link.execute([turn, id])?;
        }
    }
    Ok(())
}

/// The turns rewind `id` undid in whole or in part, as it noted them;
/// `None` for one journaled before migration 12 (or unreadable).
pub(crate) fn undone_turns(conn: &Connection, id: i64) -> Result<Option<Vec<i64>>> {
    let text: Option<String> = conn
        .query_row("SELECT undone FROM rewinds WHERE id = ?1", [id], |r| {
            r.get(0)
        })
        .optional()?
        .flatten();
    Ok(text.and_then(|t| serde_json::from_str(&t).ok()))
}

/// A journal row as `rewinds` lists it; a query's `WHERE` follows.
const REWIND_RECORD: &str =
    "SELECT r.id, r.created_ns, r.redoes, r.status, r.turn, r.turns, r.undone, r.scope,
            r.left, (SELECT count(*) FROM rewind_actions a WHERE a.rewind = r.id)
     FROM rewinds r";

fn rewind_record(r: &rusqlite::Row<'_>) -> rusqlite::Result<RewindRecord> {
    let status: RewindStatus = r.get(3)?;
    let marked: String = r.get(5)?;
    let undone: Option<String> = r.get(6)?;
    Ok(RewindRecord {
        id: r.get(0)?,
        created_ns: r.get(1)?,
        redoes: r.get(2)?,
        state: status.state(),
        turn: r.get(4)?,
        // Before migration 12 only the turns it marked were kept.
        turns: undone
            .and_then(|u| serde_json::from_str(&u).ok())
            .or_else(|| serde_json::from_str(&marked).ok())
            .unwrap_or_default(),
        scope: from_json_column(r.get(7)?),
        left: from_json_column::<(RelPath, String)>(r.get(8)?)
            .into_iter()
            .map(|(path, reason)| Skipped { path, reason })
            .collect(),
        changed: r.get::<_, i64>(9)? as u64,
    })
}

/// A JSON list column: empty when NULL (or unreadable).
fn from_json_column<T: serde::de::DeserializeOwned>(text: Option<String>) -> Vec<T> {
    text.and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

/// Rewinds and redos (not work-copy applies), newest first.
pub(crate) fn rewind_records(conn: &Connection, limit: usize) -> Result<Vec<RewindRecord>> {
    let sql = format!("{REWIND_RECORD} WHERE r.applies IS NULL ORDER BY r.id DESC LIMIT ?1");
    Ok(conn
        .prepare_cached(&sql)?
        .query_map([limit as i64], rewind_record)?
        .collect::<rusqlite::Result<_>>()?)
}

/// Which of [`REWIND_RECORD`]'s rows [`partial_rewinds`] reads.
const PARTIAL_OF_TURN: &str = "WHERE r.id IN (SELECT rewind FROM partly_rewound WHERE turn = ?2)
       AND r.status = ?1 AND r.redoes IS NULL AND r.applies IS NULL
       AND (r.scope IS NOT NULL OR r.left IS NOT NULL) ORDER BY r.id";

/// The applied rewinds (not redone) of `turn` that restored only some of
/// their turns' paths, oldest first.
pub(crate) fn partial_rewinds(conn: &Connection, turn: i64) -> Result<Vec<RewindRecord>> {
    let sql = format!("{REWIND_RECORD} {PARTIAL_OF_TURN}");
    Ok(conn
        .prepare_cached(&sql)?
        .query_map(params![RewindStatus::Applied, turn], rewind_record)?
        .collect::<rusqlite::Result<_>>()?)
}

/// Journals writing `actions` as a new turn made by `meta`, pending,
/// durably, with `before` run first in the same transaction (it stores the
/// content the actions write). The turn is closed but has no entries and no
/// end until the write is applied ([`record_applied_turn`]). Returns the
/// journal's id and the turn's.
pub(crate) fn journal_new_turn(
    conn: &mut Connection,
    meta: &TurnMeta,
    actions: &ActionList,
    created_ns: i64,
    before: impl FnOnce(&Connection) -> Result<()>,
) -> Result<(i64, i64)> {
    db::durably(conn, |tx| {
        before(tx)?;
        let turn = insert_turn(tx, meta, created_ns)?;
        exec(
            tx,
            "UPDATE turns SET status = ?2 WHERE id = ?1",
            params![turn, TurnStatus::Closed.as_str()],
        )?;
        let id = insert_journal(tx, turn, actions, &[], None, Some(turn), created_ns)?;
        Ok((id, turn))
    })
}

fn insert_journal(
    tx: &Connection,
    turn: i64,
    actions: &ActionList,
    marked: &[i64],
    redoes: Option<i64>,
    applies: Option<i64>,
    created_ns: i64,
) -> Result<i64> {
    exec(
        tx,
        "INSERT INTO rewinds (created_ns, turn, turns, status, redoes, applies)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            created_ns,
            turn,
            serde_json::to_string(marked).expect("a list of ints serializes"),
            RewindStatus::Pending,
            redoes,
            applies
        ],
    )?;
    let id = tx.last_insert_rowid();
    // Parsed once: a full-tree rewind journals thousands of rows.
    let mut insert = tx.prepare_cached(
        "INSERT INTO rewind_actions (rewind, seq, path, cur_kind, cur_mode, cur_data, cur_size,
         tgt_kind, tgt_mode, tgt_data, tgt_size) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    )?;
    actions.try_for_each(|seq, a| {
        let (ck, cm, cd, cs) = crate::state::encode(&a.current);
        let (tk, tm, td, ts) = crate::state::encode(&a.target);
        insert.execute(params![
            id,
            seq as i64,
            a.path.as_bytes(),
            ck,
            cm,
            cd,
            cs,
            tk,
            tm,
            td,
            ts
        ])?;
        Ok(())
    })?;
    Ok(id)
}

/// Gives the turn a journaled write made (`journal_new_turn`) its entries,
/// each action's state before and after, and its end. Call in the
/// transaction that records the write applied.
pub(crate) fn record_applied_turn(
    tx: &Connection,
    turn: i64,
    actions: &ActionList,
    ended_ns: i64,
) -> Result<()> {
    let mut insert = tx.prepare_cached(
        "INSERT INTO turn_entries (turn, path, pre_kind, pre_mode, pre_data, pre_size,
         post_kind, post_mode, post_data, post_size)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?;
    actions.try_for_each(|_, a| {
        let (pk, pm, pd, ps) = crate::state::encode(&a.current);
        let (tk, tm, td, ts) = crate::state::encode(&a.target);
        insert.execute(params![
            turn,
            a.path.as_bytes(),
            pk,
            pm,
            pd,
            ps,
            tk,
            tm,
            td,
            ts
        ])?;
        Ok(())
    })?;
    exec(
        tx,
        "UPDATE turns SET ended_ns = ?2 WHERE id = ?1",
        params![turn, ended_ns],
    )?;
    Ok(())
}

/// Removes the turn of a journaled write that was not applied (it has no
/// entries yet).
pub(crate) fn drop_unapplied_turn(conn: &Connection, turn: i64) -> Result<()> {
    beyond::drop_for(conn, "turn = ?1", turn)?;
    exec(conn, "DELETE FROM turns WHERE id = ?1", [turn])?;
    Ok(())
}

/// The actions of rewind `id`, in path order (SQLite sorts past its
/// cache on disk), as a list that goes to disk past its window.
pub(crate) fn actions(conn: &Connection, id: i64, spill: &Spill) -> Result<ActionList> {
    let mut stmt = conn.prepare_cached(
        "SELECT path, cur_kind, cur_mode, cur_data, cur_size, tgt_kind, tgt_mode, tgt_data, tgt_size
         FROM rewind_actions WHERE rewind = ?1 ORDER BY path",
    )?;
    let rows = stmt.query_map([id], |r| {
        Ok((
            r.get::<_, Vec<u8>>(0)?,
            crate::state::from_row(r, 1)?,
            crate::state::from_row(r, 5)?,
        ))
    })?;
    let mut out = Builder::new(spill);
    for row in rows {
        let (path, current, target) = row?;
        let path = crate::relpath::stored(path)?;
        let (Some(current), Some(target)) = (current, target) else {
            return Err(Error::Corrupt(format!(
                "rewind {id}: undecodable action for {path}"
            )));
        };
        out.push(Action {
            path,
            current,
            target,
        })?;
    }
    out.finish()
}

/// What journal entry `id` links to: the turns it marks rewound once
/// applied (none if the list does not decode), the rewind it redoes, and
/// the turn it writes (a work copy's apply).
pub(crate) struct JournalLinks {
    pub marked: Vec<i64>,
    pub redoes: Option<i64>,
    pub applies: Option<i64>,
}

pub(crate) fn rewind_links(conn: &Connection, id: i64) -> Result<JournalLinks> {
    let (marked, redoes, applies): (String, Option<i64>, Option<i64>) = conn.query_row(
        "SELECT turns, redoes, applies FROM rewinds WHERE id = ?1",
        [id],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    Ok(JournalLinks {
        marked: serde_json::from_str(&marked).unwrap_or_default(),
        redoes,
        applies,
    })
}

/// Served by the partial index `rewinds_unfinished`: every rewind and
/// redo asks first, and the journal keeps every rewind of the history.
/// The statuses are spelled out, as for [`OPEN_TURN`] (a test checks them).
const UNFINISHED_REWIND: &str = "SELECT id, status FROM rewinds
     WHERE status IN ('pending', 'redoing') ORDER BY id LIMIT 1";

/// The first turn an unsettled journal names (its turn, the turns it
/// undoes, all at or after it, and for an apply the turn it made), which
/// gc keeps; served by `rewinds_unfinished` as [`UNFINISHED_REWIND`].
pub(crate) const UNSETTLED_FIRST_TURN: &str =
    "SELECT min(min(turn, coalesce(applies, turn))) FROM rewinds
     WHERE status IN ('pending', 'redoing')";

/// The oldest unfinished rewind: its id and status.
pub(crate) fn unfinished_rewind(conn: &Connection) -> Result<Option<(i64, RewindStatus)>> {
    Ok(conn
        .prepare_cached(UNFINISHED_REWIND)?
        .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?)
}

/// The newest applied rewind that is not a redo (nor an apply): its id and
/// turn.
pub(crate) fn last_applied_rewind(conn: &Connection) -> Result<Option<(i64, i64)>> {
    Ok(conn
        .query_row(
            "SELECT id, turn FROM rewinds
             WHERE status = ?1 AND redoes IS NULL AND applies IS NULL
             ORDER BY id DESC LIMIT 1",
            [RewindStatus::Applied],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?)
}

pub(crate) fn set_rewind_status(conn: &Connection, id: i64, status: RewindStatus) -> Result<()> {
    exec(
        conn,
        "UPDATE rewinds SET status = ?2 WHERE id = ?1",
        params![id, status],
    )?;
    Ok(())
}

// ---- retention ----

/// Drops turn `last` and every older one with their entries, and the
/// rewinds to them, except a rewind whose turns outlive it (they would stay
/// rewound for good: it stays as long as they do, so they can be redone).
/// Returns how many turns were dropped.
pub(crate) fn drop_turns_through(conn: &Connection, last: i64) -> Result<u64> {
    let dropped = "SELECT id FROM rewinds WHERE turn <= ?1 AND id NOT IN
         (SELECT rewound_by FROM turns WHERE id > ?1 AND rewound_by IS NOT NULL)";
    exec(
        conn,
        &format!("DELETE FROM rewind_actions WHERE rewind IN ({dropped})"),
        [last],
    )?;
    exec(
        conn,
        &format!("DELETE FROM partly_rewound WHERE turn <= ?1 OR rewind IN ({dropped})"),
        [last],
    )?;
    exec(
        conn,
        &format!("DELETE FROM rewinds WHERE id IN ({dropped})"),
        [last],
    )?;
    exec(conn, "DELETE FROM turn_entries WHERE turn <= ?1", [last])?;
    beyond::drop_for(conn, "turn <= ?1", last)?;
    Ok(exec(conn, "DELETE FROM turns WHERE id <= ?1", [last])? as u64)
}

/// Keeps (for a gc, see [`crate::store::start_keep`]) every blob a turn
/// or the rewind journal names.
pub(crate) fn keep_named(conn: &Connection) -> Result<()> {
    for select in [
        "SELECT pre_data FROM turn_entries WHERE pre_kind = 1",
        "SELECT post_data FROM turn_entries WHERE post_kind = 1",
        "SELECT cur_data FROM rewind_actions WHERE cur_kind = 1",
        "SELECT tgt_data FROM rewind_actions WHERE tgt_kind = 1",
    ] {
        crate::store::keep_selected(conn, select)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::query_plan;

    #[test]
    fn open_turn_lookup_does_not_scan_every_turn() {
        let plan = query_plan(OPEN_TURN, []);
        assert!(plan.contains("USING INDEX turns_open"), "{plan}");
    }

    #[test]
    fn other_sessions_turns_lookup_does_not_scan_every_turn() {
        let plan = query_plan(OTHER_SESSIONS_TURNS, [1i64, 2, 3, 4]);
        assert!(plan.contains("MULTI-INDEX OR"), "{plan}");
        assert!(!plan.contains("SCAN turns"), "{plan}");
    }

    /// Every turn-end reads its turn's partial rewinds: by the link
    /// table, not a scan of a journal that grows with the history.
    #[test]
    fn partial_rewinds_lookup_does_not_scan_every_rewind() {
        let sql = format!("{REWIND_RECORD} {PARTIAL_OF_TURN}");
        let plan = query_plan(&sql, params![RewindStatus::Applied, 1i64]);
        assert!(plan.contains("SEARCH partly_rewound"), "{plan}");
        assert!(!plan.contains("SCAN r"), "{plan}");
    }

    /// A redo finds the turns its rewind marked by index, not by a scan
    /// of every turn.
    #[test]
    fn the_turns_a_rewind_marked_are_found_by_index() {
        let plan = query_plan(TURNS_REWOUND_BY, [1]);
        assert!(
            plan.contains("INDEX turns_rewound (rewound_by=?)"),
            "{plan}"
        );
    }

    /// `status`'s count of partly captured turns reads the few skipped
    /// entries by index, not every entry of the history.
    #[test]
    fn integrity_counts_read_skipped_entries_by_index() {
        let plan = query_plan(beyond::INTEGRITY_COUNTS, [RESCANNED]);
        assert!(plan.contains("INDEX turn_entries_skipped"), "{plan}");
        assert!(
            !plan.split("; ").any(|s| s == "SCAN turn_entries"),
            "{plan}"
        );
    }

    /// Recovery's look for an unfinished rewind and gc's for the turns an
    /// unsettled one holds use their partial index, whose statuses are the
    /// enum's unfinished ones.
    #[test]
    fn the_unfinished_rewind_lookups_use_their_index_and_name_every_unfinished_status() {
        for sql in [UNFINISHED_REWIND, UNSETTLED_FIRST_TURN] {
            let plan = query_plan(sql, []);
            assert!(plan.contains("USING INDEX rewinds_unfinished"), "{plan}");
            let all = RewindStatus::ALL.into_iter();
            let named: Vec<_> = all
                .clone()
                .filter(|s| sql.contains(&format!("'{}'", s.as_str())))
                .collect();
            let unfinished: Vec<_> = all.filter(|s| s.is_unfinished()).collect();
            assert_eq!(named, unfinished, "{sql}");
        }
    }

    /// The one status spelled in SQL (for the partial index) is the enum's.
    #[test]
    fn the_open_turn_query_names_the_open_status() {
        let open = format!("status = '{}'", TurnStatus::Open.as_str());
        assert!(OPEN_TURN.ends_with(&open), "{OPEN_TURN}");
        assert!(OPEN_TURN_TOOLS.ends_with(&open), "{OPEN_TURN_TOOLS}");
    }

    #[test]
    fn statuses_read_back_as_written() {
        for t in TurnStatus::ALL {
            assert_eq!(TurnStatus::parse(t.as_str()), Some(t));
        }
        for r in RewindStatus::ALL {
            assert_eq!(RewindStatus::parse(r.as_str()), Some(r));
        }
        assert_eq!(TurnStatus::parse("half-done"), None);
        assert_eq!(RewindStatus::parse("half-done"), None);
    }
}
