//! Checking a project's store without changing it.
//!
//! fsck only reads: it opens its own read-only connection and does every
//! database read in one read transaction (one WAL snapshot), so a capture
//! running meanwhile is not blocked and is never seen half-done; it never
//! deletes or repairs what it finds. Object files live outside that
//! snapshot: one that seems missing, or named by no row, is looked up again
//! once the snapshot ends (gc may have just removed its row, a capture may
//! have just committed it) and reported only if that still holds.
//!
//! What is checked: SQLite's own `quick_check`; every blob decodes and
//! hashes to its name, in every form the store keeps (packs, inline rows,
//! object files, delta chains: `fsck/blobs.rs`); every blob that the hash
//! cache, a turn entry or the rewind journal names exists; the journal and
//! the turns agree with each other. Files in `objects/` that no row names
//! are warnings, not problems: gc removes them.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags, OptionalExtension};

use crate::db;
use crate::error::{Error, Result};
use crate::project::{DB_FILE, OBJECTS_DIR};
use crate::relpath::RelPath;
use crate::state::{Hash, State};
use crate::store::BlobStore;

mod blobs;
mod journal;
mod users;

/// How fsck runs.
#[derive(Clone, Debug)]
pub struct FsckOptions {
    /// Problems (and, apart, warnings) listed at most; more are only
    /// counted, so a badly damaged store still gets a reply of sane size.
    pub max_listed: usize,
}

impl Default for FsckOptions {
    fn default() -> Self {
        FsckOptions { max_listed: 1000 }
    }
}

/// What is wrong (or, for warnings, odd) in a store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FindingKind {
    /// SQLite's `quick_check` failed, or a query failed on a damaged database.
    Database,
    /// A file of the store could not be read (not a missing object file).
    Unreadable,
    /// A row of `blobs` whose name is not a SHA-256.
    BadBlobRow,
    /// A blob's bytes do not decode, or do not hash to its name.
    CorruptBlob,
    /// A pack does not decode.
    CorruptPack,
    /// A packed blob points into a pack that does not exist.
    MissingPack,
    /// A packed blob's offset and size lie outside its pack.
    BlobOutsidePack,
    /// The object file a blob row says it is stored in is missing.
    MissingObject,
    /// A delta's base is missing, or the depths along its chain disagree.
    BrokenDelta,
    /// A cache row, turn entry or rewind action names a blob the store lacks.
    MissingBlob,
    /// A row that does not decode: a state, a path, a rewind's turn list.
    UndecodableRow,
    /// The rewind journal: an unknown status, several unfinished rewinds,
    /// actions of a rewind that is not there.
    BadJournal,
    /// A turn: an unknown status, several open, marked rewound by a rewind
    /// that does not say so, an entry of a turn that is not there.
    BadTurn,
    /// Warning: an object file no row names (gc removes it).
    UnnamedObject,
    /// Warning: a temp file left by an interrupted write (gc removes it).
    TempFile,
    /// Warning: a file in `objects/` that ckpt never writes (left alone).
    StrayFile,
    /// Warning: a pack no blob points into (gc removes it).
    UnusedPack,
}

impl FindingKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FindingKind::Database => "database",
            FindingKind::Unreadable => "unreadable",
            FindingKind::BadBlobRow => "bad_blob_row",
            FindingKind::CorruptBlob => "corrupt_blob",
            FindingKind::CorruptPack => "corrupt_pack",
            FindingKind::MissingPack => "missing_pack",
            FindingKind::BlobOutsidePack => "blob_outside_pack",
            FindingKind::MissingObject => "missing_object",
            FindingKind::BrokenDelta => "broken_delta",
            FindingKind::MissingBlob => "missing_blob",
            FindingKind::UndecodableRow => "undecodable_row",
            FindingKind::BadJournal => "bad_journal",
            FindingKind::BadTurn => "bad_turn",
            FindingKind::UnnamedObject => "unnamed_object",
            FindingKind::TempFile => "temp_file",
            FindingKind::StrayFile => "stray_file",
            FindingKind::UnusedPack => "unused_pack",
        }
    }
}

/// One finding: what kind, about what (`blob <hex>`, `pack 3`,
/// `cache src/a.rs`, `turn 2 src/a.rs`, `rewind 1 action 4 src/a.rs`,
/// `objects/ab/…`), and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub kind: FindingKind,
    pub subject: String,
    pub detail: String,
}

/// How much was looked at.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FsckCounts {
    /// Blob rows whose content was decoded and hashed (or found unreadable).
    pub blobs: u64,
    pub packs: u64,
    /// Blobs stored as object files, read and verified.
    pub objects: u64,
    pub cache_rows: u64,
    pub turn_entries: u64,
    pub rewind_actions: u64,
}

#[derive(Clone, Debug, Default)]
pub struct FsckReport {
    /// The project root the store records.
    pub root: PathBuf,
    pub checked: FsckCounts,
    pub problems: Vec<Finding>,
    pub warnings: Vec<Finding>,
    /// Found beyond [`FsckOptions::max_listed`]: counted, not listed.
    pub problems_unlisted: u64,
    pub warnings_unlisted: u64,
}

impl FsckReport {
    /// No problem found (warnings allowed).
    pub fn ok(&self) -> bool {
        self.problems.is_empty() && self.problems_unlisted == 0
    }
}

/// Checks the store in `store_dir` (its `ckpt.db` and `objects/`). Fails
/// only when the database cannot be opened at all; everything found inside
/// is in the report.
pub fn fsck(store_dir: &Path, opts: &FsckOptions) -> Result<FsckReport> {
    let db_path = store_dir.join(DB_FILE);
    if !db_path.is_file() {
        return Err(Error::BadInput(format!(
            "{} holds no ckpt store (no {DB_FILE})",
            store_dir.display()
        )));
    }
    let conn = Connection::open_with_flags(
        &db_path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    // A writer's commit holds the WAL index briefly; wait for it.
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    let found: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    let known = db::known_version();
    if found > known {
        return Err(Error::SchemaTooNew { found, known });
    }
    let mut c = Checker {
        conn: &conn,
        store: BlobStore::reader(&store_dir.join(OBJECTS_DIR)),
        store_dir,
        max: opts.max_listed,
        report: FsckReport::default(),
        later: Vec::new(),
    };
    // One snapshot for every database read below.
    conn.execute_batch("BEGIN")?;
    c.section("project root", Checker::root);
    c.section("quick_check", Checker::quick_check);
    c.section("blob rows", blobs::rows);
    c.section("packs", blobs::packs);
    c.section("blobs outside packs", blobs::unpacked);
    c.section("object directory", blobs::object_dir);
    c.section("hash cache", Checker::cache);
    c.section("turns", journal::turns);
    c.section("turn entries", journal::turn_entries);
    c.section("rewinds", journal::rewinds);
    c.section("rewind actions", journal::actions);
    // SQLite ends the transaction itself on some errors (a corrupt page),
    // and ending it can fail on a damaged database: a finding, not a
    // reason to drop the report.
    if !conn.is_autocommit() {
        if let Err(e) = conn.execute_batch("COMMIT") {
            c.problem(
                FindingKind::Database,
                "database",
                format!("ending the read transaction: {e}"),
            );
            let _ = conn.execute_batch("ROLLBACK"); // best effort; the connection is dropped next
        }
    }
    c.section("object files, again", blobs::confirm);
    // After the confirmation, which adds the missing object files; naming
    // who uses a blob needs no snapshot.
    c.section("users of damaged blobs", users::name_users);
    Ok(c.report)
}

/// A finding about an object file, to confirm outside the snapshot.
pub(crate) enum Later {
    /// A problem unless the blob's row is gone or its file is back.
    Missing(Hash, Finding),
    /// A warning unless a row names the file now.
    Unnamed(Hash, Finding),
}

pub(crate) struct Checker<'a> {
    conn: &'a Connection,
    store: BlobStore,
    store_dir: &'a Path,
    max: usize,
    report: FsckReport,
    later: Vec<Later>,
}

impl Checker<'_> {
    /// Runs one part of the check; a failure of the part itself (a query
    /// on a damaged database, an unreadable directory) is a finding too,
    /// and the next part still runs.
    fn section(&mut self, what: &str, part: impl FnOnce(&mut Self) -> Result<()>) {
        if let Err(e) = part(self) {
            let kind = match e {
                Error::Db(_) => FindingKind::Database,
                _ => FindingKind::Unreadable,
            };
            self.problem(kind, what, format!("checking {what} failed: {e}"));
        }
    }

    fn problem(&mut self, kind: FindingKind, subject: impl Into<String>, detail: String) {
        let f = Finding {
            kind,
            subject: subject.into(),
            detail,
        };
        push(
            &mut self.report.problems,
            &mut self.report.problems_unlisted,
            self.max,
            f,
        );
    }

    fn warning(&mut self, kind: FindingKind, subject: impl Into<String>, detail: String) {
        let f = Finding {
            kind,
            subject: subject.into(),
            detail,
        };
        push(
            &mut self.report.warnings,
            &mut self.report.warnings_unlisted,
            self.max,
            f,
        );
    }

    /// Keeps `l` for after the snapshot (as many as could be listed).
    fn later(&mut self, l: Later) {
        if self.later.len() < self.max.saturating_mul(2) {
            self.later.push(l);
        } else if matches!(l, Later::Missing(..)) {
            self.report.problems_unlisted += 1;
        } else {
            self.report.warnings_unlisted += 1;
        }
    }

    fn root(&mut self) -> Result<()> {
        use std::os::unix::ffi::OsStrExt;
        let root: Option<Vec<u8>> = self
            .conn
            .query_row("SELECT value FROM meta WHERE key = 'root'", [], |r| {
                r.get(0)
            })
            .optional()?;
        match root {
            Some(r) => self.report.root = PathBuf::from(std::ffi::OsStr::from_bytes(&r)),
            None => self.problem(
                FindingKind::Database,
                "meta",
                "the store records no project root".into(),
            ),
        }
        Ok(())
    }

    fn quick_check(&mut self) -> Result<()> {
        let mut stmt = self.conn.prepare("PRAGMA quick_check")?;
        let lines: Vec<String> = stmt
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        if lines != ["ok"] {
            for line in lines {
                self.problem(
                    FindingKind::Database,
                    "database",
                    format!("quick_check: {line}"),
                );
            }
        }
        Ok(())
    }

    /// Every hash cache row decodes, and a file names a stored blob.
    fn cache(&mut self) -> Result<()> {
        let mut stmt = self.conn.prepare(
            "SELECT f.path, f.kind, f.mode, f.data, f.size,
                    f.kind = 1 AND NOT EXISTS (SELECT 1 FROM blobs b WHERE b.hash = f.data)
             FROM files f",
        )?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            self.report.checked.cache_rows += 1;
            let path: Vec<u8> = r.get(0)?;
            let subject = format!("cache {}", lossy(&path));
            let state = crate::state::from_row(r, 1)?;
            let missing: bool = r.get(5)?;
            self.row_path(&subject, &path);
            self.named_state(&subject, "cached state", state.as_ref(), missing);
        }
        Ok(())
    }

    /// A path from the database must be a valid project path.
    fn row_path(&mut self, subject: &str, path: &[u8]) {
        if let Err(e) = RelPath::new(path.to_vec()) {
            self.problem(
                FindingKind::UndecodableRow,
                subject,
                format!("bad path: {e}"),
            );
        }
    }

    /// A state read from a row (`None`: it did not decode) whose blob, when
    /// it names one, is `missing` from the store.
    fn named_state(&mut self, subject: &str, what: &str, state: Option<&State>, missing: bool) {
        match state {
            None => self.problem(
                FindingKind::UndecodableRow,
                subject,
                format!("its {what} does not decode"),
            ),
            Some(State::File { hash, .. }) if missing => self.problem(
                FindingKind::MissingBlob,
                subject,
                format!("its {what} names blob {hash}, which is not in the store"),
            ),
            Some(_) => {}
        }
    }
}

fn push(list: &mut Vec<Finding>, unlisted: &mut u64, max: usize, f: Finding) {
    if list.len() < max {
        list.push(f);
    } else {
        *unlisted += 1;
    }
}

/// Raw path or name bytes for a message.
pub(crate) fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
