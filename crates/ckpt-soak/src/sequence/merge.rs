//! `rewind N --merge` and `--merge=markers`: an agent's turn edits some
//! lines of a text file, then the user (or another session) edits others
//! or the same; the rewind must write what `git merge-file` (the model's
//! oracle, `crate::merge`) says, report each file's outcome, and a redo
//! must put back exactly the file the merge replaced.

use ckpt_proto::{RewindReply, TurnEnded, TurnStarted};

use super::check::entry_diffs;
use super::{mismatch, Seq};
use crate::merge;
use crate::ops;
use crate::rules::{self, Turn};
use crate::tree::{show, Node};

impl Seq<'_> {
    pub(super) fn merge_step(&mut self) -> anyhow::Result<()> {
        if self.open.is_some() {
            self.turn_end()?;
        }
        let Some(path) = self.merge_candidate()? else {
            return Ok(());
        };
        self.turn_start()?;
        for _ in 0..self.rng.range(1, 2) {
            if let Some(line) = ops::line_edit(&mut self.proj, &mut self.rng, &path)? {
                self.note(format!("agent: {line}"));
            }
        }
        if self.rng.chance(15) {
            self.edit()?;
        }
        let Some((n, _)) = self.open.clone() else {
            return Ok(());
        };
        self.turn_end()?;
        if self.rng.chance(30) {
            self.later_session_edit(&path)?;
        } else if let Some(line) = ops::line_edit(&mut self.proj, &mut self.rng, &path)? {
            self.note(format!("user: {line}"));
        }
        if self.rng.chance(20) {
            return self.killed_merge(n);
        }
        self.merge_rewind(n)
    }

    /// `rewind n --merge[=markers]` with the daemon killed mid-way: the
    /// tree after recovery is the merge's or the one before, whole.
    fn killed_merge(&mut self, n: i64) -> anyhow::Result<()> {
        self.check_model(&format!("a killed rewind {n} --merge"))?;
        let markers = self.rng.chance(50);
        let scratch = self.world.dir.join("merge");
        std::fs::create_dir_all(&scratch)?;
        let (e, _) =
            merge::rewind_merge(&self.proj.tree, &self.planned_turns(), n, markers, &scratch)?;
        if e.refused {
            return self.merge_rewind(n);
        }
        let merge = if markers {
            "--merge=markers"
        } else {
            "--merge"
        };
        let args = vec![
            "--json".into(),
            "rewind".into(),
            n.to_string(),
            merge.into(),
        ];
        self.stats.merges += 1;
        let pause = self.rng.chance(50);
        self.kill_during(args, e, false, pause)
    }

    /// The later edit as another session's turn: merged the same way, and
    /// that session's turn stays live.
    fn later_session_edit(&mut self, path: &[u8]) -> anyhow::Result<()> {
        let s = "merger";
        let c = self.world.ctl(&["--json", "turn-start", "--session", s])?;
        if c.code != Some(0) {
            return mismatch(format!("turn-start --session {s} failed: {}", c.describe()));
        }
        let t: TurnStarted = c.parse()?;
        self.note(format!("turn-start --session {s} -> turn {}", t.turn));
        let start = self.proj.tree.clone();
        let started = self.tick();
        if let Some(line) = ops::line_edit(&mut self.proj, &mut self.rng, path)? {
            self.note(format!("{s}: {line}"));
        }
        let c = self.world.ctl(&["--json", "turn-end", "--session", s])?;
        if c.code != Some(0) {
            return mismatch(format!("turn-end --session {s} failed: {}", c.describe()));
        }
        let ended: TurnEnded = c.parse()?;
        let touched = rules::touched(&start, &self.proj.tree);
        let diffs = entry_diffs(&touched, ended.body.turn.entries);
        if !diffs.is_empty() {
            return mismatch(format!(
                "capture: turn {}'s recorded changes differ from what was done:\n  {}",
                t.turn,
                diffs.join("\n  ")
            ));
        }
        let ended = self.tick();
        self.turns.push(Turn {
            id: t.turn,
            live: true,
            touched,
            session: Some(s.into()),
            started,
            ended,
        });
        self.stats.turns += 1;
        Ok(())
    }

    /// A text file with a few lines, or a new one the user writes.
    fn merge_candidate(&mut self) -> anyhow::Result<Option<Vec<u8>>> {
        let texts: Vec<Vec<u8>> = self
            .proj
            .tree
            .iter()
            .filter(|(k, n)| {
                !crate::tree::uncaptured(k)
                    && matches!(n, Node::File { bytes, .. }
                        if bytes.len() < 4096 && !bytes.contains(&0) && std::str::from_utf8(bytes).is_ok()
                            && bytes.iter().filter(|&&b| b == b'\n').count() >= 3)
            })
            .map(|(k, _)| k.clone())
            .collect();
        if let (Some(p), true) = (self.rng.pick(&texts).cloned(), self.rng.chance(40)) {
            return Ok(Some(p));
        }
        let lines = self.rng.range(4, 12);
        let p = ops::create_lines(&mut self.proj, &mut self.rng, lines)?;
        if let Some(p) = &p {
            self.note(format!("user: fs: create {} ({lines} lines)", show(p)));
        }
        Ok(p)
    }

    /// `rewind n --merge[=markers] [--dry-run]`, judged by the model.
    fn merge_rewind(&mut self, n: i64) -> anyhow::Result<()> {
        self.check_model(&format!("rewind {n} --merge"))?;
        let markers = self.rng.chance(50);
        let dry = self.rng.chance(25);
        let scratch = self.world.dir.join("merge");
        std::fs::create_dir_all(&scratch)?;
        let (e, want) =
            merge::rewind_merge(&self.proj.tree, &self.planned_turns(), n, markers, &scratch)?;
        let mut args = vec!["--json".to_string(), "rewind".into(), n.to_string()];
        args.push(
            if markers {
                "--merge=markers"
            } else {
                "--merge"
            }
            .into(),
        );
        if dry {
            args.push("--dry-run".into());
        }
        let what = args[1..].join(" ");
        let c = self.call(&args)?;
        self.stats.rewinds += 1;
        self.stats.merges += 1;
        let model = want
            .iter()
            .map(|(p, (o, _))| format!("{} {o:?}", show(p)))
            .collect::<Vec<_>>()
            .join(", ");
        self.note(format!("  model merges: [{model}]"));
        if !e.refused {
            let r: RewindReply = c.parse()?;
            let got: Vec<(Vec<u8>, ckpt_proto::MergeOutcome, Option<String>)> = r
                .merged
                .iter()
                .map(|m| (m.path.as_bytes().to_vec(), m.outcome, m.content.clone()))
                .collect();
            let found: Vec<_> = got.iter().map(|(p, o, _)| (p.clone(), *o)).collect();
            let expected: Vec<_> = want.iter().map(|(p, (o, _))| (p.clone(), *o)).collect();
            if found != expected {
                return mismatch(format!(
                    "{what}: merged {:?}, the model (git merge-file) says {:?}",
                    found
                        .iter()
                        .map(|(p, o)| format!("{} {o:?}", show(p)))
                        .collect::<Vec<_>>(),
                    expected
                        .iter()
                        .map(|(p, o)| format!("{} {o:?}", show(p)))
                        .collect::<Vec<_>>()
                ));
            }
            // A dry run shows the text it would write.
            for (p, _, content) in got.iter().filter(|_| dry) {
                let model = want.get(p).and_then(|w| w.1.clone());
                if content.as_ref().map(|s| s.as_bytes().to_vec()) != model {
                    return mismatch(format!(
                        "{what}: the dry run's text of {} is {:?}, git merge-file's {:?}",
                        show(p),
                        content,
                        model.map(|m| String::from_utf8_lossy(&m).into_owned())
                    ));
                }
            }
        }
        self.judge(&what, &c, &e, false, dry)
    }
}
