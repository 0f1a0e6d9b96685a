//! `Project`: one watched tree, its database and blob store. The public entry
//! point of the core.
//!
//! Every public operation of a project, and where it is implemented:
//!
//! | operation | module |
//! |---|---|
//! | `open`, `open_existing`, `root`, `root_identity`, `reopen_root`, `is_excluded`, `not_captured`, `status`, `read_blob` | here |
//! | `check_paths` (events), `reconcile` (full scan) | `capture::check_paths`, `capture::reconcile` (here: one line each) |
//! | `turn_start`, `turn_start_closing`, `turn_end`, `turn_end_of`, `close_open_turns`, `tool_start`, `tool_command`, `tool_end`, `note_capture`, `caveats`, `open_turn`, `open_turn_of`, `turn_meta`, `log`, `log_of`, `show`, `show_listing` | `turns::Turns` (here: one line each) |
//! | `rewinds` | `history::rewind_records` (here: one line) |
//! | `rewind`, `redo`, `recover` | `rewind::rewind`, `rewind::redo`, `rewind::recover` (here: one line each) |
//! | `copy_in` (a work copy's changes as a turn) | `rewind::copy_in` (here: one line) |
//! | `diff` | `diff::diff` (here: one line) |
//! | `blame` | `blame::blame` (here: one line) |
//! | `ledger_add`, `ledger_list`, `ledger_show`, `ledger_set_status`, `ledger_import`, `ledger_count_for_turn`, `open_ledger_spans` | `ledger::Ledger` (here: one line each) |
//! | `export_range`, `export` | `export::export_range`, `export::export` (here: one line each) |
//! | `gc`, `retention`, `pin` | `gc::gc`, `gc::view`, `gc::set_pinned` (here: one line each) |
//! | `set_capture` (a changed config) | here |
//!
//! Each operation below takes only what it needs (the connection, the blob
//! store, the tree; capture and rewind take the borrowed [`Parts`]), never
//! the whole project: `project` calls down into them, and nothing calls
//! back up.

use rusqlite::{Connection, OptionalExtension};
use std::path::{Path, PathBuf};

use crate::blame;
use crate::capture;
use crate::confined::Root;
use crate::db;
use crate::diff;
use crate::error::{Error, IoContext, Result};
use crate::export::{self, ExportManifest, ExportRange};
use crate::gc;
use crate::history;
use crate::ledger::{
    ImportReport, Ledger, LedgerEntry, LedgerFilter, LedgerRecord, LedgerStatus, LineSpan,
    NewLedgerEntry,
};
use crate::model::*;
use crate::parts::Parts;
use crate::relpath::RelPath;
use crate::rewind::{self, CopyOutcome, CopyPath};
use crate::scan::Excludes;
use crate::state::Hash;
use crate::store::BlobStore;
use crate::turns::Turns;

/// The database file inside a project's store directory.
pub const DB_FILE: &str = "ckpt.db";
/// The directory of large blobs inside a project's store directory.
pub const OBJECTS_DIR: &str = "objects";

/// A project tree and its store. Not `Sync`: one caller at a time (the daemon
/// serializes access per project).
pub struct Project {
    pub(crate) root: PathBuf,
    pub(crate) root_fs: Root,
    pub(crate) conn: Connection,
    pub(crate) store: BlobStore,
    pub(crate) opts: Options,
    pub(crate) excludes: Excludes,
    /// Told how far a full scan or an apply has got ([`Project::observe`]).
    observer: Option<Observer>,
    readers: crate::capture::Readers,
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
            return Err(Error::BadInput(format!(
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
                return Err(Error::Corrupt(format!(
                    "{} records no project root",
                    store_dir.display()
                )))
            }
        };
        let root_fs = Root::open(&root).ctx("open project root", &root)?;
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
            observer: None,
            readers: Default::default(),
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
        self.root_fs = Root::open(root).ctx("open project root", root)?;
        self.excludes = Excludes::load(root, &self.opts.extra_excludes);
        Ok(())
    }

    /// Whether a path is outside capture: `.git`, excluded directories,
    /// barrier cookies and temp files, `.ckptignore` matches. The daemon may
    /// drop events for such paths; `check_paths` ignores them anyway.
    pub fn is_excluded(&self, path: &RelPath, is_dir: bool) -> bool {
        self.excludes.is_excluded(path, is_dir)
    }

    /// Every path the cache has strictly below `dir`: with what is on disk
    /// there, what a rescan of that subtree checks (a watcher that lost its
    /// events for it says so).
    pub fn cached_below(&self, dir: &RelPath) -> Result<Vec<RelPath>> {
        Ok(crate::cache::below(&self.conn, dir)?
            .into_iter()
            .map(|(p, _)| p)
            .collect())
    }

    /// Every entry of directory `dir` (the root when `None`) on disk or in
    /// the cache, in path order: checking each checks whatever an event in
    /// it could have named (the daemon's full queue keeps only the
    /// directories of further events).
    pub fn entries_of(&self, dir: Option<&RelPath>) -> Result<Vec<RelPath>> {
        let mut out = crate::cache::children_at(&self.conn, dir)?;
        let shown = dir.map_or(Path::new(""), RelPath::as_path);
        let names = self
            .root_fs
            .list_dir_at(dir)
            .ctx_in("list", &self.root, shown)?;
        out.extend(names.into_iter().filter_map(|name| match dir {
            Some(d) => d.join(&name).ok(),
            None => RelPath::new(name).ok(),
        }));
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }

    /// Every path present whose content is not captured (the `skipped`
    /// of [`Project::status`]), with the reason, in path order.
    pub fn not_captured(&self) -> Result<Vec<Skipped>> {
        let mut stmt = self.conn.prepare(
            "SELECT path, kind, mode, data, size FROM files WHERE kind = 4 ORDER BY path",
        )?;
        let mut rows = stmt.query([])?;
        let mut out = Vec::new();
        while let Some(r) = rows.next()? {
            let path: Vec<u8> = r.get(0)?;
            let reason = match crate::state::from_row(r, 1)? {
                Some(crate::state::State::Skipped { reason }) => reason,
                _ => "not captured".to_string(),
            };
            if let Ok(path) = RelPath::new(path) {
                out.push(Skipped::new(path, reason));
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
        let (partial_turns, rescanned_turns) = history::integrity_counts(&self.conn)?;
        let (blobs, store_bytes) = self.store.usage(&self.conn)?;
        let open_turns: Vec<ckpt_types::OpenTurn> = history::open_turns(&self.conn)?
            .into_iter()
            .map(|(turn, session)| ckpt_types::OpenTurn { turn, session })
            .collect();
        Ok(ProjectStatus {
            root: self.root.clone(),
            open_turn: open_turns.last().map(|t| t.turn),
            open_turns,
            turns,
            entries: entries as u64,
            skipped: skipped as u64,
            store_bytes,
            blobs,
            partial_turns,
            rescanned_turns,
        })
    }

    /// The verified bytes of a stored blob.
    pub fn read_blob(&self, hash: &Hash) -> Result<Vec<u8>> {
        self.store.get(&self.conn, hash)
    }

    /// The parts capture and rewind work on, borrowed apart.
    fn parts(&mut self) -> Parts<'_> {
        Parts {
            root: &self.root,
            root_fs: &self.root_fs,
            conn: &mut self.conn,
            store: &self.store,
            opts: &self.opts,
            excludes: &mut self.excludes,
            observer: self.observer.as_ref(),
            readers: &self.readers,
        }
    }

    /// Sets who is told how far full scans and applies get (`None`: nobody);
    /// returns the one it replaces.
    pub fn observe(&mut self, observer: Option<Observer>) -> Option<Observer> {
        std::mem::replace(&mut self.observer, observer)
    }

    /// Re-checks these paths (and, for a new, replaced or removed
    /// directory, everything below it); captures what changed. Excluded
    /// paths are ignored.
    pub fn check_paths(&mut self, paths: impl IntoIterator<Item = RelPath>) -> Result<ScanSummary> {
        capture::check_paths(&mut self.parts(), paths)
    }

    /// Starts a burst of `check_paths` calls (thousands of events): until
    /// [`Project::burst_end`], checkpoints wait for a WAL of many batches
    /// (one per batch copied the same index pages back each time) and the
    /// page cache is larger. Returns what `burst_end` restores.
    pub fn burst_begin(&mut self) -> Result<i64> {
        crate::db::burst_begin(&self.conn)
    }

    /// Ends a burst: the WAL is checkpointed and truncated, the cache
    /// shrinks back to `cache_size` (from [`Project::burst_begin`]).
    pub fn burst_end(&mut self, cache_size: i64) -> Result<()> {
        self.readers.close();
        crate::db::bulk_end(&self.conn, cache_size)
    }

    /// Full stat-compare scan of the tree against the hash cache; captures
    /// every change. The first call is the baseline.
    pub fn reconcile(&mut self) -> Result<ScanSummary> {
        capture::reconcile(&mut self.parts())
    }

    /// Restores the state from just before `turn`, undoing it and every
    /// later live turn of its session (see `rewind::rewind`). Call after a
    /// barrier.
    pub fn rewind(&mut self, turn: i64, opts: RewindOptions) -> Result<RewindOutcome> {
        rewind::rewind(&mut self.parts(), turn, opts)
    }

    /// Restores the state from just after `turn`: its session's live turns
    /// after it are undone, `turn` is kept (see `rewind::rewind_after`).
    /// Call after a barrier.
    pub fn rewind_after(&mut self, turn: i64, opts: RewindOptions) -> Result<RewindOutcome> {
        rewind::rewind_after(&mut self.parts(), turn, opts)
    }

    /// Undoes the last applied rewind exactly (see `rewind::redo`).
    pub fn redo(&mut self, opts: RewindOptions) -> Result<RewindOutcome> {
        rewind::redo(&mut self.parts(), opts)
    }

    /// Finishes a journaled rewind or redo that was interrupted (the
    /// process died while applying it). Call at start-up, before anything
    /// else.
    pub fn recover(&mut self) -> Result<Option<RecoveryReport>> {
        rewind::recover(&mut self.parts())
    }

    /// Writes each of `paths` as `source` (a directory outside the
    /// project) holds it, as one new turn made by `meta`, if the project
    /// still holds every path as its `base` says (see `rewind::copy_in`).
    /// Call after a barrier.
    pub fn copy_in(
        &mut self,
        source: &Path,
        meta: TurnMeta,
        paths: Vec<CopyPath>,
        opts: RewindOptions,
    ) -> Result<CopyOutcome> {
        rewind::copy_in(&mut self.parts(), source, meta, paths, opts)
    }

    /// Blames every line of the file at `path` as it is now (the hash
    /// cache's state: call after a barrier). A path no live turn touched is
    /// all baseline. Anything but a captured text file is an
    /// [`Error::BadInput`] that says what it is.
    pub fn blame(&self, path: &RelPath) -> Result<Blame> {
        self.blame_version(path, None)
    }

    /// [`Project::blame`] of the version `at` (a committed one) instead of
    /// the file as it is now; `None`: as it is now.
    pub fn blame_version(
        &self,
        path: &RelPath,
        at: Option<&crate::model::BlameAt>,
    ) -> Result<Blame> {
        let spans = if at.is_some() {
            // Ledger spans are lines of the file as it is now.
            Vec::new()
        } else {
            self.open_ledger_spans(path)?
        };
        blame::blame(&self.conn, &self.store, path, &spans, at)
    }

    /// The turn operations over this project's database.
    fn turns(&self) -> Turns<'_> {
        Turns {
            conn: &self.conn,
            root: &self.root,
        }
    }

    /// Opens a new turn for `meta.session`, closing that session's open
    /// turn first; other sessions' turns stay open. Call after a barrier.
    pub fn turn_start(&mut self, meta: TurnMeta) -> Result<i64> {
        self.turns().turn_start(meta)
    }

    /// [`Project::turn_start`], also returning the turn it closed.
    pub fn turn_start_closing(&mut self, meta: TurnMeta) -> Result<(Option<i64>, i64)> {
        self.turns().turn_start_closing(meta)
    }

    /// A tool call of `session` starts; returns the session's running tool
    /// calls (see [`Turns::tool_start`]).
    pub fn tool_start(&mut self, session: Option<&str>) -> Result<u32> {
        self.turns().tool_start(session)
    }

    /// Records the shell command a tool call of `session` runs on the
    /// session's open turn (see [`Turns::tool_command`]); false with none.
    pub fn tool_command(&mut self, session: Option<&str>, command: &str) -> Result<bool> {
        self.turns().tool_command(session, command)
    }

    /// Notes what went wrong with capture on every open turn (their
    /// `integrity`); returns how many turns it was noted on.
    pub fn note_capture(&mut self, note: &CaptureNote) -> Result<usize> {
        self.turns().note_capture(note)
    }

    /// What a rewind of `turns` does not undo (commands with effects
    /// outside the tree) and what it cannot restore (partial captures).
    pub fn caveats(&self, turns: &[i64]) -> Result<Caveats> {
        self.turns().caveats(turns)
    }

    /// A tool call of `session` ended; returns its tool calls still running.
    pub fn tool_end(&mut self, session: Option<&str>) -> Result<u32> {
        self.turns().tool_end(session)
    }

    /// Closes the open turn of the default session, or else the only open
    /// turn: [`Project::turn_end_of`] without a session.
    pub fn turn_end(&mut self) -> Result<TurnDetail> {
        self.turns().turn_end()
    }

    /// Closes the open turn of `session`, recording each touched path's
    /// post-image (see [`Turns::turn_end_of`]), and returns it with its
    /// first `list` entries (all with `None`). Call after a barrier.
    pub fn turn_end_of(
        &mut self,
        session: Option<&str>,
        transcript: Option<&str>,
        list: Option<u64>,
    ) -> Result<TurnDetail> {
        self.turns().turn_end_of(session, transcript, list)
    }

    /// Closes every open turn (when a project is no longer watched).
    pub fn close_open_turns(&mut self) -> Result<()> {
        self.turns().close_open_turns()
    }

    /// The newest open turn, of any session.
    pub fn open_turn(&self) -> Result<Option<i64>> {
        self.turns().open_turn()
    }

    /// The open turn of `session` (`None`: the default session).
    pub fn open_turn_of(&self, session: Option<&str>) -> Result<Option<i64>> {
        self.turns().open_turn_of(session)
    }

    /// Who opened `turn` (label, agent, session), without reading its entries.
    pub fn turn_meta(&self, turn: i64) -> Result<TurnMeta> {
        self.turns().turn_meta(turn)
    }

    /// Turns, newest first.
    pub fn log(&self, limit: usize) -> Result<Vec<TurnInfo>> {
        self.turns().log(limit)
    }

    /// Turns, newest first; with `session`, only that session's.
    pub fn log_of(&self, limit: usize, session: Option<&str>) -> Result<Vec<TurnInfo>> {
        self.turns().log_of(limit, session)
    }

    /// A turn with its entries. While the turn is open, `post` is `None` and
    /// the counts compare with the current state.
    pub fn show(&self, turn: i64) -> Result<TurnDetail> {
        self.turns().show(turn)
    }

    /// [`Project::show`] with the first `list` entries (all with `None`);
    /// `total_entries` counts them all when some are left out.
    pub fn show_listing(&self, turn: i64, list: Option<u64>) -> Result<TurnDetail> {
        self.turns().show_listing(turn, list)
    }

    /// The rewinds and redos journaled, newest first (a work copy's apply
    /// is a turn, not listed).
    pub fn rewinds(&self, limit: usize) -> Result<Vec<RewindRecord>> {
        history::rewind_records(&self.conn, limit)
    }

    /// Unified diffs of a turn, pre-image to post-image (to the current state
    /// while the turn is open), for all its paths or those at or below `paths`.
    pub fn diff(&self, turn: i64, paths: &[RelPath]) -> Result<Vec<FileDiff>> {
        diff::diff(&self.conn, &self.store, self.show(turn)?, paths)
    }

    /// The ledger over this project's tables and tree.
    fn ledger(&self) -> Ledger<'_> {
        Ledger {
            conn: &self.conn,
            root: &self.root,
            root_fs: &self.root_fs,
        }
    }

    /// Records a ledger entry in the open turn (if any) and returns its id.
    /// The file must exist and the span lie inside it; call after a barrier.
    pub fn ledger_add(&mut self, e: NewLedgerEntry) -> Result<i64> {
        self.ledger().add(e, || {
            let turn = self.open_turn()?;
            let meta = match turn {
                Some(t) => self.turn_meta(t)?,
                None => Default::default(),
            };
            Ok((turn, meta))
        })
    }

    /// Ledger entries matching `f`, oldest first, with their anchors now.
    pub fn ledger_list(&self, f: &LedgerFilter) -> Result<Vec<LedgerEntry>> {
        self.ledger().list(f)
    }

    /// One ledger entry with its history.
    pub fn ledger_show(&self, id: i64) -> Result<LedgerEntry> {
        self.ledger().show(id)
    }

    /// Appends a status change (open, resolved or wont-fix) to ledger entry
    /// `id` and returns the entry. A change to the status it has is refused.
    pub fn ledger_set_status(
        &mut self,
        id: i64,
        status: LedgerStatus,
        who: Option<String>,
        why: String,
    ) -> Result<LedgerEntry> {
        self.ledger().set_status(id, status, who, why)
    }

    /// Adds ledger entries exported from another clone, with their history
    /// (not their turns: those are this clone's own). An entry already here
    /// (same path, span text, bucket and note) is skipped. All or nothing.
    pub fn ledger_import(&mut self, records: &[LedgerRecord]) -> Result<ImportReport> {
        self.ledger().import(records)
    }

    /// How many ledger entries were recorded in `turn` (for `turn-end` and
    /// `show`).
    pub fn ledger_count_for_turn(&self, turn: i64) -> Result<u64> {
        self.ledger().count_for_turn(turn)
    }

    /// The open ledger entries about `path` whose lines are still there
    /// (fresh or moved), with their spans now; a whole-file entry spans
    /// every line. For `blame` to mark lines.
    pub fn open_ledger_spans(&self, path: &RelPath) -> Result<Vec<(i64, LineSpan)>> {
        self.ledger().open_spans(path)
    }

    /// The touched paths of turns `from..=to`, each closed and not rewound.
    pub fn export_range(&self, from: i64, to: i64) -> Result<ExportRange> {
        export::export_range(&self.turns(), &self.ledger(), from, to)
    }

    /// Writes `changes.patch`, `files.zip`, `report.md` and `manifest.json`
    /// for turns `from..=to` into `out`, an existing empty directory outside
    /// the project.
    pub fn export(&self, from: i64, to: i64, out: &Path) -> Result<ExportManifest> {
        let range = self.export_range(from, to)?;
        export::export(&self.conn, &self.store, &self.root, range, out)
    }

    /// Drops turns past the retention policy, then the blobs nothing refers
    /// to; with `dry_run`, only says what it would drop.
    pub fn gc(&mut self, policy: &Retention, dry_run: bool) -> Result<GcReport> {
        gc::gc(&mut self.conn, &self.store, policy, dry_run)
    }

    /// The policy, the pinned turns, and what retention drops next.
    pub fn retention(&self, policy: &Retention) -> Result<RetentionView> {
        gc::view(&self.conn, policy)
    }

    /// Pins `turn` (kept past retention, and every later turn with it) or
    /// unpins it.
    pub fn pin(&mut self, turn: i64, pinned: bool) -> Result<()> {
        gc::set_pinned(&self.conn, turn, pinned)
    }

    /// Keeps `turn` (and every later turn) past retention for work copy
    /// `name`, whose apply made it, until [`Project::release_workcopy`].
    pub fn keep_for_workcopy(&mut self, turn: i64, name: &str) -> Result<()> {
        gc::keep_for_workcopy(&self.conn, turn, name)
    }

    /// Work copy `name` is removed: retention may drop the turns its
    /// applies made. How many it kept.
    pub fn release_workcopy(&mut self, name: &str) -> Result<usize> {
        gc::release_workcopy(&self.conn, name)
    }

    /// Takes a new size cap and extra excludes (a changed config); returns
    /// whether the excludes changed, after which a full scan finds what
    /// they no longer exclude.
    pub fn set_capture(&mut self, max_file_size: u64, extra_excludes: Vec<String>) -> bool {
        self.opts.max_file_size = max_file_size;
        if self.opts.extra_excludes == extra_excludes {
            return false;
        }
        self.opts.extra_excludes = extra_excludes;
        self.excludes = Excludes::load(&self.root, &self.opts.extra_excludes);
        true
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
