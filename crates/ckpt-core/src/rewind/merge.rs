//! `rewind --merge`: a text file changed after the rewound turns (by the
//! user or another session) is merged instead of refused. Base: what the
//! newest rewound turn left; ours: the file now; theirs: the rewind's
//! target. Where the hunks merge cleanly the rewound turns' change is
//! undone and the later edit kept; where they overlap the file is left as
//! it is (or, with markers, written with conflict markers). The merged
//! content is what the rewind writes, so `redo` puts back exactly the file
//! the merge replaced.

use crate::error::Result;
use std::collections::BTreeMap;

use crate::model::{Conflict, MergeMode, MergeOutcome, MergedFile, RewindPlan};
use crate::parts::Parts;
use crate::relpath::RelPath;
use crate::state::HashOf;
use crate::state::{Hash, State};
use crate::store::Prepared;

use super::merge_file;
use super::plan::Planned;

/// Turns each mergeable conflict of `plan` into an action writing the
/// merge; returns the merged contents to store before the rewind is
/// journaled. What cannot be merged stays a conflict, saying why.
pub(super) fn merge_conflicts(
    parts: &Parts<'_>,
    planned: &mut Planned,
    mode: MergeMode,
    dry_run: bool,
) -> Result<Vec<Prepared>> {
    let plan = &mut planned.plan;
    let labels = Labels::of(plan);
    let mut blobs = Vec::new();
    let mut still = Vec::new();
    // Per merged path: `None` leaves it as it is, else the target written.
    let mut edits = BTreeMap::new();
    for mut c in std::mem::take(&mut plan.conflicts) {
        let Some((_, a)) = planned.actions.find(&c.path)? else {
            still.push(c);
            continue;
        };
        let sides = match merge_of(parts, &c, &a.target, &labels)? {
            Ok(sides) => sides,
            Err(why) => {
                c.not_mergeable = Some(why);
                still.push(c);
                continue;
            }
        };
        let (text, outcome) = match sides.merged {
            Ok(text) => (text, MergeOutcome::Clean),
            Err(text) if mode == MergeMode::Markers => (text, MergeOutcome::Markers),
            Err(_) => {
                edits.insert(c.path.clone(), None);
                plan.merged.push(MergedFile {
                    path: c.path,
                    outcome: MergeOutcome::Overlapping,
                    content: None,
                    hunks: None,
                });
                continue;
            }
        };
        let hash = Hash::of(text.as_bytes());
        let target = State::File {
            hash,
            size: text.len() as u64,
            mode: sides.mode,
        };
        edits.insert(c.path.clone(), Some(target));
        if !dry_run {
            blobs.push(parts.store.prepare_hashed(hash, text.as_bytes()));
        }
        let hunks = dry_run.then(|| hunks(&c.path, &sides.current, &text));
        plan.merged.push(MergedFile {
            path: c.path,
            outcome,
            content: dry_run.then_some(text),
            hunks,
        });
    }
    plan.conflicts = still;
    let actions = std::mem::replace(&mut planned.actions, crate::action_list::empty());
    planned.actions = actions.edited(&parts.spill(), &edits)?;
    Ok(blobs)
}

/// The three-way merge of conflict `c` towards `target`, or why there
/// is none: all three must be text files and the file edited since (a
/// path another session claims, unedited since, stays a conflict:
/// merging would undo that session's change).
fn merge_of(
    parts: &Parts<'_>,
    c: &Conflict,
    target: &State,
    labels: &Labels,
) -> Result<std::result::Result<Sides, String>> {
    let (
        State::File {
            hash: base,
            mode: base_mode,
            ..
        },
        State::File {
            hash: ours,
            mode: ours_mode,
            ..
        },
        State::File {
            hash: theirs,
            mode: theirs_mode,
            ..
        },
    ) = (&c.expected, &c.current, target)
    else {
        return Ok(Err(
            "not a file now, after the agent and before the turn alike (only text files merge)"
                .into(),
        ));
    };
    if c.expected == c.current {
        return Ok(Err(
            "another session changed it and nobody edited it since: merging would undo that change"
                .into(),
        ));
    }
    let (b, o, t) = (
        parts.store.get(parts.conn, base)?,
        parts.store.get(parts.conn, ours)?,
        parts.store.get(parts.conn, theirs)?,
    );
    let (Some(b), Some(o), Some(t)) = (text(&b), text(&o), text(&t)) else {
        return Ok(Err("binary file: it cannot be merged".into()));
    };
    // A mode the later edit changed is kept; else the target's.
    let mode = if ours_mode != base_mode {
        *ours_mode
    } else {
        *theirs_mode
    };
    let names = merge_file::Labels {
        ours: &labels.current,
        base: &labels.agent,
        theirs: &labels.before,
    };
    Ok(match merge_file::merge(b, o, t, &names) {
        Some(merged) => Ok(Sides {
            current: o.to_string(),
            merged,
            mode,
        }),
        None => Err("the merge failed (out of memory?)".into()),
    })
}

/// A mergeable conflict: the file now, the merge (`Err`: with conflict
/// markers), and the mode to give it.
struct Sides {
    current: String,
    merged: std::result::Result<String, String>,
    mode: u32,
}

/// What the conflict markers call each side: the file now, what the agent
/// left and the file before the rewound turns.
struct Labels {
    current: String,
    agent: String,
    before: String,
}

impl Labels {
    fn of(plan: &RewindPlan) -> Labels {
        let agent = match plan.turns.iter().max() {
            Some(&last) if last != plan.turn => format!("agent (turns {}-{last})", plan.turn),
            _ => format!("agent (turn {})", plan.turn),
        };
        Labels {
            current: "current".into(),
            agent,
            before: format!("before turn {}", plan.turn),
        }
    }
}

/// The unified hunks turning `current` into `merged` (three lines of
/// context), headed by the path.
fn hunks(path: &RelPath, current: &str, merged: &str) -> String {
    let name = path.display();
    similar::TextDiff::from_lines(current, merged)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{name}"), &format!("b/{name}"))
        .to_string()
}

/// The content as text, unless it is binary: not UTF-8, or a NUL in its
/// first 8,000 bytes (git's test).
fn text(data: &[u8]) -> Option<&str> {
    if data[..data.len().min(8000)].contains(&0) {
        return None;
    }
    std::str::from_utf8(data).ok()
}

#[cfg(test)]
mod tests {
    use std::fs;

    use crate::model::{MergeMode, MergeOutcome, RewindOptions, RewindOutcome, TurnMeta};
    use crate::project::tests::reconciled;

    const BASE: &str = "one\ntwo\nthree\nfour\nfive\nsix\nseven\n";

    fn merge(mode: MergeMode) -> RewindOptions {
        RewindOptions {
            merge: Some(mode),
            ..RewindOptions::default()
        }
    }

    /// The agent changes line 2 of a.txt in a turn; then `user` edits it.
    fn agent_then_user(user: &str) -> (tempfile::TempDir, std::path::PathBuf, crate::Project, i64) {
        let (tmp, root, mut p) = reconciled(&[("a.txt", BASE), ("b.bin", "\0bin")]);
        let turn = p.turn_start(TurnMeta::default()).unwrap();
        fs::write(root.join("a.txt"), BASE.replace("two", "TWO (agent)")).unwrap();
        fs::write(root.join("b.bin"), "\0agent").unwrap();
        p.reconcile().unwrap();
        p.turn_end().unwrap();
        fs::write(root.join("a.txt"), user).unwrap();
        p.reconcile().unwrap();
        (tmp, root, p, turn)
    }

    #[test]
    fn a_clean_merge_undoes_the_agent_and_keeps_the_later_edit_and_redo_restores_it() {
        let user = BASE
            .replace("two", "TWO (agent)")
            .replace("six", "SIX (user)");
        let (_tmp, root, mut p, turn) = agent_then_user(&user);
        let out = p.rewind(turn, merge(MergeMode::Clean)).unwrap();
        let RewindOutcome::Applied { plan, .. } = out else {
            panic!("not applied: {out:?}");
        };
        assert_eq!(plan.merged.len(), 1);
        assert_eq!(plan.merged[0].outcome, MergeOutcome::Clean);
        assert_eq!(
            fs::read_to_string(root.join("a.txt")).unwrap(),
            BASE.replace("six", "SIX (user)")
        );
        assert_eq!(fs::read(root.join("b.bin")).unwrap(), b"\0bin");
        p.reconcile().unwrap();
        assert!(matches!(
            p.redo(RewindOptions::default()).unwrap(),
            RewindOutcome::Applied { .. }
        ));
        assert_eq!(fs::read_to_string(root.join("a.txt")).unwrap(), user);
    }

    #[test]
    fn overlapping_changes_are_left_as_they_are_or_written_with_markers() {
        let user = BASE.replace("two", "TWO (user)");
        let (_tmp, root, mut p, turn) = agent_then_user(&user);
        let dry = RewindOptions {
            flags: crate::model::RewindFlags {
                dry_run: true,
                ..Default::default()
            },
            ..merge(MergeMode::Markers)
        };
        let RewindOutcome::DryRun(plan) = p.rewind(turn, dry).unwrap() else {
            panic!("not a dry run");
        };
        let text = plan.merged[0]
            .content
            .as_deref()
            .expect("a dry run shows it");
        assert!(
            text.contains("<<<<<<<") && text.contains("TWO (user)"),
            "{text}"
        );
        assert_eq!(fs::read_to_string(root.join("a.txt")).unwrap(), user);

        let out = p.rewind(turn, merge(MergeMode::Clean)).unwrap();
        let RewindOutcome::Applied { plan, .. } = out else {
            panic!("not applied: {out:?}");
        };
        assert_eq!(plan.merged[0].outcome, MergeOutcome::Overlapping);
        assert_eq!(fs::read_to_string(root.join("a.txt")).unwrap(), user);
        assert_eq!(fs::read(root.join("b.bin")).unwrap(), b"\0bin");
    }

    #[test]
    fn a_binary_file_changed_since_is_not_mergeable_and_stays_a_conflict() {
        let (_tmp, root, mut p, turn) = agent_then_user(BASE);
        fs::write(root.join("b.bin"), "\0user").unwrap();
        p.reconcile().unwrap();
        let out = p.rewind(turn, merge(MergeMode::Markers)).unwrap();
        let RewindOutcome::Refused(plan) = out else {
            panic!("not refused: {out:?}");
        };
        let paths: Vec<String> = plan.conflicts.iter().map(|c| c.path.to_string()).collect();
        assert_eq!(paths, ["b.bin"]);
        let why = plan.conflicts[0].not_mergeable.as_deref().unwrap_or("");
        assert!(why.contains("binary"), "{why}");
        assert_eq!(fs::read(root.join("b.bin")).unwrap(), b"\0user");
    }
}
