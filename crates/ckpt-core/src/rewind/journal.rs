//! A rewind's journal entry, and how its outcome is recorded. Journaled
//! before any file is touched; read back only by recovery, when the process
//! that wrote it died (a fresh rewind applies from its plan's list). The
//! rows are written through `history`.

use rusqlite::Connection;

use super::plan::Planned;
use super::Side;
use crate::action_list::{ActionList, Spill};
use crate::error::Result;
use crate::history::{self, JournalNote, RewindStatus};
use crate::model::TurnMeta;
use ckpt_types::now_ns;

/// One journaled rewind, redo, or write of a new turn.
pub(super) struct Journaled {
    pub id: i64,
    /// The turns it marks rewound once applied.
    pub marked: Vec<i64>,
    /// For a redo: the rewind it undoes.
    pub redoes: Option<i64>,
    /// For a write of another tree's content: the turn it makes.
    pub applies: Option<i64>,
}

impl Journaled {
    /// Journals `plan`, pending, durably, ending the open turns it lists
    /// as continued and opening the turns that continue them (their ids
    /// are filled in) in the same transaction: a crash after it leaves a
    /// rewind to finish and every such session with its open turn.
    pub fn write(
        conn: &mut Connection,
        planned: &mut Planned,
        marked: Vec<i64>,
        redoes: Option<i64>,
        note: &JournalNote,
    ) -> Result<Journaled> {
        let continued = &mut planned.plan.continued;
        let id = history::journal(
            conn,
            planned.plan.turn,
            &planned.actions,
            &marked,
            redoes,
            note,
            now_ns(),
            |tx| crate::turns::continue_turns(tx, continued),
        )?;
        Ok(Journaled {
            id,
            marked,
            redoes,
            applies: None,
        })
    }

    /// Journals `actions` as the writes of a new turn by `meta`, pending,
    /// durably, running `before` (which stores their content) in the same
    /// transaction.
    pub fn write_new_turn(
        conn: &mut Connection,
        meta: &TurnMeta,
        actions: &ActionList,
        before: impl FnOnce(&Connection) -> Result<()>,
    ) -> Result<Journaled> {
        let (id, turn) = history::journal_new_turn(conn, meta, actions, now_ns(), before)?;
        Ok(Journaled {
            id,
            marked: Vec::new(),
            redoes: None,
            applies: Some(turn),
        })
    }

    /// Journal entry `id` as journaled, with its actions (`spill`: where
    /// their list goes past its window).
    pub fn read(conn: &Connection, id: i64, spill: &Spill) -> Result<(Journaled, ActionList)> {
        let actions = history::actions(conn, id, spill)?;
        let links = history::rewind_links(conn, id)?;
        let journaled = Journaled {
            id,
            marked: links.marked,
            redoes: links.redoes,
            applies: links.applies,
        };
        Ok((journaled, actions))
    }

    /// Records that `side` of `actions` was applied: a rewind marks its
    /// turns, a redo brings back the turns of the rewind it undoes, a new
    /// turn gets its entries. Call in the transaction that records what was
    /// written.
    pub fn applied(&self, tx: &Connection, side: Side, actions: &ActionList) -> Result<()> {
        match (side, self.redoes, self.applies) {
            (Side::Target, None, Some(turn)) => {
                history::record_applied_turn(tx, turn, actions, now_ns())?;
                history::set_rewind_status(tx, self.id, RewindStatus::Applied)
            }
            (Side::Target, None, None) => {
                history::mark_rewound(tx, &self.marked, self.id)?;
                history::set_rewind_status(tx, self.id, RewindStatus::Applied)
            }
            (Side::Target, Some(undone), _) => {
                history::bring_back(tx, undone)?;
                history::set_rewind_status(tx, self.id, RewindStatus::Applied)
            }
            // A redo journaled by an older ckpt: the rewind's own journal,
            // applied backwards.
            (Side::Current, _, _) => history::bring_back(tx, self.id),
        }
    }

    /// Records that applying `side` failed and was undone.
    pub fn failed(&self, conn: &Connection, side: Side) -> Result<()> {
        let status = match side {
            Side::Target => RewindStatus::Failed,
            // A legacy redo that failed: the rewind stays applied.
            Side::Current => RewindStatus::Applied,
        };
        if let (Side::Target, Some(turn)) = (side, self.applies) {
            history::drop_unapplied_turn(conn, turn)?;
        }
        history::set_rewind_status(conn, self.id, status)
    }
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::os::unix::fs::PermissionsExt;

    use super::Journaled;
    use crate::model::{Action, RewindOptions, RewindOutcome, TurnMeta};
    use crate::project::tests::reconciled;
    use crate::relpath::RelPath;
    use crate::state::State;

    fn key(a: &Action) -> (RelPath, State, State) {
        (a.path.clone(), a.current.clone(), a.target.clone())
    }

    /// A fresh rewind or redo applies its plan's list, recovery the
    /// journal it wrote: both must be the same actions, the same turns.
    #[test]
    fn a_journaled_plan_reads_back_as_planned() {
        let (_tmp, root, mut p) =
            reconciled(&[("src/a.txt", "one\n"), ("gone.txt", "bye\n"), ("d/x", "x")]);
        let turn = p.turn_start(TurnMeta::default()).unwrap();
        fs::write(root.join("src/a.txt"), "two\n").unwrap();
        fs::remove_file(root.join("gone.txt")).unwrap();
        fs::set_permissions(root.join("d/x"), fs::Permissions::from_mode(0o755)).unwrap();
        fs::create_dir_all(root.join("new/deep")).unwrap();
        fs::write(root.join("new/deep/f"), "f").unwrap();
        std::os::unix::fs::symlink("src/a.txt", root.join("link")).unwrap();
        p.reconcile().unwrap();
        p.turn_end().unwrap();

        let out = p.rewind(turn, RewindOptions::default()).unwrap();
        let RewindOutcome::Applied { rewind_id, plan } = out else {
            panic!("not applied: {out:?}");
        };
        let (journaled, actions) =
            Journaled::read(&p.conn, rewind_id, &Default::default()).unwrap();
        let planned: Vec<_> = plan.actions.iter().map(key).collect();
        let actions = actions.to_vec().unwrap();
        assert_eq!(actions.iter().map(key).collect::<Vec<_>>(), planned);
        assert_eq!(planned.len(), 7, "{planned:?}");
        assert_eq!((journaled.marked, journaled.redoes), (vec![turn], None));

        let out = p.redo(RewindOptions::default()).unwrap();
        let RewindOutcome::Applied {
            rewind_id: redo,
            plan,
        } = out
        else {
            panic!("redo not applied: {out:?}");
        };
        let (journaled, actions) = Journaled::read(&p.conn, redo, &Default::default()).unwrap();
        let planned: Vec<_> = plan.actions.iter().map(key).collect();
        let actions = actions.to_vec().unwrap();
        assert_eq!(actions.iter().map(key).collect::<Vec<_>>(), planned);
        assert_eq!(
            (journaled.marked, journaled.redoes),
            (Vec::new(), Some(rewind_id))
        );
    }
}
