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
//!
//! A committed version ([`BlameAt`]) takes the place of the file as it is
//! now, followed through the turns started before it was made. A line
//! whose change was whitespace only (a formatter's) keeps, beside its new
//! origin, where it was before ([`Reformatted`]).

use rusqlite::Connection;

use crate::cache;
use crate::diff::is_binary;
use crate::error::{Error, Result};
use crate::history;
use crate::ledger::LineSpan;
use crate::model::{Blame, BlameAt, BlameLine, LineOrigin, Reformatted};
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
    at: Option<&BlameAt>,
) -> Result<Blame> {
    Sources { conn, store }.blame(path, spans, at)
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
    /// Per line: where it was before a whitespace-only change made it
    /// (its 1-based line in that version, and its origin there).
    prior: Vec<Option<(u64, Origin)>>,
}

impl Tracker {
    fn new(hash: Option<Hash>, text: String) -> Tracker {
        let n = lines(&text).len();
        Tracker {
            hash,
            text,
            origins: vec![Origin::Baseline; n],
            prior: vec![None; n],
        }
    }

    /// Moves to the version `state`, attributing what changed to `origin`.
    fn step(&mut self, p: &Sources, state: &State, origin: Origin) -> Result<()> {
        let hash = state.hash();
        if hash == self.hash {
            return Ok(());
        }
        let text = p.text_of(state)?.unwrap_or_default();
        self.step_text(hash, text, origin);
        Ok(())
    }

    /// Moves to the version `text` (of blob `hash`, if stored).
    fn step_text(&mut self, hash: Option<Hash>, text: String, origin: Origin) {
        let (old, new) = (lines(&self.text), lines(&text));
        let mut origins = Vec::with_capacity(new.len());
        let mut prior = Vec::with_capacity(new.len());
        for op in similar::capture_diff_slices(similar::Algorithm::Myers, &old, &new) {
            match op {
                similar::DiffOp::Equal { old_index, len, .. } => {
                    origins.extend_from_slice(&self.origins[old_index..old_index + len]);
                    prior.extend_from_slice(&self.prior[old_index..old_index + len]);
                }
                similar::DiffOp::Delete { .. } => {}
                similar::DiffOp::Insert { new_len, .. } => {
                    origins.extend(std::iter::repeat_n(origin, new_len));
                    prior.extend(std::iter::repeat_n(None, new_len));
                }
                similar::DiffOp::Replace {
                    old_index,
                    old_len,
                    new_index,
                    new_len,
                } => {
                    // A replaced line that is an old one re-spaced keeps
                    // where it was, each old line matched once, in order.
                    let mut next = old_index;
                    for n in &new[new_index..new_index + new_len] {
                        origins.push(origin);
                        let key = squeezed(n);
                        let found = (!key.is_empty())
                            .then(|| (next..old_index + old_len).find(|&o| squeezed(old[o]) == key))
                            .flatten();
                        prior.push(found.map(|o| {
                            next = o + 1;
                            (o as u64 + 1, self.origins[o])
                        }));
                    }
                }
            }
        }
        debug_assert_eq!(origins.len(), new.len());
        *self = Tracker {
            hash,
            text,
            origins,
            prior,
        };
    }
}

/// A line without its whitespace: two lines a formatter can turn into
/// each other have the same.
fn squeezed(line: &str) -> String {
    line.chars().filter(|c| !c.is_whitespace()).collect()
}

/// Lines with their endings, as `similar` splits them.
fn lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

impl Sources<'_> {
    fn blame(
        &self,
        path: &RelPath,
        spans: &[(i64, LineSpan)],
        at: Option<&BlameAt>,
    ) -> Result<Blame> {
        let current = cache::state(self.conn, path)?;
        let bad = |what: String| Err(Error::BadInput(format!("cannot blame {path}: {what}")));
        if let Some(at) = at {
            return self.blame_at(path, spans, at);
        }
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
        let mut t = self.follow(&touches, &current, current_text)?;
        t.step(self, &current, Origin::BetweenTurns)?;
        Ok(self.attributed(path, spans, t, &touches))
    }

    /// The committed text `at`, followed through the turns started before.
    fn blame_at(&self, path: &RelPath, spans: &[(i64, LineSpan)], at: &BlameAt) -> Result<Blame> {
        let current = cache::state(self.conn, path)?;
        let mut touches = history::live_touches(self.conn, path)?;
        touches.retain(|touch| touch.started_ns <= at.before_ns);
        let mut t = self.follow(&touches, &current, at.text.clone())?;
        t.step_text(None, at.text.clone(), Origin::BetweenTurns);
        Ok(self.attributed(path, spans, t, &touches))
    }

    /// The file followed from its baseline through `touches`; without
    /// any, `text` (of `current`) is all baseline.
    fn follow(
        &self,
        touches: &[history::PathTouch],
        current: &State,
        text: String,
    ) -> Result<Tracker> {
        let mut t = match touches.first() {
            Some(first) => Tracker::new(
                first.pre.hash(),
                self.text_of(&first.pre)?.unwrap_or_default(),
            ),
            None => Tracker::new(current.hash(), text),
        };
        for touch in touches {
            t.step(self, &touch.pre, Origin::BetweenTurns)?;
            let post = touch.post.as_ref().unwrap_or(current);
            t.step(self, post, Origin::Turn(touch.turn))?;
        }
        Ok(t)
    }

    /// Each line of the followed version with its origin and who made it.
    fn attributed(
        &self,
        path: &RelPath,
        spans: &[(i64, LineSpan)],
        t: Tracker,
        touches: &[history::PathTouch],
    ) -> Blame {
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
        let reformatted = t
            .prior
            .iter()
            .enumerate()
            .filter_map(|(i, p)| {
                let (pre_line, origin) = (*p)?;
                let (pre_origin, pre_turn) = match origin {
                    Origin::Baseline => (LineOrigin::Baseline, None),
                    Origin::BetweenTurns => (LineOrigin::BetweenTurns, None),
                    Origin::Turn(id) => (LineOrigin::Turn, Some(id)),
                };
                Some(Reformatted {
                    line: i as u64 + 1,
                    pre_line,
                    pre_origin,
                    pre_turn,
                })
            })
            .collect();
        Blame {
            path: path.clone(),
            lines: blamed,
            reformatted,
        }
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
    fn a_respaced_line_keeps_where_it_was_before() {
        let (_tmp, root, mut p) = reconciled(&[("f.py", "def a():\n  x\n")]);
        let t1 = turn(&mut p, &root, "one", |r| {
            fs::write(r.join("f.py"), "def a():\n  y\n  z\n").unwrap()
        });
        // A formatter: the same lines, re-indented, and one really new.
        let t2 = turn(&mut p, &root, "fmt", |r| {
            fs::write(r.join("f.py"), "def a():\n    y\n    w\n    z\n").unwrap()
        });
        let b = p.blame(&rp("f.py")).unwrap();
        assert!(b.lines[1..].iter().all(|l| origin(l) == Origin::Turn(t2)));
        let moved: Vec<(u64, u64, Option<i64>)> = b
            .reformatted
            .iter()
            .map(|r| (r.line, r.pre_line, r.pre_turn))
            .collect();
        assert_eq!(moved, [(2, 2, Some(t1)), (4, 3, Some(t1))]);
    }

    #[test]
    fn a_committed_version_follows_only_the_turns_before_it() {
        let (_tmp, root, mut p) = reconciled(&[("f.txt", "a\nb\n")]);
        let t1 = turn(&mut p, &root, "one", |r| {
            fs::write(r.join("f.txt"), "a\nB\n").unwrap()
        });
        let started = |p: &Project, t: i64| {
            p.log(10)
                .unwrap()
                .iter()
                .find(|i| i.id == t)
                .unwrap()
                .started_ns
        };
        let made = started(&p, t1) + 1;
        // A later turn rewrites B; the commit does not have it.
        let t2 = turn(&mut p, &root, "two", |r| {
            fs::write(r.join("f.txt"), "a\nb2\n").unwrap()
        });
        assert!(started(&p, t2) > made);
        let at = BlameAt {
            text: "a\nB\nmine\n".into(),
            before_ns: made,
        };
        let b = p.blame_version(&rp("f.txt"), Some(&at)).unwrap();
        assert_eq!(
            origins(&b),
            [
                ("a".to_string(), Origin::Baseline),
                ("B".to_string(), Origin::Turn(t1)),
                ("mine".to_string(), Origin::BetweenTurns),
            ]
        );
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
