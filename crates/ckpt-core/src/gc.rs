//! Retention and garbage collection: drop turns past the retention policy,
//! then the blobs that nothing (cache, turns, rewind journal) refers to.

use std::collections::HashSet;

use rusqlite::params;

use crate::error::Result;
use crate::model::{GcReport, Retention};
use crate::project::{now_ns, Project};
use crate::state::Hash;

impl Project {
    pub fn gc(&mut self, policy: &Retention) -> Result<GcReport> {
        let now = now_ns();
        let cutoff = now - (policy.max_age_secs as i64).saturating_mul(1_000_000_000);
        let tx = self.conn.transaction()?;
        // The newest `keep_turns` are kept; older ones go once past the age.
        // Dropping turn N drops everything older than N too, so the turns
        // that remain can always be rewound.
        let newest_dropped: Option<i64> = tx.query_row(
            "SELECT max(id) FROM turns WHERE status != 'open' AND started_ns < ?1
             AND id NOT IN (SELECT id FROM turns ORDER BY id DESC LIMIT ?2)",
            params![cutoff, policy.keep_turns as i64],
            |r| r.get(0),
        )?;
        let mut report = GcReport::default();
        if let Some(last) = newest_dropped {
            // A rewind whose turns outlive it would leave them rewound for
            // good: it stays as long as they do, so they can be redone.
            let dropped = "SELECT id FROM rewinds WHERE turn <= ?1 AND id NOT IN
                 (SELECT rewound_by FROM turns WHERE id > ?1 AND rewound_by IS NOT NULL)";
            tx.execute(
                &format!("DELETE FROM rewind_actions WHERE rewind IN ({dropped})"),
                [last],
            )?;
            tx.execute(
                &format!("DELETE FROM rewinds WHERE id IN ({dropped})"),
                [last],
            )?;
            tx.execute("DELETE FROM turn_entries WHERE turn <= ?1", [last])?;
            report.turns_dropped = tx.execute("DELETE FROM turns WHERE id <= ?1", [last])? as u64;
        }
        tx.commit()?;

        let mut referenced = HashSet::new();
        for sql in [
            "SELECT data FROM files WHERE kind = 1",
            "SELECT pre_data FROM turn_entries WHERE pre_kind = 1",
            "SELECT post_data FROM turn_entries WHERE post_kind = 1",
            "SELECT cur_data FROM rewind_actions WHERE cur_kind = 1",
            "SELECT tgt_data FROM rewind_actions WHERE tgt_kind = 1",
        ] {
            let mut stmt = self.conn.prepare(sql)?;
            let rows = stmt.query_map([], |r| r.get::<_, Vec<u8>>(0))?;
            for r in rows {
                referenced.extend(Hash::from_slice(&r?));
            }
        }
        let grace = (policy.grace_secs as i64).saturating_mul(1_000_000_000);
        let (blobs, bytes) = self.store.gc(&self.conn, &referenced, grace, now)?;
        report.blobs_removed = blobs;
        report.bytes_freed = bytes;
        // Give the pages of deleted inline blobs back to the filesystem.
        self.conn.execute_batch("PRAGMA incremental_vacuum")?;
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use crate::model::{Retention, RewindOptions, RewindOutcome, TurnMeta};
    use crate::project::tests::reconciled;
    use crate::project::Project;

    const KEEP_ONE: Retention = Retention {
        keep_turns: 1,
        max_age_secs: 0,
        grace_secs: 0,
    };

    /// A project whose one file `f` is `v0`, then `v1`..`v3` in three turns.
    fn three_turns() -> (tempfile::TempDir, std::path::PathBuf, Project, Vec<i64>) {
        let (tmp, root, mut p) = reconciled(&[("f", "v0")]);
        let mut turns = Vec::new();
        for v in 1..=3 {
            turns.push(p.turn_start(TurnMeta::default()).unwrap());
            fs::write(root.join("f"), format!("v{v}")).unwrap();
            p.reconcile().unwrap();
            p.turn_end().unwrap();
        }
        (tmp, root, p, turns)
    }

    #[test]
    fn gc_drops_old_turns_and_their_blobs_but_keeps_what_is_live() {
        let (_tmp, root, mut p, turns) = three_turns();
        let blobs_before = p.status().unwrap().blobs;
        let policy = KEEP_ONE;
        let report = p.gc(&policy).unwrap();
        assert_eq!(report.turns_dropped, 2);
        // v0 and v1 were only pre-images of dropped turns.
        assert_eq!(report.blobs_removed, 2, "{report:?}");
        assert_eq!(p.status().unwrap().blobs, blobs_before - 2);
        assert!(p.show(turns[0]).is_err());
        // The kept turn still rewinds exactly.
        let out = p.rewind(turns[2], RewindOptions::default()).unwrap();
        assert!(matches!(out, RewindOutcome::Applied { .. }));
        assert_eq!(fs::read(root.join("f")).unwrap(), b"v2");
    }

    /// A rewind of turns 2 and 3, then gc dropping turns 1 and 2: turn 3 is
    /// still marked rewound, so its rewind stays and can be redone.
    #[test]
    fn gc_keeps_a_rewind_whose_turns_it_keeps() {
        let (tmp, root, mut p, turns) = three_turns();
        let out = p.rewind(turns[1], RewindOptions::default()).unwrap();
        assert!(matches!(out, RewindOutcome::Applied { .. }));
        let policy = KEEP_ONE;
        assert_eq!(p.gc(&policy).unwrap().turns_dropped, 2);
        let report =
            crate::fsck(&tmp.path().join("store"), &crate::FsckOptions::default()).unwrap();
        assert!(report.problems.is_empty(), "{report:?}");
        let out = p.redo(RewindOptions::default()).unwrap();
        assert!(matches!(out, RewindOutcome::Applied { .. }), "{out:?}");
        assert_eq!(fs::read(root.join("f")).unwrap(), b"v3");
    }
}
