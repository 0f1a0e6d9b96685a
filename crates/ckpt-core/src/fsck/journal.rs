//! fsck of the history: turns, their entries, the rewind journal and its
//! actions. Statuses are the ones `turns.rs` and `rewind.rs` write.

use super::{lossy, Checker, FindingKind};
use crate::error::Result;
use crate::state::State;

const TURN_STATUSES: [&str; 3] = ["open", "closed", "rewound"];

/// `pending` and `redoing` are unfinished (recovery finishes them at the
/// next start); `failed` was rolled back.
const REWIND_STATUSES: [&str; 5] = ["pending", "applied", "redoing", "redone", "failed"];

/// A rewind whose turns stay marked rewound: applied, or being redone.
const MARKING_STATUSES: [&str; 2] = ["applied", "redoing"];

/// Known statuses; at most one open turn; a turn is marked rewound exactly
/// when a rewind that marks turns names it.
pub(super) fn turns(c: &mut Checker) -> Result<()> {
    let mut stmt = c.conn.prepare(
        "SELECT t.id, t.status, t.rewound_by, r.status
         FROM turns t LEFT JOIN rewinds r ON r.id = t.rewound_by ORDER BY t.id",
    )?;
    let mut rows = stmt.query([])?;
    let mut open = Vec::new();
    while let Some(r) = rows.next()? {
        let (id, status): (i64, String) = (r.get(0)?, r.get(1)?);
        let (by, by_status): (Option<i64>, Option<String>) = (r.get(2)?, r.get(3)?);
        let subject = format!("turn {id}");
        if !TURN_STATUSES.contains(&status.as_str()) {
            c.problem(
                FindingKind::BadTurn,
                subject,
                format!("unknown status {status:?}"),
            );
            continue;
        }
        if status == "open" {
            open.push(id);
        }
        let why = match (status == "rewound", by, by_status) {
            (true, None, _) => Some("it is marked rewound, by no rewind".to_string()),
            (true, Some(by), None) => Some(format!(
                "it is marked rewound by rewind {by}, which is not in the journal"
            )),
            (true, Some(by), Some(s)) if !MARKING_STATUSES.contains(&s.as_str()) => Some(format!(
                "it is marked rewound by rewind {by}, whose status is {s:?}"
            )),
            (false, Some(by), _) => Some(format!(
                "it is {status} but names rewind {by} as having rewound it"
            )),
            _ => None,
        };
        if let Some(why) = why {
            c.problem(FindingKind::BadTurn, subject, why);
        }
    }
    if open.len() > 1 {
        c.problem(
            FindingKind::BadTurn,
            format!("turns {open:?}"),
            "more than one turn is open".into(),
        );
    }
    Ok(())
}

/// Every entry belongs to a turn, has a valid path, and its pre- and
/// post-images decode and name stored blobs (only an open turn's entries
/// lack a post-image: `turn_end` records them).
pub(super) fn turn_entries(c: &mut Checker) -> Result<()> {
    let mut stmt = c.conn.prepare(
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
        c.report.checked.turn_entries += 1;
        let (turn, path): (i64, Vec<u8>) = (r.get(0)?, r.get(1)?);
        let subject = format!("turn {turn} {}", lossy(&path));
        c.row_path(&subject, &path);
        let pre = State::from_row(r, 2)?;
        c.named_state(&subject, "pre-image", pre.as_ref(), r.get(10)?);
        let turn_status: Option<String> = r.get(12)?;
        if r.get::<_, Option<i64>>(6)?.is_some() {
            let post = State::from_row(r, 6)?;
            c.named_state(&subject, "post-image", post.as_ref(), r.get(11)?);
        } else if turn_status.as_deref().is_some_and(|s| s != "open") {
            c.problem(
                FindingKind::BadTurn,
                subject.clone(),
                "its turn has ended but it has no post-image".into(),
            );
        }
        if turn_status.is_none() {
            c.problem(
                FindingKind::BadTurn,
                subject,
                format!("an entry of turn {turn}, which is not there"),
            );
        }
    }
    Ok(())
}

/// Known statuses, a turn list that decodes, and at most one rewind left
/// unfinished.
pub(super) fn rewinds(c: &mut Checker) -> Result<()> {
    let mut stmt = c.conn.prepare(
        "SELECT r.id, r.turns, r.status, r.redoes, u.status
             FROM rewinds r LEFT JOIN rewinds u ON u.id = r.redoes ORDER BY r.id",
    )?;
    let mut rows = stmt.query([])?;
    let mut unfinished = Vec::new();
    while let Some(r) = rows.next()? {
        let (id, turns, status): (i64, String, String) = (r.get(0)?, r.get(1)?, r.get(2)?);
        let (redoes, undone): (Option<i64>, Option<String>) = (r.get(3)?, r.get(4)?);
        let subject = format!("rewind {id}");
        // An applied redo left the rewind it undid redone.
        match (redoes, undone.as_deref(), status.as_str()) {
            (Some(u), None, _) => c.problem(
                FindingKind::BadJournal,
                subject.clone(),
                format!("it redoes rewind {u}, which is not there"),
            ),
            (Some(u), Some(s), "applied") if s != "redone" => c.problem(
                FindingKind::BadJournal,
                subject.clone(),
                format!("an applied redo of rewind {u}, whose status is {s:?}"),
            ),
            _ => {}
        }
        if !REWIND_STATUSES.contains(&status.as_str()) {
            c.problem(
                FindingKind::BadJournal,
                subject.clone(),
                format!("unknown status {status:?}"),
            );
        }
        if status == "pending" || status == "redoing" {
            unfinished.push(id);
        }
        if let Err(e) = serde_json::from_str::<Vec<i64>>(&turns) {
            c.problem(
                FindingKind::UndecodableRow,
                subject,
                format!("its list of turns {turns:?} does not decode: {e}"),
            );
        }
    }
    if unfinished.len() > 1 {
        c.problem(
            FindingKind::BadJournal,
            format!("rewinds {unfinished:?}"),
            "more than one rewind is unfinished (pending or redoing); recovery finishes one".into(),
        );
    }
    Ok(())
}

/// Every action belongs to a rewind, has a valid path, and its current and
/// target states decode and name stored blobs.
pub(super) fn actions(c: &mut Checker) -> Result<()> {
    let mut stmt = c.conn.prepare(
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
        c.report.checked.rewind_actions += 1;
        let (rewind, seq, path): (i64, i64, Vec<u8>) = (r.get(0)?, r.get(1)?, r.get(2)?);
        let subject = format!("rewind {rewind} action {seq} {}", lossy(&path));
        c.row_path(&subject, &path);
        let cur = State::from_row(r, 3)?;
        c.named_state(&subject, "current state", cur.as_ref(), r.get(11)?);
        let tgt = State::from_row(r, 7)?;
        c.named_state(&subject, "target state", tgt.as_ref(), r.get(12)?);
        if r.get(13)? {
            c.problem(
                FindingKind::BadJournal,
                subject,
                format!("an action of rewind {rewind}, which is not in the journal"),
            );
        }
    }
    Ok(())
}
