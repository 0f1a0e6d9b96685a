//! `Project`: one watched tree, its database and blob store. The public entry
//! point of the core.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rusqlite::{Connection, OptionalExtension};

use crate::confined::Root;
use crate::db;
use crate::error::{Error, IoContext, Result};
use crate::history;
use crate::model::*;
use crate::relpath::RelPath;
use crate::scan::Excludes;
use crate::state::Hash;
use crate::store::BlobStore;

/// The database file inside a project's store directory.
pub const DB_FILE: &str = "ckpt.db";
/// The directory of large blobs inside a project's store directory.
pub const OBJECTS_DIR: &str = "objects";

pub(crate) use ckpt_types::now_ns;

/// A project tree and its store. Not `Sync`: one caller at a time (the daemon
/// serializes access per project).
pub struct Project {
    pub(crate) root: PathBuf,
    /// Shared so that a rewind's one tree writer (`Dirs`, which borrows
    /// it) can outlive calls that take the whole project.
    pub(crate) root_fs: Arc<Root>,
    pub(crate) conn: Connection,
    pub(crate) store: BlobStore,
    pub(crate) opts: Options,
    pub(crate) excludes: Excludes,
}

impl Project {
    /// Opens the store in `store_dir` for the tree at `root`, creating both
    /// the store and its record of `root` the first time. Refuses a store
    /// that belongs to another root. `root` should be canonical.
    pub fn open(store_dir: &Path, root: &Path, opts: Options) -> Result<Project> {
        Self::open_inner(store_dir, Some(root), opts)
    }

    /// Opens an existing store, reading the root it belongs to.
    pub fn open_existing(store_dir: &Path, opts: Options) -> Result<Project> {
        Self::open_inner(store_dir, None, opts)
    }

    fn open_inner(store_dir: &Path, root: Option<&Path>, opts: Options) -> Result<Project> {
        use std::os::unix::ffi::OsStrExt;
        if root.is_some() {
            std::fs::create_dir_all(store_dir).ctx("create store directory", store_dir)?;
        } else if !store_dir.join(DB_FILE).is_file() {
            return Err(Error::Invalid(format!(
                "{} holds no ckpt store",
                store_dir.display()
            )));
        }
        let conn = db::open(&store_dir.join(DB_FILE))?;
        let recorded: Option<Vec<u8>> = conn
            .query_row("SELECT value FROM meta WHERE key = 'root'", [], |r| {
                r.get(0)
            })
            .optional()?;
        let root = match (root, recorded) {
            (Some(root), Some(found)) => {
                let found = PathBuf::from(std::ffi::OsStr::from_bytes(&found));
                if found != root {
                    return Err(Error::WrongProject {
                        store: store_dir.to_path_buf(),
                        found,
                        expected: root.to_path_buf(),
                    });
                }
                found
            }
            (Some(root), None) => {
                conn.execute(
                    "INSERT INTO meta (key, value) VALUES ('root', ?1)",
                    [root.as_os_str().as_bytes()],
                )?;
                root.to_path_buf()
            }
            (None, Some(found)) => PathBuf::from(std::ffi::OsStr::from_bytes(&found)),
            (None, None) => {
                return Err(Error::Invalid(format!(
                    "{} records no project root",
                    store_dir.display()
                )))
            }
        };
        let root_fs = Arc::new(Root::open(&root).ctx("open project root", &root)?);
        let store = BlobStore::open(
            &store_dir.join(OBJECTS_DIR),
            opts.compression_level,
            opts.inline_max,
        )?;
        let excludes = Excludes::load(&root, &opts.extra_excludes);
        Ok(Project {
            root,
            root_fs,
            conn,
            store,
            opts,
            excludes,
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The device and inode of the root directory this project has open
    /// (held open, so no other directory can take that inode meanwhile).
    pub fn root_identity(&self) -> Result<(u64, u64)> {
        self.root_fs.identity().ctx("stat project root", &self.root)
    }

    /// Opens the root directory again, after it was deleted (or moved) and
    /// made again at the same path: the old handle names the old directory.
    pub fn reopen_root(&mut self) -> Result<()> {
        let root = &self.root;
        self.root_fs = Arc::new(Root::open(root).ctx("open project root", root)?);
        self.excludes = Excludes::load(root, &self.opts.extra_excludes);
        Ok(())
    }

    /// Whether a path is outside capture: `.git`, excluded directories,
    /// barrier cookies and temp files, `.ckptignore` matches. The daemon may
    /// drop events for such paths; `check_paths` ignores them anyway.
    pub fn is_excluded(&self, path: &RelPath, is_dir: bool) -> bool {
        self.excludes.is_excluded(path, is_dir)
    }

    /// Every path present whose content is not captured (the `skipped`
    /// of [`Project::status`]), with the reason, in path order.
    pub fn not_captured(&self) -> Result<Vec<(RelPath, String)>> {
        let mut stmt = self.conn.prepare(
            "SELECT path, kind, mode, data, size FROM files WHERE kind = 4 ORDER BY path",
        )?;
        let mut rows = stmt.query([])?;
        let mut out = Vec::new();
        while let Some(r) = rows.next()? {
            let path: Vec<u8> = r.get(0)?;
            let reason = match crate::state::State::from_row(r, 1)? {
                Some(crate::state::State::Skipped { reason }) => reason,
                _ => "not captured".to_string(),
            };
            if let Ok(path) = RelPath::new(path) {
                out.push((path, reason));
            }
        }
        Ok(out)
    }

    pub fn status(&self) -> Result<ProjectStatus> {
        let (entries, skipped): (i64, i64) = self.conn.query_row(
            "SELECT count(*), coalesce(sum(kind = 4), 0) FROM files",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        let turns = history::count_turns(&self.conn)?;
        let (blobs, store_bytes) = self.store.usage(&self.conn)?;
        Ok(ProjectStatus {
            root: self.root.clone(),
            open_turn: self.open_turn()?,
            turns,
            entries: entries as u64,
            skipped: skipped as u64,
            store_bytes,
            blobs,
        })
    }

    /// The verified bytes of a stored blob.
    pub fn read_blob(&self, hash: &Hash) -> Result<Vec<u8>> {
        self.store.get(&self.conn, hash)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A project over a temp tree holding `files` (parents made), its
    /// baseline captured. Returns the temp dir (kept alive), the root and
    /// the project.
    pub(crate) fn reconciled(
        files: &[(impl AsRef<Path>, impl AsRef<[u8]>)],
    ) -> (tempfile::TempDir, PathBuf, Project) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("proj");
        std::fs::create_dir_all(&root).unwrap();
        for (path, content) in files {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, content).unwrap();
        }
        let mut p = Project::open(&tmp.path().join("store"), &root, Options::default()).unwrap();
        p.reconcile().unwrap();
        (tmp, root, p)
    }
}
