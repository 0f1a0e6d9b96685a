//! Planning a rewind or a redo: which path is given which state.
//!
//! The plan's result is always a tree: every path it makes exist has
//! directories above it, and every directory it takes away ends empty.
//! What cannot be done is decided here, before anything is journaled or
//! touched: a rewind restores what it can and reports the rest; a redo puts
//! the tree back exactly or is refused. The rules, in the order applied
//! (docs/architecture.md, "Planning"):
//!
//! - R1 a path already at its target needs nothing; one whose target or
//!   current content was not captured is left alone, force or not: what
//!   ckpt never held it can neither restore nor give back to a redo (and a
//!   redo that must leave one is refused, as for R3-R5).
//! - R2 a path that differs from what the last turn left is a conflict.
//! - R3 a path now inside a directory the plan takes away, and not removed
//!   by it, is a conflict too (someone's file, or an R2 one, reported even
//!   where R4 or R5 then keep it); with force the directory is kept instead
//!   (R4, R5).
//! - R4 every directory above a path the plan makes exist ends a
//!   directory: one the plan would take away is kept (or, if it is not a
//!   directory now, becomes one); a missing one is created; a file or
//!   symlink there blocks the path and everything planned below it.
//! - R5 a directory the plan takes away that still holds a path that does
//!   not end absent (or content ckpt does not capture) is kept, with every
//!   directory above it the plan would take away.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use crate::action_list::{self, ActionList, Builder, Held, Spill};
use crate::error::Result;
use crate::model::{Action, ActionCounts, Conflict, MergeOutcome, RewindPlan, Skipped};
use crate::relpath::RelPath;
use crate::state::State;

/// Mode of a directory the plan creates without a recorded one.
const NEW_DIR: State = State::Dir { mode: 0o755 };

/// What the planner needs to know of the project as it is now.
pub(crate) trait Tree {
    /// The captured state of `path` (`Absent` if none).
    fn state(&self, path: &RelPath) -> Result<State>;
    /// Calls `f` with every captured path strictly below `dir` and its
    /// state, in path order.
    fn each_below(
        &self,
        dir: &RelPath,
        f: &mut dyn FnMut(RelPath, State) -> Result<()>,
    ) -> Result<()>;
    /// Whether `dir` holds content ckpt does not capture (an excluded
    /// directory, a nested `.git`), which no plan may remove.
    fn holds_uncaptured(&self, dir: &RelPath) -> Result<bool>;
}

/// One path the plan should bring back.
pub(crate) struct Wanted {
    pub path: RelPath,
    pub current: State,
    pub target: State,
    /// What the rewound turns (or the undone rewind) left there.
    pub expected: State,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Restores what it can and reports the rest.
    Rewind,
    /// Exact or nothing: anything R3–R5 would keep or skip blocks it.
    Redo,
}

/// A plan as a rewind carries it out: its actions in a list that goes to
/// disk past a window, and the rest of it (`plan.actions` empty until
/// [`Planned::into_plan`]).
pub(crate) struct Planned {
    pub actions: ActionList,
    pub plan: RewindPlan,
}

impl Planned {
    /// The plan as the caller sees it: every action counted, the first
    /// `list` listed (all of them without it) and every one `--merge`
    /// wrote.
    pub fn into_plan(self, list: Option<usize>) -> Result<RewindPlan> {
        let Planned { actions, mut plan } = self;
        let merged: BTreeSet<&RelPath> = plan
            .merged
            .iter()
            .filter(|m| m.outcome != MergeOutcome::Overlapping)
            .map(|m| &m.path)
            .collect();
        let mut listed = Vec::new();
        let mut left = list.unwrap_or(usize::MAX);
        let mut held = Held::default();
        for at in 0..actions.len() {
            if left == 0 && merged.is_empty() {
                break;
            }
            let a = actions.get_held(at, &mut held)?;
            if merged.contains(&a.path) {
                listed.push(a.clone());
            } else if left > 0 {
                listed.push(a.clone());
                left -= 1;
            }
        }
        plan.counts = actions.counts();
        plan.actions = listed;
        Ok(plan)
    }
}

struct Planner<'t, T: Tree> {
    tree: &'t T,
    kind: Kind,
    /// In path order, as the first look left them; what R4 and R5 change
    /// is kept beside them (`dropped`, `made_dir`) and written into a new
    /// list at the end.
    actions: ActionList,
    /// The places in `actions` of those that take a directory away as
    /// looked (R4 and R5 only ever keep one): what R3 and R5 start from,
    /// without a pass over every action.
    removals: Vec<usize>,
    /// The places in `actions` of those R4 or R5 dropped.
    dropped: HashSet<usize>,
    /// The places in `actions` of those R4 makes a directory.
    made_dir: HashSet<usize>,
    /// Directories R4 creates that no wanted path names.
    made: BTreeMap<RelPath, Action>,
    conflicts: BTreeMap<RelPath, Conflict>,
    /// Notes on paths left as they are (or given another state than asked).
    notes: Vec<Skipped>,
    /// Per directory that must end a directory: `None` if it will, else the
    /// non-directory above (or at) it that blocks it.
    dir_ok: HashMap<RelPath, Option<RelPath>>,
}

/// The planner's first look (R1, R2) at each wanted path, one at a time,
/// with the conflicts and notes it found so far.
pub(crate) struct FirstLook {
    kind: Kind,
    conflicts: BTreeMap<RelPath, Conflict>,
    notes: Vec<Skipped>,
}

/// Plans bringing every `wanted` path to its target. `turn` and `turns`
/// only label the result.
pub(crate) fn plan(
    tree: &impl Tree,
    kind: Kind,
    turn: i64,
    turns: Vec<i64>,
    wanted: impl IntoIterator<Item = Wanted>,
    force: bool,
    spill: &Spill,
) -> Result<Planned> {
    let mut look = FirstLook::new(kind);
    let actions = wanted.into_iter().filter_map(|w| look.action(w)).collect();
    let actions = action_list::from_vec(actions, spill)?;
    plan_looked(tree, look, turn, turns, actions, force, spill)
}

/// Plans the `actions` that `look` kept (R3-R5), with what it found;
/// `spill`: where the plan's list goes past its window.
pub(crate) fn plan_looked(
    tree: &impl Tree,
    look: FirstLook,
    turn: i64,
    turns: Vec<i64>,
    actions: ActionList,
    force: bool,
    spill: &Spill,
) -> Result<Planned> {
    let FirstLook {
        kind,
        conflicts,
        notes,
    } = look;
    let mut removals = Vec::new();
    actions.try_for_each(|at, a| {
        if removes_dir(&a.current, &a.target) {
            removals.push(at);
        }
        Ok(())
    })?;
    let mut p = Planner {
        tree,
        kind,
        actions,
        removals,
        dropped: HashSet::new(),
        made_dir: HashSet::new(),
        made: BTreeMap::new(),
        conflicts,
        notes,
        dir_ok: HashMap::new(),
    };
    let dir_conflicts = if force { Vec::new() } else { p.held_paths()? };
    p.parents()?;
    p.empty_dirs()?;
    let actions = p.settled(spill)?;
    let Planner {
        mut conflicts,
        notes,
        ..
    } = p;
    // A conflict on a path the plan no longer changes overwrites nothing.
    let mut kept = BTreeMap::new();
    for (path, c) in conflicts {
        if actions.find(&path)?.is_some() {
            kept.insert(path, c);
        }
    }
    conflicts = kept;
    for c in dir_conflicts {
        conflicts.entry(c.path.clone()).or_insert(c);
    }
    let (mut blocked, skipped) = match kind {
        Kind::Rewind => (Vec::new(), notes),
        Kind::Redo => (notes, Vec::new()),
    };
    blocked.sort();
    Ok(Planned {
        actions,
        plan: RewindPlan {
            turn,
            turns,
            actions: Vec::new(),
            counts: ActionCounts::default(),
            conflicts: conflicts.into_values().collect(),
            skipped,
            blocked,
            merged: Vec::new(),
            continued: Vec::new(),
        },
    })
}

impl FirstLook {
    pub fn new(kind: Kind) -> FirstLook {
        FirstLook {
            kind,
            conflicts: BTreeMap::new(),
            notes: Vec::new(),
        }
    }

    /// The action `w` needs, if any.
    pub fn action(&mut self, w: Wanted) -> Option<Action> {
        self.needs_action(&w.path, &w.current, &w.target, &w.expected)
            .then_some(Action {
                path: w.path,
                current: w.current,
                target: w.target,
            })
    }

    /// R1, R2 for one path: whether it needs an action (`current` to
    /// `target`; `expected` is what the undone turns left there).
    pub fn needs_action(
        &mut self,
        path: &RelPath,
        current: &State,
        target: &State,
        expected: &State,
    ) -> bool {
        if let State::Skipped { reason } = target {
            // Even where the state now equals it: that records only why
            // ckpt never read the content, so a rewind says it cannot give
            // it back (a redo has nothing to do).
            if current != target || self.kind == Kind::Rewind {
                let why = format!("its earlier content was not captured: {reason}");
                self.notes.push(Skipped::new(path.clone(), why));
            }
            return false;
        }
        if current == target {
            return false;
        }
        // Even with force: overwritten, it could never be given back.
        if let State::Skipped { reason } = current {
            let why = format!(
                "its current content is not captured ({reason}), so it is never \
                 overwritten; left alone (move it away to rewind it)"
            );
            self.notes.push(Skipped::new(path.clone(), why));
            return false;
        }
        if current != expected {
            let conflict = Conflict {
                path: path.clone(),
                expected: expected.clone(),
                current: current.clone(),
                other: None,
                not_mergeable: None,
            };
            self.conflicts.insert(path.clone(), conflict);
        }
        true
    }
}

impl<T: Tree> Planner<'_, T> {
    /// The place in `actions` of `path`'s action, unless dropped.
    fn place(&self, path: &RelPath) -> Result<Option<usize>> {
        Ok(match self.actions.find(path)? {
            Some((at, _)) if !self.dropped.contains(&at) => Some(at),
            _ => None,
        })
    }

    /// The target action `at` has now.
    fn target_of<'a>(&self, at: usize, a: &'a Action) -> &'a State {
        if self.made_dir.contains(&at) {
            &NEW_DIR
        } else {
            &a.target
        }
    }

    /// `f` of `path`'s action (with the target it has now), unless
    /// dropped or none.
    fn with<R>(&self, path: &RelPath, f: impl FnOnce(&Action, &State) -> R) -> Result<Option<R>> {
        Ok(match self.actions.find(path)? {
            Some((at, a)) if !self.dropped.contains(&at) => Some(f(&a, self.target_of(at, &a))),
            _ => self.made.get(path).map(|a| f(a, &a.target)),
        })
    }

    fn ends_absent(&self, path: &RelPath) -> Result<bool> {
        Ok(self.with(path, |_, t| t.is_absent())? == Some(true))
    }

    /// Whether the plan takes the directory at `path` away.
    fn removes(&self, path: &RelPath) -> Result<bool> {
        Ok(self.with(path, |a, t| removes_dir(&a.current, t))? == Some(true))
    }

    /// The directories the plan takes away that no other it takes away
    /// holds: below them lies every path below any it takes away.
    fn outermost_removed(&self) -> Result<Vec<RelPath>> {
        let mut out = Vec::new();
        let mut held = Held::default();
        'removals: for &at in &self.removals {
            let a = self.actions.get_held(at, &mut held)?;
            if self.dropped.contains(&at) || !removes_dir(&a.current, self.target_of(at, &a)) {
                continue;
            }
            for d in std::iter::successors(a.path.parent(), RelPath::parent) {
                if self.removes(&d)? {
                    continue 'removals;
                }
            }
            out.push(a.path.clone());
        }
        Ok(out)
    }

    /// R3: paths now inside a directory the plan takes away that it does not
    /// remove. A redo is blocked by them instead (R5 finds them).
    fn held_paths(&self) -> Result<Vec<Conflict>> {
        if self.kind == Kind::Redo {
            return Ok(Vec::new());
        }
        let mut out: BTreeMap<RelPath, Conflict> = BTreeMap::new();
        for dir in self.outermost_removed()? {
            self.tree.each_below(&dir, &mut |child, state| {
                if self.ends_absent(&child)? {
                    return Ok(());
                }
                // One edited since (R2) is reported as such, even if R4 or
                // R5 keep it in the end: keeping it is the refusal's doing.
                let c = self.conflicts.get(&child).cloned().unwrap_or(Conflict {
                    path: child.clone(),
                    expected: State::Absent,
                    current: state,
                    other: None,
                    not_mergeable: None,
                });
                out.entry(child).or_insert(c);
                Ok(())
            })?;
        }
        Ok(out.into_values().collect())
    }

    /// R4, parents first, so a blocked directory blocks what is below it.
    fn parents(&mut self) -> Result<()> {
        // In path order. What `make_dir` adds or drops meanwhile is a
        // directory whose own parent it has already settled.
        let mut held = Held::default();
        for at in 0..self.actions.len() {
            let a = self.actions.get_held(at, &mut held)?;
            if self.dropped.contains(&at) || self.target_of(at, &a).is_absent() {
                continue;
            }
            let Some(parent) = a.path.parent() else {
                continue;
            };
            if let Some(blocker) = self.make_dir(&parent, &a.path)? {
                self.dropped.insert(at);
                let why = format!("its parent {blocker} is not a directory; left alone");
                self.notes.push(Skipped::new(a.path.clone(), why));
            }
        }
        Ok(())
    }

    /// Makes `dir` end a directory for `child`; returns what blocks it.
    fn make_dir(&mut self, dir: &RelPath, child: &RelPath) -> Result<Option<RelPath>> {
        if let Some(known) = self.dir_ok.get(dir) {
            return Ok(known.clone());
        }
        if let Some(up) = dir.parent() {
            if let Some(blocker) = self.make_dir(&up, dir)? {
                self.dir_ok.insert(dir.clone(), Some(blocker.clone()));
                return Ok(Some(blocker));
            }
        }
        let found = match self.place(dir)? {
            Some(at) => Some((at, self.actions.get(at)?)),
            None => None,
        };
        let blocker = match found {
            Some((at, a)) if self.target_of(at, &a).is_dir() => None,
            Some((at, a)) if a.current.is_dir() => {
                self.dropped.insert(at);
                let why = format!("kept: it holds {child}, which this restores");
                self.notes.push(Skipped::new(dir.clone(), why));
                None
            }
            Some((at, _)) => {
                let why = format!("made a directory: it holds {child}, which this restores");
                self.made_dir.insert(at);
                self.notes.push(Skipped::new(dir.clone(), why));
                None
            }
            None if self.made.contains_key(dir) => None,
            None => match self.tree.state(dir)? {
                State::Dir { .. } => None,
                State::Absent => {
                    let action = Action {
                        path: dir.clone(),
                        current: State::Absent,
                        target: NEW_DIR,
                    };
                    self.made.insert(dir.clone(), action);
                    None
                }
                _ => Some(dir.clone()),
            },
        };
        self.dir_ok.insert(dir.clone(), blocker.clone());
        Ok(blocker)
    }

    /// R5: a directory the plan takes away must end empty.
    fn empty_dirs(&mut self) -> Result<()> {
        // Per directory taken away, the first path below it (in path
        // order) that does not end absent: one read of each outermost
        // one's subtree, not one of every directory's.
        let mut held: HashMap<RelPath, RelPath> = HashMap::new();
        for dir in self.outermost_removed()? {
            self.tree.each_below(&dir, &mut |child, _| {
                if self.ends_absent(&child)? {
                    return Ok(());
                }
                let mut up = child.parent();
                while let Some(d) = up {
                    if !held.contains_key(&d) && self.removes(&d)? {
                        held.insert(d.clone(), child.clone());
                    }
                    if d == dir {
                        break;
                    }
                    up = d.parent();
                }
                Ok(())
            })?;
        }
        let mut keep: Vec<(RelPath, String)> = Vec::new();
        let mut held_block = Held::default();
        for &at in &self.removals {
            let a = self.actions.get_held(at, &mut held_block)?;
            if self.dropped.contains(&at) || !removes_dir(&a.current, self.target_of(at, &a)) {
                continue;
            }
            if let Some(child) = held.get(&a.path) {
                let why = format!("kept: it holds {child}, which this does not remove");
                keep.push((a.path.clone(), why));
            } else if self.tree.holds_uncaptured(&a.path)? {
                let why = "kept: it holds content ckpt does not capture \
                           (an excluded directory or a .git)";
                keep.push((a.path.clone(), why.to_string()));
            }
        }
        // Keeping a directory keeps every directory above it too.
        for (dir, why) in keep {
            let mut up = Some(dir.clone());
            while let Some(d) = up {
                if let Some(at) = self.place(&d)? {
                    let a = self.actions.get(at)?;
                    if removes_dir(&a.current, self.target_of(at, &a)) {
                        self.dropped.insert(at);
                    }
                }
                up = d.parent();
            }
            self.notes.push(Skipped::new(dir, why));
        }
        Ok(())
    }

    /// The actions as R4 and R5 left them, with the directories R4
    /// creates sorted in.
    fn settled(&mut self, spill: &Spill) -> Result<ActionList> {
        if self.dropped.is_empty() && self.made_dir.is_empty() && self.made.is_empty() {
            return Ok(std::mem::replace(&mut self.actions, action_list::empty()));
        }
        let mut made = std::mem::take(&mut self.made).into_values().peekable();
        let mut out = Builder::new(spill);
        self.actions.try_for_each(|at, a| {
            while let Some(m) = made.next_if(|m| m.path < a.path) {
                out.push(m)?;
            }
            if self.dropped.contains(&at) {
                return Ok(());
            }
            out.push(Action {
                target: self.target_of(at, a).clone(),
                ..a.clone()
            })
        })?;
        for m in made {
            out.push(m)?;
        }
        out.finish()
    }
}

/// Whether an action from `current` to `target` takes away a directory
/// (removes it, or puts something else in its place).
pub(crate) fn removes_dir(current: &State, target: &State) -> bool {
    current.is_dir() && !target.is_dir()
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use proptest::prelude::*;

    use super::*;
    use crate::state::Hash;
    use crate::state::HashOf;

    /// A tree in memory: every path's state; absent paths have no entry.
    struct Mem(BTreeMap<RelPath, State>);

    impl Tree for Mem {
        fn state(&self, path: &RelPath) -> Result<State> {
            Ok(self.0.get(path).cloned().unwrap_or(State::Absent))
        }
        fn each_below(
            &self,
            dir: &RelPath,
            f: &mut dyn FnMut(RelPath, State) -> Result<()>,
        ) -> Result<()> {
            let below = self
                .0
                .iter()
                .filter(|(p, _)| p != &dir && p.starts_with(dir));
            for (p, s) in below {
                f(p.clone(), s.clone())?;
            }
            Ok(())
        }
        fn holds_uncaptured(&self, _: &RelPath) -> Result<bool> {
            Ok(false)
        }
    }

    fn rel(s: &str) -> RelPath {
        RelPath::new(s).unwrap()
    }

    fn file(n: u8) -> State {
        State::File {
            hash: Hash::of(&[n]),
            size: 1,
            mode: 0o644,
        }
    }

    /// States a generated path may have: 0 absent, 1-2 files, 3 a dir, 4 a
    /// symlink, 6-7 content not captured.
    fn state_of(code: u8) -> State {
        if code >= 6 {
            return State::Skipped {
                reason: "over the size cap".into(),
            };
        }
        match code % 5 {
            0 => State::Absent,
            1 | 2 => file(code % 5),
            3 => State::Dir { mode: 0o755 },
            _ => State::Symlink {
                target: b"elsewhere".to_vec(),
            },
        }
    }

    /// Paths of up to three levels over the names a, b.
    fn universe() -> Vec<RelPath> {
        let mut out = Vec::new();
        for a in ["a", "b"] {
            out.push(rel(a));
            for b in ["a", "b"] {
                out.push(rel(&format!("{a}/{b}")));
                for c in ["a", "b"] {
                    out.push(rel(&format!("{a}/{b}/{c}")));
                }
            }
        }
        out
    }

    /// Makes `map` a tree: a path under a non-directory is dropped.
    fn treeify(map: BTreeMap<RelPath, State>) -> BTreeMap<RelPath, State> {
        let mut out: BTreeMap<RelPath, State> = BTreeMap::new();
        for (p, s) in map {
            let ok = match p.parent() {
                None => true,
                Some(d) => out.get(&d).is_some_and(State::is_dir),
            };
            if ok && !s.is_absent() {
                out.insert(p, s);
            }
        }
        out
    }

    /// Every present path's parent is a directory.
    fn is_tree(map: &BTreeMap<RelPath, State>) -> std::result::Result<(), String> {
        for p in map.keys() {
            if let Some(d) = p.parent() {
                if !map.get(&d).is_some_and(State::is_dir) {
                    return Err(format!("{p} has no directory above it ({d})"));
                }
            }
        }
        Ok(())
    }

    fn check(codes: Vec<(u8, u8, u8)>, redo: bool, force: bool) -> std::result::Result<(), String> {
        let u = universe();
        let now = treeify(
            u.iter()
                .cloned()
                .zip(codes.iter().map(|c| state_of(c.0)))
                .collect(),
        );
        let tree = Mem(now.clone());
        let wanted: Vec<Wanted> = u
            .iter()
            .zip(&codes)
            .filter(|(_, c)| c.1 % 3 != 0)
            .map(|(p, c)| Wanted {
                path: p.clone(),
                current: now.get(p).cloned().unwrap_or(State::Absent),
                target: state_of(c.1),
                expected: state_of(c.2),
            })
            .collect();
        let asked: BTreeMap<RelPath, State> = wanted
            .iter()
            .map(|w| (w.path.clone(), w.target.clone()))
            .collect();
        let kind = if redo { Kind::Redo } else { Kind::Rewind };
        let plan = plan(&tree, kind, 1, vec![1], wanted, force, &Default::default())
            .and_then(|p| p.into_plan(None))
            .map_err(|e| e.to_string())?;
        let mut end = now.clone();
        let mut seen = BTreeSet::new();
        for a in &plan.actions {
            if !seen.insert(a.path.clone()) {
                return Err(format!("{} planned twice", a.path));
            }
            if now.get(&a.path).cloned().unwrap_or(State::Absent) != a.current {
                return Err(format!("{}: action's current is not the tree's", a.path));
            }
            // Content ckpt does not hold is never written nor overwritten.
            if matches!(a.current, State::Skipped { .. })
                || matches!(a.target, State::Skipped { .. })
            {
                return Err(format!(
                    "{}: uncaptured content in an action\n{plan:#?}",
                    a.path
                ));
            }
            match asked.get(&a.path) {
                Some(t) if t == &a.target => {}
                // Only a directory may be made that was not asked for so.
                _ if a.target == NEW_DIR => {}
                _ => return Err(format!("{}: target not asked for: {:?}", a.path, a.target)),
            }
            match &a.target {
                State::Absent => end.remove(&a.path),
                s => end.insert(a.path.clone(), s.clone()),
            };
        }
        // Removing a directory removes nothing below it: the plan must.
        is_tree(&end).map_err(|e| format!("the plan's result is not a tree: {e}\n{plan:#?}"))?;
        let reported: BTreeSet<&RelPath> = plan
            .skipped
            .iter()
            .chain(&plan.blocked)
            .map(|s| &s.path)
            .collect();
        for (p, target) in &asked {
            let reached = end.get(p).cloned().unwrap_or(State::Absent) == *target;
            // A directory made for what is restored below it (R4).
            let made =
                end.get(p) == Some(&NEW_DIR) && end.keys().any(|q| q != p && q.starts_with(p));
            if !reached && !made && !reported.contains(p) {
                return Err(format!("{p}: neither restored nor reported\n{plan:#?}"));
            }
        }
        if redo && plan.blocked.is_empty() && !plan.skipped.is_empty() {
            return Err(format!(
                "a redo that is not exact was not blocked\n{plan:#?}"
            ));
        }
        // A directory the plan takes away held nothing but what it removes,
        // or (without force) that is a conflict.
        if !force && !redo {
            let conflicted: BTreeSet<&RelPath> = plan.conflicts.iter().map(|c| &c.path).collect();
            for a in plan
                .actions
                .iter()
                .filter(|a| removes_dir(&a.current, &a.target))
            {
                for (p, _) in now
                    .iter()
                    .filter(|(p, _)| *p != &a.path && p.starts_with(&a.path))
                {
                    if end.contains_key(p) && !conflicted.contains(p) {
                        return Err(format!("{p} stays in removed {} unlisted", a.path));
                    }
                }
            }
        }
        Ok(())
    }

    /// Soak seed 6667717916080872239: the agent's turns made `d` and
    /// changed the user's file `d/f`; the user then replaced `d/f` with a
    /// directory holding `d/f/x`. Rewinding takes `d` away and gives `d/f`
    /// back as a file: both `d/f` (edited since) and `d/f/x` (someone's
    /// file in a directory taken away) are conflicts, though R5 keeps
    /// `d/f` for what it holds.
    #[test]
    fn a_file_the_user_made_a_directory_inside_a_directory_taken_away_is_a_conflict() {
        let dir = State::Dir { mode: 0o755 };
        let now = [("d", dir.clone()), ("d/f", dir.clone()), ("d/f/x", file(3))];
        let tree = Mem(now.iter().map(|(p, s)| (rel(p), s.clone())).collect());
        let wanted = vec![
            Wanted {
                path: rel("d"),
                current: dir.clone(),
                target: State::Absent,
                expected: dir.clone(),
            },
            Wanted {
                path: rel("d/f"),
                current: dir,
                target: file(1),
                expected: file(2),
            },
        ];
        let plan = plan(
            &tree,
            Kind::Rewind,
            1,
            vec![1],
            wanted,
            false,
            &Default::default(),
        )
        .and_then(|p| p.into_plan(None))
        .unwrap();
        let conflicts: Vec<String> = plan.conflicts.iter().map(|c| c.path.to_string()).collect();
        assert_eq!(conflicts, ["d/f", "d/f/x"]);
        assert_eq!(
            plan.conflicts[0].expected,
            file(2),
            "reported as edited since"
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn every_plan_ends_in_a_tree_and_reports_what_it_leaves(
            codes in proptest::collection::vec((0u8..7, 0u8..8, 0u8..7), 14),
            redo: bool,
            force: bool,
        ) {
            check(codes, redo, force).map_err(TestCaseError::fail)?;
        }
    }
}
