//! Line-level blame: for every line of a file as it is now, the live turn
//! that last introduced it (with who ran it), or `baseline` /
//! `between-turns`, and the open ledger entries whose span covers it.
//!
//! The file is followed through its versions in order: the pre-image of the
//! first live turn that touched it (the baseline); then for each live turn,
//! its pre-image (a difference from the previous version is the user's,
//! made between turns) and its post-image (the current state while the turn
//! is open), attributed to the turn; last, the file as it is now (a
//! difference is again between turns). Each step is a line diff: lines in
//! equal runs keep their origin, inserted or replaced lines take the new one.
//! Rewound turns are not versions at all.

use rusqlite::Connection;

use crate::cache;
use crate::diff::is_binary;
use crate::error::{Error, Result};
use crate::history;
use crate::ledger::LineSpan;
use crate::model::{Blame, BlameLine, LineOrigin};
use crate::relpath::RelPath;
use crate::state::{Hash, State};
use crate::store::BlobStore;

/// Blames every line of the file at `path` as it is now (see
/// [`crate::Project::blame`]); `spans` are the open ledger entries on it.
pub(crate) fn blame(
    conn: &Connection,
    store: &BlobStore,
    path: &RelPath,
    spans: &[(i64, LineSpan)],
) -> Result<Blame> {
    Sources { conn, store }.blame(path, spans)
}

/// Where a line came from while the file is followed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Origin {
    Baseline,
    BetweenTurns,
    Turn(i64),
}

/// What a blame reads: the hash cache and history, and blob contents.
struct Sources<'a> {
    conn: &'a Connection,
    store: &'a BlobStore,
}

/// The version being followed: its content and the origin of each line.
struct Tracker {
    /// The blob of the content; `None` for no content (absent, or not text).
    hash: Option<Hash>,
    text: String,
    origins: Vec<Origin>,
}

impl Tracker {
    /// Moves to the version `state`, attributing what changed to `origin`.
    fn step(&mut self, p: &Sources, state: &State, origin: Origin) -> Result<()> {
        let hash = state.hash();
        if hash == self.hash {
            return Ok(());
        }
        let text = p.text_of(state)?.unwrap_or_default();
        let (old, new) = (lines(&self.text), lines(&text));
        let mut origins = Vec::with_capacity(new.len());
        for op in similar::capture_diff_slices(similar::Algorithm::Myers, &old, &new) {
            match op {
                similar::DiffOp::Equal { old_index, len, .. } => {
                    origins.extend_from_slice(&self.origins[old_index..old_index + len]);
                }
                similar::DiffOp::Delete { .. } => {}
                similar::DiffOp::Insert { new_len, .. }
                | similar::DiffOp::Replace { new_len, .. } => {
                    origins.extend(std::iter::repeat_n(origin, new_len));
                }
            }
        }
        debug_assert_eq!(origins.len(), new.len());
        *self = Tracker {
            hash,
            text,
            origins,
        };
        Ok(())
    }
}

/// Lines with their endings, as `similar` splits them.
fn lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

impl Sources<'_> {
    fn blame(&self, path: &RelPath, spans: &[(i64, LineSpan)]) -> Result<Blame> {
        let current = cache::state(self.conn, path)?;
        let bad = |what: String| Err(Error::BadInput(format!("cannot blame {path}: {what}")));
        let current_text = match &current {
            State::File { .. } => match self.text_of(&current)? {
                Some(t) => t,
                None => return bad("binary file".into()),
            },
            State::Absent => return bad("no such file (missing, or excluded from capture)".into()),
            State::Dir { .. } => return bad("a directory".into()),
            State::Symlink { .. } => return bad("a symbolic link".into()),
            State::Skipped { reason } => return bad(format!("content not captured ({reason})")),
        };

        let touches = history::live_touches(self.conn, path)?;
        let mut t = match touches.first() {
            Some(first) => {
                let text = self.text_of(&first.pre)?.unwrap_or_default();
                Tracker {
                    hash: first.pre.hash(),
                    origins: vec![Origin::Baseline; lines(&text).len()],
                    text,
                }
            }
            None => Tracker {
                hash: current.hash(),
                origins: vec![Origin::Baseline; lines(&current_text).len()],
                text: current_text,
            },
        };
        for touch in &touches {
            t.step(self, &touch.pre, Origin::BetweenTurns)?;
            let post = touch.post.as_ref().unwrap_or(&current);
            t.step(self, post, Origin::Turn(touch.turn))?;
        }
        t.step(self, &current, Origin::BetweenTurns)?;

        let turns: std::collections::HashMap<i64, &history::PathTouch> =
            touches.iter().map(|touch| (touch.turn, touch)).collect();
        let blamed = lines(&t.text)
            .into_iter()
            .zip(&t.origins)
            .enumerate()
            .map(|(i, (l, &origin))| {
                let line = i as u32 + 1;
                let mut out = BlameLine {
                    line: line.into(),
                    text: l.strip_suffix('\n').unwrap_or(l).to_string(),
                    origin: LineOrigin::Baseline,
                    turn: None,
                    agent: None,
                    session: None,
                    label: None,
                    time_ns: None,
                    ledger: spans
                        .iter()
                        .filter(|(_, s)| s.start <= line && line <= s.end)
                        .map(|&(id, _)| id)
                        .collect(),
                };
                match origin {
                    Origin::Baseline => {}
                    Origin::BetweenTurns => out.origin = LineOrigin::BetweenTurns,
                    Origin::Turn(id) => {
                        out.origin = LineOrigin::Turn;
                        out.turn = Some(id);
                        if let Some(t) = turns.get(&id) {
                            out.agent = t.meta.agent.clone();
                            out.session = t.meta.session.clone();
                            out.label = t.meta.label.clone();
                            out.time_ns = Some(t.started_ns);
                        }
                    }
                }
                out
            })
            .collect();
        Ok(Blame {
            path: path.clone(),
            lines: blamed,
        })
    }

    /// The text of a version: `""` when absent, `None` when it has no text
    /// (binary, a directory, a link, content not captured).
    fn text_of(&self, state: &State) -> Result<Option<String>> {
        Ok(match state {
            State::Absent => Some(String::new()),
            State::File { hash, .. } => {
                let data = self.store.get(self.conn, hash)?;
                if is_binary(&data) {
                    None
                } else {
                    Some(String::from_utf8(data).expect("is_binary rejects what is not UTF-8"))
                }
            }
            State::Dir { .. } | State::Symlink { .. } | State::Skipped { .. } => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;
    use crate::model::{RewindOptions, TurnMeta};
    use crate::project::tests::reconciled;
    use crate::project::Project;

    fn rp(s: &str) -> RelPath {
        RelPath::new(s).unwrap()
    }

    /// Each line's text and origin, its turn folded in.
    fn origins(b: &Blame) -> Vec<(String, Origin)> {
        b.lines
            .iter()
            .map(|l| (l.text.clone(), origin(l)))
            .collect()
    }

    fn origin(l: &BlameLine) -> Origin {
        match (l.origin, l.turn) {
            (LineOrigin::Turn, Some(t)) => Origin::Turn(t),
            (LineOrigin::Baseline, None) => Origin::Baseline,
            (LineOrigin::BetweenTurns, None) => Origin::BetweenTurns,
            other => panic!("line {} has origin {other:?}", l.line),
        }
    }

    fn turn(
        p: &mut Project,
        root: &std::path::Path,
        label: &str,
        edit: impl FnOnce(&std::path::Path),
    ) -> i64 {
        let t = p
            .turn_start(TurnMeta {
                label: Some(label.into()),
                agent: Some("claude-code".into()),
                ..TurnMeta::default()
            })
            .unwrap();
        edit(root);
        p.reconcile().unwrap();
        p.turn_end().unwrap();
        t
    }

    #[test]
    fn lines_follow_the_file_across_turns_and_user_edits() {
        use Origin::*;
        let (_tmp, root, mut p) = reconciled(&[("f.txt", "a\nb\nc\n")]);
        let t1 = turn(&mut p, &root, "one", |r| {
            fs::write(r.join("f.txt"), "a\nB\nc\n").unwrap()
        });
        // The user's edit between turns.
        fs::write(root.join("f.txt"), "user\na\nB\nc\n").unwrap();
        p.reconcile().unwrap();
        let t2 = turn(&mut p, &root, "two", |r| {
            fs::write(r.join("f.txt"), "user\na\nB\nc\nd\n").unwrap()
        });
        let b = p.blame(&rp("f.txt")).unwrap();
        let want: Vec<(String, Origin)> = [
            ("user", BetweenTurns),
            ("a", Baseline),
            ("B", Turn(t1)),
            ("c", Baseline),
            ("d", Turn(t2)),
        ]
        .iter()
        .map(|(s, o)| (s.to_string(), *o))
        .collect();
        assert_eq!(origins(&b), want);
        // Who ran the turn, on its lines; line numbers from 1.
        let l = &b.lines[2];
        assert_eq!((l.line, l.label.as_deref()), (3, Some("one")));
        assert_eq!(l.agent.as_deref(), Some("claude-code"));
        assert!(l.time_ns.is_some());
        assert_eq!(b.lines[4].label.as_deref(), Some("two"));
    }

    #[test]
    fn rewound_turns_do_not_count() {
        let (_tmp, root, mut p) = reconciled(&[("f.txt", "a\n")]);
        let t1 = turn(&mut p, &root, "one", |r| {
            fs::write(r.join("f.txt"), "a\nb\n").unwrap()
        });
        let t2 = turn(&mut p, &root, "two", |r| {
            fs::write(r.join("f.txt"), "a\nb\nc\n").unwrap()
        });
        p.rewind(t2, RewindOptions::default()).unwrap();
        let b = p.blame(&rp("f.txt")).unwrap();
        assert_eq!(
            origins(&b),
            [
                ("a".to_string(), Origin::Baseline),
                ("b".to_string(), Origin::Turn(t1))
            ]
        );
        // Even when a later turn writes the same line again.
        let t3 = turn(&mut p, &root, "three", |r| {
            fs::write(r.join("f.txt"), "a\nb\nc\n").unwrap()
        });
        let b = p.blame(&rp("f.txt")).unwrap();
        assert_eq!(origin(&b.lines[2]), Origin::Turn(t3));
    }

    #[test]
    fn an_open_turn_owns_what_it_changed_so_far() {
        let (_tmp, root, mut p) = reconciled(&[("f.txt", "a\n")]);
        let t = p.turn_start(TurnMeta::default()).unwrap();
        fs::write(root.join("f.txt"), "a\nmore\n").unwrap();
        p.reconcile().unwrap();
        let b = p.blame(&rp("f.txt")).unwrap();
        assert_eq!(origin(&b.lines[1]), Origin::Turn(t));
        assert_eq!(origin(&b.lines[0]), Origin::Baseline);
    }

    #[test]
    fn a_file_no_turn_touched_is_all_baseline() {
        let (_tmp, _root, p) = reconciled(&[("f.txt", "a\nb"), ("empty", "")]);
        let b = p.blame(&rp("f.txt")).unwrap();
        assert_eq!(
            origins(&b),
            [
                ("a".to_string(), Origin::Baseline),
                ("b".to_string(), Origin::Baseline)
            ]
        );
        assert!(p.blame(&rp("empty")).unwrap().lines.is_empty());
    }

    #[test]
    fn a_file_created_by_a_turn_is_all_that_turn() {
        let (_tmp, root, mut p) = reconciled(&[("other", "x")]);
        let t = turn(&mut p, &root, "new", |r| {
            fs::write(r.join("new.txt"), "1\n2\n").unwrap()
        });
        let b = p.blame(&rp("new.txt")).unwrap();
        assert!(b.lines.iter().all(|l| origin(l) == Origin::Turn(t)));
        assert_eq!(b.lines.len(), 2);
    }

    #[test]
    fn what_has_no_lines_is_a_clear_error() {
        let (_tmp, root, mut p) = reconciled(&[("bin", &b"\x00\x01\x02"[..]), ("d/f", b"x")]);
        std::os::unix::fs::symlink("d/f", root.join("link")).unwrap();
        p.reconcile().unwrap();
        for (path, what) in [
            ("bin", "binary file"),
            ("missing", "no such file"),
            ("d", "a directory"),
            ("link", "a symbolic link"),
        ] {
            match p.blame(&rp(path)) {
                Err(Error::BadInput(m)) => assert!(m.contains(what), "{path}: {m}"),
                other => panic!("{path}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_skipped_file_is_a_clear_error() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("proj");
        fs::create_dir_all(&root).unwrap();
        fs::write(root.join("big"), vec![b'x'; 100]).unwrap();
        let opts = crate::model::Options {
            max_file_size: 10,
            ..Default::default()
        };
        let mut p = Project::open(&tmp.path().join("store"), &root, opts).unwrap();
        p.reconcile().unwrap();
        match p.blame(&rp("big")) {
            Err(Error::BadInput(m)) => assert!(m.contains("not captured"), "{m}"),
            other => panic!("{other:?}"),
        }
    }
}
