//! Turns: opening and closing them, their entries (pre- and post-images),
//! and listing them.

use rusqlite::{params, Connection, OptionalExtension};

use crate::cache;
use crate::error::{Error, Result};
use crate::model::{ChangeKind, Counts, TurnDetail, TurnEntry, TurnInfo, TurnMeta, TurnStatus};
use crate::project::{now_ns, Project};
use crate::relpath::RelPath;
use crate::state::State;

/// Served by the partial index `turns_open`: a project keeps thousands of
/// turns, and every turn boundary and capture batch asks.
const OPEN_TURN: &str = "SELECT id FROM turns WHERE status = 'open'";

pub(crate) fn open_turn(conn: &Connection) -> Result<Option<i64>> {
    Ok(conn
        .prepare_cached(OPEN_TURN)?
        .query_row([], |r| r.get(0))
        .optional()?)
}

/// Records `pre` as the pre-image of `path` in `turn`, unless the turn
/// already has one: only the first change of a path in a turn counts.
pub(crate) fn record_pre(conn: &Connection, turn: i64, path: &RelPath, pre: &State) -> Result<()> {
    let (kind, mode, data, size) = pre.encode();
    conn.prepare_cached(
        "INSERT OR IGNORE INTO turn_entries (turn, path, pre_kind, pre_mode, pre_data, pre_size)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![turn, path.as_bytes(), kind, mode, data, size])?;
    Ok(())
}

fn status_of(s: &str) -> TurnStatus {
    match s {
        "open" => TurnStatus::Open,
        "rewound" => TurnStatus::Rewound,
        _ => TurnStatus::Closed,
    }
}

/// Every entry of `turn`, ordered by path. Rows whose path fails validation
/// (a tampered database) are returned as errors by the caller's use.
pub(crate) fn entries(conn: &Connection, turn: i64) -> Result<Vec<TurnEntry>> {
    let mut stmt = conn.prepare_cached(
        "SELECT path, pre_kind, pre_mode, pre_data, pre_size, post_kind, post_mode, post_data, post_size
         FROM turn_entries WHERE turn = ?1 ORDER BY path",
    )?;
    let rows = stmt.query_map([turn], |r| {
        let post = match r.get::<_, Option<i64>>(5)? {
            Some(_) => Some(State::from_row(r, 5)?),
            None => None,
        };
        Ok((r.get::<_, Vec<u8>>(0)?, State::from_row(r, 1)?, post))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (path, pre, post) = row?;
        let path = RelPath::new(path)?;
        let bad = || Error::Invalid(format!("turn {turn}: undecodable entry for {path}"));
        let pre = pre.ok_or_else(bad)?;
        let post = match post {
            Some(p) => Some(p.ok_or_else(bad)?),
            None => None,
        };
        out.push(TurnEntry { path, pre, post });
    }
    Ok(out)
}

fn counts(entries: &[TurnEntry], current: impl Fn(&RelPath) -> Result<State>) -> Result<Counts> {
    let mut c = Counts::default();
    for e in entries {
        let post = match &e.post {
            Some(p) => p.clone(),
            None => current(&e.path)?,
        };
        if post == e.pre {
            continue;
        }
        match ChangeKind::between(&e.pre, &post) {
            ChangeKind::Added => c.added += 1,
            ChangeKind::Modified => c.modified += 1,
            ChangeKind::Deleted => c.deleted += 1,
            ChangeKind::Skipped => c.skipped += 1,
        }
    }
    Ok(c)
}

impl Project {
    /// Opens a new turn, closing an open one first. Call after a barrier.
    pub fn turn_start(&mut self, meta: TurnMeta) -> Result<i64> {
        if self.open_turn()?.is_some() {
            self.turn_end()?;
        }
        // Statements of every hook call are prepared once (parsing them
        // was a tenth of the daemon's CPU in a turn-start/turn-end loop).
        self.conn
            .prepare_cached(
                "INSERT INTO turns (started_ns, label, agent, session, status) VALUES (?1, ?2, ?3, ?4, 'open')",
            )?
            .execute(params![now_ns(), meta.label, meta.agent, meta.session])?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Closes the open turn, recording each touched path's post-image (its
    /// state now). Paths that ended as they began are dropped. Call after a
    /// barrier.
    pub fn turn_end(&mut self) -> Result<TurnDetail> {
        let turn = self.open_turn()?.ok_or(Error::NoOpenTurn)?;
        let tx = self.conn.transaction()?;
        {
            // Prepared once: a turn that touched the whole tree has one
            // entry per file.
            let mut drop_entry =
                tx.prepare_cached("DELETE FROM turn_entries WHERE turn = ?1 AND path = ?2")?;
            let mut set_post = tx.prepare_cached(
                "UPDATE turn_entries SET post_kind = ?3, post_mode = ?4, post_data = ?5, post_size = ?6
                 WHERE turn = ?1 AND path = ?2",
            )?;
            for e in entries(&tx, turn)? {
                let post = cache::state(&tx, &e.path)?;
                if post == e.pre {
                    drop_entry.execute(params![turn, e.path.as_bytes()])?;
                    continue;
                }
                let (kind, mode, data, size) = post.encode();
                set_post.execute(params![turn, e.path.as_bytes(), kind, mode, data, size])?;
            }
        }
        tx.prepare_cached("UPDATE turns SET status = 'closed', ended_ns = ?2 WHERE id = ?1")?
            .execute(params![turn, now_ns()])?;
        tx.commit()?;
        self.show(turn)
    }

    pub fn open_turn(&self) -> Result<Option<i64>> {
        open_turn(&self.conn)
    }

    /// Turns, newest first.
    pub fn log(&self, limit: usize) -> Result<Vec<TurnInfo>> {
        let ids: Vec<i64> = self
            .conn
            .prepare_cached("SELECT id FROM turns ORDER BY id DESC LIMIT ?1")?
            .query_map([limit as i64], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        ids.into_iter().map(|id| Ok(self.show(id)?.info)).collect()
    }

    /// A turn with its entries. While the turn is open, `post` is `None` and
    /// the counts compare with the current state.
    pub fn show(&self, turn: i64) -> Result<TurnDetail> {
        let row = self
            .conn
            .prepare_cached(
                "SELECT started_ns, ended_ns, label, agent, session, status FROM turns WHERE id = ?1",
            )?
            .query_row(
                [turn],
                |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, Option<i64>>(1)?,
                        TurnMeta {
                            label: r.get(2)?,
                            agent: r.get(3)?,
                            session: r.get(4)?,
                        },
                        r.get::<_, String>(5)?,
                    ))
                },
            )
            .optional()?
            .ok_or(Error::UnknownTurn(turn))?;
        let entries = entries(&self.conn, turn)?;
        let counts = counts(&entries, |p| cache::state(&self.conn, p))?;
        Ok(TurnDetail {
            info: TurnInfo {
                id: turn,
                started_ns: row.0,
                ended_ns: row.1,
                meta: row.2,
                status: status_of(&row.3),
                counts,
            },
            entries,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_turn_lookup_does_not_scan_every_turn() {
        let dir = tempfile::tempdir().unwrap();
        let conn = crate::db::open(&dir.path().join("db")).unwrap();
        let plan: String = conn
            .query_row(&format!("EXPLAIN QUERY PLAN {OPEN_TURN}"), [], |r| r.get(3))
            .unwrap();
        assert!(plan.contains("USING COVERING INDEX turns_open"), "{plan}");
    }
}
