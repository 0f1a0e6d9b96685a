//! Applying one side of a journaled rewind to the tree: each file written
//! whole under a temp name and put into place, the data made durable, then
//! the outcome recorded. A failure applies the other side to what was done.

use crate::action_list::{ActionList, Held, Item};
use crate::cache;
use crate::confined::{sync_beside, sync_while, Dirs, KeptParent, Root, Staged, StatKind, WholeFs};
use crate::db;
use crate::error::{Error, IoContext, Result};
use crate::model::{Progress, ProgressOp};
use crate::parts::Parts;
use crate::prefetch;
use crate::relpath::RelPath;
use crate::state::{Hash, State};
use ckpt_types::now_ns;

use super::journal::Journaled;
use super::Side;

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

/// One path, the state to give it, and what the plan found there just
/// before (a fresh apply only: `None` when it must look).
type Step<'a> = (&'a RelPath, &'a State, Option<&'a State>);

pub(super) type Hook<'a> = &'a mut Option<Box<dyn FnMut(usize) -> Result<()> + Send>>;

/// Applies `side` of `actions`, journaled as `journaled`, through
/// `dirs` (the rewind's one tree writer), then records the outcome. On
/// an ordinary failure the other side is applied to what was done, so
/// the tree is left as it was; an injected failure (a test's simulated
/// crash) leaves the journal pending for `recover`. `fresh`: the
/// actions' current states were found by this plan's recheck, moments
/// ago, rather than read back from a journal.
pub(super) fn apply(
    parts: &mut Parts<'_>,
    dirs: &mut Dirs<'_>,
    journaled: &Journaled,
    actions: &ActionList,
    side: Side,
    fresh: bool,
    hook: Hook<'_>,
) -> Result<()> {
    let steps = Steps::new(actions, side, fresh)?;
    let missing = db::reading(parts.conn, || missing_blob(parts, &steps))?;
    if let Some(missing) = missing {
        journaled.failed(parts.conn, side)?;
        return Err(Error::MissingBlob(missing));
    }
    // Written data is durable before the journal says "applied"
    // (`run_steps` syncs each file and each changed directory). While it
    // syncs, the cache learns what was written, in a transaction that
    // commits with "applied" (at 50,000 files the refresh took 0.2-0.4 s
    // and the sync 0.45 s, one after the other).
    let e = {
        let written = run_steps(parts, dirs, &steps, hook, || {
            let t0 = std::time::Instant::now();
            let tx = parts.conn.unchecked_transaction()?;
            refresh_cache(&tx, parts.root_fs, &steps)?;
            Ok((tx, t0.elapsed()))
        });
        match written {
            Ok((tx, refreshed)) => {
                let t0 = std::time::Instant::now();
                journaled.applied(&tx, side, actions)?;
                tx.commit()?;
                tracing::debug!(refresh = ?refreshed, recorded = ?t0.elapsed(), "rewind recorded");
                return Ok(());
            }
            Err(e) => e,
        }
    };
    if e.is_injected() {
        return Err(e);
    }
    // The other side applied to what was done: the tree is as before.
    let mut back = Steps::new(actions, side.other(), false)?;
    still_to_undo(parts, dirs, &mut back)?;
    if let Err(e2) = run_steps(parts, dirs, &back, &mut None, || Ok(())) {
        // Marked failed, a half-way tree would stay half-way; pending,
        // `recover` finishes or rolls it back once it can.
        tracing::error!(
            rewind = journaled.id,
            "rolling back a failed rewind failed too, left for recovery: {e2}"
        );
        return Err(e);
    }
    let tx = parts.conn.transaction()?;
    refresh_cache(&tx, parts.root_fs, &back)?;
    tx.commit()?;
    journaled.failed(parts.conn, side)?;
    Err(e)
}

/// Applies `steps` in order. Each file is written whole under a temp
/// name and put into place (`Dirs::commit`: an exchange or a rename); a
/// few threads fsync the written files meanwhile, and the changed
/// directories are synced last, all before the journal says "applied".
/// With many files, the project's filesystem is synced once instead
/// (`SYNCFS_MIN`). Once every step is done, `meanwhile` runs while that
/// last sync does; its result is returned when both succeeded.
fn run_steps<R>(
    parts: &Parts<'_>,
    dirs: &mut Dirs<'_>,
    steps: &Steps<'_>,
    hook: Hook<'_>,
    meanwhile: impl FnOnce() -> Result<R>,
) -> Result<R> {
    // Only the files staged and not yet put into place: each is committed
    // right after it is staged, so this stays short however many are written.
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
    let files = steps.files;
    let whole = if files >= SYNCFS_MIN {
        WholeFs::open(parts.root_fs).ctx("open", parts.root)?
    } else {
        None
    };
    let mut write_all = |blob: &mut dyn FnMut(&Hash) -> Result<Vec<u8>>| {
        sync_while(
            files.min(SYNC_THREADS),
            whole.as_ref(),
            |queue| -> Result<()> {
                let mut bytes = 0;
                let mut held = Held::default();
                for (i, &at) in steps.order.iter().enumerate() {
                    next_op(hook)?;
                    let item = steps.held(at, &mut held)?;
                    let step = steps.view(&item);
                    let (path, state, _) = step;
                    if let Some((file, dev)) = ensure(parts, dirs, step, blob, &mut staged)? {
                        queue
                            .push(file, dev)
                            .ctx_in("sync", parts.root, path.as_path())?;
                    }
                    // Into place at once: the file is whole (the journal,
                    // pending until every file is synced, covers a crash
                    // before its data reaches the disk).
                    while let Some(s) = staged.get(committed) {
                        next_op(hook)?;
                        dirs.commit(s)
                            .ctx_in("put into place", parts.root, s.path.as_path())?;
                        committed += 1;
                    }
                    #[cfg(test)]
                    MOST_STAGED.with(|n| n.set(n.get().max(staged.len())));
                    staged.drain(..committed);
                    committed = 0;
                    if let State::File { size, .. } = state {
                        bytes += size;
                    }
                    parts.progress(Progress {
                        op: ProgressOp::Apply,
                        done: i as u64 + 1,
                        total: Some(steps.len() as u64),
                        bytes,
                    });
                }
                Ok(())
            },
        )
    };
    let t0 = std::time::Instant::now();
    let (written, synced) = match parts.conn.path() {
        // (An in-memory database has no path to open again.)
        Some(db) if !db.is_empty() && files >= PREFETCH_MIN => {
            let blob_of = |&i: &u32| steps.blob(i);
            prefetch::with_blobs(
                parts.store,
                db,
                &steps.order,
                blob_of,
                READ_THREADS,
                write_all,
            )
        }
        _ => write_all(&mut |hash: &Hash| parts.store.get(parts.conn, hash)),
    };
    let t_written = t0.elapsed();
    match written.and_then(|()| synced.ctx("sync", parts.root)) {
        Ok(()) => {}
        // A simulated crash leaves everything as a dead process would.
        Err(e) if e.is_injected() => return Err(e),
        Err(e) => {
            for s in &staged[committed..] {
                dirs.discard(s);
            }
            dirs.free_now();
            return Err(e);
        }
    }
    dirs.drop_spares();
    let t_dropped = t0.elapsed();
    let dirs = &*dirs;
    let sync = || {
        dirs.sync_touched(SYNC_THREADS, whole.as_ref())
            .and_then(|()| whole.as_ref().map_or(Ok(()), WholeFs::sync))
    };
    // A few files' syncs are short: a thread beside them would cost more.
    let (synced, during) = match whole {
        Some(_) => sync_beside(sync, meanwhile),
        None => (sync(), meanwhile()),
    };
    tracing::debug!(written = ?t_written, spares_dropped = ?t_dropped, synced = ?t0.elapsed(), files, "rewind written");
    match steps.order.first() {
        Some(&at) => {
            let item = steps.item(at)?;
            synced.ctx_in("sync the directories of", parts.root, item.path.as_path())
        }
        None => synced.ctx("sync", parts.root),
    }?;
    during
}

/// Makes `path` be `state`, except that a file is only staged (written
/// whole under a temp name and added to `staged`, for the caller to put
/// into place). A written file's handle and device are returned for
/// syncing. Every file step asks `blob` for its content, in step order.
/// Idempotent.
fn ensure(
    parts: &Parts<'_>,
    dirs: &mut Dirs<'_>,
    (path, state, found): Step<'_>,
    blob: &mut dyn FnMut(&Hash) -> Result<Vec<u8>>,
    staged: &mut Vec<Staged>,
) -> Result<Option<(std::fs::File, u64)>> {
    let (root, rel) = (parts.root, path.as_path());
    if let State::File { hash, mode, .. } = state {
        let data = blob(hash)?;
        // A file or nothing found there just now stands for a look (one
        // stat fewer per file): if that changed since, the exchange finds
        // nothing and renames, or `harvest` finds a directory, puts it
        // back and fails, and a rename over a directory fails.
        let replaces_file = match found {
            Some(State::File { .. }) => true,
            Some(State::Absent) => false,
            _ => {
                let now = dirs.lstat(path).ctx_in("stat", root, rel)?;
                if now.is_some_and(|s| s.kind == StatKind::Dir) {
                    dirs.remove(path, now)
                        .ctx_in("remove directory", root, rel)?;
                }
                now.is_some_and(|s| s.kind == StatKind::File)
            }
        };
        let (s, file) = dirs
            .stage(path, &data, *mode, replaces_file)
            .ctx_in("write", root, rel)?;
        let dev = s.dev;
        staged.push(s);
        return Ok(Some((file, dev)));
    }
    let now = dirs.lstat(path).ctx_in("stat", root, rel)?;
    let is_dir = now.is_some_and(|s| s.kind == StatKind::Dir);
    match state {
        State::Skipped { .. } | State::File { .. } => {}
        State::Absent => dirs.remove(path, now).ctx_in("remove", root, rel)?,
        State::Dir { mode } => {
            if now.is_some() && !is_dir {
                dirs.remove(path, now).ctx_in("remove", root, rel)?;
            }
            dirs.make_dir(path, *mode)
                .ctx_in("create directory", root, rel)?;
        }
        State::Symlink { target } => {
            if is_dir {
                dirs.remove(path, now)
                    .ctx_in("remove directory", root, rel)?;
            }
            dirs.symlink(path, target)
                .ctx_in("create symlink", root, rel)?;
        }
    }
    Ok(None)
}

/// The rollback steps that still have work to do. A path whose stat
/// still equals its cache entry, which holds the state wanted, was never
/// reached by the failed pass: rewriting it would need room that a full
/// disk does not have, for nothing.
fn still_to_undo(parts: &Parts<'_>, dirs: &mut Dirs<'_>, steps: &mut Steps<'_>) -> Result<()> {
    let mut left = Vec::with_capacity(steps.order.len());
    let mut files = 0;
    let mut held = Held::default();
    for &i in &steps.order {
        let item = steps.held(i, &mut held)?;
        let (path, state, _) = steps.view(&item);
        let now = dirs
            .lstat(path)
            .ctx_in("stat", parts.root, path.as_path())?;
        let untouched = match (cache::get(parts.conn, path)?, now) {
            (Some(row), Some(st)) => row.same_stat(&st) && row.state == *state,
            (None, None) => *state == State::Absent,
            _ => false,
        };
        if !untouched {
            left.push(i);
            files += usize::from(matches!(state, State::File { .. }));
        }
    }
    steps.order = left;
    steps.files = files;
    Ok(())
}

/// Records what the rewind wrote, so the watcher's events for it compare
/// as unchanged and are never mistaken for an agent's changes, and gives
/// the open turns' entries their paths' states now.
fn refresh_cache(conn: &rusqlite::Connection, root: &Root, steps: &Steps<'_>) -> Result<()> {
    let stamp = now_ns();
    // Steps come in path order: siblings one after another.
    let mut parents = KeptParent::default();
    let mut held = Held::default();
    for &at in &steps.order {
        let item = steps.held(at, &mut held)?;
        let (path, state, _) = steps.view(&item);
        match root.lstat_kept(path, &mut parents) {
            Ok(Some(stat)) if !matches!(state, State::Absent | State::Skipped { .. }) => {
                cache::put(conn, path, state, &stat, stamp)?
            }
            // Anything else is re-examined by the next check or scan.
            Ok(Some(_)) => {}
            Ok(None) => cache::remove(conn, path)?,
            Err(e) => tracing::warn!("stat {path} after rewind: {e}"),
        }
    }
    // Another session's open turn ends with what the rewind wrote.
    crate::history::resync_open_posts(conn)
}

/// The first blob the store lacks of those `steps` write, named with its
/// path. Looked up in hash order, the store's order, a window of files
/// at a time: each of the store's pages is read about once per window,
/// not once per file in path order.
fn missing_blob(parts: &Parts<'_>, steps: &Steps<'_>) -> Result<Option<String>> {
    let mut wanted: Vec<(Hash, u32)> = Vec::new();
    let mut held = Held::default();
    for window in steps.order.chunks(CHECK_WINDOW) {
        wanted.clear();
        for &at in window {
            let item = steps.held(at, &mut held)?;
            if let State::File { hash, .. } = steps.view(&item).1 {
                wanted.push((*hash, at));
            }
        }
        wanted.sort_unstable();
        wanted.dedup_by_key(|(hash, _)| *hash);
        for &(hash, at) in &wanted {
            if !parts.store.contains(parts.conn, &hash)? {
                let item = steps.item(at)?;
                return Ok(Some(format!("{hash} (for {})", item.path)));
            }
        }
    }
    Ok(None)
}

/// Files whose blobs [`missing_blob`] looks up at once (36 B each).
const CHECK_WINDOW: usize = 65_536;

/// One side of a rewind's actions in execution order: removals deepest
/// first (children before their directory), then everything else
/// shallowest first (directories before their contents). Held as places
/// in the actions (4 B a step), which are in path order.
struct Steps<'a> {
    actions: &'a ActionList,
    side: Side,
    /// Whether each action's other side is what was found just now.
    fresh: bool,
    order: Vec<u32>,
    /// How many steps write a file.
    files: usize,
}

impl<'a> Steps<'a> {
    fn new(actions: &'a ActionList, side: Side, fresh: bool) -> Result<Steps<'a>> {
        // Removals first, each path before its parent (a path sorts after
        // its parent in byte order, so: reverse byte order); then creations
        // in byte order, parents first. Byte order is also the order
        // capture stored small files in, many to a pack, so a whole-tree
        // restore decodes each pack once instead of jumping between packs
        // depth by depth. (4 billion actions would not fit on the disk.)
        let mut order = Vec::with_capacity(actions.len());
        let mut others = Vec::new();
        let mut files = 0;
        actions.try_for_each(|at, a| {
            let state = match side {
                Side::Target => &a.target,
                Side::Current => &a.current,
            };
            match state {
                State::Absent => order.push(at as u32),
                State::File { .. } => {
                    files += 1;
                    others.push(at as u32);
                }
                _ => others.push(at as u32),
            }
            Ok(())
        })?;
        order.reverse();
        order.append(&mut others);
        Ok(Steps {
            actions,
            side,
            fresh,
            order,
            files,
        })
    }

    fn item(&self, at: u32) -> Result<Item> {
        self.actions.get(at as usize)
    }

    /// [`Steps::item`] in a pass that holds its last block.
    fn held(&self, at: u32, held: &mut Held) -> Result<Item> {
        self.actions.get_held(at as usize, held)
    }

    /// An action's step: its path, the state to give it, and what was
    /// found there, if fresh.
    fn view<'i>(&self, a: &'i Item) -> Step<'i> {
        let (state, found) = match self.side {
            Side::Target => (&a.target, &a.current),
            Side::Current => (&a.current, &a.target),
        };
        (&a.path, state, self.fresh.then_some(found))
    }

    /// The blob action `at`'s step writes: its hash and size. (Were the
    /// action unreadable, the writer's own read of it fails first.)
    fn blob(&self, at: u32) -> Option<(Hash, u64)> {
        let item = self.item(at).ok()?;
        match self.view(&item).1 {
            State::File { hash, size, .. } => Some((*hash, *size)),
            _ => None,
        }
    }

    fn len(&self) -> usize {
        self.order.len()
    }
}

#[cfg(test)]
thread_local! {
    /// The most files a rewind held staged at once.
    static MOST_STAGED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

#[cfg(test)]
mod tests {
    use std::fs;

    use crate::model::{RewindOptions, RewindOutcome, TurnMeta};
    use crate::rewind::tests::{numbered_files, snapshot};

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

    /// A rewind of many more files than a prefetch batch holds one staged
    /// file at a time (each is put into place as soon as it is whole), and
    /// restores every one exactly.
    #[test]
    fn a_rewind_holds_one_staged_file_at_a_time() {
        let n = 40 * crate::prefetch::BATCH_BLOBS;
        let (_tmp, root, mut p) = numbered_files(n, "one");
        let before = snapshot(&root);
        let turn = p.turn_start(TurnMeta::default()).unwrap();
        for i in 0..n {
            fs::write(root.join(format!("d/{i}.txt")), format!("two {i}\n")).unwrap();
        }
        p.reconcile().unwrap();
        p.turn_end().unwrap();
        super::MOST_STAGED.with(|n| n.set(0));
        let out = p.rewind(turn, RewindOptions::default()).unwrap();
        assert!(matches!(out, RewindOutcome::Applied { .. }), "{out:?}");
        assert_eq!(snapshot(&root), before);
        assert_eq!(super::MOST_STAGED.with(|n| n.get()), 1);
    }

    /// A replaced file that has another name is never rewritten with a
    /// later file's content (its other name keeps what the agent wrote);
    /// the files without one are, and every path is restored exactly.
    #[test]
    fn a_replaced_file_with_another_name_is_not_recycled() {
        let n = 40;
        let (tmp, root, mut p) = numbered_files(n, "one");
        let before = snapshot(&root);
        let turn = p.turn_start(TurnMeta::default()).unwrap();
        for i in 0..n {
            fs::write(root.join(format!("d/{i}.txt")), format!("two {i}\n")).unwrap();
        }
        // Outside the project, on its filesystem: not part of the turn.
        let elsewhere = tmp.path().join("elsewhere");
        fs::hard_link(root.join("d/0.txt"), &elsewhere).unwrap();
        p.reconcile().unwrap();
        p.turn_end().unwrap();
        let out = p.rewind(turn, RewindOptions::default()).unwrap();
        assert!(matches!(out, RewindOutcome::Applied { .. }), "{out:?}");
        assert_eq!(snapshot(&root), before);
        assert_eq!(fs::read_to_string(&elsewhere).unwrap(), "two 0\n");
    }

    /// A file the plan found, turned into a directory after planning: the
    /// exchange that put the file into place meets the directory, puts it
    /// back and fails, and the rollback leaves the tree as it was found.
    #[test]
    fn a_file_that_became_a_directory_after_planning_fails_the_rewind_whole() {
        let n = 20;
        let (_tmp, root, mut p) = numbered_files(n, "one");
        let turn = p.turn_start(TurnMeta::default()).unwrap();
        for i in 0..n {
            fs::write(root.join(format!("d/{i}.txt")), format!("two {i}\n")).unwrap();
        }
        p.reconcile().unwrap();
        p.turn_end().unwrap();
        let after = snapshot(&root);
        let at = root.join("d/5.txt");
        let opts = RewindOptions {
            before_op: Some(Box::new(move |op| {
                if op == 0 {
                    fs::remove_file(&at).unwrap();
                    fs::create_dir(&at).unwrap();
                }
                Ok(())
            })),
            ..RewindOptions::default()
        };
        let err = p.rewind(turn, opts).unwrap_err();
        assert!(err.to_string().contains("became a directory"), "{err}");
        assert_eq!(snapshot(&root), after);
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
