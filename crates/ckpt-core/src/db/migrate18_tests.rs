//! Migration 18 on a store written before it: each turn's detail finds
//! the partial rewinds that name it again, and retention drops them.

use std::fs;

use crate::model::{Options, Retention, RewindOptions, RewindOutcome, TurnMeta};
use crate::project::tests::reconciled;
use crate::project::Project;
use crate::relpath::RelPath;

/// The partial rewinds each turn's detail names, oldest turn first.
fn partial(p: &Project, turns: &[i64]) -> Vec<Vec<i64>> {
    let of = |t| p.show(t).unwrap().info.partial.map(|r| r.rewinds);
    turns.iter().map(|&t| of(t).unwrap_or_default()).collect()
}

/// Rewinds `turn` and what followed it for `path` only; the journal id.
fn rewind_path(p: &mut Project, turn: i64, path: &str) -> i64 {
    let opts = RewindOptions {
        paths: vec![RelPath::new(path).unwrap()],
        ..RewindOptions::default()
    };
    match p.rewind(turn, opts).unwrap() {
        RewindOutcome::Applied { .. } => {}
        other => panic!("not applied: {other:?}"),
    }
    p.rewinds(1).unwrap()[0].id
}

#[test]
fn a_store_of_migration_17_finds_each_turns_partial_rewinds_and_retention_drops_them() {
    let (tmp, root, mut p) = reconciled(&[("a", "a0"), ("b", "b0")]);
    let mut turns = Vec::new();
    for v in 1..=4 {
        turns.push(p.turn_start(TurnMeta::default()).unwrap());
        fs::write(root.join("a"), format!("a{v}")).unwrap();
        fs::write(root.join("b"), format!("b{v}")).unwrap();
        p.reconcile().unwrap();
        p.turn_end().unwrap();
    }
    // `a` as before turn 2 (turns 2-4 partly undone), `b` as before 4.
    let r1 = rewind_path(&mut p, turns[1], "a");
    let r2 = rewind_path(&mut p, turns[3], "b");
    let expected = vec![vec![], vec![r1], vec![r1], vec![r1, r2]];
    assert_eq!(partial(&p, &turns), expected);
    drop(p);

    let store = tmp.path().join("store");
    let conn = rusqlite::Connection::open(store.join(crate::project::DB_FILE)).unwrap();
    conn.execute_batch(
        "DROP TABLE partly_rewound; DROP INDEX rewinds_unfinished;
         DROP INDEX turns_rewound; DROP INDEX turn_entries_skipped;
         DROP INDEX turns_workcopy; PRAGMA user_version = 17;",
    )
    .unwrap();
    drop(conn);
    let mut p = Project::open(&store, &root, Options::default()).unwrap();
    assert_eq!(partial(&p, &turns), expected, "found again after migrating");

    // Keeping two turns drops turns 1 and 2, and `r1` (a rewind to turn 2)
    // with them: turns 3 and 4 no longer name it.
    let policy = Retention {
        keep_turns: 2,
        max_age_secs: 0,
        grace_secs: 0,
        budget_bytes: None,
    };
    assert_eq!(p.gc(&policy, false).unwrap().turns_dropped, 2);
    assert_eq!(partial(&p, &turns[2..]), vec![vec![], vec![r2]]);
    let dangling: i64 = p
        .conn
        .query_row("SELECT count(*) FROM pragma_foreign_key_check", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(dangling, 0);
    assert_eq!(fs::read(root.join("a")).unwrap(), b"a1");
    assert_eq!(fs::read(root.join("b")).unwrap(), b"b3");
}
