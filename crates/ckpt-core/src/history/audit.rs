//! What fsck reads of the history tables: rows as stored, statuses
//! unparsed and states undecoded, so that it can report what ckpt would
//! refuse to read.

use rusqlite::Connection;

use crate::error::Result;
use crate::state::State;

/// A turn as fsck sees it: statuses as stored, unparsed.
pub(crate) struct TurnAudit {
    pub id: i64,
    pub status: String,
    pub rewound_by: Option<i64>,
    /// The status of the rewind `rewound_by` names, if it is there.
    pub rewinder_status: Option<String>,
    /// `None`: the default session.
    pub session: Option<String>,
    /// Tool calls recorded as running (only an open turn's may be non-zero).
    pub tools: i64,
}

pub(crate) fn audit_turns(conn: &Connection, mut f: impl FnMut(TurnAudit)) -> Result<()> {
    let mut stmt = conn.prepare(
        "SELECT t.id, t.status, t.rewound_by, r.status, t.session, t.tools
         FROM turns t LEFT JOIN rewinds r ON r.id = t.rewound_by ORDER BY t.id",
    )?;
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        f(TurnAudit {
            id: r.get(0)?,
            status: r.get(1)?,
            rewound_by: r.get(2)?,
            rewinder_status: r.get(3)?,
            session: r.get(4)?,
            tools: r.get(5)?,
        });
    }
    Ok(())
}

/// A turn entry as fsck sees it. A state is `None` when it does not
/// decode; `*_missing`: it names a blob the store lacks.
pub(crate) struct EntryAudit {
    pub turn: i64,
    pub path: Vec<u8>,
    pub pre: Option<State>,
    pub pre_missing: bool,
    /// `None` while the entry has no post-image.
    pub post: Option<(Option<State>, bool)>,
    /// `None` when its turn is not there.
    pub turn_status: Option<String>,
}

pub(crate) fn audit_entries(conn: &Connection, mut f: impl FnMut(EntryAudit)) -> Result<()> {
    let mut stmt = conn.prepare(
        "SELECT e.turn, e.path,
                e.pre_kind, e.pre_mode, e.pre_data, e.pre_size,
                e.post_kind, e.post_mode, e.post_data, e.post_size,
                e.pre_kind = 1 AND NOT EXISTS (SELECT 1 FROM blobs b WHERE b.hash = e.pre_data),
                coalesce(e.post_kind = 1
                    AND NOT EXISTS (SELECT 1 FROM blobs b WHERE b.hash = e.post_data), 0),
                (SELECT t.status FROM turns t WHERE t.id = e.turn)
         FROM turn_entries e",
    )?;
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        let post = match r.get::<_, Option<i64>>(6)? {
            Some(_) => Some((crate::state::from_row(r, 6)?, r.get(11)?)),
            None => None,
        };
        f(EntryAudit {
            turn: r.get(0)?,
            path: r.get(1)?,
            pre: crate::state::from_row(r, 2)?,
            pre_missing: r.get(10)?,
            post,
            turn_status: r.get(12)?,
        });
    }
    Ok(())
}

/// A rewind as fsck sees it: statuses and its list of turns as stored.
pub(crate) struct RewindAudit {
    pub id: i64,
    pub turns: String,
    pub status: String,
    pub redoes: Option<i64>,
    /// The status of the rewind `redoes` names, if it is there.
    pub undone_status: Option<String>,
}

pub(crate) fn audit_rewinds(conn: &Connection, mut f: impl FnMut(RewindAudit)) -> Result<()> {
    let mut stmt = conn.prepare(
        "SELECT r.id, r.turns, r.status, r.redoes, u.status
             FROM rewinds r LEFT JOIN rewinds u ON u.id = r.redoes ORDER BY r.id",
    )?;
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        f(RewindAudit {
            id: r.get(0)?,
            turns: r.get(1)?,
            status: r.get(2)?,
            redoes: r.get(3)?,
            undone_status: r.get(4)?,
        });
    }
    Ok(())
}

/// A rewind action as fsck sees it (states as in `EntryAudit`).
pub(crate) struct ActionAudit {
    pub rewind: i64,
    pub seq: i64,
    pub path: Vec<u8>,
    pub current: Option<State>,
    pub current_missing: bool,
    pub target: Option<State>,
    pub target_missing: bool,
    /// Its rewind is not in the journal.
    pub orphan: bool,
}

pub(crate) fn audit_actions(conn: &Connection, mut f: impl FnMut(ActionAudit)) -> Result<()> {
    let mut stmt = conn.prepare(
        "SELECT a.rewind, a.seq, a.path,
                a.cur_kind, a.cur_mode, a.cur_data, a.cur_size,
                a.tgt_kind, a.tgt_mode, a.tgt_data, a.tgt_size,
                a.cur_kind = 1 AND NOT EXISTS (SELECT 1 FROM blobs b WHERE b.hash = a.cur_data),
                a.tgt_kind = 1 AND NOT EXISTS (SELECT 1 FROM blobs b WHERE b.hash = a.tgt_data),
                NOT EXISTS (SELECT 1 FROM rewinds r WHERE r.id = a.rewind)
         FROM rewind_actions a",
    )?;
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        f(ActionAudit {
            rewind: r.get(0)?,
            seq: r.get(1)?,
            path: r.get(2)?,
            current: crate::state::from_row(r, 3)?,
            current_missing: r.get(11)?,
            target: crate::state::from_row(r, 7)?,
            target_missing: r.get(12)?,
            orphan: r.get(13)?,
        });
    }
    Ok(())
}
