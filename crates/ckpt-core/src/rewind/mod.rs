//! Rewind and redo: plan, journal, apply, recover.
//!
//! A rewind is written to the journal (`rewinds`, `rewind_actions`) with
//! every path's current and target state before any file is touched. Each
//! action is idempotent ("make this path be that state"), so an interrupted
//! apply is finished at the next `recover` by running the whole plan again;
//! if that fails, the other side of every action is applied instead. Either
//! way the tree ends exactly at one of the two states.

use std::collections::{BTreeMap, HashMap, HashSet};

use rusqlite::Connection;

use self::plan::{Kind, Wanted};
use crate::cache;
use crate::confined::{sync_while, Dirs, Staged, StatKind, WholeFs};
use crate::db;
use crate::error::{Error, Result};
use crate::history::{self, RewindStatus};
use crate::model::{Action, RecoveryReport, RewindOptions, RewindOutcome, RewindPlan, TurnStatus};
use crate::prefetch;
use crate::project::{now_ns, Project};
use crate::relpath::RelPath;
use crate::state::{Hash, State};

mod plan;

/// Which side of a journaled action to apply.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    /// The rewind's target (rewind, or finishing one).
    Target,
    /// The state before the rewind (redo, or rolling a rewind back).
    Current,
}

/// Rewinds that write at least this many files read their blobs on
/// `READ_THREADS` threads.
const PREFETCH_MIN: usize = 32;
const READ_THREADS: usize = 2;

/// Threads that fsync concurrently: the kernel shares one journal commit
/// among fsyncs that wait together.
const SYNC_THREADS: usize = 8;

/// Rewinds that write at least this many files sync the project's
/// filesystem as a whole (`WholeFs`) rather than each file and directory.
/// Below it, fsyncs cost little and do not wait for other programs' writes.
const SYNCFS_MIN: usize = 128;

type Hook<'a> = &'a mut Option<Box<dyn FnMut(usize) -> Result<()> + Send>>;

impl Project {
    /// Restores the state from just before `turn`, undoing it and every later
    /// live turn, for every path they touched (or only `opts.paths`). Closes
    /// an open turn first. Call after a barrier.
    pub fn rewind(&mut self, turn: i64, mut opts: RewindOptions) -> Result<RewindOutcome> {
        self.recover()?;
        match history::turn_status(&self.conn, turn)? {
            None => return Err(Error::UnknownTurn(turn)),
            Some(TurnStatus::Rewound) => return Err(Error::TurnRewound(turn)),
            Some(_) => {}
        }
        if self.open_turn()?.is_some() {
            self.turn_end()?;
        }
        let live = history::live_turns_from(&self.conn, turn)?;
        // Per path: the pre-image of the oldest turn that touched it (the
        // target) and the post-image of the newest (what the agent left).
        let mut touched: BTreeMap<RelPath, (State, State)> = BTreeMap::new();
        for &t in &live {
            for e in history::entries(&self.conn, t)? {
                let post = e.post.unwrap_or(State::Absent);
                touched.entry(e.path).or_insert((e.pre, State::Absent)).1 = post;
            }
        }
        if !opts.paths.is_empty() {
            touched.retain(|p, _| opts.paths.iter().any(|want| p.starts_with(want)));
        }
        let mut known =
            self.recheck_touched(touched.keys().cloned().collect(), opts.after_barrier)?;
        let plan = db::reading(&self.conn, || {
            let wanted = touched
                .into_iter()
                .map(|(path, (target, expected))| {
                    let current = known
                        .remove(&path)
                        .map_or_else(|| cache::state(&self.conn, &path), Ok)?;
                    Ok(Wanted {
                        path,
                        current,
                        target,
                        expected,
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            let turns = live.clone();
            plan::plan(&self.tree(), Kind::Rewind, turn, turns, wanted, opts.force)
        })?;
        if opts.dry_run {
            return Ok(RewindOutcome::DryRun(plan));
        }
        if plan.refused(opts.force) {
            return Ok(RewindOutcome::Refused(plan));
        }
        // A partial rewind leaves the turns live.
        let marked = if opts.paths.is_empty() {
            live
        } else {
            Vec::new()
        };
        let id = self.journal(&plan, &marked, None)?;
        self.apply_journaled(id, Side::Target, &mut opts.before_op)?;
        Ok(RewindOutcome::Applied {
            rewind_id: id,
            plan,
        })
    }

    /// Undoes the last applied rewind exactly: every path it changed gets
    /// back the state it had before. Refuses on conflicts (a path changed
    /// since the rewind) unless `force`, and, force or not, when the tree
    /// could not be put back exactly (`RewindPlan::blocked`). The redo is
    /// journaled as a plan of its own, so a failed one goes back to the
    /// states it found.
    pub fn redo(&mut self, mut opts: RewindOptions) -> Result<RewindOutcome> {
        self.recover()?;
        let (id, turn) = history::last_applied_rewind(&self.conn)?.ok_or(Error::NothingToRedo)?;
        if self.open_turn()?.is_some() {
            self.turn_end()?;
        }
        let actions = history::actions(&self.conn, id)?;
        let mut known = self.recheck_touched(
            actions.iter().map(|a| a.path.clone()).collect(),
            opts.after_barrier,
        )?;
        let turns = history::turns_rewound_by(&self.conn, id)?;
        let plan = db::reading(&self.conn, || {
            let wanted = actions
                .into_iter()
                .map(|a| {
                    let current = known
                        .remove(&a.path)
                        .map_or_else(|| cache::state(&self.conn, &a.path), Ok)?;
                    Ok(Wanted {
                        path: a.path,
                        current,
                        target: a.current,
                        expected: a.target,
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            plan::plan(&self.tree(), Kind::Redo, turn, turns, wanted, opts.force)
        })?;
        if opts.dry_run {
            return Ok(RewindOutcome::DryRun(plan));
        }
        if plan.refused(opts.force) {
            return Ok(RewindOutcome::Refused(plan));
        }
        let redo_id = self.journal(&plan, &[], Some(id))?;
        self.apply_journaled(redo_id, Side::Target, &mut opts.before_op)?;
        Ok(RewindOutcome::Applied {
            rewind_id: redo_id,
            plan,
        })
    }

    /// Finishes a journaled rewind or redo that was interrupted (the process
    /// died while applying it). Call at start-up, before anything else.
    pub fn recover(&mut self) -> Result<Option<RecoveryReport>> {
        let Some((id, status)) = history::unfinished_rewind(&self.conn)? else {
            return Ok(None);
        };
        let side = if status == RewindStatus::Redoing {
            Side::Current
        } else {
            Side::Target
        };
        let actions = history::actions(&self.conn, id)?;
        let (_, redoes) = history::rewind_links(&self.conn, id)?;
        let paths = actions.len();
        tracing::info!(rewind = id, status = %status.as_str(), paths, "finishing an interrupted rewind");
        // A write cut short leaves its temp file behind.
        let dirs: HashSet<Option<RelPath>> = actions.iter().map(|a| a.path.parent()).collect();
        for dir in dirs {
            if let Err(e) = self.root_fs.remove_temp_files(dir.as_ref()) {
                tracing::warn!("removing temp files after an interrupted rewind: {e}");
            }
        }
        self.apply_journaled(id, side, &mut None)?;
        Ok(Some(RecoveryReport {
            rewind_id: id,
            redo: side == Side::Current || redoes.is_some(),
            paths,
        }))
    }

    /// The project as the planner sees it: the hash cache, and the disk for
    /// what the cache never holds.
    fn tree(&self) -> CacheTree<'_> {
        CacheTree { project: self }
    }

    /// Writes the plan to the journal, durably, before any file is touched.
    /// `marked`: the turns it rewinds; `redoes`: the rewind a redo undoes.
    fn journal(&mut self, plan: &RewindPlan, marked: &[i64], redoes: Option<i64>) -> Result<i64> {
        history::journal(
            &mut self.conn,
            plan.turn,
            &plan.actions,
            marked,
            redoes,
            now_ns(),
        )
    }

    /// Applies one side of journaled rewind `id`, then records the outcome.
    /// On an ordinary failure the other side is applied to what was done, so
    /// the tree is left as it was; an injected failure (a test's simulated
    /// crash) leaves the journal pending for `recover`.
    fn apply_journaled(&mut self, id: i64, side: Side, hook: Hook<'_>) -> Result<()> {
        let actions = history::actions(&self.conn, id)?;
        let steps = ordered(&actions, side);
        let missing = db::reading(&self.conn, || {
            for (path, state) in &steps {
                if let State::File { hash, .. } = state {
                    if !self.store.contains(&self.conn, hash)? {
                        return Ok(Some(format!("{hash} (for {path})")));
                    }
                }
            }
            Ok(None)
        })?;
        if let Some(missing) = missing {
            return self.fail(id, side, Error::MissingBlob(missing));
        }
        // Written data is durable before the journal says "applied"
        // (`run_steps` syncs each file and each changed directory).
        if let Err(e) = self.run_steps(&steps, hook) {
            if matches!(e, Error::Injected(_)) {
                return Err(e);
            }
            let back = self.still_to_undo(ordered(&actions, side.other()))?;
            if let Err(e2) = self.run_steps(&back, &mut None) {
                // Marked failed, a half-way tree would stay half-way; pending,
                // `recover` finishes or rolls it back once it can.
                tracing::error!(
                    rewind = id,
                    "rolling back a failed rewind failed too, left for recovery: {e2}"
                );
                return Err(e);
            }
            self.refresh_cache(&back)?;
            return self.fail(id, side, e);
        }
        let tx = self.conn.transaction()?;
        refresh_cache_in(&tx, &self.root_fs, &steps)?;
        let (marked, redoes) = history::rewind_links(&tx, id)?;
        match (side, redoes) {
            (Side::Target, None) => {
                history::mark_rewound(&tx, &marked, id)?;
                history::set_rewind_status(&tx, id, RewindStatus::Applied)?;
            }
            (Side::Target, Some(undone)) => {
                history::bring_back(&tx, undone)?;
                history::set_rewind_status(&tx, id, RewindStatus::Applied)?;
            }
            // A redo journaled by an older ckpt: the rewind's own journal,
            // applied backwards.
            (Side::Current, _) => history::bring_back(&tx, id)?,
        }
        tx.commit()?;
        Ok(())
    }

    /// Records that applying `side` of rewind `id` failed and was undone.
    fn fail(&mut self, id: i64, side: Side, err: Error) -> Result<()> {
        let status = match side {
            Side::Target => RewindStatus::Failed,
            // A legacy redo that failed: the rewind stays applied.
            Side::Current => RewindStatus::Applied,
        };
        history::set_rewind_status(&self.conn, id, status)?;
        Err(err)
    }

    /// Applies `steps` in order. Each file is written whole under a temp
    /// name and put into place (`Dirs::commit`: an exchange or a rename); a
    /// few threads fsync the written files meanwhile, and the changed
    /// directories are synced last, all before the journal says "applied".
    /// With many files, the project's filesystem is synced once instead
    /// (`SYNCFS_MIN`). Directory handles are opened once for the whole run.
    fn run_steps(&self, steps: &[(RelPath, State)], hook: Hook<'_>) -> Result<()> {
        let io = |action: &'static str, path: &RelPath| {
            let full = self.root.join(path.as_path());
            move |source| Error::Io {
                action,
                path: full,
                source,
            }
        };
        let mut dirs = Dirs::new(&self.root_fs).map_err(|source| Error::Io {
            action: "open",
            path: self.root.clone(),
            source,
        })?;
        let mut staged: Vec<Staged> = Vec::new();
        let mut committed = 0;
        let mut op = 0;
        let mut next_op = |hook: Hook<'_>| -> Result<()> {
            if let Some(h) = hook.as_mut() {
                h(op)?;
            }
            op += 1;
            Ok(())
        };
        let blobs: Vec<(Hash, u64)> = steps
            .iter()
            .filter_map(|(_, s)| match s {
                State::File { hash, size, .. } => Some((*hash, *size)),
                _ => None,
            })
            .collect();
        let whole = if blobs.len() >= SYNCFS_MIN {
            WholeFs::open(&self.root_fs).map_err(|source| Error::Io {
                action: "open",
                path: self.root.clone(),
                source,
            })?
        } else {
            None
        };
        let mut write_all = |blob: &mut dyn FnMut(&Hash) -> Result<Vec<u8>>| {
            sync_while(
                blobs.len().min(SYNC_THREADS),
                whole.as_ref(),
                |queue| -> Result<()> {
                    for (path, state) in steps {
                        next_op(hook)?;
                        if let Some((file, dev)) =
                            self.ensure(&mut dirs, path, state, blob, &mut staged)?
                        {
                            queue.push(file, dev).map_err(io("sync", path))?;
                        }
                        // Into place at once: the file is whole (the journal,
                        // pending until every file is synced, covers a crash
                        // before its data reaches the disk).
                        while let Some(s) = staged.get(committed) {
                            next_op(hook)?;
                            dirs.commit(s).map_err(io("put into place", &s.path))?;
                            committed += 1;
                        }
                    }
                    Ok(())
                },
            )
        };
        let (written, synced) = match self.conn.path() {
            // (An in-memory database has no path to open again.)
            Some(db) if !db.is_empty() && blobs.len() >= PREFETCH_MIN => {
                prefetch::with_blobs(&self.store, db, &blobs, READ_THREADS, write_all)
            }
            _ => write_all(&mut |hash: &Hash| self.store.get(&self.conn, hash)),
        };
        let result = written.and_then(|()| {
            synced.map_err(|source| Error::Io {
                action: "sync",
                path: self.root.clone(),
                source,
            })
        });
        match result {
            Ok(()) => {}
            // A simulated crash leaves everything as a dead process would.
            Err(e @ Error::Injected(_)) => return Err(e),
            Err(e) => {
                for s in &staged[committed..] {
                    dirs.discard(s);
                }
                dirs.free_now();
                return Err(e);
            }
        }
        dirs.drop_spares();
        let any = steps.first().map(|(p, _)| p.clone());
        dirs.sync_touched(SYNC_THREADS, whole.as_ref())
            .and_then(|()| whole.as_ref().map_or(Ok(()), WholeFs::sync))
            .map_err(|e| match &any {
                Some(p) => io("sync the directories of", p)(e),
                None => Error::Io {
                    action: "sync",
                    path: self.root.clone(),
                    source: e,
                },
            })?;
        Ok(())
    }

    /// Makes `path` be `state`, except that a file is only staged (written
    /// whole under a temp name and added to `staged`, for the caller to put
    /// into place). A written file's handle and device are returned for
    /// syncing. Every file step asks `blob` for its content, in step order.
    /// Idempotent.
    fn ensure(
        &self,
        dirs: &mut Dirs<'_>,
        path: &RelPath,
        state: &State,
        blob: &mut dyn FnMut(&Hash) -> Result<Vec<u8>>,
        staged: &mut Vec<Staged>,
    ) -> Result<Option<(std::fs::File, u64)>> {
        let ctx = |action: &'static str| {
            let full = self.root.join(path.as_path());
            move |source| Error::Io {
                action,
                path: full,
                source,
            }
        };
        let now = dirs.lstat(path).map_err(ctx("stat"))?;
        let is_dir = now.is_some_and(|s| s.kind == StatKind::Dir);
        match state {
            State::Skipped { .. } => {}
            State::Absent => dirs.remove(path, now).map_err(ctx("remove"))?,
            State::Dir { mode } => {
                if now.is_some() && !is_dir {
                    dirs.remove(path, now).map_err(ctx("remove"))?;
                }
                dirs.make_dir(path, *mode)
                    .map_err(ctx("create directory"))?;
            }
            State::File { hash, mode, .. } => {
                let data = blob(hash)?;
                if is_dir {
                    dirs.remove(path, now).map_err(ctx("remove directory"))?;
                }
                let replaces_file = now.is_some_and(|s| s.kind == StatKind::File);
                let (s, file) = dirs
                    .stage(path, &data, *mode, replaces_file)
                    .map_err(ctx("write"))?;
                let dev = s.dev;
                staged.push(s);
                return Ok(Some((file, dev)));
            }
            State::Symlink { target } => {
                if is_dir {
                    dirs.remove(path, now).map_err(ctx("remove directory"))?;
                }
                dirs.symlink(path, target).map_err(ctx("create symlink"))?;
            }
        }
        Ok(None)
    }

    /// Brings the cache up to date for the paths a rewind will touch, so
    /// the plan sees a user's late edit as a conflict. Right after the
    /// daemon's barrier, every change made before it has been checked
    /// (racy entries re-hashed on their events), so only a path whose stat
    /// differs from its cache entry (an edit since) is checked again;
    /// otherwise every path is, racy ones re-hashed. Returns the cached
    /// state of each path found unchanged, so the plan need not look it up
    /// again.
    fn recheck_touched(
        &mut self,
        paths: Vec<RelPath>,
        after_barrier: bool,
    ) -> Result<HashMap<RelPath, State>> {
        let mut known = HashMap::new();
        if !after_barrier {
            self.check_paths(paths)?;
            return Ok(known);
        }
        let mut dirs = Dirs::new(&self.root_fs).map_err(|source| Error::Io {
            action: "open",
            path: self.root.clone(),
            source,
        })?;
        let mut changed = Vec::new();
        db::reading(&self.conn, || {
            for path in paths {
                let now = dirs.lstat(&path).map_err(|e| Error::Io {
                    action: "stat",
                    path: self.root.join(path.as_path()),
                    source: e,
                })?;
                match (cache::get(&self.conn, &path)?, now) {
                    (Some(row), Some(st)) if row.same_stat(&st) => {
                        known.insert(path, row.state);
                    }
                    (None, None) => {
                        known.insert(path, State::Absent);
                    }
                    _ => changed.push(path),
                }
            }
            Ok(())
        })?;
        drop(dirs);
        if !changed.is_empty() {
            self.check_paths(changed)?;
        }
        Ok(known)
    }

    /// The rollback steps that still have work to do. A path whose stat
    /// still equals its cache entry, which holds the state wanted, was never
    /// reached by the failed pass: rewriting it would need room that a full
    /// disk does not have, for nothing.
    fn still_to_undo(&self, steps: Vec<(RelPath, State)>) -> Result<Vec<(RelPath, State)>> {
        let mut dirs = Dirs::new(&self.root_fs).map_err(|source| Error::Io {
            action: "open",
            path: self.root.clone(),
            source,
        })?;
        let mut left = Vec::with_capacity(steps.len());
        for (path, state) in steps {
            let now = dirs.lstat(&path).map_err(|source| Error::Io {
                action: "stat",
                path: self.root.join(path.as_path()),
                source,
            })?;
            let untouched = match (cache::get(&self.conn, &path)?, now) {
                (Some(row), Some(st)) => row.same_stat(&st) && row.state == state,
                (None, None) => state == State::Absent,
                _ => false,
            };
            if !untouched {
                left.push((path, state));
            }
        }
        Ok(left)
    }

    fn refresh_cache(&mut self, steps: &[(RelPath, State)]) -> Result<()> {
        let tx = self.conn.transaction()?;
        refresh_cache_in(&tx, &self.root_fs, steps)?;
        tx.commit()?;
        Ok(())
    }
}

struct CacheTree<'a> {
    project: &'a Project,
}

impl plan::Tree for CacheTree<'_> {
    fn state(&self, path: &RelPath) -> Result<State> {
        cache::state(&self.project.conn, path)
    }

    fn below(&self, dir: &RelPath) -> Result<Vec<(RelPath, State)>> {
        let rows = cache::below(&self.project.conn, dir)?;
        Ok(rows.into_iter().map(|(p, row)| (p, row.state)).collect())
    }

    fn holds_uncaptured(&self, dir: &RelPath) -> Result<bool> {
        let p = self.project;
        let names = p.root_fs.list_dir(dir).map_err(|source| Error::Io {
            action: "list directory",
            path: p.root.join(dir.as_path()),
            source,
        })?;
        Ok(names.iter().any(|name| match dir.join(name) {
            Ok(child) => {
                p.excludes.is_excluded(&child, false) || p.excludes.is_excluded(&child, true)
            }
            Err(_) => true, // `.git`
        }))
    }
}

impl Side {
    fn other(self) -> Side {
        match self {
            Side::Target => Side::Current,
            Side::Current => Side::Target,
        }
    }
}

/// Records what the rewind wrote, so the watcher's events for it compare
/// as unchanged and are never mistaken for an agent's changes.
fn refresh_cache_in(
    conn: &Connection,
    fs: &crate::confined::Root,
    steps: &[(RelPath, State)],
) -> Result<()> {
    let stamp = now_ns();
    let mut dirs = Dirs::new(fs).map_err(|source| Error::Io {
        action: "open",
        path: fs.path().to_path_buf(),
        source,
    })?;
    for (path, state) in steps {
        match dirs.lstat(path) {
            Ok(Some(stat)) if !matches!(state, State::Absent | State::Skipped { .. }) => {
                cache::put(conn, path, state, &stat, stamp)?
            }
            // Anything else is re-examined by the next check or scan.
            Ok(Some(_)) => {}
            Ok(None) => cache::remove(conn, path)?,
            Err(e) => tracing::warn!("stat {path} after rewind: {e}"),
        }
    }
    Ok(())
}

/// Execution order: removals deepest first (children before their
/// directory), then everything else shallowest first (directories before
/// their contents).
fn ordered(actions: &[Action], side: Side) -> Vec<(RelPath, State)> {
    let mut steps: Vec<(RelPath, State)> = actions
        .iter()
        .map(|a| {
            let state = match side {
                Side::Target => &a.target,
                Side::Current => &a.current,
            };
            (a.path.clone(), state.clone())
        })
        .collect();
    // Removals first, each path before its parent (a path sorts after its
    // parent in byte order, so: reverse byte order); then creations in byte
    // order, parents first. Byte order is also the order capture stored
    // small files in, many to a pack, so a whole-tree restore decodes each
    // pack once instead of jumping between packs depth by depth.
    steps.sort_by(|(pa, sa), (pb, sb)| {
        let (ra, rb) = (sa.is_absent(), sb.is_absent());
        rb.cmp(&ra)
            .then_with(|| if ra { pb.cmp(pa) } else { pa.cmp(pb) })
    });
    steps
}

#[cfg(test)]
mod tests {
    use std::fs;

    use crate::model::{RewindOptions, RewindOutcome, TurnMeta};
    use crate::project::tests::reconciled;

    fn snapshot(root: &std::path::Path) -> Vec<(String, Vec<u8>)> {
        let mut out = Vec::new();
        for e in walk(root) {
            let rel = e.strip_prefix(root).unwrap().display().to_string();
            let md = fs::symlink_metadata(&e).unwrap();
            let content = if md.is_file() {
                fs::read(&e).unwrap()
            } else if md.is_symlink() {
                fs::read_link(&e)
                    .unwrap()
                    .display()
                    .to_string()
                    .into_bytes()
            } else {
                b"<dir>".to_vec()
            };
            out.push((rel, content));
        }
        out.sort();
        out
    }

    fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
        let mut out = Vec::new();
        for e in fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            out.push(p.clone());
            if fs::symlink_metadata(&p).unwrap().is_dir() {
                out.extend(walk(&p));
            }
        }
        out
    }

    /// After a barrier the plan reuses the cache rows it compared stats
    /// with; an edit the watcher has not reported yet must still be seen
    /// (a conflict), in a rewind and in a redo.
    #[test]
    fn an_edit_not_yet_reported_is_a_conflict_after_a_barrier() {
        let (_tmp, root, mut p) = reconciled(&[("a.txt", "one\n"), ("b.txt", "one\n")]);
        let turn = p.turn_start(TurnMeta::default()).unwrap();
        fs::write(root.join("a.txt"), "agent\n").unwrap();
        fs::write(root.join("b.txt"), "agent\n").unwrap();
        p.reconcile().unwrap();
        p.turn_end().unwrap();
        let after_barrier = || RewindOptions {
            after_barrier: true,
            ..RewindOptions::default()
        };
        // The user's edit, unknown to the project (no event handled).
        fs::write(root.join("a.txt"), "user's edit!\n").unwrap();
        let out = p.rewind(turn, after_barrier()).unwrap();
        let RewindOutcome::Refused(plan) = out else {
            panic!("not refused: {out:?}");
        };
        let paths: Vec<String> = plan.conflicts.iter().map(|c| c.path.to_string()).collect();
        assert_eq!(paths, ["a.txt"]);
        assert_eq!(fs::read(root.join("a.txt")).unwrap(), b"user's edit!\n");

        fs::write(root.join("a.txt"), "agent\n").unwrap();
        p.reconcile().unwrap();
        let out = p.rewind(turn, after_barrier()).unwrap();
        assert!(matches!(out, RewindOutcome::Applied { .. }), "{out:?}");
        fs::write(root.join("b.txt"), "user's edit!\n").unwrap();
        let RewindOutcome::Refused(plan) = p.redo(after_barrier()).unwrap() else {
            panic!("redo not refused");
        };
        let paths: Vec<String> = plan.conflicts.iter().map(|c| c.path.to_string()).collect();
        assert_eq!(paths, ["b.txt"]);
    }

    #[test]
    fn rewind_and_redo_round_trip() {
        let (_tmp, root, mut p) = reconciled(&[("src/a.txt", "one\n"), ("gone.txt", "bye\n")]);
        let before = snapshot(&root);
        let turn = p.turn_start(TurnMeta::default()).unwrap();
        fs::write(root.join("src/a.txt"), "two\n").unwrap();
        fs::remove_file(root.join("gone.txt")).unwrap();
        fs::create_dir_all(root.join("new/deep")).unwrap();
        fs::write(root.join("new/deep/f"), "x").unwrap();
        std::os::unix::fs::symlink("src/a.txt", root.join("link")).unwrap();
        p.reconcile().unwrap();
        let detail = p.turn_end().unwrap();
        assert_eq!(detail.entries.len(), 6, "{:?}", detail.entries);
        let after = snapshot(&root);
        let out = p.rewind(turn, RewindOptions::default()).unwrap();
        assert!(matches!(out, RewindOutcome::Applied { .. }), "{out:?}");
        assert_eq!(snapshot(&root), before);
        p.reconcile().unwrap();
        let out = p.redo(RewindOptions::default()).unwrap();
        assert!(matches!(out, RewindOutcome::Applied { .. }), "{out:?}");
        assert_eq!(snapshot(&root), after);
    }

    /// A reconciled project of `n` files `d/<i>.txt`, each `<word> <i>\n`.
    fn numbered_files(
        n: usize,
        word: &str,
    ) -> (
        tempfile::TempDir,
        std::path::PathBuf,
        crate::project::Project,
    ) {
        let files: Vec<_> = (0..n)
            .map(|i| (format!("d/{i}.txt"), format!("{word} {i}\n")))
            .collect();
        reconciled(&files)
    }

    /// A rewind of many files syncs the filesystem once and fsyncs none of
    /// them; a small one fsyncs each file and leaves the filesystem alone.
    #[test]
    fn many_files_sync_the_filesystem_once_few_sync_each_file() {
        use crate::confined::{FILE_FSYNCS, SYNCFS_CALLS};
        let many = super::SYNCFS_MIN + 5;
        let (_tmp, root, mut p) = numbered_files(many, "one");
        let before = snapshot(&root);
        for (files, syncfs, fsyncs) in [(many, 1, 0), (3, 0, 3)] {
            let turn = p.turn_start(TurnMeta::default()).unwrap();
            for i in 0..files {
                fs::write(root.join(format!("d/{i}.txt")), "two\n").unwrap();
            }
            p.reconcile().unwrap();
            p.turn_end().unwrap();
            SYNCFS_CALLS.with(|n| n.set(0));
            FILE_FSYNCS.with(|n| n.set(0));
            let out = p.rewind(turn, RewindOptions::default()).unwrap();
            assert!(matches!(out, RewindOutcome::Applied { .. }), "{out:?}");
            assert_eq!(snapshot(&root), before);
            assert_eq!(SYNCFS_CALLS.with(|n| n.get()), syncfs, "{files} files");
            assert_eq!(FILE_FSYNCS.with(|n| n.get()), fsyncs, "{files} files");
        }
    }

    /// Replaced files much larger than the content restored: none is cut
    /// to fit (freeing blocks waits for the device on ext4 with `discard`).
    #[test]
    fn a_rewind_does_not_cut_replaced_files_to_reuse_them() {
        use crate::confined::SPARES_CUT;
        let n = 100;
        let (_tmp, root, mut p) = numbered_files(n, "small");
        let before = snapshot(&root);
        let turn = p.turn_start(TurnMeta::default()).unwrap();
        for i in 0..n {
            fs::write(root.join(format!("d/{i}.txt")), vec![b'x'; 20_000]).unwrap();
        }
        p.reconcile().unwrap();
        p.turn_end().unwrap();
        SPARES_CUT.with(|c| c.set(0));
        let out = p.rewind(turn, RewindOptions::default()).unwrap();
        assert!(matches!(out, RewindOutcome::Applied { .. }), "{out:?}");
        assert_eq!(snapshot(&root), before);
        assert_eq!(SPARES_CUT.with(|c| c.get()), 0);
    }
}
