//! Retention and garbage collection: drop turns past the retention policy,
//! then the blobs that nothing (cache, turns, rewind journal) refers to.

use std::collections::HashSet;

use rusqlite::Connection;

use crate::error::Result;
use crate::history;
use crate::model::{GcReport, Retention};
use crate::state::Hash;
use crate::store::BlobStore;
use ckpt_types::now_ns;

/// Drops what `policy` no longer keeps: old turns, then unreferenced blobs.
pub(crate) fn gc(conn: &mut Connection, store: &BlobStore, policy: &Retention) -> Result<GcReport> {
    let now = now_ns();
    let cutoff = now - (policy.max_age_secs as i64).saturating_mul(1_000_000_000);
    let tx = conn.transaction()?;
    // The newest `keep_turns` are kept; older ones go once past the age.
    // Dropping turn N drops everything older than N too, so the turns
    // that remain can always be rewound.
    let mut report = GcReport::default();
    if let Some(last) = history::newest_expired_turn(&tx, cutoff, policy.keep_turns)? {
        report.turns_dropped = history::drop_turns_through(&tx, last)?;
    }
    tx.commit()?;

    let mut referenced = HashSet::new();
    {
        let mut stmt = conn.prepare("SELECT data FROM files WHERE kind = 1")?;
        let rows = stmt.query_map([], |r| r.get::<_, Vec<u8>>(0))?;
        for r in rows {
            referenced.extend(Hash::from_slice(&r?));
        }
    }
    history::blobs_named(conn, &mut referenced)?;
    let grace = (policy.grace_secs as i64).saturating_mul(1_000_000_000);
    let (blobs, bytes) = store.gc(conn, &referenced, grace, now)?;
    report.blobs_removed = blobs;
    report.bytes_freed = bytes;
    // Give the pages of deleted inline blobs back to the filesystem.
    conn.execute_batch("PRAGMA incremental_vacuum")?;
    Ok(report)
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
