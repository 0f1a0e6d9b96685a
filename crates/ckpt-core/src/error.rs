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
    #[error("unsafe path {path:?}: {reason}")]
    UnsafePath { path: String, reason: &'static str },
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
    #[error("store {store} belongs to {found}, not {expected}")]
    WrongProject {
        store: PathBuf,
        found: PathBuf,
        expected: PathBuf,
    },
    #[error("database schema version {found} is newer than this ckpt understands ({known})")]
    SchemaTooNew { found: i64, known: i64 },
    #[error("{0}")]
    Invalid(String),
    /// A test hook's simulated crash (`test-hooks` feature only).
    #[cfg(any(test, feature = "test-hooks"))]
    #[error("injected failure after {0} operations")]
    Injected(usize),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
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
