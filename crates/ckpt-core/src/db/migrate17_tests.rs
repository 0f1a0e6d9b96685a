//! Migration 17 on a store written in the form before it: what it held
//! still reads, scans as unchanged and rewinds.

use std::fs;

use rusqlite::Connection;

use crate::model::{Options, RewindOptions, RewindOutcome, TurnMeta};
use crate::project::Project;

/// Turns a store of this version back into migration 16's form, as an
/// older ckpt left it: `blobs` a rowid table with `blobs_pack`, every
/// blob's own time, ctime whole, and no table of a later migration.
const TO_16: &str = "
    DROP TABLE partly_rewound;
    DROP INDEX rewinds_unfinished;
    DROP INDEX turns_rewound;
    DROP INDEX turn_entries_skipped;
    DROP INDEX turns_workcopy;
    CREATE TABLE blobs16 (
        hash       BLOB PRIMARY KEY,
        size       INTEGER NOT NULL,
        csize      INTEGER NOT NULL,
        created_ns INTEGER NOT NULL,
        data       BLOB,
        base       BLOB,
        depth      INTEGER NOT NULL DEFAULT 0,
        pack       INTEGER,
        pack_offset INTEGER
    );
    INSERT INTO blobs16 SELECT hash, size, csize,
        coalesce(created_ns, (SELECT p.created_ns FROM packs p WHERE p.id = pack)),
        data, base, depth, pack, pack_offset FROM blobs;
    DROP TABLE blobs;
    ALTER TABLE blobs16 RENAME TO blobs;
    CREATE INDEX blobs_pack ON blobs(pack) WHERE pack IS NOT NULL;
    UPDATE files SET ctime_after_ns = ctime_after_ns + mtime_ns;
    ALTER TABLE files RENAME COLUMN ctime_after_ns TO ctime_ns;
    PRAGMA user_version = 16;
";

/// Columns (name, type, not null, primary key) and indexes of `table`.
fn shape(conn: &Connection, table: &str) -> Vec<String> {
    let mut out: Vec<String> = conn
        .prepare(&format!("PRAGMA table_xinfo({table})"))
        .unwrap()
        .query_map([], |r| {
            Ok(format!(
                "{} {} {} {}",
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, i64>(3)?,
                r.get::<_, i64>(5)?
            ))
        })
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    out.extend(
        conn.prepare(&format!("PRAGMA index_list({table})"))
            .unwrap()
            .query_map([], |r| Ok(format!("index {}", r.get::<_, String>(1)?)))
            .unwrap()
            .map(|r| r.unwrap()),
    );
    out
}

/// The cache, in path order, as text (rows have no `PartialEq`).
fn sorted_cache(p: &Project) -> Vec<String> {
    let mut rows: Vec<String> = crate::cache::all(&p.conn)
        .unwrap()
        .into_iter()
        .map(|(k, r)| format!("{} {r:?}", k.display()))
        .collect();
    rows.sort();
    rows
}

#[test]
fn a_store_of_migration_16_migrates_and_still_reads_scans_and_rewinds() {
    let tmp = tempfile::tempdir().unwrap();
    let (root, store) = (tmp.path().join("proj"), tmp.path().join("store"));
    fs::create_dir_all(root.join("d")).unwrap();
    // Packed blobs (many small files), an object file and an empty file.
    let small = |i: usize| format!("small file {i}\n").into_bytes();
    for i in 0..300 {
        fs::write(root.join(format!("d/f{i}.txt")), small(i)).unwrap();
    }
    fs::write(root.join("empty"), "").unwrap();
    let big: Vec<u8> = (0..40_000u32)
        .flat_map(|i| i.wrapping_mul(2_654_435_761).to_le_bytes())
        .collect();
    fs::write(root.join("big.bin"), &big).unwrap();
    let opts = || Options {
        inline_max: 4 << 10,
        ..Options::default()
    };
    let mut p = Project::open(&store, &root, opts()).unwrap();
    p.reconcile().unwrap();
    let turn = p.turn_start(TurnMeta::default()).unwrap();
    for i in (0..300).step_by(7) {
        fs::write(root.join(format!("d/f{i}.txt")), format!("agent {i}\n")).unwrap();
    }
    fs::remove_file(root.join("empty")).unwrap();
    fs::write(root.join("big.bin"), b"small now").unwrap();
    p.reconcile().unwrap();
    p.turn_end().unwrap();
    let cache_before = sorted_cache(&p);
    drop(p);

    let conn = Connection::open(store.join(crate::project::DB_FILE)).unwrap();
    conn.execute_batch(TO_16).unwrap();
    let reference = Connection::open(tmp.path().join("16.sqlite")).unwrap();
    for sql in &super::MIGRATIONS[..16] {
        reference.execute_batch(sql).unwrap();
    }
    for table in ["blobs", "files"] {
        assert_eq!(shape(&conn, table), shape(&reference, table), "{table}");
    }
    let packed: i64 = conn
        .query_row(
            "SELECT count(*) FROM blobs WHERE pack IS NOT NULL",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(packed > 300, "{packed} packed blobs");
    drop(conn);

    let mut p = Project::open(&store, &root, opts()).unwrap();
    let version: i64 = p
        .conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(version, super::known_version());
    assert_eq!(sorted_cache(&p), cache_before);
    assert_eq!(p.reconcile().unwrap().changed, 0, "nothing looks changed");
    let report = crate::fsck::fsck(&store, &Default::default()).unwrap();
    assert!(report.ok(), "{:?}", report.problems);
    match p.rewind(turn, RewindOptions::default()).unwrap() {
        RewindOutcome::Applied { .. } => {}
        other => panic!("not applied: {other:?}"),
    }
    for i in 0..300 {
        assert_eq!(
            fs::read(root.join(format!("d/f{i}.txt"))).unwrap(),
            small(i)
        );
    }
    assert_eq!(fs::read(root.join("empty")).unwrap(), b"");
    assert_eq!(fs::read(root.join("big.bin")).unwrap(), big);
}
