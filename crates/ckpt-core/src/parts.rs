//! A project's parts, borrowed apart for one operation: what capture and
//! rewind take instead of the whole `Project`, so the operations below
//! `project` never call back up into it (and the borrow checker sees the
//! database written while the tree and the store are read).

use std::path::Path;

use rusqlite::Connection;

use crate::action_list::Spill;
use crate::capture::Readers;
use crate::confined::Root;
use crate::model::{Observer, Options, Progress};
use crate::scan::Excludes;
use crate::store::BlobStore;

pub(crate) struct Parts<'a> {
    /// The tree's path, for messages and the walk.
    pub(crate) root: &'a Path,
    /// The tree's root directory, held open: every read and write goes
    /// through it.
    pub(crate) root_fs: &'a Root,
    pub(crate) conn: &'a mut Connection,
    pub(crate) store: &'a BlobStore,
    pub(crate) opts: &'a Options,
    /// Reloaded when `.ckptignore` changes.
    pub(crate) excludes: &'a mut Excludes,
    /// Told how far a scan or an apply has got (see [`Observer`]).
    pub(crate) observer: Option<&'a Observer>,
    /// The capture workers' connections for store lookups.
    pub(crate) readers: &'a Readers,
}

impl Parts<'_> {
    /// Where a rewind's action lists go past their window: beside the
    /// project's database (on the data dir's disk, not a `/tmp` that may
    /// be memory; the system's temp directory for a database in memory).
    pub(crate) fn spill(&self) -> Spill {
        let db = self.conn.path().filter(|p| !p.is_empty());
        Spill {
            dir: db
                .and_then(|db| Path::new(db).parent())
                .map(Path::to_path_buf),
            window: self.opts.plan_window,
        }
    }

    /// Tells the observer, if any, how far the operation has got.
    pub(crate) fn progress(&self, p: Progress) {
        if let Some(o) = self.observer {
            o(&p);
        }
    }
}
