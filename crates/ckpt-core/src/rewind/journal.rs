//! A rewind's journal entry: written before any file is touched, and the
//! outcome recorded once applied or undone. The rows are written through
//! `history`.

use rusqlite::Connection;

use super::Side;
use crate::error::Result;
use crate::history::{self, RewindStatus};
use crate::model::RewindPlan;
use crate::project::now_ns;

/// Writes the plan to the journal, durably, before any file is touched.
/// `marked`: the turns it rewinds; `redoes`: the rewind a redo undoes.
pub(super) fn write(
    conn: &mut Connection,
    plan: &RewindPlan,
    marked: &[i64],
    redoes: Option<i64>,
) -> Result<i64> {
    history::journal(conn, plan.turn, &plan.actions, marked, redoes, now_ns())
}

/// Records that `side` of rewind `id` was applied: a rewind marks its
/// turns, a redo brings back the turns of the rewind it undoes. Call in
/// the transaction that records what was written.
pub(super) fn applied(tx: &Connection, id: i64, side: Side) -> Result<()> {
    let (marked, redoes) = history::rewind_links(tx, id)?;
    match (side, redoes) {
        (Side::Target, None) => {
            history::mark_rewound(tx, &marked, id)?;
            history::set_rewind_status(tx, id, RewindStatus::Applied)
        }
        (Side::Target, Some(undone)) => {
            history::bring_back(tx, undone)?;
            history::set_rewind_status(tx, id, RewindStatus::Applied)
        }
        // A redo journaled by an older ckpt: the rewind's own journal,
        // applied backwards.
        (Side::Current, _) => history::bring_back(tx, id),
    }
}

/// Records that applying `side` of rewind `id` failed and was undone.
pub(super) fn failed(conn: &Connection, id: i64, side: Side) -> Result<()> {
    let status = match side {
        Side::Target => RewindStatus::Failed,
        // A legacy redo that failed: the rewind stays applied.
        Side::Current => RewindStatus::Applied,
    };
    history::set_rewind_status(conn, id, status)
}
