//! `limit_memory` bounds SQLite's memory across every database the
//! process has open, not each one's: with a budget, reading eight databases
//! through keeps about the budget; without, each keeps its own cache full.
//! (A binary of its own: the budget is process-wide.)

use rusqlite::Connection;

/// Eight databases of ~3 MiB each, every page read once more.
fn read_through(conns: &[Connection]) -> i64 {
    for c in conns {
        let n: i64 = c
            .query_row("SELECT count(*) FROM t WHERE length(v) > 0", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(n, 3_000);
    }
    // SAFETY: reads a counter.
    unsafe { rusqlite::ffi::sqlite3_memory_used() }
}

#[test]
fn one_budget_bounds_the_page_caches_of_every_database() {
    let dir = tempfile::tempdir().unwrap();
    let conns: Vec<Connection> = (0..8)
        .map(|i| {
            let c = Connection::open(dir.path().join(format!("{i}.db"))).unwrap();
            c.execute_batch("CREATE TABLE t (v BLOB); BEGIN").unwrap();
            for _ in 0..3_000 {
                c.execute("INSERT INTO t VALUES (randomblob(1000))", [])
                    .unwrap();
            }
            c.execute_batch("COMMIT").unwrap();
            c
        })
        .collect();
    let unbounded = read_through(&conns);
    assert!(
        unbounded > 12 << 20,
        "each database keeps its own 2 MiB cache: {unbounded} B"
    );
    ckpt_core::limit_memory(4 << 20);
    let bounded = read_through(&conns);
    assert!(
        bounded < 5 << 20,
        "SQLite holds {bounded} B across the databases with a 4 MiB budget"
    );
    ckpt_core::limit_memory(0);
    let again = read_through(&conns);
    assert!(again > 12 << 20, "no budget, no bound: {again} B");
}
