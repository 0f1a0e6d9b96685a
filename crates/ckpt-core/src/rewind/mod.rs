//! Rewind and redo: plan, journal, apply, recover.
//!
//! A rewind is written to the journal (`rewinds`, `rewind_actions`) with
//! every path's current and target state before any file is touched. Each
//! action is idempotent ("make this path be that state"), so an interrupted
//! apply is finished at the next `recover` by running the whole plan again;
//! if that fails, the other side of every action is applied instead. Either
//! way the tree ends exactly at one of the two states.
//!
//! Here: gathering each path's wanted state and the recovery; `plan`
//! decides what is done, `journal` records it, `apply` writes it.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet, HashSet};

use rusqlite::Connection;

use crate::action_list::{self, ActionList, Builder, Spill};
use crate::cache;
use crate::capture;
use crate::confined::Dirs;
use crate::db;
use crate::error::{Error, IoContext, Result};
use crate::history::{self, JournalNote, RewindStatus};
use crate::model::{
    Action, Conflict, ContinuedTurn, OtherTurn, RecoveryReport, RewindOptions, RewindOutcome,
    RewindPlan, TurnStatus,
};
use crate::parts::Parts;
use crate::relpath::RelPath;
use crate::state::State;

use self::apply::apply;
pub(crate) use self::copy_in::copy_in;
pub use self::copy_in::{CopyOutcome, CopyPath};
use self::journal::Journaled;
use self::plan::{FirstLook, Kind, Planned};

mod apply;
mod copy_in;
mod journal;
mod merge;
mod merge_file;
mod plan;

/// Which side of a journaled action to apply.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    /// The rewind's target (rewind, or finishing one).
    Target,
    /// The state before the rewind (redo, or rolling a rewind back).
    Current,
}

impl Side {
    fn other(self) -> Side {
        match self {
            Side::Target => Side::Current,
            Side::Current => Side::Target,
        }
    }
}

/// Restores the state from just before `turn`, undoing it and every later
/// live turn of its session, its open turn included, for every path
/// they touched (or only `opts.paths`). A path another session's turn
/// changed during or after them is a conflict naming that turn. Once
/// applied, the session's open turn is ended and continued by a new
/// one (`RewindPlan::continued`); a dry run or a refusal changes no
/// turn. Call after a barrier.
pub(crate) fn rewind(
    parts: &mut Parts<'_>,
    turn: i64,
    mut opts: RewindOptions,
) -> Result<RewindOutcome> {
    recover(parts)?;
    let t0 = std::time::Instant::now();
    let row = history::turn(parts.conn, turn)?.ok_or(Error::UnknownTurn(turn))?;
    if row.status == TurnStatus::Rewound {
        return Err(Error::TurnRewound(turn));
    }
    let session = row.meta.session.as_deref();
    let open = history::open_turn_of(parts.conn, session)?;
    let mut live = history::live_turns_from(parts.conn, turn, session)?;
    live.extend(open);
    live.sort_unstable();
    let partial = !opts.paths.is_empty();
    let in_scope = |p: &RelPath| !partial || opts.paths.iter().any(|want| p.starts_with(want));
    // Which turns touched each path: only a partial rewind asks.
    let mut touched_by: BTreeMap<RelPath, Vec<i64>> = BTreeMap::new();
    let spill = &parts.spill();
    let touched = gather(parts.conn, &live, spill, |t, path| {
        let keep = in_scope(path);
        if keep && partial {
            touched_by.entry(path.clone()).or_default().push(t);
        }
        keep
    })?;
    // Only the turns that touched the paths asked for are undone.
    let mut undone = live.clone();
    if partial {
        refuse_untouched(turn, &live, &opts.paths, &touched)?;
        let by: BTreeSet<i64> = touched_by.into_values().flatten().collect();
        undone = by.into_iter().collect();
    }
    let others = other_sessions_touching(parts.conn, turn, row.started_ns, session, &touched)?;
    let t_collect = t0.elapsed();
    let mut look = FirstLook::new(Kind::Rewind);
    let actions = look_now(parts, &mut look, touched, opts.after_barrier, spill)?;
    let t_recheck = t0.elapsed();
    // One tree writer for the whole rewind.
    let mut dirs = writer(parts)?;
    let mut planned = db::reading(parts.conn, || {
        let turns = undone.clone();
        let force = opts.flags.force;
        plan::plan_looked(&tree(parts), look, turn, turns, actions, force, spill)
    })?;
    name_other_sessions(&mut planned, others)?;
    tracing::debug!(collect = ?t_collect, recheck = ?t_recheck, plan = ?t0.elapsed(), "rewind planned");
    let merged = match opts.merge {
        Some(mode) => merge::merge_conflicts(parts, &mut planned, mode, opts.flags.dry_run)?,
        None => Vec::new(),
    };
    if !opts.flags.dry_run && !planned.plan.refused(opts.flags) && !merged.is_empty() {
        let tx = parts.conn.transaction()?;
        for blob in &merged {
            parts.store.insert(&tx, blob)?;
        }
        tx.commit()?;
    }
    // A partial rewind leaves the turns live.
    let marked = if partial { Vec::new() } else { live };
    planned.plan.continued = continued(open.into_iter().map(|t| (t, row.meta.session.clone())));
    let note = JournalNote {
        undone,
        scope: std::mem::take(&mut opts.paths),
        left: left_as_they_were(&planned.plan),
    };
    carry_out(parts, &mut dirs, planned, &mut opts, marked, None, note)
}

/// Restores the state from just after `turn`: undoes the live turns of
/// its session after it (its open turn included) and keeps `turn`, as
/// [`rewind`] to the first of them does. [`Error::NothingAfter`] when
/// there is none. Call after a barrier.
pub(crate) fn rewind_after(
    parts: &mut Parts<'_>,
    turn: i64,
    opts: RewindOptions,
) -> Result<RewindOutcome> {
    recover(parts)?;
    let row = history::turn(parts.conn, turn)?.ok_or(Error::UnknownTurn(turn))?;
    if row.status == TurnStatus::Rewound {
        return Err(Error::TurnRewound(turn));
    }
    let session = row.meta.session.as_deref();
    let closed = history::live_turns_from(parts.conn, turn + 1, session)?;
    let open = history::open_turn_of(parts.conn, session)?.filter(|&t| t > turn);
    let first = closed
        .into_iter()
        .chain(open)
        .min()
        .ok_or(Error::NothingAfter(turn))?;
    rewind(parts, first, opts)
}

/// Every path the turns `live` (oldest first) touched that `keep` keeps
/// (told the turn too), in path order, as an action whose target is the
/// pre-image of the oldest turn that touched it and whose `current` is,
/// for now, the post-image of the newest (what the agent left; for the
/// open turn, what ending it now would record). A path whose entries
/// ended as they began is none. A redo's paths come as these too, which
/// [`look_now`] gives their states now.
fn gather(
    conn: &Connection,
    live: &[i64],
    spill: &Spill,
    mut keep: impl FnMut(i64, &RelPath) -> bool,
) -> Result<ActionList> {
    let post_of = |p: &RelPath| cache::state(conn, p);
    let Some((&first, later)) = live.split_first() else {
        return Builder::new(spill).finish();
    };
    // Each turn's entries come in path order: the first turn's are the
    // list; a later one's are merged in a window at a time.
    let mut list = Builder::new(spill);
    history::closing(conn, first, post_of, |e, post| {
        match post.filter(|_| keep(first, &e.path)) {
            Some(left) => list.push(Action {
                path: e.path,
                current: left,
                target: e.pre,
            }),
            None => Ok(()),
        }
    })?;
    let mut touched = list.finish()?;
    let mut pending: BTreeMap<RelPath, (State, State)> = BTreeMap::new();
    for &t in later {
        history::closing(conn, t, post_of, |e, post| {
            let Some(left) = post.filter(|_| keep(t, &e.path)) else {
                return Ok(());
            };
            match pending.entry(e.path) {
                Entry::Occupied(mut o) => o.get_mut().1 = left,
                Entry::Vacant(v) => {
                    v.insert((e.pre, left));
                }
            }
            if pending.len() == GATHER_WINDOW {
                let all = std::mem::replace(&mut touched, action_list::empty());
                touched = merged(all, &mut pending, spill)?;
            }
            Ok(())
        })?;
    }
    if !pending.is_empty() {
        touched = merged(touched, &mut pending, spill)?;
    }
    Ok(touched)
}

/// Later turns' paths [`gather`] holds before merging them in.
const GATHER_WINDOW: usize = if cfg!(test) { 3 } else { 65_536 };

/// `touched` with `pending` (path: the pre-image of the first later turn
/// that touched it, the post-image of the last) merged in: a path it has
/// keeps its target and takes what the later turns left.
fn merged(
    touched: ActionList,
    pending: &mut BTreeMap<RelPath, (State, State)>,
    spill: &Spill,
) -> Result<ActionList> {
    let mut out = Builder::new(spill);
    let mut pending = std::mem::take(pending).into_iter().peekable();
    let later = |(path, (target, left)): (RelPath, (State, State))| Action {
        path,
        current: left,
        target,
    };
    for a in touched.into_actions() {
        let a = a?;
        while let Some(p) = pending.next_if(|(p, _)| *p < a.path) {
            out.push(later(p))?;
        }
        match pending.next_if(|(p, _)| *p == a.path) {
            Some((_, (_, left))) => out.push(Action { current: left, ..a })?,
            None => out.push(a)?,
        }
    }
    for p in pending {
        out.push(later(p))?;
    }
    out.finish()
}

/// Every path a turn of another session than `session` changed during
/// or after `turn` (started at `started_ns`), with what the rewound
/// turns left there (`touched`, as [`gather`] gives it; none for a path they did not touch,
/// such as a parent the plan must create) and the newest such turn.
fn other_sessions_touching(
    conn: &Connection,
    turn: i64,
    started_ns: i64,
    session: Option<&str>,
    touched: &ActionList,
) -> Result<BTreeMap<RelPath, (Option<State>, OtherTurn)>> {
    let mut out = BTreeMap::new();
    for (t, s) in history::other_sessions_turns(conn, turn, started_ns, session)? {
        for e in history::entries(conn, t)? {
            let expected = touched.find(&e.path)?.map(|(_, a)| a.current.clone());
            let other = OtherTurn {
                turn: t,
                session: s.clone(),
            };
            out.insert(e.path, (expected, other));
        }
    }
    Ok(out)
}

/// Undoes the last applied rewind exactly: every path it changed gets
/// back the state it had before. Refuses on conflicts (a path changed
/// since the rewind) unless `force`, and, force or not, when the tree
/// could not be put back exactly (`RewindPlan::blocked`). The redo is
/// journaled as a plan of its own, so a failed one goes back to the
/// states it found. Once applied, every open turn is ended and
/// continued by a new one (it puts back a tree no open turn may
/// straddle); a dry run or a refusal changes no turn.
pub(crate) fn redo(parts: &mut Parts<'_>, mut opts: RewindOptions) -> Result<RewindOutcome> {
    recover(parts)?;
    let (id, turn) = history::last_applied_rewind(parts.conn)?.ok_or(Error::NothingToRedo)?;
    let open = history::open_turns(parts.conn)?;
    // The rewind's actions backwards: each path wants the state the
    // rewind found there, and is expected to hold what it wrote.
    let spill = &parts.spill();
    let mut wanted = Builder::new(spill);
    for a in history::actions(parts.conn, id, spill)?.into_actions() {
        let a = a?;
        wanted.push(Action {
            path: a.path,
            current: a.target,
            target: a.current,
        })?;
    }
    let wanted = wanted.finish()?;
    let mut dirs = writer(parts)?;
    let mut look = FirstLook::new(Kind::Redo);
    let actions = look_now(parts, &mut look, wanted, opts.after_barrier, spill)?;
    let turns = match history::undone_turns(parts.conn, id)? {
        Some(turns) => turns,
        None => history::turns_rewound_by(parts.conn, id)?,
    };
    let mut planned = db::reading(parts.conn, || {
        let force = opts.flags.force;
        plan::plan_looked(&tree(parts), look, turn, turns, actions, force, spill)
    })?;
    planned.plan.continued = continued(open);
    let note = JournalNote {
        undone: planned.plan.turns.clone(),
        ..JournalNote::default()
    };
    carry_out(
        parts,
        &mut dirs,
        planned,
        &mut opts,
        Vec::new(),
        Some(id),
        note,
    )
}

/// A plan's end: shown (dry run), refused, or journaled (marking
/// `marked` rewound, or redoing `redoes`, and continuing the open turns
/// `plan.continued` names) and applied from its list. Only the last
/// changes anything, turns included. The outcome's plan lists
/// `opts.list` actions.
fn carry_out(
    parts: &mut Parts<'_>,
    dirs: &mut Dirs<'_>,
    mut planned: Planned,
    opts: &mut RewindOptions,
    marked: Vec<i64>,
    redoes: Option<i64>,
    note: JournalNote,
) -> Result<RewindOutcome> {
    if opts.flags.dry_run {
        return Ok(RewindOutcome::DryRun(planned.into_plan(opts.list)?));
    }
    if planned.plan.refused(opts.flags) {
        return Ok(RewindOutcome::Refused(planned.into_plan(opts.list)?));
    }
    let t0 = std::time::Instant::now();
    let journaled = Journaled::write(parts.conn, &mut planned, marked, redoes, &note)?;
    tracing::debug!(took = ?t0.elapsed(), "rewind journaled");
    apply(
        parts,
        dirs,
        &journaled,
        &planned.actions,
        Side::Target,
        true,
        &mut opts.take_hook(),
    )?;
    Ok(RewindOutcome::Applied {
        rewind_id: journaled.id,
        plan: planned.into_plan(opts.list)?,
    })
}

/// Finishes a journaled rewind or redo that was interrupted (the process
/// died while applying it). Call at start-up, before anything else.
pub(crate) fn recover(parts: &mut Parts<'_>) -> Result<Option<RecoveryReport>> {
    let Some((id, status)) = history::unfinished_rewind(parts.conn)? else {
        return Ok(None);
    };
    let side = if status == RewindStatus::Redoing {
        Side::Current
    } else {
        Side::Target
    };
    let (journaled, actions) = Journaled::read(parts.conn, id, &parts.spill())?;
    let paths = actions.len();
    tracing::info!(rewind = id, status = %status.as_str(), paths, "finishing an interrupted rewind");
    // A write cut short leaves its temp file behind.
    let mut dirs: HashSet<Option<RelPath>> = HashSet::new();
    actions.try_for_each(|_, a| {
        dirs.insert(a.path.parent());
        Ok(())
    })?;
    for dir in dirs {
        if let Err(e) = parts.root_fs.remove_temp_files(dir.as_ref()) {
            tracing::warn!("removing temp files after an interrupted rewind: {e}");
        }
    }
    let mut dirs = writer(parts)?;
    apply(
        parts, &mut dirs, &journaled, &actions, side, false, &mut None,
    )?;
    Ok(Some(RecoveryReport {
        rewind_id: id,
        redo: side == Side::Current || journaled.redoes.is_some(),
        paths,
    }))
}

/// The project as the planner sees it: the hash cache, and the disk for
/// what the cache never holds.
fn tree<'a>(parts: &'a Parts<'a>) -> CacheTree<'a> {
    CacheTree { parts }
}

/// Brings the cache up to date for the paths a rewind will touch, so
/// the plan sees a user's late edit as a conflict, and returns each
/// path's current state. Right after the daemon's barrier, every change
/// made before it has been checked (racy entries re-hashed on their
/// events), so only a path whose stat differs from its cache entry (an
/// edit since) is checked again; otherwise every path is, racy ones
/// re-hashed. The states come in the order of `paths`, which must not
/// repeat.
fn current_states<'p>(
    parts: &mut Parts<'_>,
    paths: impl Iterator<Item = &'p RelPath> + Clone + Send,
    after_barrier: bool,
) -> Result<Vec<State>> {
    let mut current = Vec::new();
    // Those to check again, by their place in `current`.
    let mut changed: Vec<(usize, RelPath)> = Vec::new();
    if after_barrier {
        let (root, conn) = (parts.root, &*parts.conn);
        db::reading(conn, || {
            parts.root_fs.lstat_each(paths, |path, now| {
                let now = now.ctx_in("stat", root, path.as_path())?;
                let state = match (cache::get(conn, path)?, now) {
                    (Some(row), Some(st)) if row.same_stat(&st) => Some(row.state),
                    (None, None) => Some(State::Absent),
                    _ => None,
                };
                if state.is_none() {
                    changed.push((current.len(), path.clone()));
                }
                current.push(state.unwrap_or(State::Absent));
                Ok(())
            })
        })?;
    } else {
        for (i, path) in paths.enumerate() {
            changed.push((i, path.clone()));
            current.push(State::Absent);
        }
    }
    if !changed.is_empty() {
        capture::check_paths(parts, changed.iter().map(|(_, p)| p.clone()))?;
        db::reading(parts.conn, || {
            for (i, path) in changed {
                current[i] = cache::state(parts.conn, &path)?;
            }
            Ok(())
        })?;
    }
    Ok(current)
}

/// Paths whose states now are found at once by [`look_now`].
const LOOK_WINDOW: usize = if cfg!(test) { 3 } else { 16_384 };

/// Each of `touched`'s paths' state now (see [`current_states`]) and the
/// planner's first look at it, a window of paths at a time: the actions
/// they need, in a list of their own (`touched` as [`gather`] gives it).
fn look_now(
    parts: &mut Parts<'_>,
    look: &mut FirstLook,
    touched: ActionList,
    after_barrier: bool,
    spill: &Spill,
) -> Result<ActionList> {
    let mut out = Builder::new(spill);
    let mut window = Vec::with_capacity(LOOK_WINDOW.min(touched.len()));
    let n = touched.len();
    for (at, t) in touched.into_actions().enumerate() {
        window.push(t?);
        if window.len() == LOOK_WINDOW || at + 1 == n {
            let now = current_states(parts, window.iter().map(|t| &t.path), after_barrier)?;
            for (t, now) in window.drain(..).zip(now) {
                // (`current` holds what the turns left, until now.)
                if look.needs_action(&t.path, &now, &t.target, &t.current) {
                    out.push(Action { current: now, ..t })?;
                }
            }
        }
    }
    out.finish()
}

/// The rewind's one tree writer.
fn writer<'a>(parts: &Parts<'a>) -> Result<Dirs<'a>> {
    Dirs::new(parts.root_fs, parts.opts.free_removed.clone()).ctx("open", parts.root)
}

/// The open turns (with their sessions) a rewind or redo ends and
/// continues once applied.
fn continued(open: impl IntoIterator<Item = (i64, Option<String>)>) -> Vec<ContinuedTurn> {
    open.into_iter()
        .map(|(ended, session)| ContinuedTurn {
            ended,
            session,
            opened: None,
        })
        .collect()
}

/// A rewind limited to paths that no rewound turn touched would do
/// nothing: name them instead (an error, nothing changed or journaled).
fn refuse_untouched(
    turn: i64,
    live: &[i64],
    wanted: &[RelPath],
    touched: &ActionList,
) -> Result<()> {
    let mut reached = vec![false; wanted.len()];
    touched.try_for_each(|_, a| {
        for (w, r) in wanted.iter().zip(&mut reached) {
            *r |= a.path.starts_with(w);
        }
        Ok(())
    })?;
    let untouched: Vec<String> = wanted
        .iter()
        .zip(reached)
        .filter(|(_, reached)| !reached)
        .map(|(w, _)| w.display())
        .collect();
    if untouched.is_empty() {
        return Ok(());
    }
    let turns = match live {
        [one] => format!("turn {one}"),
        _ => format!(
            "turns {}",
            live.iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    Err(Error::BadInput(format!(
        "no rewound turn touched {} (the rewind to before turn {turn} undoes {turns}; \
         `ckptctl show N` lists a turn's paths); nothing changed",
        untouched.join(", ")
    )))
}

/// The paths of the rewound turns a plan leaves as they are: skipped, or
/// merged changes that overlap.
fn left_as_they_were(plan: &RewindPlan) -> Vec<crate::model::Skipped> {
    let overlapping = plan
        .merged
        .iter()
        .filter(|m| m.outcome == crate::model::MergeOutcome::Overlapping)
        .map(|m| {
            let why = "the changes overlap (--merge); left as it was".to_string();
            crate::model::Skipped::new(m.path.clone(), why)
        });
    let mut left: Vec<_> = plan.skipped.iter().cloned().chain(overlapping).collect();
    left.sort();
    left
}

/// Makes a conflict of every planned path another session's turn changed
/// (`others`: path → what the rewound turns left there, if they touched
/// it, and that turn).
fn name_other_sessions(
    planned: &mut Planned,
    others: BTreeMap<RelPath, (Option<State>, OtherTurn)>,
) -> Result<()> {
    let plan = &mut planned.plan;
    for (path, (expected, other)) in others {
        let Some((_, a)) = planned.actions.find(&path)? else {
            continue;
        };
        match plan.conflicts.iter_mut().find(|c| c.path == a.path) {
            Some(c) => c.other = Some(other),
            None => plan.conflicts.push(Conflict {
                path,
                expected: expected.unwrap_or_else(|| a.current.clone()),
                current: a.current.clone(),
                other: Some(other),
                not_mergeable: None,
            }),
        }
    }
    plan.conflicts.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(())
}

struct CacheTree<'a> {
    parts: &'a Parts<'a>,
}

impl plan::Tree for CacheTree<'_> {
    fn state(&self, path: &RelPath) -> Result<State> {
        cache::state(self.parts.conn, path)
    }

    fn each_below(
        &self,
        dir: &RelPath,
        f: &mut dyn FnMut(RelPath, State) -> Result<()>,
    ) -> Result<()> {
        cache::each_below(self.parts.conn, dir, |p, row| f(p, row.state))
    }

    fn holds_uncaptured(&self, dir: &RelPath) -> Result<bool> {
        let p = self.parts;
        let names = p
            .root_fs
            .list_dir(dir)
            .ctx_in("list directory", p.root, dir.as_path())?;
        Ok(names.iter().any(|name| match dir.join(name) {
            Ok(child) => {
                p.excludes.is_excluded(&child, false) || p.excludes.is_excluded(&child, true)
            }
            Err(_) => true, // `.git`
        }))
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use crate::model::{RewindOptions, RewindOutcome, TurnMeta};
    use crate::project::tests::reconciled;

    pub(crate) fn snapshot(root: &std::path::Path) -> Vec<(String, Vec<u8>)> {
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

    /// Two sessions: A edits a.txt, then both have turns open while c.txt
    /// changes (shared: recorded in both), then B edits b.txt alone.
    #[test]
    fn a_rewind_undoes_only_its_sessions_turns_and_names_another_sessions_change() {
        let (_tmp, root, mut p) =
            reconciled(&[("a.txt", "a\n"), ("b.txt", "b\n"), ("c.txt", "c\n")]);
        let meta = |s: &str| TurnMeta {
            session: Some(s.into()),
            ..TurnMeta::default()
        };
        let ta = p.turn_start(meta("A")).unwrap();
        fs::write(root.join("a.txt"), "A\n").unwrap();
        p.reconcile().unwrap();
        let tb = p.turn_start(meta("B")).unwrap();
        assert_eq!(crate::history::open_turns(&p.conn).unwrap().len(), 2);
        fs::write(root.join("c.txt"), "A or B\n").unwrap();
        p.reconcile().unwrap();
        let a = p.turn_end_of(Some("A"), None, None).unwrap();
        fs::write(root.join("b.txt"), "B\n").unwrap();
        p.reconcile().unwrap();
        let b = p.turn_end_of(Some("B"), None, None).unwrap();
        let shared = |d: &crate::model::TurnDetail| -> Vec<(String, bool)> {
            d.entries
                .iter()
                .map(|e| (e.path.to_string(), e.shared))
                .collect()
        };
        let own = |p: &str| (p.to_string(), false);
        let both = |p: &str| (p.to_string(), true);
        assert_eq!(shared(&a), [own("a.txt"), both("c.txt")]);
        assert_eq!(shared(&b), [own("b.txt"), both("c.txt")]);

        let RewindOutcome::Refused(plan) = p.rewind(ta, RewindOptions::default()).unwrap() else {
            panic!("a path B changed too was not a conflict");
        };
        assert_eq!(plan.turns, [ta]);
        let conflicts: Vec<_> = plan
            .conflicts
            .iter()
            .map(|c| (c.path.to_string(), c.other.clone()))
            .collect();
        let by_b = crate::model::OtherTurn {
            turn: tb,
            session: Some("B".into()),
        };
        assert_eq!(conflicts, [("c.txt".to_string(), Some(by_b))]);

        let forced = RewindOptions {
            flags: crate::model::RewindFlags {
                force: true,
                ..Default::default()
            },
            ..RewindOptions::default()
        };
        let out = p.rewind(ta, forced).unwrap();
        assert!(matches!(out, RewindOutcome::Applied { .. }), "{out:?}");
        let read = |p: &str| fs::read_to_string(root.join(p)).unwrap();
        assert_eq!(
            (read("a.txt"), read("b.txt"), read("c.txt")),
            ("a\n".into(), "B\n".into(), "c\n".into())
        );
        assert_eq!(
            p.show(tb).unwrap().info.status,
            crate::model::TurnStatus::Closed
        );
    }

    /// A rewind of several turns whose paths overlap, and its redo, with
    /// every list past its window (tests' windows hold a few actions) and
    /// later turns' paths merged in a few at a time.
    #[test]
    fn a_rewind_and_redo_with_their_lists_on_disk_are_exact() {
        use crate::action_list::SPILLED;
        let (_tmp, root, mut p) = numbered_files(30, "one");
        let before = snapshot(&root);
        let first = p.turn_start(TurnMeta::default()).unwrap();
        for i in (0..30).step_by(2) {
            fs::write(root.join(format!("d/{i}.txt")), "two\n").unwrap();
        }
        p.reconcile().unwrap();
        p.turn_end().unwrap();
        p.turn_start(TurnMeta::default()).unwrap();
        for i in (0..30).step_by(3) {
            fs::write(root.join(format!("d/{i}.txt")), "three\n").unwrap();
        }
        fs::create_dir_all(root.join("n/deep")).unwrap();
        for i in 0..12 {
            fs::write(root.join(format!("n/deep/{i}")), "new").unwrap();
        }
        fs::remove_file(root.join("d/7.txt")).unwrap();
        p.reconcile().unwrap();
        p.turn_end().unwrap();
        let after = snapshot(&root);
        let spilled = SPILLED.with(|n| n.get());
        let out = p.rewind(first, RewindOptions::default()).unwrap();
        let RewindOutcome::Applied { plan, .. } = out else {
            panic!("not applied: {out:?}");
        };
        assert_eq!(snapshot(&root), before);
        assert!(SPILLED.with(|n| n.get()) > spilled, "no list went to disk");
        assert_eq!(plan.actions.len() as u64, plan.counts.total());
        assert!(plan.actions.is_sorted_by(|a, b| a.path < b.path));
        p.reconcile().unwrap();
        let listed = RewindOptions {
            list: Some(3),
            ..RewindOptions::default()
        };
        let out = p.redo(listed).unwrap();
        let RewindOutcome::Applied { plan: redo, .. } = out else {
            panic!("redo not applied: {out:?}");
        };
        assert_eq!(snapshot(&root), after);
        assert_eq!(redo.actions.len(), 3);
        assert_eq!(redo.counts.total(), plan.counts.total());
    }

    /// A reconciled project of `n` files `d/<i>.txt`, each `<word> <i>\n`.
    pub(crate) fn numbered_files(
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
}
