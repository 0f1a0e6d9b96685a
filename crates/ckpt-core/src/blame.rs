//! Line-level blame: for every line of a file as it is now, the live turn
//! that last introduced it, or `Baseline` / `BetweenTurns`.
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
use crate::model::{Blame, BlameLine, BlameTurn, LineOrigin};
use crate::relpath::RelPath;
use crate::state::{Hash, State};
use crate::store::BlobStore;

/// Blames every line of the file at `path` as it is now (see
/// [`crate::Project::blame`]).
pub(crate) fn blame(conn: &Connection, store: &BlobStore, path: &RelPath) -> Result<Blame> {
    Sources { conn, store }.blame(path)
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
    origins: Vec<LineOrigin>,
}

impl Tracker {
    /// Moves to the version `state`, attributing what changed to `origin`.
    fn step(&mut self, p: &Sources, state: &State, origin: LineOrigin) -> Result<()> {
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
    fn blame(&self, path: &RelPath) -> Result<Blame> {
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
                    origins: vec![LineOrigin::Baseline; lines(&text).len()],
                    text,
                }
            }
            None => Tracker {
                hash: current.hash(),
                origins: vec![LineOrigin::Baseline; lines(&current_text).len()],
                text: current_text,
            },
        };
        for touch in &touches {
            t.step(self, &touch.pre, LineOrigin::BetweenTurns)?;
            let post = touch.post.as_ref().unwrap_or(&current);
            t.step(self, post, LineOrigin::Turn(touch.turn))?;
        }
        t.step(self, &current, LineOrigin::BetweenTurns)?;

        let blamed = lines(&t.text)
            .into_iter()
            .zip(&t.origins)
            .map(|(l, &origin)| BlameLine {
                text: l.strip_suffix('\n').unwrap_or(l).to_string(),
                origin,
            })
            .collect::<Vec<_>>();
        let named: std::collections::HashSet<i64> = blamed
            .iter()
            .filter_map(|l| match l.origin {
                LineOrigin::Turn(t) => Some(t),
                _ => None,
            })
            .collect();
        let turns = touches
            .into_iter()
            .filter(|touch| named.contains(&touch.turn))
            .map(|touch| BlameTurn {
                id: touch.turn,
                started_ns: touch.started_ns,
                meta: touch.meta,
            })
            .collect();
        Ok(Blame {
            path: path.clone(),
            lines: blamed,
            turns,
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

    fn origins(b: &Blame) -> Vec<(String, LineOrigin)> {
        b.lines.iter().map(|l| (l.text.clone(), l.origin)).collect()
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
        use LineOrigin::*;
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
        let want: Vec<(String, LineOrigin)> = [
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
        let ids: Vec<i64> = b.turns.iter().map(|t| t.id).collect();
        assert_eq!(ids, [t1, t2]);
        assert_eq!(b.turns[0].meta.label.as_deref(), Some("one"));
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
                ("a".to_string(), LineOrigin::Baseline),
                ("b".to_string(), LineOrigin::Turn(t1))
            ]
        );
        // Even when a later turn writes the same line again.
        let t3 = turn(&mut p, &root, "three", |r| {
            fs::write(r.join("f.txt"), "a\nb\nc\n").unwrap()
        });
        let b = p.blame(&rp("f.txt")).unwrap();
        assert_eq!(b.lines[2].origin, LineOrigin::Turn(t3));
    }

    #[test]
    fn an_open_turn_owns_what_it_changed_so_far() {
        let (_tmp, root, mut p) = reconciled(&[("f.txt", "a\n")]);
        let t = p.turn_start(TurnMeta::default()).unwrap();
        fs::write(root.join("f.txt"), "a\nmore\n").unwrap();
        p.reconcile().unwrap();
        let b = p.blame(&rp("f.txt")).unwrap();
        assert_eq!(b.lines[1].origin, LineOrigin::Turn(t));
        assert_eq!(b.lines[0].origin, LineOrigin::Baseline);
    }

    #[test]
    fn a_file_no_turn_touched_is_all_baseline() {
        let (_tmp, _root, p) = reconciled(&[("f.txt", "a\nb"), ("empty", "")]);
        let b = p.blame(&rp("f.txt")).unwrap();
        assert_eq!(
            origins(&b),
            [
                ("a".to_string(), LineOrigin::Baseline),
                ("b".to_string(), LineOrigin::Baseline)
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
        assert!(b.lines.iter().all(|l| l.origin == LineOrigin::Turn(t)));
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
