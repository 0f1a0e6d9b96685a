//! Errors of the core library. Every IO error names the path and the action.

use std::path::{Path, PathBuf};

/// What went wrong in a core operation.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("database: {0}")]
    Db(#[from] rusqlite::Error),
    #[error(transparent)]
    UnsafePath(#[from] ckpt_types::UnsafePath),
    #[error("blob {hash} is corrupt: {reason}")]
    CorruptBlob { hash: String, reason: String },
    #[error("blob {0} is missing from the store")]
    MissingBlob(String),
    #[error("no turn {0} in this project")]
    UnknownTurn(i64),
    #[error("turn {0} was already rewound")]
    TurnRewound(i64),
    #[error("no turn is open")]
    NoOpenTurn,
    #[error("nothing to redo")]
    NothingToRedo,
    #[error("turn {0} is the last live turn of its session: nothing after it to rewind")]
    NothingAfter(i64),
    #[error("store {store} belongs to {found}, not {expected}")]
    WrongProject {
        store: PathBuf,
        found: PathBuf,
        expected: PathBuf,
    },
    #[error("database schema version {found} is newer than this ckpt understands ({known})")]
    SchemaTooNew { found: i64, known: i64 },
    /// The caller's input cannot be acted on (a bad range, an empty note, a
    /// path that is not there): the caller fixes it.
    #[error("{0}")]
    BadInput(String),
    /// The store is damaged: a row that does not decode, a missing or
    /// mis-hashed blob. `ckptctl fsck` says more.
    #[error("{0}")]
    Corrupt(String),
    /// Something the core itself guarantees did not hold: a bug.
    #[error("{0}")]
    Invariant(String),
    /// A test hook's simulated crash (`test-hooks` feature only).
    #[cfg(any(test, feature = "test-hooks"))]
    #[error("injected failure after {0} operations")]
    Injected(usize),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A ledger value misspelled by the caller.
impl From<ckpt_types::ledger::Unknown> for Error {
    fn from(e: ckpt_types::ledger::Unknown) -> Self {
        Error::BadInput(e.0)
    }
}

/// Who has to act on an [`Error`]: the caller, whoever repairs the store,
/// whoever fixes the filesystem, or whoever fixes ckpt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The request cannot be acted on as asked.
    BadInput,
    /// The store is damaged (a corrupt row, a missing blob, a bad hash).
    Corrupt,
    /// A filesystem or database operation failed.
    Io,
    /// The store is not this project's, or is too new for this ckpt.
    Unusable,
    /// An invariant of the core broke: a bug.
    Invariant,
}

impl Error {
    /// This error's kind: the one place each variant gets one.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::BadInput(_)
            | Error::UnsafePath(_)
            | Error::UnknownTurn(_)
            | Error::TurnRewound(_)
            | Error::NoOpenTurn
            | Error::NothingToRedo
            | Error::NothingAfter(_) => ErrorKind::BadInput,
            Error::Corrupt(_) | Error::CorruptBlob { .. } | Error::MissingBlob(_) => {
                ErrorKind::Corrupt
            }
            Error::Db(e) if db_says_corrupt(e) => ErrorKind::Corrupt,
            Error::Io { .. } | Error::Db(_) => ErrorKind::Io,
            Error::WrongProject { .. } | Error::SchemaTooNew { .. } => ErrorKind::Unusable,
            Error::Invariant(_) => ErrorKind::Invariant,
            #[cfg(any(test, feature = "test-hooks"))]
            Error::Injected(_) => ErrorKind::Invariant,
        }
    }

    /// Whether a test hook simulated a crash here: everything is left as a
    /// dead process would leave it, for recovery to finish.
    #[cfg(any(test, feature = "test-hooks"))]
    pub(crate) fn is_injected(&self) -> bool {
        matches!(self, Error::Injected(_))
    }

    /// Without `test-hooks` no hook can.
    #[cfg(not(any(test, feature = "test-hooks")))]
    pub(crate) fn is_injected(&self) -> bool {
        false
    }

    /// Whether a filesystem ran out of room: `ENOSPC` or `EDQUOT` from a
    /// write, or SQLite's `SQLITE_FULL` (its name for the same). Such a
    /// failure passes once space is freed; nothing stored before it is lost.
    pub fn is_disk_full(&self) -> bool {
        match self {
            Error::Io { source, .. } => {
                matches!(source.raw_os_error(), Some(libc::ENOSPC | libc::EDQUOT))
                    || source.kind() == std::io::ErrorKind::StorageFull
            }
            Error::Db(rusqlite::Error::SqliteFailure(e, _)) => {
                e.code == rusqlite::ErrorCode::DiskFull
            }
            _ => false,
        }
    }
}

/// Whether SQLite found the database damaged, or a row held a value its
/// column cannot hold.
fn db_says_corrupt(e: &rusqlite::Error) -> bool {
    use rusqlite::Error as E;
    match e {
        E::SqliteFailure(f, _) => matches!(
            f.code,
            rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase
        ),
        E::FromSqlConversionFailure(..)
        | E::IntegralValueOutOfRange(..)
        | E::InvalidColumnType(..)
        | E::Utf8Error(..) => true,
        _ => false,
    }
}

/// Attaches the action and path to an IO error: the one way the core builds
/// an [`Error::Io`].
pub(crate) trait IoContext<T> {
    fn ctx(self, action: &'static str, path: impl Into<PathBuf>) -> Result<T>;

    /// For a path inside a project: names it as `root/rel`, joined only when
    /// there is an error (the capture and rewind loops call this per path).
    fn ctx_in(self, action: &'static str, root: &Path, rel: impl AsRef<Path>) -> Result<T>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn ctx(self, action: &'static str, path: impl Into<PathBuf>) -> Result<T> {
        self.map_err(|source| Error::Io {
            action,
            path: path.into(),
            source,
        })
    }

    fn ctx_in(self, action: &'static str, root: &Path, rel: impl AsRef<Path>) -> Result<T> {
        self.map_err(|source| Error::Io {
            action,
            path: root.join(rel),
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use crate::model::TurnMeta;
    use crate::project::tests::reconciled;
    use crate::project::{Project, DB_FILE};

    /// A project whose turn 1 changed `f.txt`, and a second connection to
    /// its database for damaging rows behind the project's back.
    fn one_turn() -> (tempfile::TempDir, Project, rusqlite::Connection) {
        let (tmp, root, mut p) = reconciled(&[("f.txt", "a\n")]);
        p.turn_start(TurnMeta::default()).unwrap();
        std::fs::write(root.join("f.txt"), "b\n").unwrap();
        p.reconcile().unwrap();
        p.turn_end().unwrap();
        let db = rusqlite::Connection::open(tmp.path().join("store").join(DB_FILE)).unwrap();
        (tmp, p, db)
    }

    #[test]
    fn a_range_that_ends_before_it_starts_is_bad_input() {
        let (_tmp, p, _db) = one_turn();
        let e = p.export_range(2, 1).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::BadInput, "{e}");
    }

    #[test]
    fn a_turn_entry_that_does_not_decode_is_corrupt() {
        let (_tmp, p, db) = one_turn();
        db.execute("UPDATE turn_entries SET pre_kind = 99", [])
            .unwrap();
        let e = p.show(1).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
    }

    #[test]
    fn a_stored_path_that_leaves_the_root_is_corrupt_not_unsafe_input() {
        let (_tmp, p, db) = one_turn();
        db.execute("UPDATE turn_entries SET path = CAST('../x' AS BLOB)", [])
            .unwrap();
        let e = p.show(1).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
    }

    #[test]
    fn a_value_its_column_cannot_hold_is_corrupt() {
        let (_tmp, p, db) = one_turn();
        db.execute("UPDATE turns SET started_ns = 'yesterday'", [])
            .unwrap();
        let e = p.show(1).unwrap_err();
        assert!(matches!(e, Error::Db(_)), "{e:?}");
        assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
    }

    #[test]
    fn a_store_directory_that_cannot_be_made_is_io() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("file");
        std::fs::write(&file, "").unwrap();
        let opened = Project::open(&file.join("store"), tmp.path(), Default::default());
        let e = opened.err().expect("a store below a file cannot be made");
        assert_eq!(e.kind(), ErrorKind::Io, "{e}");
    }

    #[test]
    fn gc_inside_a_transaction_is_a_broken_invariant() {
        let f = crate::store::tests::fixture(0);
        f.conn.execute_batch("BEGIN").unwrap();
        let e = f.store.gc(&f.conn, &HashSet::new(), 0, 0).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Invariant, "{e}");
        f.conn.execute_batch("ROLLBACK").unwrap();
    }
}
