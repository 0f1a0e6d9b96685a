//! `rewind --merge`: a text file changed after the rewound turns (by the
//! user or another session) is merged instead of refused. Base: what the
//! newest rewound turn left; ours: the file now; theirs: the rewind's
//! target. Where the hunks merge cleanly the rewound turns' change is
//! undone and the later edit kept; where they overlap the file is left as
//! it is (or, with markers, written with conflict markers). The merged
//! content is what the rewind writes, so `redo` puts back exactly the file
//! the merge replaced.

use crate::error::Result;
use crate::model::{Conflict, MergeMode, MergeOutcome, MergedFile, RewindPlan};
use crate::parts::Parts;
use crate::relpath::RelPath;
use crate::state::HashOf;
use crate::state::{Hash, State};
use crate::store::Prepared;

/// Turns each mergeable conflict of `plan` into an action writing the
/// merge; returns the merged contents to store before the rewind is
/// journaled. What cannot be merged stays a conflict, saying why.
pub(super) fn merge_conflicts(
    parts: &Parts<'_>,
    plan: &mut RewindPlan,
    mode: MergeMode,
    dry_run: bool,
) -> Result<Vec<Prepared>> {
    let labels = Labels::of(plan);
    let mut blobs = Vec::new();
    let mut still = Vec::new();
    for mut c in std::mem::take(&mut plan.conflicts) {
        let Some(i) = plan.actions.iter().position(|a| a.path == c.path) else {
            still.push(c);
            continue;
        };
        let sides = match merge_of(parts, &c, &plan.actions[i].target, &labels)? {
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
                plan.actions.remove(i);
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
        plan.actions[i].target = State::File {
            hash,
            size: text.len() as u64,
            mode: sides.mode,
        };
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
    Ok(match merge3(b, o, t) {
        Some(merged) => Ok(Sides {
            current: o.to_string(),
            merged: merged.map_err(|m| labels.rename(&m, [b, o, t])),
            mode,
        }),
        None => Err("a side holds the bytes ckpt marks a file's end with".into()),
    })
}

/// A mergeable conflict: the file now, the merge (`Err`: with conflict
/// markers), and the mode to give it.
struct Sides {
    current: String,
    merged: std::result::Result<String, String>,
    mode: u32,
}

/// What the conflict markers call each side: diffy writes `ours`,
/// `original`, `theirs`, which here are the file now, what the agent left
/// and the file before the rewound turns.
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

    /// `merged` with diffy's marker lines named for what they are, unless
    /// a side holds such a line itself (then the markers could not be
    /// told from it, and stay as diffy wrote them).
    fn rename(&self, merged: &str, sides: [&str; 3]) -> String {
        const DIFFY: [&str; 3] = ["<<<<<<< ours", "||||||| original", ">>>>>>> theirs"];
        if sides.iter().any(|s| s.lines().any(|l| DIFFY.contains(&l))) {
            return merged.to_string();
        }
        let mut out = String::with_capacity(merged.len());
        for line in merged.split_inclusive('\n') {
            let (body, end) = match line.strip_suffix('\n') {
                Some(b) => (b, "\n"),
                None => (line, ""),
            };
            let named = match body {
                "<<<<<<< ours" => format!("<<<<<<< {}", self.current),
                "||||||| original" => format!("||||||| {}", self.agent),
                ">>>>>>> theirs" => format!(">>>>>>> {}", self.before),
                _ => body.to_string(),
            };
            out.push_str(&named);
            out.push_str(end);
        }
        out
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

/// Ends every side for a conflict's rendering: no text file holds it (a
/// NUL, then a name), and it is a line of its own or ends a side's last line.
const EOF: &str = "\u{0}ckpt:eof\u{0}\n";

/// `diffy`'s three-way merge, with every conflict marker on a line of its
/// own, as `git merge-file` writes it: a side whose last line has no
/// newline gets one before the marker that follows it. `None` if a side
/// holds the end mark (then it stays a conflict).
fn merge3(base: &str, ours: &str, theirs: &str) -> Option<std::result::Result<String, String>> {
    let clean = diffy::merge(base, ours, theirs);
    if clean.is_ok() {
        return Some(clean);
    }
    if [base, ours, theirs].iter().any(|s| s.contains(EOF)) {
        return None;
    }
    // diffy writes a marker right after a side's last line, newline or
    // not; with every side ending in a line, its markers start lines.
    let ended = |s: &str| format!("{s}{EOF}");
    let merged = diffy::merge(&ended(base), &ended(ours), &ended(theirs));
    Some(merged.map(|t| without_eof(&t)).map_err(|t| without_eof(&t)))
}

/// Takes the end marks out: one on a line of its own goes whole; one that
/// ends a line without a newline becomes that newline when a conflict
/// marker follows, and nothing at the end of the file (it ends as that
/// side did).
fn without_eof(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(EOF) {
        out.push_str(&rest[..i]);
        rest = &rest[i + EOF.len()..];
        let line_start = out.is_empty() || out.ends_with('\n');
        if !line_start && !rest.is_empty() {
            out.push('\n');
        }
    }
    out.push_str(rest);
    out
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

    /// A side whose last line has no newline: the marker after it is a
    /// line of its own (as `git merge-file` writes it); a clean merge keeps
    /// the missing newline.
    #[test]
    fn conflict_markers_are_lines_of_their_own_when_a_side_has_no_final_newline() {
        let m = |b, o, t| super::merge3(b, o, t).expect("mergeable");
        assert_eq!(
            m("a\nagent\n", "a\nuser\n", "a\nlast"),
            Err(
                "a\n<<<<<<< ours\nuser\n||||||| original\nagent\n=======\nlast\n>>>>>>> theirs\n"
                    .into()
            )
        );
        assert_eq!(
            m("a\nagent", "a\nuser", "a\nlast"),
            Err(
                "a\n<<<<<<< ours\nuser\n||||||| original\nagent\n=======\nlast\n>>>>>>> theirs\n"
                    .into()
            )
        );
        assert_eq!(
            m("x\nmid\nz", "x\nOURS\nz", "x\nTHEIRS\nz"),
            Err(
                "x\n<<<<<<< ours\nOURS\n||||||| original\nmid\n=======\nTHEIRS\n>>>>>>> theirs\nz"
                    .into()
            )
        );
        assert_eq!(m("a\nb\nc", "A\nb\nc", "a\nb\nC"), Ok("A\nb\nC".into()));
    }

    /// Markers name the sides for what they are; a side that holds a line
    /// such as `<<<<<<< ours` itself keeps diffy's names, so no line of
    /// the file is renamed.
    #[test]
    fn marker_labels_name_the_sides_unless_a_side_holds_a_marker_line() {
        let labels = super::Labels {
            current: "current".into(),
            agent: "agent (turn 2)".into(),
            before: "before turn 2".into(),
        };
        let merged = "<<<<<<< ours\nu\n||||||| original\na\n=======\nb\n>>>>>>> theirs\n";
        assert_eq!(
            labels.rename(merged, ["a\n", "u\n", "b\n"]),
            "<<<<<<< current\nu\n||||||| agent (turn 2)\na\n=======\nb\n>>>>>>> before turn 2\n"
        );
        let holds = [">>>>>>> theirs\na\n", "u\n", "b\n"];
        assert_eq!(labels.rename(merged, holds), merged);
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
