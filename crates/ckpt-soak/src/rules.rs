//! The rewind contract, written over the model tree and independent of
//! ckpt's planner: what `rewind N` and `redo` must do to a given tree.
//!
//! A turn *touched* a path if its state at the turn's end differs from its
//! state at the turn's start (a file made and removed inside one turn is not
//! touched). Rewind plans, per touched path, target = state before the oldest
//! live turn ≥ N that touched it and expected = state after the newest, then
//! rules R1–R5 (see `plan`). Redo plans the last applied rewind's changes
//! back, and refuses rather than keep, convert or skip anything.

use std::collections::{BTreeMap, BTreeSet};

use crate::tree::{ancestors, below, ill_formed, show, Node, Tree};

/// A path's (before, after) pair.
pub type Change = (Option<Node>, Option<Node>);

/// One closed turn as the model recorded it.
#[derive(Clone, Debug)]
pub struct Turn {
    pub id: i64,
    pub live: bool,
    /// Touched paths: (state at the turn's start, state at its end).
    pub touched: BTreeMap<Vec<u8>, Change>,
    /// `None`: the default session.
    pub session: Option<String>,
    /// When it started and ended, on the sequence's clock (`Seq::tick`):
    /// another session's turn that ended after a turn started ran during it.
    pub started: u64,
    pub ended: u64,
}

/// An applied rewind that a redo can still undo.
#[derive(Clone, Debug)]
pub struct Applied {
    pub turns: Vec<i64>,
    /// Of some paths only (`--path`): its turns stayed live.
    pub partial: bool,
    /// Every path the rewind changed: (state before it, state it left).
    pub changed: BTreeMap<Vec<u8>, Change>,
}

/// What the contract says a request must do.
#[derive(Debug)]
pub struct Expect {
    /// Paths reported as conflicts (R2, and R3 without force).
    pub conflicts: BTreeSet<Vec<u8>>,
    /// Refused: nothing may change.
    pub refused: bool,
    /// Why a redo is refused whatever `--force` says (keep, convert, block).
    pub structural: Option<String>,
    /// The tree after an applied request.
    pub result: Tree,
    /// Paths changed by an applied request: (before, after).
    pub changed: BTreeMap<Vec<u8>, Change>,
    /// The turns rewound (or brought back by a redo).
    pub turns: Vec<i64>,
    /// A rewind of some paths only (`--path`): its turns stay live.
    pub partial: bool,
}

/// What every touched path of the diff between two trees went from and to.
pub fn touched(start: &Tree, end: &Tree) -> BTreeMap<Vec<u8>, Change> {
    let mut keys: BTreeSet<&Vec<u8>> = start.keys().collect();
    keys.extend(end.keys());
    keys.into_iter()
        .filter(|k| start.get(*k) != end.get(*k) && !crate::tree::uncaptured(k))
        .map(|k| ((*k).clone(), (start.get(k).cloned(), end.get(k).cloned())))
        .collect()
}

/// `rewind n` on `tree` given the closed turns (the open one already closed).
/// Only the turns of `n`'s session are undone; a path the plan changes that
/// a later live turn of another session touched is a conflict too. (The
/// model runs one session's turn at a time, so "later" is "ran during or
/// after".)
pub fn rewind(tree: &Tree, turns: &[Turn], n: i64, force: bool) -> Expect {
    rewind_paths(tree, turns, n, force, &[])
}

/// Whether `p` is one of `paths` or below one (all paths when empty).
pub fn selected(p: &[u8], paths: &[Vec<u8>]) -> bool {
    paths.is_empty()
        || paths
            .iter()
            .any(|w| p == &w[..] || crate::tree::is_below(p, w))
}

/// `rewind n --path P...`: the same plan over only the selected paths.
pub fn rewind_paths(tree: &Tree, turns: &[Turn], n: i64, force: bool, paths: &[Vec<u8>]) -> Expect {
    let started = turns.iter().find(|t| t.id == n).map_or(0, |t| t.started);
    let session = turns
        .iter()
        .find(|t| t.id == n)
        .and_then(|t| t.session.clone());
    let live: Vec<&Turn> = turns
        .iter()
        .filter(|t| t.live && t.id >= n && t.session == session)
        .collect();
    let mut items = rewound_items(turns, n);
    items.retain(|p, _| selected(p, paths));
    let mut e = plan(tree, &items, force, false);
    // Only the turns that touched the selected paths are undone (and named).
    e.turns = live
        .iter()
        .filter(|t| paths.is_empty() || t.touched.keys().any(|p| selected(p, paths)))
        .map(|t| t.id)
        .collect();
    e.partial = !paths.is_empty();
    // Ran during or after turn n: started after it, or ended after it started.
    let others: BTreeSet<&Vec<u8>> = turns
        .iter()
        .filter(|t| t.live && t.session != session && (t.id > n || t.ended > started))
        .flat_map(|t| t.touched.keys())
        .collect();
    let claimed: Vec<Vec<u8>> = e
        .changed
        .keys()
        .filter(|p| others.contains(p))
        .cloned()
        .collect();
    if !claimed.is_empty() {
        e.conflicts.extend(claimed);
        e.refused |= !force;
    }
    e
}

/// What `rewind n` wants per path: (target, expected) = (state before the
/// oldest live turn of n's session from n on that touched it, state after
/// the newest).
pub fn rewound_items(turns: &[Turn], n: i64) -> BTreeMap<Vec<u8>, Change> {
    let session = turns
        .iter()
        .find(|t| t.id == n)
        .and_then(|t| t.session.clone());
    let mut items: BTreeMap<Vec<u8>, Change> = BTreeMap::new();
    // Oldest first: the first turn to touch a path fixes its target, the
    // last one its expected state.
    for t in turns
        .iter()
        .filter(|t| t.live && t.id >= n && t.session == session)
    {
        for (p, (pre, post)) in &t.touched {
            items
                .entry(p.clone())
                .and_modify(|e| e.1 = post.clone())
                .or_insert((pre.clone(), post.clone()));
        }
    }
    items
}

/// `redo` of `last` on `tree`.
pub fn redo(tree: &Tree, last: &Applied, force: bool) -> Expect {
    let mut e = plan(tree, &last.changed, force, true);
    e.turns = last.turns.clone();
    e.partial = last.partial;
    e
}

/// R1–R5 over `items` (path → (target, expected)).
fn plan(tree: &Tree, items: &BTreeMap<Vec<u8>, Change>, force: bool, redo: bool) -> Expect {
    // R2 conflicts; reported only if the plan still changes the path in
    // the end (below).
    let mut edited = BTreeSet::new();
    // R3 conflicts.
    let mut held = BTreeSet::new();
    // Path → target, for every path the plan changes.
    let mut planned: BTreeMap<Vec<u8>, Option<Node>> = BTreeMap::new();
    for (p, (target, expected)) in items {
        let current = tree.get(p);
        // R1: already at its target.
        if current == target.as_ref() {
            continue;
        }
        // R2: edited after the agent.
        if current != expected.as_ref() {
            edited.insert(p.clone());
        }
        planned.insert(p.clone(), target.clone());
    }
    let mut structural: Vec<String> = Vec::new();

    // R3: a directory taken away whose content would not all go.
    for (p, target) in &planned {
        let takes_dir =
            tree.get(p).is_some_and(Node::is_dir) && !target.as_ref().is_some_and(Node::is_dir);
        if !takes_dir {
            continue;
        }
        // Uncaptured content is nobody's edit: not a conflict, but R5
        // keeps the directory that holds it.
        for (q, _) in below(tree, p).filter(|(q, _)| !crate::tree::uncaptured(q)) {
            if planned.get(q) != Some(&None) {
                if !force {
                    held.insert(q.clone());
                }
                if redo {
                    structural.push(format!("{} holds {}", show(p), show(q)));
                }
            }
        }
    }

    // R4: every directory above a path the plan makes exist ends a directory.
    let mut skipped: BTreeSet<Vec<u8>> = BTreeSet::new();
    let makes: Vec<Vec<u8>> = planned
        .iter()
        .filter(|(_, t)| t.is_some())
        .map(|(p, _)| p.clone())
        .collect();
    for p in makes {
        if skipped.contains(&p) {
            continue;
        }
        let ups: Vec<Vec<u8>> = ancestors(&p).into_iter().map(<[u8]>::to_vec).collect();
        // A file or symlink above that the plan does not replace blocks it.
        let blocked = ups.iter().any(|d| {
            !planned.contains_key(d)
                && matches!(tree.get(d), Some(Node::File { .. } | Node::Symlink { .. }))
        });
        if blocked {
            if redo {
                structural.push(format!("{} is blocked by a non-directory above", show(&p)));
            }
            let under: Vec<Vec<u8>> = planned
                .keys()
                .filter(|q| crate::tree::is_below(q, &p))
                .cloned()
                .collect();
            skipped.insert(p.clone());
            skipped.extend(under);
            continue;
        }
        for d in ups {
            match (planned.get(&d), tree.get(&d)) {
                (Some(Some(Node::Dir { .. })), _) => {}
                (Some(_), Some(Node::Dir { .. })) => {
                    // Kept: it is a directory now and must stay one.
                    planned.remove(&d);
                    if redo {
                        structural.push(format!("{} kept as a directory", show(&d)));
                    }
                }
                (Some(_), _) => {
                    planned.insert(d.clone(), Some(Node::Dir { mode: 0o755 }));
                    if redo {
                        structural.push(format!("{} converted to a directory", show(&d)));
                    }
                }
                (None, None) => {
                    planned.insert(d.clone(), Some(Node::Dir { mode: 0o755 }));
                }
                (None, Some(_)) => {}
            }
        }
    }
    for s in &skipped {
        planned.remove(s);
    }

    // R5: a directory the plan removes must end empty; repeat, since keeping
    // one keeps the planned removals above it.
    loop {
        let final_of = |q: &Vec<u8>, planned: &BTreeMap<Vec<u8>, Option<Node>>| match planned.get(q)
        {
            Some(t) => t.is_some(),
            None => tree.contains_key(q),
        };
        let keep: Vec<Vec<u8>> = planned
            .iter()
            .filter(|(p, t)| {
                tree.get(*p).is_some_and(Node::is_dir) && !t.as_ref().is_some_and(Node::is_dir)
            })
            .filter(|(p, _)| below(tree, p).any(|(q, _)| final_of(q, &planned)))
            .map(|(p, _)| p.clone())
            .collect();
        if keep.is_empty() {
            break;
        }
        for d in keep {
            if redo {
                structural.push(format!("{} must be kept: it is not empty", show(&d)));
            }
            planned.remove(&d);
        }
    }

    let mut result = tree.clone();
    let mut changed = BTreeMap::new();
    // Removals deepest first, then creations top-down: each step leaves a
    // well-formed tree when the plan is sound.
    for (p, t) in planned.iter().rev() {
        if t.is_none() {
            changed.insert(p.clone(), (tree.get(p).cloned(), None));
            result.remove(p);
        }
    }
    for (p, t) in &planned {
        if let Some(n) = t {
            changed.insert(p.clone(), (tree.get(p).cloned(), Some(n.clone())));
            if !n.is_dir() {
                crate::tree::remove_all(&mut result, p);
            }
            result.insert(p.clone(), n.clone());
        }
    }
    if let Some(bad) = ill_formed(&result) {
        // The model itself broke its rules: say so loudly rather than
        // blame the daemon.
        structural.push(format!("MODEL BUG: {} has no directory parent", show(&bad)));
    }
    structural.dedup();
    // A conflict on a path the plan does not change in the end (a kept
    // directory, a blocked path) overwrites nothing, so it is not one: the
    // contract leaves this open; ckpt's planner decides it so, and so does
    // any user (their edit survives either way).
    let mut conflicts: BTreeSet<Vec<u8>> = edited
        .into_iter()
        .filter(|p| planned.contains_key(p))
        .collect();
    conflicts.extend(held);
    let refused = (!conflicts.is_empty() && !force) || (redo && !structural.is_empty());
    Expect {
        conflicts,
        refused,
        structural: (!structural.is_empty()).then(|| structural.join("; ")),
        result,
        changed,
        turns: Vec::new(),
        partial: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(entries: &[(&str, Option<Node>)]) -> Tree {
        entries
            .iter()
            .filter_map(|(k, n)| n.clone().map(|n| (k.as_bytes().to_vec(), n)))
            .collect()
    }
    fn d() -> Option<Node> {
        Some(Node::Dir { mode: 0o755 })
    }
    fn f(s: &str) -> Option<Node> {
        Some(Node::file(s.as_bytes(), 0o644))
    }
    fn turn(id: i64, start: &Tree, end: &Tree) -> Turn {
        Turn {
            id,
            live: true,
            touched: touched(start, end),
            session: None,
            started: id as u64 * 2,
            ended: id as u64 * 2 + 1,
        }
    }

    #[test]
    fn a_users_file_deleted_by_a_later_turn_comes_back_in_a_kept_directory() {
        // rewind-redo-4: turn 1 makes D/, the user adds D/u, turn 2 removes it.
        let s0 = t(&[("keep", f("k"))]);
        let s1 = t(&[("keep", f("k")), ("D", d()), ("D/a", f("a"))]);
        let u = t(&[
            ("keep", f("k")),
            ("D", d()),
            ("D/a", f("a")),
            ("D/u", f("u")),
        ]);
        let turns = [turn(1, &s0, &s1), turn(2, &u, &s1)];
        let e = rewind(&s1, &turns, 1, false);
        assert!(!e.refused);
        assert_eq!(
            e.result,
            t(&[("keep", f("k")), ("D", d()), ("D/u", f("u"))])
        );
    }

    #[test]
    fn a_directory_to_remove_that_holds_a_users_file_is_a_conflict() {
        // rewind-redo-3.
        let s0 = t(&[]);
        let s1 = t(&[("D", d()), ("D/a", f("a"))]);
        let u = t(&[("D", d()), ("D/a", f("a")), ("D/u", f("u"))]);
        let s2 = t(&[("D", d()), ("D/a", f("a")), ("D/u", f("uu"))]);
        let turns = [turn(1, &s0, &s1), turn(2, &u, &s2)];
        let e = rewind(&s2, &turns, 1, false);
        assert!(e.refused);
        assert!(e.conflicts.contains(b"D/u".as_slice()));
        let e = rewind(&s2, &turns, 1, true);
        assert!(!e.refused);
        assert_eq!(e.result, t(&[("D", d()), ("D/u", f("u"))]));
    }

    #[test]
    fn paths_below_a_file_are_skipped_and_no_parent_is_made() {
        // rewind-redo-5 and -7.
        let s0 = t(&[("a", d()), ("a/lib", d()), ("a/lib/u", f("u"))]);
        let s1 = t(&[
            ("a", d()),
            ("a/lib", d()),
            ("a/lib/u", f("c")),
            ("new", f("n")),
        ]);
        let now = t(&[("a", f("file")), ("new", f("n"))]);
        let turns = [turn(1, &s0, &s1)];
        // a/lib/u was changed after the agent, but the rewind cannot
        // overwrite it (blocked): no conflict.
        let e = rewind(&now, &turns, 1, false);
        assert!(!e.refused && e.conflicts.is_empty());
        assert_eq!(e.result, t(&[("a", f("file"))]));
    }

    #[test]
    fn a_directory_holding_uncaptured_content_is_kept_without_a_conflict() {
        let s0 = t(&[]);
        let s1 = t(&[("D", d()), ("D/a", f("a"))]);
        let now = t(&[
            ("D", d()),
            ("D/a", f("a")),
            ("D/node_modules", d()),
            ("D/node_modules/x", f("x")),
        ]);
        let turns = [turn(1, &s0, &s1)];
        let e = rewind(&now, &turns, 1, false);
        assert!(!e.refused && e.conflicts.is_empty());
        assert_eq!(
            e.result,
            t(&[
                ("D", d()),
                ("D/node_modules", d()),
                ("D/node_modules/x", f("x"))
            ])
        );
    }

    #[test]
    fn redo_refuses_to_delete_a_directory_that_holds_a_new_file() {
        // rewind-redo-6.
        let s0 = t(&[("docs", d()), ("src", d())]);
        let s1 = t(&[("docs", d()), ("docs/new", f("n")), ("src", f("f"))]);
        let turns = [turn(1, &s0, &s1)];
        let e = rewind(&s1, &turns, 1, false);
        assert_eq!(e.result, s0);
        let applied = Applied {
            turns: vec![1],
            partial: false,
            changed: e.changed,
        };
        let later = t(&[("src", d()), ("src/later", f("l"))]);
        let r = redo(&later, &applied, true);
        assert!(r.refused && r.structural.is_some());
    }

    #[test]
    fn a_rewind_undoes_its_sessions_turns_and_a_path_another_session_changed_later_conflicts() {
        let s0 = t(&[("a", f("a")), ("b", f("b"))]);
        let s1 = t(&[("a", f("A")), ("b", f("B"))]);
        let s2 = t(&[("a", f("A")), ("b", f("B2"))]);
        let mut other = turn(2, &s1, &s2);
        other.session = Some("other".into());
        let turns = [turn(1, &s0, &s1), other];
        let e = rewind(&s2, &turns, 1, false);
        assert!(e.refused);
        assert_eq!(e.turns, [1]);
        assert_eq!(e.conflicts, BTreeSet::from([b"b".to_vec()]));
        let e = rewind(&s2, &turns, 1, true);
        assert!(!e.refused);
        assert_eq!(e.result, s0);
        // The other session's turn alone: the first turn is not undone.
        let e = rewind(&s2, &turns, 2, false);
        assert_eq!((e.refused, e.turns.as_slice()), (false, [2].as_slice()));
        assert_eq!(e.result, s1);
    }
}
