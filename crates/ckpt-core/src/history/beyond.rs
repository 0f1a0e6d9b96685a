//! What the history keeps about a turn beyond its entries: the shell
//! commands its tool calls ran, and what went wrong with its capture
//! while it was open (migration 15).

use rusqlite::{params, Connection};

use crate::error::Result;

/// How `turn_capture.kind` spells a rescan after lost events (the other
/// kinds are `GapKind`'s).
pub(crate) const RESCANNED: &str = "rescanned";

/// Records `command` as run by `session`'s open turn; false when the
/// session has no open turn (a tool call outside a turn belongs to none).
pub(crate) fn add_command(
    conn: &Connection,
    session: Option<&str>,
    command: &str,
    at_ns: i64,
) -> Result<bool> {
    let n = conn
        .prepare_cached(
            "INSERT INTO turn_commands (turn, seq, command, at_ns)
             SELECT t.id, (SELECT count(*) FROM turn_commands c WHERE c.turn = t.id), ?2, ?3
             FROM turns t WHERE t.status = 'open' AND t.session IS ?1",
        )?
        .execute(params![session, command, at_ns])?;
    Ok(n > 0)
}

/// The commands `turn` ran, oldest first.
pub(crate) fn commands(conn: &Connection, turn: i64) -> Result<Vec<String>> {
    Ok(conn
        .prepare_cached("SELECT command FROM turn_commands WHERE turn = ?1 ORDER BY seq")?
        .query_map([turn], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?)
}

/// Notes `kind` (with its latest `detail`) on every open turn; returns
/// how many turns it was noted on.
pub(crate) fn note_capture(conn: &Connection, kind: &str, detail: &str) -> Result<usize> {
    Ok(conn
        .prepare_cached(
            "INSERT INTO turn_capture (turn, kind, detail, times)
             SELECT id, ?1, ?2, 1 FROM turns WHERE status = 'open'
             ON CONFLICT (turn, kind) DO UPDATE SET detail = excluded.detail, times = times + 1",
        )?
        .execute(params![kind, detail])?)
}

/// What was noted on `turn`: (kind, detail, times).
pub(crate) fn capture_notes(conn: &Connection, turn: i64) -> Result<Vec<(String, String, u32)>> {
    Ok(conn
        .prepare_cached(
            "SELECT kind, detail, times FROM turn_capture WHERE turn = ?1 ORDER BY kind",
        )?
        .query_map([turn], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<rusqlite::Result<_>>()?)
}

/// How many turns' capture is partial, and how many more were complete
/// after a rescan: `status`'s counts, without reading every turn. A path
/// skipped on either side of a turn (state kind 4, `state.rs`) is a gap,
/// found by the partial index `turn_entries_skipped` (its `WHERE` spelled
/// as the index's).
pub(super) const INTEGRITY_COUNTS: &str = "WITH partial AS (
         SELECT turn FROM turn_capture WHERE kind != ?1
         UNION SELECT turn FROM turn_entries WHERE pre_kind = 4 OR post_kind = 4)
     SELECT (SELECT count(*) FROM partial),
            (SELECT count(*) FROM turn_capture
             WHERE kind = ?1 AND turn NOT IN (SELECT turn FROM partial))";

/// [`INTEGRITY_COUNTS`]: partial turns, and complete after a rescan.
pub(crate) fn integrity_counts(conn: &Connection) -> Result<(u64, u64)> {
    Ok(conn.query_row(INTEGRITY_COUNTS, [RESCANNED], |r| {
        Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64))
    })?)
}

/// Drops what is kept about the turns `WHERE` selects (`?1` bound to `arg`).
pub(crate) fn drop_for(conn: &Connection, which: &str, arg: i64) -> Result<()> {
    for table in ["turn_commands", "turn_capture"] {
        conn.execute(&format!("DELETE FROM {table} WHERE {which}"), [arg])?;
    }
    Ok(())
}
