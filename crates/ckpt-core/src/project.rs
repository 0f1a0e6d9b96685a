//! `Project`: one watched tree, its database and blob store. The public entry
//! point of the core.

use std::path::{Path, PathBuf};

use rusqlite::Connection;

use crate::error::Result;
use crate::model::*;
use crate::relpath::RelPath;
use crate::state::Hash;
use crate::store::BlobStore;

/// A project tree and its store. Not `Sync`: one caller at a time (the daemon
/// serializes access per project).
pub struct Project {
    pub(crate) root: PathBuf,
    pub(crate) conn: Connection,
    pub(crate) store: BlobStore,
    pub(crate) opts: Options,
}

impl Project {
    /// Opens the store in `store_dir` for the tree at `root`, creating both
    /// the store and its record of `root` the first time. Refuses a store
    /// that belongs to another root.
    pub fn open(store_dir: &Path, root: &Path, opts: Options) -> Result<Project> {
        let _ = (store_dir, root, opts);
        todo!()
    }

    /// Opens an existing store, reading the root it belongs to.
    pub fn open_existing(store_dir: &Path, opts: Options) -> Result<Project> {
        let _ = (store_dir, opts);
        todo!()
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether a path is outside capture: `.git`, excluded directories,
    /// barrier cookies, `.ckptignore` matches. The daemon drops events for
    /// such paths.
    pub fn is_excluded(&self, path: &RelPath, is_dir: bool) -> bool {
        let _ = (path, is_dir);
        todo!()
    }

    /// Full stat-compare scan of the tree against the hash cache; captures
    /// every change. The first call is the baseline.
    pub fn reconcile(&mut self) -> Result<ScanReport> {
        todo!()
    }

    /// Re-checks these paths (and, for a new or removed directory, everything
    /// below it); captures what changed.
    pub fn check_paths(&mut self, paths: impl IntoIterator<Item = RelPath>) -> Result<ScanReport> {
        let _ = paths.into_iter();
        todo!()
    }

    /// Opens a new turn, closing an open one first. Call after a barrier.
    pub fn turn_start(&mut self, meta: TurnMeta) -> Result<i64> {
        let _ = meta;
        todo!()
    }

    /// Closes the open turn, recording post-images. Call after a barrier.
    pub fn turn_end(&mut self) -> Result<TurnDetail> {
        todo!()
    }

    pub fn open_turn(&self) -> Result<Option<i64>> {
        todo!()
    }

    /// Turns, newest first.
    pub fn log(&self, limit: usize) -> Result<Vec<TurnInfo>> {
        let _ = limit;
        todo!()
    }

    pub fn show(&self, turn: i64) -> Result<TurnDetail> {
        let _ = turn;
        todo!()
    }

    /// Unified diffs of a turn, pre-image to post-image (to the current state
    /// while the turn is open), for all its paths or the given ones.
    pub fn diff(&self, turn: i64, paths: &[RelPath]) -> Result<Vec<FileDiff>> {
        let _ = (turn, paths);
        todo!()
    }

    /// Restores the state from just before `turn`, undoing it and every later
    /// live turn. Closes an open turn first. Call after a barrier.
    pub fn rewind(&mut self, turn: i64, opts: RewindOptions) -> Result<RewindOutcome> {
        let _ = (turn, opts);
        todo!()
    }

    /// Undoes the last rewind exactly. Refuses on conflicts unless `force`.
    pub fn redo(&mut self, opts: RewindOptions) -> Result<RewindOutcome> {
        let _ = opts;
        todo!()
    }

    /// Finishes a journaled rewind or redo that was interrupted.
    pub fn recover(&mut self) -> Result<Option<RecoveryReport>> {
        todo!()
    }

    pub fn status(&self) -> Result<ProjectStatus> {
        todo!()
    }

    /// The verified bytes of a stored blob.
    pub fn read_blob(&self, hash: &Hash) -> Result<Vec<u8>> {
        self.store.get(&self.conn, hash)
    }
}
