//! Property test: random file operations across several turns (and between
//! them); rewinding to any turn restores every path those turns touched to
//! its state when the oldest of them first touched it, leaves every other
//! path alone, and redo gives back the tree before the rewind.
//!
//! With no changes between turns that is exactly "the tree as it was when
//! the turn started"; changes between turns belong to no turn and stay.
//!
//! `PROPTEST_CASES=n` runs more cases than the default 32.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io::Write as _;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use ckpt_core::{Project, RewindOptions, RewindOutcome, TurnMeta, TurnStatus};
use common::*;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

/// The name space: small, so operations collide.
const NAMES: &[&str] = &["a", "b", "d", "d/a", "d/b", "d/e", "d/e/a", "e"];
/// Link targets: inside the root, dangling, and pointing outside (never
/// followed by these tests).
const LINK_TARGETS: &[&str] = &["a", "d", "nowhere", "d/a", "../outside"];

#[derive(Clone, Copy)]
struct Mode(u32);

impl fmt::Debug for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0o{:o}", self.0)
    }
}

#[derive(Clone, Debug)]
enum Op {
    Write(&'static str, String),
    Append(&'static str, String),
    Truncate(&'static str, u8),
    Delete(&'static str),
    Rename(&'static str, &'static str),
    Mkdir(&'static str),
    Rmdir(&'static str),
    Symlink(&'static str, &'static str),
    Chmod(&'static str, Mode),
}

/// How the test plays the barrier before a turn boundary.
#[derive(Clone, Copy, Debug)]
enum Barrier {
    /// `reconcile()`: full scan.
    Scan,
    /// `check_paths(..)` with exactly the paths the operations touched, as
    /// the watcher would report them.
    Events,
}

#[derive(Clone, Debug)]
struct Phase {
    /// Changes made before the turn starts: they belong to no turn.
    between: Vec<Op>,
    at_start: Barrier,
    turn: Vec<Op>,
    at_end: Barrier,
}

#[derive(Clone, Debug)]
struct Script {
    initial: Vec<Op>,
    phases: Vec<Phase>,
    /// Changes after the last turn ended, before the rewinds.
    trailing: Vec<Op>,
    at_rewind: Barrier,
}

fn name() -> impl Strategy<Value = &'static str> {
    prop::sample::select(NAMES)
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (name(), "[xy\n]{0,6}").prop_map(|(n, c)| Op::Write(n, c)),
        1 => (name(), "[xyz]{1,3}").prop_map(|(n, c)| Op::Append(n, c)),
        1 => (name(), 0u8..4).prop_map(|(n, l)| Op::Truncate(n, l)),
        2 => name().prop_map(Op::Delete),
        2 => (name(), name()).prop_map(|(a, b)| Op::Rename(a, b)),
        3 => name().prop_map(Op::Mkdir),
        1 => name().prop_map(Op::Rmdir),
        1 => (name(), prop::sample::select(LINK_TARGETS)).prop_map(|(n, t)| Op::Symlink(n, t)),
        1 => (name(), prop::sample::select(&[0o644u32, 0o755, 0o600][..]))
            .prop_map(|(n, m)| Op::Chmod(n, Mode(m))),
    ]
}

fn barrier() -> impl Strategy<Value = Barrier> {
    prop_oneof![Just(Barrier::Scan), Just(Barrier::Events)]
}

fn phase() -> impl Strategy<Value = Phase> {
    (
        prop::collection::vec(op(), 0..3),
        barrier(),
        prop::collection::vec(op(), 1..10),
        barrier(),
    )
        .prop_map(|(between, at_start, turn, at_end)| Phase {
            between,
            at_start,
            turn,
            at_end,
        })
}

fn script() -> impl Strategy<Value = Script> {
    (
        prop::collection::vec(op(), 0..12),
        prop::collection::vec(phase(), 2..=4),
        prop::collection::vec(op(), 0..3),
        barrier(),
    )
        .prop_map(|(initial, phases, trailing, at_rewind)| Script {
            initial,
            phases,
            trailing,
            at_rewind,
        })
}

fn lstat(root: &Path, name: &str) -> Option<std::fs::Metadata> {
    std::fs::symlink_metadata(root.join(name)).ok()
}

/// Every ancestor of `name` is a real directory (not a symlink): the test
/// never writes through a link.
fn parents_ok(root: &Path, name: &str) -> bool {
    let mut prefix = String::new();
    let comps: Vec<&str> = name.split('/').collect();
    for c in &comps[..comps.len() - 1] {
        if !prefix.is_empty() {
            prefix.push('/');
        }
        prefix.push_str(c);
        if !lstat(root, &prefix).is_some_and(|m| m.file_type().is_dir()) {
            return false;
        }
    }
    true
}

/// Creates the missing ancestors of `name`; `None` if one is in the way (a
/// file or a symlink). Returns the directories it created.
fn make_parents(root: &Path, name: &'static str) -> Option<Vec<&'static str>> {
    let mut created = Vec::new();
    for (i, _) in name.match_indices('/') {
        let prefix = &name[..i];
        match lstat(root, prefix) {
            Some(m) if m.file_type().is_dir() => {}
            Some(_) => return None,
            None => {
                std::fs::create_dir(root.join(prefix)).ok()?;
                created.push(prefix);
            }
        }
    }
    Some(created)
}

/// Applies `op` if it makes sense on the current tree; returns the paths a
/// watcher would report (empty if the operation was skipped or failed).
///
/// Like inotify on a recursively watched tree: removing a directory reports
/// everything that was below it too; a rename reports its two ends only.
fn apply(root: &Path, op: &Op) -> Vec<String> {
    let mut below = Vec::new();
    if let Op::Rmdir(n) = *op {
        if parents_ok(root, n) && lstat(root, n).is_some_and(|m| m.file_type().is_dir()) {
            below = snapshot_all(&root.join(n))
                .into_keys()
                .map(|k| {
                    format!(
                        "{n}/{}",
                        String::from_utf8(k).expect("test names are UTF-8")
                    )
                })
                .collect();
        }
    }
    let reported = apply_op(root, op);
    if reported.is_empty() {
        return Vec::new();
    }
    below.extend(reported.into_iter().map(String::from));
    below
}

fn apply_op(root: &Path, op: &Op) -> Vec<&'static str> {
    let is_file = |n: &str| lstat(root, n).is_some_and(|m| m.file_type().is_file());
    let ok = |r: std::io::Result<()>, paths: Vec<&'static str>| {
        if r.is_ok() {
            paths
        } else {
            Vec::new()
        }
    };
    match *op {
        Op::Write(n, ref c) => {
            // Like an editor's "save as": missing parents are created.
            let Some(mut created) = make_parents(root, n) else {
                return Vec::new();
            };
            if lstat(root, n).is_some_and(|m| !m.file_type().is_file()) {
                return created;
            }
            if std::fs::write(root.join(n), c).is_ok() {
                created.push(n);
            }
            created
        }
        Op::Append(n, ref c) => {
            if !parents_ok(root, n) || !is_file(n) {
                return Vec::new();
            }
            let r = std::fs::OpenOptions::new()
                .append(true)
                .open(root.join(n))
                .and_then(|mut f| f.write_all(c.as_bytes()));
            ok(r, vec![n])
        }
        Op::Truncate(n, len) => {
            if !parents_ok(root, n) || !is_file(n) {
                return Vec::new();
            }
            let r = std::fs::OpenOptions::new()
                .write(true)
                .open(root.join(n))
                .and_then(|f| f.set_len(len.into()));
            ok(r, vec![n])
        }
        Op::Delete(n) => {
            // Files and links only: directories go with Rmdir.
            let removable = lstat(root, n).is_some_and(|m| !m.file_type().is_dir());
            if !parents_ok(root, n) || !removable {
                return Vec::new();
            }
            ok(std::fs::remove_file(root.join(n)), vec![n])
        }
        Op::Rename(a, b) => {
            if a == b || !parents_ok(root, a) || !parents_ok(root, b) || lstat(root, a).is_none() {
                return Vec::new();
            }
            ok(std::fs::rename(root.join(a), root.join(b)), vec![a, b])
        }
        Op::Mkdir(n) => {
            if !parents_ok(root, n) {
                return Vec::new();
            }
            ok(std::fs::create_dir(root.join(n)), vec![n])
        }
        Op::Rmdir(n) => {
            if !parents_ok(root, n) || !lstat(root, n).is_some_and(|m| m.file_type().is_dir()) {
                return Vec::new();
            }
            ok(std::fs::remove_dir_all(root.join(n)), vec![n])
        }
        Op::Symlink(n, t) => {
            if !parents_ok(root, n) || lstat(root, n).is_some() {
                return Vec::new();
            }
            ok(std::os::unix::fs::symlink(t, root.join(n)), vec![n])
        }
        Op::Chmod(n, Mode(m)) => {
            if !parents_ok(root, n) {
                return Vec::new();
            }
            let mode = match lstat(root, n) {
                Some(md) if md.file_type().is_file() => m,
                // Directories stay traversable.
                Some(md) if md.file_type().is_dir() => match m {
                    0o644 => 0o755,
                    0o600 => 0o700,
                    _ => 0o750,
                },
                _ => return Vec::new(),
            };
            ok(
                std::fs::set_permissions(root.join(n), std::fs::Permissions::from_mode(mode)),
                vec![n],
            )
        }
    }
}

type Res<T = ()> = Result<T, String>;

fn check_tree(expected: &Tree, actual: &Tree, what: &str) -> Res {
    let diff = tree_diff(expected, actual);
    if diff.is_empty() {
        Ok(())
    } else {
        Err(format!("{what}: trees differ:\n{}", diff.join("\n")))
    }
}

fn barrier_now(p: &mut Project, how: Barrier, touched: &mut Vec<String>, what: &str) -> Res {
    let r = match how {
        Barrier::Scan => p.reconcile(),
        Barrier::Events => p.check_paths(touched.iter().map(rp)),
    };
    touched.clear();
    r.map(|_| ())
        .map_err(|e| format!("{what}: barrier ({how:?}): {e}"))
}

struct TurnRec {
    id: i64,
    start: Tree,
    end: Tree,
}

fn changed(a: &Tree, b: &Tree) -> BTreeSet<Vec<u8>> {
    a.keys()
        .chain(b.keys())
        .filter(|k| a.get(*k) != b.get(*k))
        .cloned()
        .collect()
}

/// What rewinding to turn `i` must do, by the rules in DESIGN.md §3.
struct Model {
    expected: Tree,
    /// Paths edited after the last turn that touched them, whose rewind is
    /// not a no-op: these must be reported as conflicts.
    required_conflicts: BTreeSet<Vec<u8>>,
    /// Also edited after the agent, but already at their target: may or may
    /// not be reported.
    possible_conflicts: BTreeSet<Vec<u8>>,
    /// Whether the expected tree is a tree at all (a kept path under a
    /// removed directory is not: the rules do not say what happens then).
    consistent: bool,
}

fn model(turns: &[TurnRec], i: usize, current: &Tree) -> Model {
    let mut first: BTreeMap<Vec<u8>, usize> = BTreeMap::new();
    let mut last: BTreeMap<Vec<u8>, usize> = BTreeMap::new();
    for (j, t) in turns.iter().enumerate().skip(i) {
        for path in changed(&t.start, &t.end) {
            first.entry(path.clone()).or_insert(j);
            last.insert(path, j);
        }
    }
    let mut expected = current.clone();
    let mut required_conflicts = BTreeSet::new();
    let mut possible_conflicts = BTreeSet::new();
    for (path, &j) in &first {
        let target = turns[j].start.get(path);
        match target {
            Some(node) => expected.insert(path.clone(), node.clone()),
            None => expected.remove(path),
        };
        let post = turns[last[path]].end.get(path);
        if current.get(path) != post {
            possible_conflicts.insert(path.clone());
            if current.get(path) != target {
                required_conflicts.insert(path.clone());
            }
        }
    }
    let consistent = expected
        .keys()
        .all(|k| match k.iter().rposition(|&b| b == b'/') {
            None => true,
            Some(cut) => matches!(expected.get(&k[..cut]), Some(Node::Dir { .. })),
        });
    Model {
        expected,
        required_conflicts,
        possible_conflicts,
        consistent,
    }
}

#[derive(Default, Debug)]
struct Stats {
    cases: usize,
    turns: usize,
    rewinds_checked: usize,
    rewinds_with_conflicts: usize,
    rewinds_skipped_inconsistent: usize,
    turn_entries: usize,
}

fn run(script: &Script, stats: &mut Stats) -> Res {
    let fx = Fx::new();
    let root = fx.root.clone();
    for op in &script.initial {
        apply(&root, op);
    }
    let mut p = fx.open();
    p.reconcile().map_err(|e| format!("baseline: {e}"))?;
    let mut touched: Vec<String> = Vec::new();
    let mut turns: Vec<TurnRec> = Vec::new();
    for (n, ph) in script.phases.iter().enumerate() {
        for op in &ph.between {
            touched.extend(apply(&root, op));
        }
        barrier_now(
            &mut p,
            ph.at_start,
            &mut touched,
            &format!("before turn {n}"),
        )?;
        let start = fx.tree();
        let id = p
            .turn_start(TurnMeta::default())
            .map_err(|e| format!("turn_start {n}: {e}"))?;
        for op in &ph.turn {
            touched.extend(apply(&root, op));
        }
        barrier_now(&mut p, ph.at_end, &mut touched, &format!("end of turn {n}"))?;
        let end = fx.tree();
        let detail = p.turn_end().map_err(|e| format!("turn_end {n}: {e}"))?;
        // The turn's entries are exactly the paths whose state changed.
        let got: BTreeSet<Vec<u8>> = detail
            .entries
            .iter()
            .map(|e| e.path.as_bytes().to_vec())
            .collect();
        let want = changed(&start, &end);
        if got != want {
            return Err(format!(
                "turn {n} entries {:?}, expected {:?}",
                got.iter().map(|p| show_path(p)).collect::<Vec<_>>(),
                want.iter().map(|p| show_path(p)).collect::<Vec<_>>()
            ));
        }
        stats.turn_entries += got.len();
        turns.push(TurnRec { id, start, end });
    }
    for op in &script.trailing {
        touched.extend(apply(&root, op));
    }
    barrier_now(
        &mut p,
        script.at_rewind,
        &mut touched,
        "after the last turn",
    )?;
    let current = fx.tree();
    stats.cases += 1;
    stats.turns += turns.len();

    for i in 0..turns.len() {
        let m = model(&turns, i, &current);
        // With nothing changed between turns, the model is the plain
        // statement: the tree as it was when turn i started.
        let quiet = (i + 1..turns.len()).all(|j| turns[j].start == turns[j - 1].end)
            && turns.last().is_some_and(|t| t.end == current);
        if quiet {
            assert!(m.consistent && m.possible_conflicts.is_empty());
            check_tree(&turns[i].start, &m.expected, "model sanity")?;
        }
        if !m.consistent {
            stats.rewinds_skipped_inconsistent += 1;
            continue;
        }
        stats.rewinds_checked += 1;
        let what = format!("rewind to turn {i}");
        p.reconcile().map_err(|e| format!("{what}: barrier: {e}"))?;
        let out = p
            .rewind(turns[i].id, RewindOptions::default())
            .map_err(|e| format!("{what}: {e}"))?;
        let must_refuse = !m.required_conflicts.is_empty();
        let out =
            match out {
                RewindOutcome::Refused(plan) => {
                    stats.rewinds_with_conflicts += 1;
                    let got: BTreeSet<Vec<u8>> = plan
                        .conflicts
                        .iter()
                        .map(|c| c.path.as_bytes().to_vec())
                        .collect();
                    if got.is_empty()
                        || !m.required_conflicts.is_subset(&got)
                        || !got.is_subset(&m.possible_conflicts)
                    {
                        return Err(format!(
                        "{what}: refused with conflicts {:?}; must include {:?}, may include {:?}",
                        got.iter().map(|p| show_path(p)).collect::<Vec<_>>(),
                        m.required_conflicts.iter().map(|p| show_path(p)).collect::<Vec<_>>(),
                        m.possible_conflicts.iter().map(|p| show_path(p)).collect::<Vec<_>>()
                    ));
                    }
                    check_tree(
                        &current,
                        &fx.tree(),
                        &format!("{what}: refused rewind changed the tree"),
                    )?;
                    p.reconcile().map_err(|e| format!("{what}: barrier: {e}"))?;
                    p.rewind(
                        turns[i].id,
                        RewindOptions {
                            flags: ckpt_core::RewindFlags {
                                force: true,
                                ..Default::default()
                            },
                            ..Default::default()
                        },
                    )
                    .map_err(|e| format!("{what} (forced): {e}"))?
                }
                other if must_refuse => {
                    return Err(format!(
                        "{what}: expected a refusal over {:?}, got {other:#?}",
                        m.required_conflicts
                            .iter()
                            .map(|p| show_path(p))
                            .collect::<Vec<_>>()
                    ))
                }
                other => other,
            };
        let RewindOutcome::Applied { .. } = out else {
            return Err(format!("{what}: not applied: {out:#?}"));
        };
        check_tree(&m.expected, &fx.tree(), &what)?;
        let st = statuses(&p);
        for (j, t) in turns.iter().enumerate() {
            let want = if j >= i {
                TurnStatus::Rewound
            } else {
                TurnStatus::Closed
            };
            if st.get(&t.id) != Some(&want) {
                return Err(format!(
                    "{what}: turn {j} is {:?}, expected {want:?}",
                    st.get(&t.id)
                ));
            }
        }

        p.reconcile()
            .map_err(|e| format!("redo after {what}: barrier: {e}"))?;
        let out = p
            .redo(RewindOptions::default())
            .map_err(|e| format!("redo after {what}: {e}"))?;
        let RewindOutcome::Applied { .. } = out else {
            return Err(format!("redo after {what}: not applied: {out:#?}"));
        };
        check_tree(&current, &fx.tree(), &format!("redo after {what}"))?;
        let st = statuses(&p);
        for (j, t) in turns.iter().enumerate() {
            if st.get(&t.id) != Some(&TurnStatus::Closed) {
                return Err(format!(
                    "redo after {what}: turn {j} is {:?}",
                    st.get(&t.id)
                ));
            }
        }
    }
    Ok(())
}

#[test]
fn rewind_to_any_turn_restores_it_and_redo_restores_the_rest() {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(32);
    let mut runner = TestRunner::new(Config {
        cases,
        max_shrink_iters: 4096,
        // A failure prints the minimal script; nothing is written to disk.
        failure_persistence: None,
        ..Config::default()
    });
    let stats = std::cell::RefCell::new(Stats::default());
    let result = runner.run(&script(), |s| {
        run(&s, &mut stats.borrow_mut()).map_err(TestCaseError::fail)
    });
    let stats = stats.into_inner();
    eprintln!("{stats:#?}");
    if let Err(e) = result {
        panic!("{e}");
    }
    assert!(
        stats.rewinds_checked >= cases as usize,
        "too few rewinds were checked: {stats:?}"
    );
    assert!(stats.turn_entries > 0);
}
