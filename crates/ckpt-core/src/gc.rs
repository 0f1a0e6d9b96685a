//! Retention and garbage collection: drop turns past the retention policy
//! (age and count, then the store's budget), then the blobs that nothing
//! (cache, turns, rewind journal) refers to.
//!
//! Turns go as a prefix, oldest first: dropping turn N drops every older
//! turn, so each turn that remains can still be rewound exactly (a rewind
//! to T needs every later turn's pre-images). The first turn that must
//! stay ([`Hold`]: pinned, open, an open ledger entry, an unfinished
//! journal) stops the prefix: it and every later turn stay.

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use crate::error::{Error, Result};
use crate::history;
use crate::model::{GcReport, HeldBy, Hold, NextDrop, Retention, RetentionView};
use crate::store::BlobStore;
use ckpt_types::now_ns;

const NS: i64 = 1_000_000_000;

/// What holds turns back from retention, each the first turn it holds;
/// every one served by an index (`status` and every gc ask).
const HELD: [(Hold, &str); 5] = [
    (Hold::Pinned, "SELECT min(id) FROM turns WHERE pinned = 1"),
    (
        Hold::Open,
        "SELECT min(id) FROM turns WHERE status = 'open'",
    ),
    (
        Hold::Ledger,
        "SELECT min(e.turn) FROM ledger_entries e JOIN turns t ON t.id = e.turn
         WHERE t.status <> 'rewound' AND coalesce((SELECT status FROM ledger_events
           WHERE entry = e.id ORDER BY id DESC LIMIT 1), 'open') = 'open'",
    ),
    (Hold::Apply, history::UNSETTLED_FIRST_TURN),
    (
        Hold::WorkCopy,
        "SELECT min(id) FROM turns WHERE workcopy IS NOT NULL",
    ),
];

/// The first turn that must stay, of each [`Hold`], lowest first.
fn held(conn: &Connection) -> Result<Option<HeldBy>> {
    let mut first: Option<HeldBy> = None;
    for (why, q) in HELD {
        let turn: Option<i64> = conn.query_row(q, [], |r| r.get(0))?;
        if let Some(turn) = turn {
            if first.is_none_or(|f| turn < f.turn) {
                first = Some(HeldBy { turn, why });
            }
        }
    }
    Ok(first)
}

/// The newest turn past the age and count limits, below any held turn:
/// the next gc drops every turn up to it.
fn due(
    conn: &Connection,
    policy: &Retention,
    now: i64,
    held: Option<HeldBy>,
) -> Result<Option<i64>> {
    let Some(window) = window_start(conn, policy.keep_turns)? else {
        return Ok(None);
    };
    let cutoff = now - (policy.max_age_secs as i64).saturating_mul(NS);
    let below = held.map_or(i64::MAX, |h| h.turn);
    Ok(conn.query_row(
        "SELECT max(id) FROM turns WHERE started_ns < ?1 AND id < ?2 AND id < ?3",
        params![cutoff, window, below],
        |r| r.get(0),
    )?)
}

/// The oldest of the newest `keep` turns that changed something: turns
/// before it are past the count limit. `None`: fewer such turns than that.
fn window_start(conn: &Connection, keep: usize) -> Result<Option<i64>> {
    if keep == 0 {
        return Ok(Some(i64::MAX));
    }
    Ok(conn
        .query_row(
            "SELECT id FROM turns t WHERE EXISTS (SELECT 1 FROM turn_entries e WHERE e.turn = t.id)
             ORDER BY id DESC LIMIT 1 OFFSET ?1",
            [keep as i64 - 1],
            |r| r.get(0),
        )
        .optional()?)
}

/// Keeps every blob the cache, a turn or the journal names (see
/// [`crate::store::start_keep`]).
fn mark_referenced(conn: &Connection) -> Result<()> {
    crate::store::start_keep(conn)?;
    crate::store::keep_selected(conn, "SELECT data FROM files WHERE kind = 1")?;
    history::keep_named(conn)
}

/// Drops what `policy` no longer keeps: turns past age and count, then,
/// while the store is over its budget, the oldest turns that may go; then
/// unreferenced blobs. With `dry_run`, all of it runs in a transaction
/// that is rolled back, and no file is removed: the report says what a
/// real run would drop.
pub(crate) fn gc(
    conn: &mut Connection,
    store: &BlobStore,
    policy: &Retention,
    dry_run: bool,
) -> Result<GcReport> {
    let now = now_ns();
    let cutoff = now.saturating_sub((policy.grace_secs as i64).saturating_mul(NS));
    let mut report = GcReport {
        dry_run,
        ..GcReport::default()
    };
    let mut tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let held = held(&tx)?;
    let mut through = due(&tx, policy, now, held)?;
    if let Some(budget) = policy.budget_bytes {
        (through, report.over_budget) = budget_through(&mut tx, store, budget, through, held, now)?;
    }
    if let Some(last) = through {
        report.turns_dropped = history::drop_turns_through(&tx, last)?;
        report.through = Some(last);
    }
    mark_referenced(&tx)?;
    let doomed = store.delete_unreferenced(&tx, cutoff)?;
    report.store_bytes = store.usage(&tx)?.1;
    if dry_run {
        report.blobs_removed = doomed.blobs;
        report.bytes_freed = doomed.bytes;
        tx.rollback()?;
        return Ok(report);
    }
    tx.commit()?;
    let (blobs, bytes) = store.remove_doomed(conn, doomed, cutoff)?;
    report.blobs_removed = blobs;
    report.bytes_freed = bytes;
    // Give the pages of deleted inline blobs back to the filesystem.
    conn.execute_batch("PRAGMA incremental_vacuum")?;
    Ok(report)
}

/// The newest turn to drop so that the store fits `budget`, oldest turns
/// first from `through` on, never `held` or later; and whether even that
/// leaves it over. Decided in a savepoint that is rolled back, as if every
/// unreferenced blob were past its grace period: blobs still in it go at a
/// later gc, and a fresh capture must not make this drop every turn.
fn budget_through(
    tx: &mut rusqlite::Transaction<'_>,
    store: &BlobStore,
    budget: u64,
    mut through: Option<i64>,
    held: Option<HeldBy>,
    now: i64,
) -> Result<(Option<i64>, bool)> {
    let sp = tx.savepoint()?;
    if let Some(last) = through {
        history::drop_turns_through(&sp, last)?;
    }
    mark_referenced(&sp)?;
    store.delete_unreferenced(&sp, now)?;
    let below = held.map_or(i64::MAX, |h| h.turn);
    // One turn at a time: each re-reads what is referenced, so it costs a
    // pass over the references per turn, and only when over budget.
    while store.usage(&sp)?.1 > budget {
        let next: Option<i64> =
            sp.query_row("SELECT min(id) FROM turns WHERE id < ?1", [below], |r| {
                r.get(0)
            })?;
        let Some(next) = next else {
            return Ok((through, true));
        };
        history::drop_turns_through(&sp, next)?;
        through = Some(next);
        mark_referenced(&sp)?;
        store.delete_unreferenced(&sp, now)?;
    }
    Ok((through, false))
}

/// The policy, the pinned turns, and what retention drops next.
pub(crate) fn view(conn: &Connection, policy: &Retention) -> Result<RetentionView> {
    let now = now_ns();
    let pinned = conn
        .prepare("SELECT id FROM turns WHERE pinned = 1 ORDER BY id")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<Vec<i64>>>()?;
    let held = held(conn)?;
    let due = due(conn, policy, now, held)?;
    let below = held.map_or(i64::MAX, |h| h.turn);
    let next = if due.is_some() {
        None
    } else {
        let first: Option<(i64, i64)> = conn
            .query_row(
                "SELECT id, started_ns FROM turns WHERE id < ?1 ORDER BY id LIMIT 1",
                [below],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        match first {
            None => None,
            Some((turn, started_ns)) => {
                // Counted up to the policy's number only: counting all
                // took 200 ms at 169,596 turns, 0.03 ms up to 100.
                let newer: i64 = conn.query_row(
                    "SELECT count(*) FROM (SELECT 1 FROM turns t WHERE id > ?1
                     AND EXISTS (SELECT 1 FROM turn_entries e WHERE e.turn = t.id) LIMIT ?2)",
                    params![turn, policy.keep_turns as i64],
                    |r| r.get(0),
                )?;
                Some(NextDrop {
                    turn,
                    at_ns: started_ns + (policy.max_age_secs as i64).saturating_mul(NS),
                    after_turns: (policy.keep_turns as u64).saturating_sub(newer as u64),
                })
            }
        }
    };
    Ok(RetentionView {
        policy: policy.clone(),
        pinned,
        held,
        due,
        next,
    })
}

/// Records that work copy `name`'s apply made `turn`: kept until
/// [`release_workcopy`].
pub(crate) fn keep_for_workcopy(conn: &Connection, turn: i64, name: &str) -> Result<()> {
    let n = conn.execute(
        "UPDATE turns SET workcopy = ?2 WHERE id = ?1",
        params![turn, name],
    )?;
    if n == 0 {
        return Err(Error::UnknownTurn(turn));
    }
    Ok(())
}

/// Work copy `name` is gone: the turns its applies made may go. How many
/// it held.
pub(crate) fn release_workcopy(conn: &Connection, name: &str) -> Result<usize> {
    Ok(conn.execute(
        "UPDATE turns SET workcopy = NULL WHERE workcopy = ?1",
        [name],
    )?)
}

/// Pins or unpins `turn`. A rewound turn is pinned too: redo brings it back.
pub(crate) fn set_pinned(conn: &Connection, turn: i64, pinned: bool) -> Result<()> {
    let n = conn.execute(
        "UPDATE turns SET pinned = ?2 WHERE id = ?1",
        params![turn, pinned],
    )?;
    if n == 0 {
        return Err(Error::UnknownTurn(turn));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::fs;

    use crate::model::{Hold, Retention, RewindOptions, RewindOutcome, TurnMeta};
    use crate::project::tests::reconciled;
    use crate::project::Project;

    /// Every hold is found by an index: `status` asks for each of them.
    #[test]
    fn every_hold_is_looked_up_by_index() {
        for (why, sql) in super::HELD {
            let plan = crate::db::query_plan(sql, []);
            let bare = |s: &&str| {
                (s.starts_with("SCAN ") || s.starts_with("SEARCH "))
                    && !s.contains("INDEX")
                    && !s.contains("PRIMARY KEY")
            };
            assert!(!plan.split("; ").any(|s| bare(&s)), "{why:?}: {plan}");
        }
    }

    const KEEP_ONE: Retention = Retention {
        keep_turns: 1,
        max_age_secs: 0,
        grace_secs: 0,
        budget_bytes: None,
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
        let report = p.gc(&policy, false).unwrap();
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
        assert_eq!(p.gc(&policy, false).unwrap().turns_dropped, 2);
        let report =
            crate::fsck(&tmp.path().join("store"), &crate::FsckOptions::default()).unwrap();
        assert!(report.problems.is_empty(), "{report:?}");
        let out = p.redo(RewindOptions::default()).unwrap();
        assert!(matches!(out, RewindOutcome::Applied { .. }), "{out:?}");
        assert_eq!(fs::read(root.join("f")).unwrap(), b"v3");
    }

    fn turn(p: &mut Project, root: &std::path::Path, writes: &[(&str, &str)]) -> i64 {
        let t = p.turn_start(TurnMeta::default()).unwrap();
        for (f, v) in writes {
            fs::write(root.join(f), v).unwrap();
        }
        p.reconcile().unwrap();
        p.turn_end().unwrap();
        t
    }

    fn turn_ids(p: &Project) -> Vec<i64> {
        let mut ids: Vec<i64> = p.log(1000).unwrap().iter().map(|t| t.id).collect();
        ids.sort();
        ids
    }

    #[test]
    fn a_pinned_turn_and_every_later_one_outlive_retention() {
        let (_tmp, root, mut p, turns) = three_turns();
        p.pin(turns[1], true).unwrap();
        let view = p.retention(&KEEP_ONE).unwrap();
        assert_eq!(view.pinned, [turns[1]]);
        assert_eq!(
            view.held.map(|h| (h.turn, h.why)),
            Some((turns[1], Hold::Pinned))
        );
        assert_eq!(view.due, Some(turns[0]));
        let report = p.gc(&KEEP_ONE, false).unwrap();
        assert_eq!((report.turns_dropped, report.through), (1, Some(turns[0])));
        assert_eq!(turn_ids(&p), turns[1..]);
        // The pinned turn still rewinds exactly.
        let out = p.rewind(turns[1], RewindOptions::default()).unwrap();
        assert!(matches!(out, RewindOutcome::Applied { .. }));
        assert_eq!(fs::read(root.join("f")).unwrap(), b"v1");

        p.pin(turns[1], false).unwrap();
        assert!(p.retention(&KEEP_ONE).unwrap().pinned.is_empty());
        assert!(matches!(
            p.pin(99, true),
            Err(crate::Error::UnknownTurn(99))
        ));
    }

    #[test]
    fn empty_turns_do_not_count_against_the_turns_kept() {
        let (_tmp, root, mut p) = reconciled(&[("f", "v0")]);
        let changed = turn(&mut p, &root, &[("f", "v1")]);
        let empty: Vec<i64> = (0..3).map(|_| turn(&mut p, &root, &[])).collect();
        let keep_one = KEEP_ONE;
        // The one turn kept is the one that changed something: the empty
        // turns after it do not push it out.
        assert_eq!(p.gc(&keep_one, false).unwrap().turns_dropped, 0);
        assert_eq!(turn_ids(&p), [vec![changed], empty.clone()].concat());
        let last = turn(&mut p, &root, &[("f", "v2")]);
        assert_eq!(p.gc(&keep_one, false).unwrap().through, Some(empty[2]));
        assert_eq!(turn_ids(&p), [last]);
    }

    #[test]
    fn a_turn_with_an_open_ledger_entry_stays() {
        let (_tmp, root, mut p) = reconciled(&[("f", "v0\n")]);
        let t1 = turn(&mut p, &root, &[("f", "v1\n")]);
        let t2 = p.turn_start(TurnMeta::default()).unwrap();
        fs::write(root.join("f"), "v2\n").unwrap();
        p.reconcile().unwrap();
        let id = p
            .ledger_add(crate::ledger::NewLedgerEntry {
                path: crate::RelPath::new("f").unwrap(),
                span: None,
                bucket: ckpt_types::Bucket::CompatShim,
                severity: ckpt_types::Severity::High,
                confidence: 0.8,
                owner: None,
                user: None,
                note: "n".into(),
            })
            .unwrap();
        p.turn_end().unwrap();
        let t3 = turn(&mut p, &root, &[("f", "v3\n")]);
        let view = p.retention(&KEEP_ONE).unwrap();
        assert_eq!(view.held.map(|h| (h.turn, h.why)), Some((t2, Hold::Ledger)));
        assert_eq!(p.gc(&KEEP_ONE, false).unwrap().through, Some(t1));
        assert_eq!(turn_ids(&p), [t2, t3]);
        // Resolved, it no longer holds the turn.
        p.ledger_set_status(
            id,
            crate::ledger::LedgerStatus::Resolved,
            None,
            "done".into(),
        )
        .unwrap();
        assert_eq!(p.gc(&KEEP_ONE, false).unwrap().through, Some(t2));
    }

    #[test]
    fn an_open_turn_of_another_session_is_never_dropped() {
        let (_tmp, root, mut p) = reconciled(&[("f", "v0")]);
        let other = p
            .turn_start(TurnMeta {
                session: Some("b".into()),
                ..TurnMeta::default()
            })
            .unwrap();
        let t = turn(&mut p, &root, &[("f", "v1")]);
        let _ = turn(&mut p, &root, &[("f", "v2")]);
        let report = p.gc(&KEEP_ONE, false).unwrap();
        assert_eq!(report.turns_dropped, 0, "{report:?}");
        assert!(turn_ids(&p).contains(&other) && turn_ids(&p).contains(&t));
    }

    #[test]
    fn a_dry_run_reports_what_a_real_run_then_does_and_changes_nothing() {
        let (_tmp, _root, mut p, turns) = three_turns();
        let before = p.status().unwrap();
        let dry = p.gc(&KEEP_ONE, true).unwrap();
        assert!(dry.dry_run);
        assert_eq!((dry.turns_dropped, dry.through), (2, Some(turns[1])));
        assert_eq!(dry.blobs_removed, 2);
        assert!(dry.bytes_freed > 0);
        let after = p.status().unwrap();
        assert_eq!(
            (after.turns, after.blobs, after.store_bytes),
            (before.turns, before.blobs, before.store_bytes)
        );
        let real = p.gc(&KEEP_ONE, false).unwrap();
        assert_eq!(
            (
                real.turns_dropped,
                real.blobs_removed,
                real.bytes_freed,
                real.store_bytes
            ),
            (
                dry.turns_dropped,
                dry.blobs_removed,
                dry.bytes_freed,
                dry.store_bytes
            )
        );
    }

    #[test]
    fn over_budget_the_oldest_turns_go_until_the_store_fits() {
        let (_tmp, root, mut p) = reconciled(&[("f", "v0")]);
        // Incompressible content, so each version costs its size.
        let noise = |seed: u8| -> String {
            let mut x = u32::from(seed).wrapping_mul(2_654_435_761) | 1;
            (0..40_000)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    char::from(b'a' + (x % 26) as u8)
                })
                .collect()
        };
        let turns: Vec<i64> = (1..=4)
            .map(|v| turn(&mut p, &root, &[("f", &noise(v))]))
            .collect();
        let keep_all = Retention {
            keep_turns: 100,
            max_age_secs: 1 << 40,
            grace_secs: 0,
            budget_bytes: None,
        };
        let size = p.status().unwrap().store_bytes;
        let budget = Retention {
            // Room for the current version and about one more.
            budget_bytes: Some(size / 2),
            ..keep_all.clone()
        };
        assert_eq!(p.gc(&keep_all, false).unwrap().turns_dropped, 0);
        let report = p.gc(&budget, false).unwrap();
        assert!(!report.over_budget, "{report:?}");
        assert!(report.store_bytes <= size / 2, "{report:?}");
        assert!(report.turns_dropped >= 2, "{report:?}");
        assert_eq!(turn_ids(&p), turns[report.turns_dropped as usize..]);

        // A pin below the budget's reach: over budget, and said so.
        p.pin(*turn_ids(&p).first().unwrap(), true).unwrap();
        let tight = Retention {
            budget_bytes: Some(1),
            ..keep_all
        };
        let report = p.gc(&tight, false).unwrap();
        assert!(
            report.over_budget && report.turns_dropped == 0,
            "{report:?}"
        );
    }
}
