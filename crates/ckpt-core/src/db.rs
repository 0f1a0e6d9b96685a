//! The project database: schema, migrations, and connection setup.
//!
//! Migrations are append-only: each entry of `MIGRATIONS` runs once, in
//! order, and `PRAGMA user_version` records how many have run. A database
//! written by a newer ckpt (more migrations than we know) is refused.

use std::path::Path;

use rusqlite::Connection;

use crate::error::{Error, Result};

const MIGRATIONS: &[&str] = &[
    // 1: the initial schema.
    "
    CREATE TABLE meta (
        key   TEXT PRIMARY KEY,
        value BLOB NOT NULL
    );
    -- Content store. `data` holds the zstd-compressed bytes of small blobs;
    -- NULL means the blob is a file in the object directory.
    CREATE TABLE blobs (
        hash       BLOB PRIMARY KEY,
        size       INTEGER NOT NULL,
        csize      INTEGER NOT NULL,
        created_ns INTEGER NOT NULL,
        data       BLOB
    );
    -- Hash cache: the last captured state of every path in the tree, with
    -- the stat fields used to notice change. kind/mode/data/size encode a
    -- State (see state.rs). `racy` marks entries whose mtime was not older
    -- than the scan that recorded them: they are re-hashed next time.
    CREATE TABLE files (
        path     BLOB PRIMARY KEY,
        kind     INTEGER NOT NULL,
        mode     INTEGER NOT NULL,
        data     BLOB,
        size     INTEGER NOT NULL,
        mtime_ns INTEGER NOT NULL,
        ctime_ns INTEGER NOT NULL,
        ino      INTEGER NOT NULL,
        dev      INTEGER NOT NULL,
        racy     INTEGER NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE turns (
        id         INTEGER PRIMARY KEY,
        started_ns INTEGER NOT NULL,
        ended_ns   INTEGER,
        label      TEXT,
        agent      TEXT,
        session    TEXT,
        -- 'open' | 'closed' | 'rewound'
        status     TEXT NOT NULL,
        rewound_by INTEGER
    );
    -- pre_*: the path's state when the turn first changed it.
    -- post_*: its state at turn end (NULL kind while open).
    CREATE TABLE turn_entries (
        turn      INTEGER NOT NULL REFERENCES turns(id),
        path      BLOB NOT NULL,
        pre_kind  INTEGER NOT NULL,
        pre_mode  INTEGER NOT NULL,
        pre_data  BLOB,
        pre_size  INTEGER NOT NULL,
        post_kind INTEGER,
        post_mode INTEGER,
        post_data BLOB,
        post_size INTEGER,
        PRIMARY KEY (turn, path)
    ) WITHOUT ROWID;
    CREATE INDEX turn_entries_path ON turn_entries(path, turn);
    -- Rewind journal. A rewind is written here, with every action, before
    -- any file is touched. status: 'pending' (being applied), 'applied',
    -- 'failed', 'redoing', 'redone'.
    CREATE TABLE rewinds (
        id         INTEGER PRIMARY KEY,
        created_ns INTEGER NOT NULL,
        turn       INTEGER NOT NULL,
        turns      TEXT NOT NULL,
        status     TEXT NOT NULL
    );
    CREATE TABLE rewind_actions (
        rewind    INTEGER NOT NULL REFERENCES rewinds(id),
        seq       INTEGER NOT NULL,
        path      BLOB NOT NULL,
        cur_kind  INTEGER NOT NULL,
        cur_mode  INTEGER NOT NULL,
        cur_data  BLOB,
        cur_size  INTEGER NOT NULL,
        tgt_kind  INTEGER NOT NULL,
        tgt_mode  INTEGER NOT NULL,
        tgt_data  BLOB,
        tgt_size  INTEGER NOT NULL,
        PRIMARY KEY (rewind, seq)
    ) WITHOUT ROWID;
    ",
    // 2: blobs stored as a zstd delta from an earlier version (`base`), and
    // the length of that chain.
    "
    ALTER TABLE blobs ADD COLUMN base BLOB;
    ALTER TABLE blobs ADD COLUMN depth INTEGER NOT NULL DEFAULT 0;
    ",
    // 3: solid packs. Small whole blobs are compressed together, many to a
    // frame (`data`, `size` raw bytes); a packed blob's row names its pack and
    // where its bytes start in the pack's raw content (its `data` is NULL, so
    // a file blob is now `data IS NULL AND pack IS NULL`).
    "
    CREATE TABLE packs (
        id         INTEGER PRIMARY KEY,
        size       INTEGER NOT NULL,
        csize      INTEGER NOT NULL,
        created_ns INTEGER NOT NULL,
        data       BLOB NOT NULL
    );
    ALTER TABLE blobs ADD COLUMN pack INTEGER;
    ALTER TABLE blobs ADD COLUMN pack_offset INTEGER;
    CREATE INDEX blobs_pack ON blobs(pack) WHERE pack IS NOT NULL;
    ",
    // 4: finding the open turn (every turn boundary and capture batch asks)
    // without scanning every turn the project ever had.
    "
    CREATE INDEX turns_open ON turns(status) WHERE status = 'open';
    ",
    // 5: a redo is journaled as a plan of its own (the states it found, the
    // states it gives), naming the rewind it undoes; 'redoing' is only left
    // by older versions.
    "
    ALTER TABLE rewinds ADD COLUMN redoes INTEGER;
    ",
    // 6: the agent's transcript (conversation file) named by its hook, for
    // rewinding the conversation with the code.
    "
    ALTER TABLE turns ADD COLUMN transcript TEXT;
    ",
    // 7: the slop ledger (ledger.rs). An entry's row is never updated: its
    // status changes are appended to `ledger_events`, and `rewound` is
    // derived from its turn. `turn` names no foreign key, so gc may drop
    // the turn; line_start/line_end and span_text are NULL for a whole file.
    "
    CREATE TABLE ledger_entries (
        id         INTEGER PRIMARY KEY,
        bucket     TEXT NOT NULL,
        severity   TEXT NOT NULL,
        confidence REAL NOT NULL,
        owner      TEXT NOT NULL,
        path       BLOB NOT NULL,
        line_start INTEGER,
        line_end   INTEGER,
        span_text  TEXT,
        note       TEXT NOT NULL,
        turn       INTEGER,
        agent      TEXT,
        session    TEXT,
        created_ns INTEGER NOT NULL
    );
    CREATE INDEX ledger_entries_path ON ledger_entries(path);
    CREATE INDEX ledger_entries_turn ON ledger_entries(turn) WHERE turn IS NOT NULL;
    -- status: 'open' | 'resolved' | 'wont-fix'
    CREATE TABLE ledger_events (
        id     INTEGER PRIMARY KEY,
        entry  INTEGER NOT NULL REFERENCES ledger_entries(id),
        status TEXT NOT NULL,
        who    TEXT,
        why    TEXT,
        at_ns  INTEGER NOT NULL
    );
    CREATE INDEX ledger_events_entry ON ledger_events(entry, id);
    ",
    // 8: a journaled write of another tree's content as a new turn (a work
    // copy's apply) names that turn; `redo` never picks such an entry.
    "
    ALTER TABLE rewinds ADD COLUMN applies INTEGER;
    ",
    // 9: a change seen while several sessions had turns open is recorded in
    // each of them, marked shared; a rewind looks up the other sessions'
    // turns that ended after its turn started (by `turns_ended`, not a scan
    // of every turn).
    "
    ALTER TABLE turn_entries ADD COLUMN shared INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX turns_ended ON turns(ended_ns);
    ",
    // 10: where the agent's conversation stood just before the turn's prompt
    // (JSON of the client's session adapter, opaque to the core), so a
    // rewind can fork the conversation back to that point.
    "
    ALTER TABLE turns ADD COLUMN conversation TEXT;
    ",
    // 11: a path's hard links (`nlink`, 1 for the rows before it), and a
    // file's other names by inode, for the files with more than one link
    // only: a write through one name changes them all but is reported under
    // that name, and the common file (one link) and directories (always
    // two or more) cost this index nothing.
    "
    ALTER TABLE files ADD COLUMN nlink INTEGER NOT NULL DEFAULT 1;
    CREATE INDEX files_linked ON files(dev, ino) WHERE nlink > 1 AND kind = 1;
    ",
    // 12: what a rewind did in part, for `log`, `show` and `rewinds`:
    // `undone`, the turns it undid in whole or in part (for a redo: brought
    // back), JSON, NULL before it (read `turns` then); `scope`, the paths
    // it was limited to (`--path`), JSON, NULL for a whole rewind; `left`,
    // the paths of its turns it left as they were, with why, JSON
    // `[[path, reason]]`, NULL for none.
    "
    ALTER TABLE rewinds ADD COLUMN undone TEXT;
    ALTER TABLE rewinds ADD COLUMN scope TEXT;
    ALTER TABLE rewinds ADD COLUMN left TEXT;
    ",
    // 13: the running tool calls of an open turn's session, kept with the
    // turn so a tool window outlives a daemon restart; 0 once it is closed.
    "
    ALTER TABLE turns ADD COLUMN tools INTEGER NOT NULL DEFAULT 0;
    ",
    // 14: a turn the user pinned (`ckptctl pin`) is kept past retention,
    // and with it every later turn (gc.rs).
    "
    ALTER TABLE turns ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX turns_pinned ON turns(id) WHERE pinned = 1;
    ",
    // 15: what a turn did beyond the tree and how complete its capture is.
    // `turn_commands`: the shell commands its tool calls ran (as the
    // agents' hooks give them), classified when read (effects.rs), so a
    // better rule applies to old turns too. `turn_capture`: what the
    // daemon saw go wrong while the turn was open, once per kind
    // (`rescanned` after lost events, or a `GapKind`), with how often.
    "
    CREATE TABLE turn_commands (
        turn    INTEGER NOT NULL REFERENCES turns(id),
        seq     INTEGER NOT NULL,
        command TEXT NOT NULL,
        at_ns   INTEGER NOT NULL,
        PRIMARY KEY (turn, seq)
    ) WITHOUT ROWID;
    CREATE TABLE turn_capture (
        turn   INTEGER NOT NULL REFERENCES turns(id),
        kind   TEXT NOT NULL,
        detail TEXT NOT NULL,
        times  INTEGER NOT NULL,
        PRIMARY KEY (turn, kind)
    ) WITHOUT ROWID;
    ",
    // 16: the work copy whose apply made the turn, while that copy is kept
    // (`workcopy remove` clears it): gc keeps the turn, and every later one.
    "
    ALTER TABLE turns ADD COLUMN workcopy TEXT;
    ",
    // 17: fewer bytes per stored file (issue 35). `files` keeps ctime as
    // its distance from mtime. `blobs` is keyed by its
    // hash alone (WITHOUT ROWID: no second b-tree of the hash and a rowid),
    // and loses its `blobs_pack` index, which would now hold the hash again:
    // a pack's blobs are found by a scan (gc, fsck), and a single pack is
    // known empty from its own size (pack.rs). A packed blob's `created_ns`
    // is NULL, its pack's time, until it is freshened.
    "
    CREATE TABLE blobs17 (
        hash        BLOB PRIMARY KEY,
        size        INTEGER NOT NULL,
        csize       INTEGER NOT NULL,
        created_ns  INTEGER,
        data        BLOB,
        base        BLOB,
        depth       INTEGER NOT NULL DEFAULT 0,
        pack        INTEGER,
        pack_offset INTEGER
    ) WITHOUT ROWID;
    INSERT INTO blobs17
        SELECT b.hash, b.size, b.csize,
            CASE WHEN b.created_ns <= (SELECT p.created_ns FROM packs p WHERE p.id = b.pack)
                THEN NULL ELSE b.created_ns END,
            b.data, b.base, b.depth, b.pack, b.pack_offset
        FROM blobs b WHERE b.hash IS NOT NULL;
    DROP TABLE blobs;
    ALTER TABLE blobs17 RENAME TO blobs;
    -- A file's ctime as its distance from its mtime: 0 (no bytes) for
    -- nearly every file, as one write sets both. A time too far out to
    -- subtract becomes 0: that row's stat no longer matches, so the file
    -- is read again once.
    ALTER TABLE files RENAME COLUMN ctime_ns TO ctime_after_ns;
    UPDATE files SET ctime_after_ns = CASE
        WHEN mtime_ns BETWEEN -4611686018427387904 AND 4611686018427387904
            AND ctime_after_ns BETWEEN -4611686018427387904 AND 4611686018427387904
        THEN ctime_after_ns - mtime_ns ELSE 0 END;
    ",
    // 18: costs that grew with the project's history (issue 35). Which
    // turns each rewind limited by `--path` (or that left paths as they
    // were) undid, so a turn's detail finds the few that name it: every
    // turn-end read them all. Filled from `undone` (`turns` before
    // migration 12) as `rewind_record` reads it. And indexes for what
    // every rewind and redo looks up (scans of 0.8 and 2.4 ms at 8,000
    // rewinds and 32,000 turns) and `status` counts.
    "
    CREATE TABLE partly_rewound (
        turn   INTEGER NOT NULL REFERENCES turns(id),
        rewind INTEGER NOT NULL REFERENCES rewinds(id),
        PRIMARY KEY (turn, rewind)
    ) WITHOUT ROWID;
    INSERT OR IGNORE INTO partly_rewound (turn, rewind)
        SELECT j.value, r.id FROM rewinds r, json_each(CASE
            WHEN json_valid(r.undone) THEN r.undone
            WHEN json_valid(r.turns) THEN r.turns
            ELSE '[]' END) j
        WHERE (r.scope IS NOT NULL OR r.left IS NOT NULL) AND j.type = 'integer'
            AND j.value IN (SELECT id FROM turns);
    -- Every rewind and redo first looks for an unfinished one; a redo
    -- for the turns its rewind marked.
    CREATE INDEX rewinds_unfinished ON rewinds(id) WHERE status IN ('pending', 'redoing');
    CREATE INDEX turns_rewound ON turns(rewound_by) WHERE rewound_by IS NOT NULL;
    -- `status` and gc: the turns with a path not captured (kind 4), and
    -- the first turn a work copy holds.
    CREATE INDEX turns_workcopy ON turns(id) WHERE workcopy IS NOT NULL;
    CREATE INDEX turn_entries_skipped ON turn_entries(turn) WHERE pre_kind = 4 OR post_kind = 4;
    ",
];

/// The schema version this build writes and understands.
pub(crate) fn known_version() -> i64 {
    MIGRATIONS.len() as i64
}

/// WAL frames (pages) after which a commit checkpoints and truncates the WAL.
const WAL_TRUNCATE_PAGES: i32 = 256;

/// Opens (creating) the database at `path` and brings its schema up to date.
pub fn open(path: &Path) -> Result<Connection> {
    let mut conn = Connection::open(path)?;
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    // Set before the first table exists, so gc can hand freed pages back to
    // the filesystem (`PRAGMA incremental_vacuum`); a no-op later.
    conn.pragma_update(None, "auto_vacuum", "INCREMENTAL")?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    // NORMAL: a power loss may drop the last commits (never corrupt the
    // database), and commits cost no fsync. Captures lost that way are found
    // again by the next scan: the files are on disk and the pre-images were
    // committed before. The rewind journal is written with `durably`.
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    // Keep the WAL from staying as large as the biggest batch ever written
    // (a baseline): truncate it back after checkpoints.
    conn.pragma_update(None, "journal_size_limit", 4 << 20)?;
    // Replaces SQLite's autocheckpoint (every 1000 pages, the file left at
    // its size): once the WAL holds a few hundred pages, copy them into the
    // database and truncate the WAL to nothing, so a store at rest is not
    // carrying up to 4 MiB of WAL next to its data.
    conn.wal_hook(Some(checkpoint_truncate));
    conn.pragma_update(None, "foreign_keys", "ON")?;
    // Room for every statement the daemon prepares once (~30; rusqlite
    // keeps 16, and an evicted one is parsed again).
    conn.set_prepared_statement_cache_capacity(64);
    migrate(&mut conn)?;
    Ok(conn)
}

fn checkpoint_truncate(wal: &rusqlite::hooks::Wal, pages: std::ffi::c_int) -> rusqlite::Result<()> {
    checkpoint_past(wal, pages, WAL_TRUNCATE_PAGES)
}

/// Checkpoints and truncates the WAL once it holds `limit` pages.
fn checkpoint_past(
    wal: &rusqlite::hooks::Wal,
    pages: std::ffi::c_int,
    limit: i32,
) -> rusqlite::Result<()> {
    if pages >= limit {
        // The commit has happened; a checkpoint that cannot run now (a
        // reader in the way) runs after a later commit.
        if let Err(e) = wal.checkpoint_v2(rusqlite::hooks::CheckpointMode::TRUNCATE) {
            tracing::debug!("wal checkpoint deferred: {e}");
        }
    }
    Ok(())
}

/// WAL frames after which a commit checkpoints during [`bulk`]: a
/// scan's batches each touch pages all over the blob index, and a
/// checkpoint per batch copied (and synced) most of them every time.
const WAL_BULK_PAGES: i32 = 16 << 10;

/// Page cache during [`bulk`], in KiB (SQLite's default is 2 MiB): the
/// blob index of a million files is ~50 MiB, and each batch's random
/// inserts read back and spill most of a small cache.
const BULK_CACHE_KIB: i64 = 64 << 10;

fn checkpoint_bulk(wal: &rusqlite::hooks::Wal, pages: std::ffi::c_int) -> rusqlite::Result<()> {
    checkpoint_past(wal, pages, WAL_BULK_PAGES)
}

/// Puts `conn` in bulk mode for a run of many write batches (a full
/// scan): a larger page cache, and checkpoints every [`WAL_BULK_PAGES`]
/// instead of every few hundred. Returns what [`bulk_end`] restores.
pub(crate) fn bulk_begin(conn: &Connection) -> Result<i64> {
    bulk_with_cache(conn, BULK_CACHE_KIB)
}

/// Bulk mode with a page cache of `kib`.
fn bulk_with_cache(conn: &Connection, kib: i64) -> Result<i64> {
    let before: i64 = conn.pragma_query_value(None, "cache_size", |r| r.get(0))?;
    conn.pragma_update(None, "cache_size", -kib)?;
    conn.wal_hook(Some(checkpoint_bulk));
    BUDGET.update(None, kib << 10);
    Ok(before)
}

/// How much memory SQLite may keep across every database of the process
/// (see [`limit_memory`]): a base, and what the bulk modes in progress
/// were granted on top.
struct Budget {
    /// (base, granted), in bytes; base 0: no limit.
    bytes: std::sync::Mutex<(i64, i64)>,
    /// Puts a limit in force.
    apply: fn(i64),
}

static BUDGET: Budget = Budget::new(|limit| {
    // SAFETY: sets a process-wide setting; thread-safe in SQLite.
    unsafe { rusqlite::ffi::sqlite3_soft_heap_limit64(limit) };
});

impl Budget {
    const fn new(apply: fn(i64)) -> Budget {
        Budget {
            bytes: std::sync::Mutex::new((0, 0)),
            apply,
        }
    }

    /// Sets the base (when given) and adds `grant` bytes to what is
    /// granted (negative: gives them back); returns the limit now in
    /// force (0: none), applied under the lock, so in the updates' order.
    fn update(&self, base: Option<i64>, grant: i64) -> i64 {
        let mut b = self.bytes.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(base) = base {
            b.0 = base;
        }
        b.1 += grant;
        let limit = if b.0 > 0 { b.0 + b.1.max(0) } else { 0 };
        (self.apply)(limit);
        limit
    }
}

/// Keeps SQLite's memory across every database this process has open
/// (their page caches, above all) near `bytes`, plus what a scan or a
/// burst in progress asked for: past it, a page read takes the place of
/// the page least recently used by any of them, so the projects in use
/// keep their pages and idle ones give theirs up. Without it each
/// database's cache (2 MiB) stays as full as its project ever made it.
pub fn limit_memory(bytes: i64) {
    BUDGET.update(Some(bytes), 0);
}

/// Page cache during a burst of events, in KiB: the pages a 50,000-file
/// turn's batches come back to (cache rows, blob index, its entries)
/// without the bulk scan's 64 MiB, which would count against a turn's
/// memory.
const BURST_CACHE_KIB: i64 = 16 << 10;

/// Bulk mode for a burst of events (a turn rewriting thousands of files,
/// checked in many `check_paths` calls), with a smaller page cache than a
/// scan's. Ended by [`bulk_end`].
pub(crate) fn burst_begin(conn: &Connection) -> Result<i64> {
    bulk_with_cache(conn, BURST_CACHE_KIB)
}

/// Ends bulk mode: the cache shrinks back to `cache_size` and its memory
/// is freed, and the WAL is checkpointed and truncated, as after any
/// commit.
pub(crate) fn bulk_end(conn: &Connection, cache_size: i64) -> Result<()> {
    let t0 = std::time::Instant::now();
    conn.wal_hook(Some(checkpoint_truncate));
    let during: i64 = conn.pragma_query_value(None, "cache_size", |r| r.get(0))?;
    conn.pragma_update(None, "cache_size", cache_size)?;
    BUDGET.update(None, during.min(0) << 10);
    conn.release_memory()?;
    if let Err(e) = conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)") {
        tracing::debug!("wal checkpoint deferred: {e}");
    }
    tracing::debug!(took = ?t0.elapsed(), "bulk mode ended");
    Ok(())
}

/// Runs `f` in a transaction whose commit is durable before this returns
/// (the WAL is synced), whatever the connection's usual setting.
pub fn durably<T>(
    conn: &mut Connection,
    f: impl FnOnce(&rusqlite::Transaction) -> Result<T>,
) -> Result<T> {
    conn.pragma_update(None, "synchronous", "FULL")?;
    let result = (|| {
        let tx = conn.transaction()?;
        let out = f(&tx)?;
        tx.commit()?;
        Ok(out)
    })();
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    result
}

/// Runs `f` in one read transaction: a statement on its own takes and drops
/// SQLite's locks, a cost per path when a loop looks up thousands. Inside
/// a transaction already, `f` runs in that one.
pub fn reading<T>(conn: &Connection, f: impl FnOnce() -> Result<T>) -> Result<T> {
    in_transaction(conn, rusqlite::TransactionBehavior::Deferred, f)
}

/// Runs `f` in one write transaction, committed if it succeeds (rolled
/// back if not): a statement on its own takes and drops SQLite's locks
/// (two to four `fcntl` calls, and the WAL index read again). With 50
/// clients a hook call made 24 `fcntl` calls, 17 with each turn boundary
/// in one transaction. Inside a transaction already, `f` runs in that one.
pub(crate) fn writing<T>(conn: &Connection, f: impl FnOnce() -> Result<T>) -> Result<T> {
    in_transaction(conn, rusqlite::TransactionBehavior::Immediate, f)
}

fn in_transaction<T>(
    conn: &Connection,
    behavior: rusqlite::TransactionBehavior,
    f: impl FnOnce() -> Result<T>,
) -> Result<T> {
    if !conn.is_autocommit() {
        return f();
    }
    let tx = rusqlite::Transaction::new_unchecked(conn, behavior)?;
    let out = f()?;
    tx.commit()?;
    Ok(out)
}

fn migrate(conn: &mut Connection) -> Result<()> {
    let known = MIGRATIONS.len() as i64;
    let found: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if found > known {
        return Err(Error::SchemaTooNew { found, known });
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(found as usize) {
        let tx = conn.transaction()?;
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", (i + 1) as i64)?;
        tx.commit()?;
    }
    Ok(())
}

/// SQLite's plan for `sql` with `params` on a new database, its steps
/// joined by "; ": for tests that a lookup uses its index.
#[cfg(test)]
pub(crate) fn query_plan(sql: &str, params: impl rusqlite::Params) -> String {
    let dir = tempfile::tempdir().unwrap();
    let conn = open(&dir.path().join("db")).unwrap();
    let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
    let steps: Vec<String> = stmt
        .query_map(params, |r| r.get(3))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    steps.join("; ")
}

#[cfg(test)]
mod migrate17_tests;
#[cfg(test)]
mod migrate18_tests;

#[cfg(test)]
mod tests {
    use super::*;

    /// Bulk mode (a scan's, an event burst's) holds the WAL past the usual
    /// checkpoint, and its end gives the cache its old size back and
    /// leaves no WAL behind.
    #[test]
    fn bulk_mode_checkpoints_late_and_ends_as_it_began() {
        type Begin = fn(&Connection) -> Result<i64>;
        for (begin, kib) in [
            (bulk_begin as Begin, BULK_CACHE_KIB),
            (burst_begin as Begin, BURST_CACHE_KIB),
        ] {
            bulk_mode_case(begin, kib);
        }
    }

    fn bulk_mode_case(begin: fn(&Connection) -> Result<i64>, kib: i64) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.sqlite");
        let conn = open(&path).unwrap();
        let wal = dir.path().join("db.sqlite-wal");
        let wal_len = || std::fs::metadata(&wal).map_or(0, |m| m.len());
        let cache = |c: &Connection| -> i64 {
            c.pragma_query_value(None, "cache_size", |r| r.get(0))
                .unwrap()
        };
        let before = cache(&conn);
        let was = begin(&conn).unwrap();
        assert_eq!(cache(&conn), -kib);
        let row = vec![7u8; 3000];
        for i in 0..2 * WAL_TRUNCATE_PAGES {
            conn.execute(
                "INSERT INTO meta (key, value) VALUES (?1, ?2)",
                rusqlite::params![i.to_string(), row],
            )
            .unwrap();
        }
        assert!(
            wal_len() > (WAL_TRUNCATE_PAGES as u64) * 4096,
            "no checkpoint at the usual size"
        );
        bulk_end(&conn, was).unwrap();
        assert_eq!(cache(&conn), before);
        assert_eq!(wal_len(), 0, "checkpointed and truncated");
    }

    /// A bulk mode's cache is granted on top of the budget while it lasts;
    /// without a base there is no limit.
    #[test]
    fn the_memory_budget_grows_by_what_bulk_modes_hold() {
        let b = Budget::new(|_| {});
        assert_eq!(b.update(None, 64 << 20), 0, "no base, no limit");
        assert_eq!(b.update(Some(16 << 20), 0), 80 << 20);
        assert_eq!(b.update(None, 16 << 20), 96 << 20);
        assert_eq!(b.update(None, -(64 << 20)), 32 << 20);
        assert_eq!(b.update(None, -(16 << 20)), 16 << 20);
        assert_eq!(b.update(Some(0), 0), 0);
    }

    #[test]
    fn migrates_once_and_refuses_newer_schema() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.sqlite");
        drop(open(&path).unwrap());
        // Reopening runs nothing again.
        let conn = open(&path).unwrap();
        let v: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(v, MIGRATIONS.len() as i64);
        let vacuum: i64 = conn
            .pragma_query_value(None, "auto_vacuum", |r| r.get(0))
            .unwrap();
        assert_eq!(
            vacuum, 2,
            "incremental auto_vacuum, so gc can shrink the file"
        );
        // A commit of many pages leaves the WAL empty.
        conn.execute_batch(
            "BEGIN; INSERT INTO meta (key, value) VALUES ('big', zeroblob(4 << 20)); COMMIT;",
        )
        .unwrap();
        let wal = path.with_extension("sqlite-wal");
        assert_eq!(std::fs::metadata(&wal).unwrap().len(), 0, "WAL truncated");
        conn.pragma_update(None, "user_version", 99).unwrap();
        drop(conn);
        assert!(matches!(
            open(&path),
            Err(Error::SchemaTooNew { found: 99, .. })
        ));
    }
}
