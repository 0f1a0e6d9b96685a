//! The checks against the contract: a rewind or redo reply, the tree after
//! it (and `.git`, the file outside, `fsck`), a turn's recorded changes.
//!
//! Every check either passes or returns a [`Mismatch`] that says what
//! differs from the model; none of them changes the model except
//! `judge`, which moves it past a rewind or redo that was applied.

use std::collections::{BTreeMap, BTreeSet};

use ckpt_proto::{Outcome, RewindReply};

use super::{mismatch, Mismatch, Seq};
use crate::rules::{self, Expect};
use crate::tree::{self, show, Node, Tree};
use crate::world::Call;

impl Seq<'_> {
    /// The tree must be the model's before a request: else the soak lost
    /// track (or the daemon wrote outside a request).
    pub(super) fn check_model(&self, before: &str) -> anyhow::Result<()> {
        let disk = tree::read_disk(&self.proj.root)?;
        if disk != self.proj.tree {
            return mismatch(format!(
                "the tree drifted from the model before {before} (soak bug, or ckpt wrote outside a rewind):\n  {}",
                tree::diff(&self.proj.tree, &disk).join("\n  ")
            ));
        }
        Ok(())
    }

    /// Checks a rewind or redo reply and the tree against the contract,
    /// and moves the model on when it was applied.
    pub(super) fn judge(
        &mut self,
        what: &str,
        c: &Call,
        e: &Expect,
        redo: bool,
        dry: bool,
    ) -> anyhow::Result<()> {
        self.judge_inner(what, c, e, redo, dry)
            .map_err(|err| match err.downcast::<Mismatch>() {
                Ok(m) => Mismatch(format!("{m}\n  {}", reply_summary(c))).into(),
                Err(other) => other,
            })
    }

    fn judge_inner(
        &mut self,
        what: &str,
        c: &Call,
        e: &Expect,
        redo: bool,
        dry: bool,
    ) -> anyhow::Result<()> {
        let want = if dry {
            "dry run"
        } else if e.refused {
            "refused"
        } else {
            "applied"
        };
        self.note(format!(
            "{what} -> exit {:?} (model: {want}; {} changes, conflicts [{}]{})",
            c.code,
            e.changed.len(),
            e.conflicts
                .iter()
                .map(|p| show(p))
                .collect::<Vec<_>>()
                .join(", "),
            e.structural
                .as_ref()
                .map_or(String::new(), |s| format!("; structural: {s}"))
        ));
        let reply: Option<RewindReply> = c.parse().ok();
        let forced = what.contains("--force");
        if dry || e.refused {
            let ok_code = if dry {
                // A dry run exits as the real run would.
                c.code == Some(if e.refused { 3 } else { 0 })
            } else if e.structural.is_some() && (e.conflicts.is_empty() || forced) {
                // A redo that cannot put the tree back exactly is refused;
                // the contract does not fix whether as a conflict or an error.
                matches!(c.code, Some(1 | 3))
            } else {
                c.code == Some(3)
            };
            if !ok_code {
                let m = Mismatch(format!("{what}: expected {want}, got {}", c.describe()));
                return self.with_tree_diff(what, m.into(), &self.proj.tree.clone());
            }
            if let Some(r) = &reply {
                let outcome = if dry {
                    Outcome::DryRun
                } else {
                    Outcome::Refused
                };
                if r.outcome != outcome {
                    return mismatch(format!(
                        "{what}: outcome {:?}, expected {outcome:?}",
                        r.outcome
                    ));
                }
                // The conflicts a user is shown must be the contract's.
                if !forced && (!redo || e.structural.is_none()) {
                    let found: BTreeSet<Vec<u8>> = r
                        .conflicts
                        .iter()
                        .map(|x| x.path.as_bytes().to_vec())
                        .collect();
                    if found != e.conflicts {
                        return mismatch(format!(
                            "{what}: conflicts [{}], expected [{}]",
                            found.iter().map(|p| show(p)).collect::<Vec<_>>().join(", "),
                            e.conflicts
                                .iter()
                                .map(|p| show(p))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ));
                    }
                }
            }
            return self.check_tree(what, &self.proj.tree.clone());
        }
        if c.code != Some(0) {
            let m = Mismatch(format!("{what}: expected applied, got {}", c.describe()));
            return self.with_tree_diff(what, m.into(), &e.result);
        }
        if let Some(r) = &reply {
            if r.turns != e.turns {
                return mismatch(format!(
                    "{what}: turns {:?}, expected {:?}",
                    r.turns, e.turns
                ));
            }
        }
        self.check_tree(what, &e.result)?;
        self.apply_continuing(e, redo, reply.as_ref())
    }

    /// Adds the tree's difference from `expected` to a mismatch.
    fn with_tree_diff(&self, what: &str, m: anyhow::Error, expected: &Tree) -> anyhow::Result<()> {
        let disk = tree::read_disk(&self.proj.root)?;
        let d = tree::diff(expected, &disk);
        let more = if d.is_empty() {
            " (the tree is as the model expects)".to_string()
        } else {
            format!("\n  tree after {what}:\n  {}", d.join("\n  "))
        };
        mismatch(format!("{m}{more}"))
    }

    /// The tree is `expected` exactly; `.git` and the outside file are
    /// untouched; `ckptctl fsck` is clean.
    pub(super) fn check_tree(&self, what: &str, expected: &Tree) -> anyhow::Result<()> {
        let disk = tree::read_disk(&self.proj.root)?;
        if &disk != expected {
            return mismatch(format!(
                "after {what} the tree differs:\n  {}",
                tree::diff(expected, &disk).join("\n  ")
            ));
        }
        if tree::read_git(&self.proj.root)? != self.git {
            return mismatch(format!("after {what}: .git changed"));
        }
        if std::fs::read(&self.world.outside).ok().as_deref() != Some(&self.outside[..]) {
            return mismatch(format!(
                "after {what}: the file outside the project changed"
            ));
        }
        let elsewhere = self.world.dir.join("elsewhere");
        if std::fs::read_dir(&elsewhere).map_or(true, |mut d| d.next().is_some()) {
            return mismatch(format!(
                "after {what}: something was written through a symlink into {}",
                elsewhere.display()
            ));
        }
        if self.opts.fsck {
            let c = self.world.ctl(&["fsck"])?;
            if c.code != Some(0) {
                return mismatch(format!(
                    "after {what}: ckptctl fsck: {} {}",
                    c.describe(),
                    c.stdout.trim()
                ));
            }
        }
        Ok(())
    }

    /// `show id` must list exactly the changes in `want`.
    pub(super) fn check_turn_entries(
        &self,
        id: i64,
        want: &BTreeMap<Vec<u8>, rules::Change>,
    ) -> anyhow::Result<()> {
        let c = self.world.ctl(&["--json", "show", &id.to_string()])?;
        if c.code != Some(0) {
            return mismatch(format!("show {id} failed: {}", c.describe()));
        }
        let r: ckpt_proto::ShowReply = c.parse()?;
        let diffs = entry_diffs(want, r.body.turn.entries);
        if !diffs.is_empty() {
            return mismatch(format!(
                "capture: turn {id}'s recorded changes differ from what was done:\n  {}",
                diffs.join("\n  ")
            ));
        }
        Ok(())
    }
}

/// What a rewind or redo reply said, for a mismatch report.
fn reply_summary(c: &Call) -> String {
    let Ok(r) = c.parse::<RewindReply>() else {
        return format!("reply: {}", c.describe());
    };
    let list = |v: Vec<String>| {
        let n = v.len();
        let mut v: Vec<String> = v.into_iter().take(20).collect();
        if n > 20 {
            v.push(format!("... {} more", n - 20));
        }
        v.join("; ")
    };
    format!(
        "reply: {:?}, turns {:?}\n  reply conflicts: {}\n  reply skipped: {}\n  reply actions: {}",
        r.outcome,
        r.turns,
        list(
            r.conflicts
                .iter()
                .map(|x| format!(
                    "{} (expected {:?}, found {:?})",
                    x.path, x.expected, x.current
                ))
                .collect()
        ),
        list(
            r.skipped
                .iter()
                .map(|x| format!("{} ({})", x.path, x.reason))
                .collect()
        ),
        list(
            r.actions
                .iter()
                .map(|x| format!(
                    "{:?} {} ({:?} -> {:?})",
                    x.kind(),
                    x.path,
                    x.current,
                    x.target
                ))
                .collect()
        ),
    )
}

/// Whether `disk` is `before` with every action of the daemon's own plan
/// `r` done: each action's path at its target, every other path as before.
pub(super) fn at_own_target(before: &Tree, disk: &Tree, r: &RewindReply) -> bool {
    let acted: BTreeMap<&[u8], &ckpt_proto::State> = r
        .actions
        .iter()
        .map(|a| (a.path.as_bytes(), &a.target))
        .collect();
    let mut keys: BTreeSet<&Vec<u8>> = before.keys().collect();
    keys.extend(disk.keys());
    keys.into_iter().all(|k| match acted.get(k.as_slice()) {
        Some(t) => Node::to_state(disk.get(k)) == **t,
        None => before.get(k) == disk.get(k),
    })
}

/// Every difference between the model's changes of a turn and the
/// daemon's recorded entries.
pub(super) fn entry_diffs(
    want: &BTreeMap<Vec<u8>, rules::Change>,
    entries: Vec<ckpt_proto::TurnEntry>,
) -> Vec<String> {
    let mut got: BTreeMap<Vec<u8>, (ckpt_proto::State, ckpt_proto::State)> = BTreeMap::new();
    let mut diffs = Vec::new();
    for e in entries {
        if tree::over_cap(e.path.as_bytes()) {
            // Over the size cap: recorded as skipped, never with content.
            let post = e.post.clone().unwrap_or(ckpt_proto::State::Absent);
            let content = |s: &ckpt_proto::State| matches!(s, ckpt_proto::State::File { .. });
            if content(&e.pre) || content(&post) {
                diffs.push(format!(
                    "{}: over the size cap, yet recorded with content: {:?} -> {post:?}",
                    show(e.path.as_bytes()),
                    e.pre
                ));
            }
            continue;
        }
        got.insert(
            e.path.as_bytes().to_vec(),
            (e.pre, e.post.unwrap_or(ckpt_proto::State::Absent)),
        );
    }
    let mut keys: BTreeSet<&Vec<u8>> = want.keys().collect();
    keys.extend(got.keys());
    for k in keys {
        let w = want
            .get(k)
            .map(|(a, b)| (Node::to_state(a.as_ref()), Node::to_state(b.as_ref())));
        if w.as_ref() != got.get(k) {
            diffs.push(format!(
                "{}: expected {} vs found {}",
                show(k),
                w.map_or("untouched".into(), |(a, b)| format!("{a:?} -> {b:?}")),
                got.get(k)
                    .map_or("untouched".into(), |(a, b)| format!("{a:?} -> {b:?}"))
            ));
        }
    }
    diffs
}
