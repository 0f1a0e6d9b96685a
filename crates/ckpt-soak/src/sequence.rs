//! One sequence: a fresh project and daemon, seeded random turns, edits,
//! rewinds, redos and faults, each checked against the model.
//!
//! The model is the tree as the soak made it plus every closed turn's
//! (start, end) states; `rules` says what a rewind or redo must leave. Every
//! rewind and redo is checked against the real tree exactly (and `.git`, the
//! file outside the project, `ckptctl fsck`); every turn-end's reported
//! pre/post images against the model's.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Context};
use ckpt_proto::{LogReply, Outcome, RewindReply, TurnEnded, TurnStarted, TurnStatus};

use crate::ops::{self, Project};
use crate::rng::{self, Rng};
use crate::rules::{self, Applied, Expect, Turn};
use crate::tree::{self, show, Node, Tree};
use crate::world::{Call, World};

/// A difference between what ckpt did and what the contract says.
#[derive(Debug)]
pub struct Mismatch(pub String);

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Mismatch {}

fn mismatch<T>(msg: String) -> anyhow::Result<T> {
    Err(Mismatch(msg).into())
}

#[derive(Default, Clone, Copy)]
pub struct Stats {
    pub turns: u64,
    pub rewinds: u64,
    pub redos: u64,
    pub kills: u64,
    pub overflows: u64,
}

pub struct Options {
    pub fsck: bool,
    /// `/proc/sys/fs/inotify/max_queued_events`, if an overflow is feasible.
    pub queue: Option<usize>,
    /// Let requests meant to be killed mid-way finish instead (same random
    /// draws): tells a recovery bug from a plan that differs anyway.
    pub spare_rewinds: bool,
    /// Many more faults in turns, most of them overflows.
    pub stress_overflow: bool,
}

pub struct Seq<'a> {
    rng: Rng,
    world: World,
    proj: Project,
    pub log: Vec<String>,
    turns: Vec<Turn>,
    /// The open turn: its id and the tree at its start.
    open: Option<(i64, Tree)>,
    applied: Vec<Applied>,
    git: BTreeMap<Vec<u8>, (Node, i64)>,
    outside: Vec<u8>,
    pub stats: Stats,
    opts: &'a Options,
    /// Whether the last step applied a rewind (redo is likelier then).
    just_rewound: bool,
    seed: u64,
    /// Steps left out (shrinking); each step draws from its own generator,
    /// so leaving one out does not change the others' draws.
    pub skip: BTreeSet<usize>,
    step_no: usize,
}

impl<'a> Seq<'a> {
    pub fn new(seed: u64, bin: &Path, opts: &'a Options) -> anyhow::Result<Seq<'a>> {
        let world = World::new(bin)?;
        let proj = Project {
            root: world.project.clone(),
            tree: Tree::new(),
        };
        Ok(Seq {
            rng: Rng::new(rng::step_seed(seed, 0)),
            seed,
            skip: BTreeSet::new(),
            step_no: 0,
            world,
            proj,
            log: Vec::new(),
            turns: Vec::new(),
            open: None,
            applied: Vec::new(),
            git: BTreeMap::new(),
            outside: Vec::new(),
            stats: Stats::default(),
            opts,
            just_rewound: false,
        })
    }

    /// Keeps this sequence's temp dir; returns its path.
    pub fn keep(&mut self) -> std::path::PathBuf {
        self.world.keep()
    }

    pub fn daemon_log(&self) -> String {
        self.world.log_tail()
    }

    fn note(&mut self, line: String) {
        self.log.push(format!("{:>3}| {line}", self.step_no));
    }

    /// The number of steps this sequence has (before any is skipped).
    pub fn steps(seed: u64) -> usize {
        Rng::new(rng::step_seed(seed, u64::MAX)).range(15, 45)
    }

    pub fn run(&mut self) -> anyhow::Result<()> {
        self.setup()?;
        for i in 1..=Seq::steps(self.seed) {
            if self.skip.contains(&i) {
                continue;
            }
            self.step_no = i;
            self.rng = Rng::new(rng::step_seed(self.seed, i as u64));
            self.step()?;
        }
        self.step_no += 1;
        self.finish()?;
        self.world.stop()
    }

    fn setup(&mut self) -> anyhow::Result<()> {
        let root = self.proj.root.clone();
        git(&root, &["init", "-q", "-b", "main", "."])?;
        std::fs::write(root.join("README"), b"tracked by git\n").context("README")?;
        git(&root, &["add", "README"])?;
        git(&root, &["commit", "-q", "-m", "initial"])?;
        self.proj
            .tree
            .insert(b"README".to_vec(), Node::file(b"tracked by git\n", 0o644));
        ops::seed_tree(&mut self.proj, &mut self.rng)?;
        let disk = tree::read_disk(&root)?;
        if disk != self.proj.tree {
            bail!(
                "soak bug: the seeded tree differs from its model:\n  {}",
                tree::diff(&self.proj.tree, &disk).join("\n  ")
            );
        }
        self.git = tree::read_git(&root)?;
        self.outside = std::fs::read(&self.world.outside).context("outside file")?;
        self.world.start(&[])?;
        let c = self.world.ctl(&["--json", "watch"])?;
        if c.code != Some(0) {
            bail!("ckptctl watch failed: {}", c.describe());
        }
        self.note(format!("start: {} paths, watch", self.proj.tree.len()));
        Ok(())
    }

    fn step(&mut self) -> anyhow::Result<()> {
        let was_rewound = std::mem::take(&mut self.just_rewound);
        let choice = if self.open.is_some() {
            // edit, turn-end, turn-start, rewind, redo, fault
            let fault = if self.opts.stress_overflow { 20 } else { 4 };
            self.rng.weighted(&[60, 14, 3, 4, 2, fault])
        } else {
            let redo = if was_rewound { 40 } else { 5 };
            match self.rng.weighted(&[30, 18, 14, redo, 4]) {
                0 => 2,
                1 => 0,
                2 => 3,
                3 => 4,
                _ => 5,
            }
        };
        match choice {
            0 => self.edit(),
            1 => self.turn_end(),
            2 => self.turn_start(),
            3 => self.rewind_step(),
            4 => self.redo_step(),
            _ => self.fault(),
        }
    }

    fn who(&self) -> &'static str {
        if self.open.is_some() {
            "agent"
        } else {
            "user"
        }
    }

    fn edit(&mut self) -> anyhow::Result<()> {
        for _ in 0..self.rng.range(1, 4) {
            if let Some(line) = ops::random_edit(&mut self.proj, &mut self.rng)? {
                let who = self.who();
                self.note(format!("{who}: {line}"));
            }
        }
        Ok(())
    }

    fn turn_start(&mut self) -> anyhow::Result<()> {
        let c = self.world.ctl(&["--json", "turn-start"])?;
        if c.code != Some(0) {
            return mismatch(format!("turn-start failed: {}", c.describe()));
        }
        let t: TurnStarted = c.parse()?;
        if let Some((id, _)) = &self.open {
            if t.closed_turn != Some(*id) {
                return mismatch(format!(
                    "turn-start should have closed turn {id}, reply says {:?}",
                    t.closed_turn
                ));
            }
            // The turn it closed must hold exactly the model's changes.
            let id = *id;
            let want = rules::touched(
                &self.open.as_ref().map(|o| o.1.clone()).unwrap_or_default(),
                &self.proj.tree,
            );
            self.check_turn_entries(id, &want)?;
            self.close_open();
        }
        self.note(format!("turn-start -> turn {}", t.turn));
        self.open = Some((t.turn, self.proj.tree.clone()));
        self.stats.turns += 1;
        Ok(())
    }

    /// Records the open turn as closed at the current tree.
    fn close_open(&mut self) {
        if let Some((id, start)) = self.open.take() {
            self.turns.push(Turn {
                id,
                live: true,
                touched: rules::touched(&start, &self.proj.tree),
            });
        }
    }

    fn turn_end(&mut self) -> anyhow::Result<()> {
        let Some((id, start)) = self.open.clone() else {
            return Ok(());
        };
        let c = self.world.ctl(&["--json", "turn-end"])?;
        if c.code != Some(0) {
            return mismatch(format!("turn-end failed: {}", c.describe()));
        }
        let t: TurnEnded = c.parse()?;
        self.note(format!(
            "turn-end (turn {id}: {} paths)",
            t.turn.entries.len()
        ));
        if t.turn.info.id != id {
            return mismatch(format!("turn-end closed turn {}, not {id}", t.turn.info.id));
        }
        // The daemon's pre/post images must be exactly the model's.
        let want = rules::touched(&start, &self.proj.tree);
        let diffs = entry_diffs(&want, t.turn.entries);
        if !diffs.is_empty() {
            return mismatch(format!(
                "capture: turn {id}'s recorded changes differ from what was done:\n  {}",
                diffs.join("\n  ")
            ));
        }
        self.close_open();
        Ok(())
    }

    fn live(&self) -> Vec<i64> {
        let mut v: Vec<i64> = self.turns.iter().filter(|t| t.live).map(|t| t.id).collect();
        if let Some((id, _)) = &self.open {
            v.push(*id);
        }
        v
    }

    /// A random live turn, the recent ones likelier.
    fn pick_turn(&mut self) -> Option<i64> {
        let live = self.live();
        if live.is_empty() {
            return None;
        }
        let span = if self.rng.chance(70) {
            live.len().min(3)
        } else {
            live.len()
        };
        let back = self.rng.below(span);
        Some(live[live.len() - 1 - back])
    }

    /// The tree must be the model's before a request: else the soak lost
    /// track (or the daemon wrote outside a request).
    fn check_model(&self, before: &str) -> anyhow::Result<()> {
        let disk = tree::read_disk(&self.proj.root)?;
        if disk != self.proj.tree {
            return mismatch(format!(
                "the tree drifted from the model before {before} (soak bug, or ckpt wrote outside a rewind):\n  {}",
                tree::diff(&self.proj.tree, &disk).join("\n  ")
            ));
        }
        Ok(())
    }

    fn rewind_step(&mut self) -> anyhow::Result<()> {
        let Some(n) = self.pick_turn() else {
            return Ok(());
        };
        self.check_model(&format!("rewind {n}"))?;
        let force = self.rng.chance(15);
        let dry = self.rng.chance(8);
        // A rewind to a live turn closes an open turn first, refused or not.
        self.close_open();
        let e = rules::rewind(&self.proj.tree, &self.turns, n, force);
        let mut args = vec!["--json".to_string(), "rewind".into(), n.to_string()];
        if force {
            args.push("--force".into());
        }
        if dry {
            args.push("--dry-run".into());
        }
        let what = args[1..].join(" ");
        let c = self.call(&args)?;
        self.stats.rewinds += 1;
        self.judge(&what, &c, &e, false, dry)?;
        if e.refused && !dry && self.rng.chance(70) {
            self.forced_rewind(n, "")?;
        }
        Ok(())
    }

    fn redo_step(&mut self) -> anyhow::Result<()> {
        self.check_model("redo")?;
        let force = self.rng.chance(25);
        let mut args = vec!["--json".to_string(), "redo".into()];
        if force {
            args.push("--force".into());
        }
        let what = args[1..].join(" ");
        let Some(last) = self.applied.last().cloned() else {
            // Nothing to redo: an error, and nothing changes (the open
            // turn stays open).
            let c = self.call(&args)?;
            self.stats.redos += 1;
            self.note(format!("{what} -> {:?} (nothing to redo)", c.code));
            if c.code != Some(1) {
                return mismatch(format!("{what} with nothing to redo: {}", c.describe()));
            }
            return self.check_tree(&what, &self.proj.tree.clone());
        };
        self.close_open();
        let e = rules::redo(&self.proj.tree, &last, force);
        let c = self.call(&args)?;
        self.stats.redos += 1;
        self.judge(&what, &c, &e, true, false)?;
        if e.refused && !force && e.structural.is_none() && self.rng.chance(60) {
            let e = rules::redo(&self.proj.tree, &last, true);
            let c = self.call(&["--json".into(), "redo".into(), "--force".into()])?;
            self.stats.redos += 1;
            self.judge("redo --force", &c, &e, true, false)?;
        }
        Ok(())
    }

    fn call(&self, args: &[String]) -> anyhow::Result<Call> {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        self.world.ctl(&a)
    }

    /// Checks a rewind or redo reply and the tree against the contract,
    /// and moves the model on when it was applied.
    /// `rewind N --force`, judged against the model's forced plan.
    fn forced_rewind(&mut self, n: i64, note: &str) -> anyhow::Result<()> {
        let e = rules::rewind(&self.proj.tree, &self.turns, n, true);
        let what = format!("rewind {n} --force{note}");
        let args = [
            "--json".into(),
            "rewind".into(),
            n.to_string(),
            "--force".into(),
        ];
        let c = self.call(&args)?;
        self.stats.rewinds += 1;
        self.judge(&what, &c, &e, false, false)
    }

    fn judge(
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
                c.code == Some(0)
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
                    let found: BTreeSet<Vec<u8>> =
                        r.conflicts.iter().map(|x| x.path.0.clone()).collect();
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
        self.apply(e, redo);
        Ok(())
    }

    /// Moves the model past an applied rewind or redo.
    fn apply(&mut self, e: &Expect, redo: bool) {
        self.proj.tree = e.result.clone();
        for t in &mut self.turns {
            if e.turns.contains(&t.id) {
                t.live = redo;
            }
        }
        if redo {
            self.applied.pop();
        } else {
            self.applied.push(Applied {
                turns: e.turns.clone(),
                changed: e.changed.clone(),
            });
            self.just_rewound = true;
        }
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
    fn check_tree(&self, what: &str, expected: &Tree) -> anyhow::Result<()> {
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

    fn fault(&mut self) -> anyhow::Result<()> {
        let overflow = match (self.opts.queue, self.opts.stress_overflow) {
            (None, _) => 0,
            (Some(_), false) => 1,
            (Some(_), true) => 30,
        };
        match self.rng.weighted(&[4, 2, 3, 2, overflow, 2, 2]) {
            0 => self.kill_idle(),
            1 => self.kill_in_burst(),
            2 => self.kill_mid_rewind(true),
            3 => self.kill_mid_rewind(false),
            4 => self.overflow(),
            5 => self.restart_with_edits(),
            _ => self.kill_at_boundary(),
        }
    }

    /// SIGKILL while a turn-start or turn-end is under way: after a
    /// restart the turn is either opened/closed or not, as `log` says, and
    /// a closed one must hold exactly the model's changes.
    fn kill_at_boundary(&mut self) -> anyhow::Result<()> {
        let end = self.open.is_some() && self.rng.chance(60);
        let cmd = if end { "turn-end" } else { "turn-start" };
        let delay = self.rng.below(4000);
        let mut child = self.world.spawn_ctl(&["--json", cmd])?;
        // A delay that often lands inside the call's barrier; its timing
        // is the fault, not a wait for events.
        std::thread::sleep(Duration::from_micros(delay as u64));
        let finished = World::done(&mut child)?;
        self.world.kill()?;
        self.stats.kills += 1;
        let c = self.world.finish_ctl(child, &["--json", cmd])?;
        self.world.start(&[])?;
        self.note(format!(
            "{cmd} with the daemon killed after {delay} us (finished before: {finished}) -> exit {:?}",
            c.code
        ));
        let l = self.world.ctl(&["--json", "log", "-n", "100000"])?;
        let log: LogReply = l.parse()?;
        let known_max = self
            .turns
            .iter()
            .map(|t| t.id)
            .chain(self.open.as_ref().map(|o| o.0))
            .max()
            .unwrap_or(0);
        let open_now = log
            .turns
            .iter()
            .find(|t| t.status == TurnStatus::Open)
            .map(|t| t.id);
        if let Some((id, _)) = &self.open {
            let id = *id;
            if open_now != Some(id) {
                // It was closed: by the turn-end, or by the turn-start.
                let want = rules::touched(
                    &self.open.as_ref().map(|o| o.1.clone()).unwrap_or_default(),
                    &self.proj.tree,
                );
                self.check_turn_entries(id, &want)?;
                self.close_open();
                self.note(format!("  turn {id} is closed"));
            } else {
                self.note(format!("  turn {id} is still open"));
            }
        }
        if let Some(new) = open_now.filter(|&id| id > known_max) {
            if end {
                return mismatch(format!("turn-end killed mid-way: turn {new} appeared"));
            }
            self.note(format!("  turn {new} was opened"));
            self.open = Some((new, self.proj.tree.clone()));
            self.stats.turns += 1;
        } else if let Some(id) = open_now {
            if self.open.as_ref().map(|o| o.0) != Some(id) {
                return mismatch(format!(
                    "after a killed {cmd}: turn {id} is open, the model has {:?}",
                    self.open.as_ref().map(|o| o.0)
                ));
            }
        }
        Ok(())
    }

    /// `show id` must list exactly the changes in `want`.
    fn check_turn_entries(
        &self,
        id: i64,
        want: &BTreeMap<Vec<u8>, rules::Change>,
    ) -> anyhow::Result<()> {
        let c = self.world.ctl(&["--json", "show", &id.to_string()])?;
        if c.code != Some(0) {
            return mismatch(format!("show {id} failed: {}", c.describe()));
        }
        let r: ckpt_proto::ShowReply = c.parse()?;
        let diffs = entry_diffs(want, r.turn.entries);
        if !diffs.is_empty() {
            return mismatch(format!(
                "capture: turn {id}'s recorded changes differ from what was done:\n  {}",
                diffs.join("\n  ")
            ));
        }
        Ok(())
    }

    fn kill_idle(&mut self) -> anyhow::Result<()> {
        self.world.kill()?;
        self.stats.kills += 1;
        self.note("KILL -9 the daemon (idle)".into());
        if self.rng.chance(60) {
            self.note("  edits while it is down:".into());
            self.edit()?;
        }
        self.world.start(&[])?;
        self.note("  daemon restarted".into());
        Ok(())
    }

    fn restart_with_edits(&mut self) -> anyhow::Result<()> {
        self.world.stop()?;
        self.note("SIGTERM the daemon; edits while it is down:".into());
        self.edit()?;
        self.world.start(&[])?;
        self.note("  daemon restarted".into());
        Ok(())
    }

    fn kill_in_burst(&mut self) -> anyhow::Result<()> {
        let Some(dir) = (0..100)
            .map(|i| format!("kb{i}").into_bytes())
            .find(|d| !self.proj.tree.contains_key(d))
        else {
            return Ok(());
        };
        let n = self.rng.range(100, 400);
        let at = self.rng.below(n);
        std::fs::create_dir(self.proj.full(&dir)).context("mkdir burst")?;
        self.proj
            .tree
            .insert(dir.clone(), Node::Dir { mode: 0o755 });
        for i in 0..n {
            if i == at {
                self.world.kill()?;
                self.stats.kills += 1;
            }
            let f = tree::join(&dir, format!("f{i}").as_bytes());
            let bytes = format!("{i}\n").into_bytes();
            std::fs::write(self.proj.full(&f), &bytes).context("burst write")?;
            self.proj.tree.insert(f, Node::file(&bytes, 0o644));
        }
        self.world.start(&[])?;
        let who = self.who();
        self.note(format!(
            "{who}: burst of {n} files in {}, KILL -9 the daemon at file {at}, restart",
            show(&dir)
        ));
        Ok(())
    }

    /// SIGSTOP, edits, more events than the kernel queue holds, more
    /// edits (their events are lost), SIGCONT: the next barrier must still
    /// see everything.
    fn overflow(&mut self) -> anyhow::Result<()> {
        let Some(queue) = self.opts.queue else {
            return Ok(());
        };
        let a = b"~flood-a".to_vec();
        let b = b"~flood-b".to_vec();
        if self.proj.tree.contains_key(&a) || self.proj.tree.contains_key(&b) {
            return Ok(());
        }
        self.world.signal(libc::SIGSTOP)?;
        self.note("SIGSTOP the daemon".into());
        self.edit()?;
        // Each append is at least one event (close-after-write); two files
        // in turn so the kernel cannot merge neighbours.
        let appends = queue + 2000;
        let mut content_a = Vec::new();
        let mut content_b = Vec::new();
        for i in 0..appends {
            let (p, c) = if i % 2 == 0 {
                (&a, &mut content_a)
            } else {
                (&b, &mut content_b)
            };
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(self.proj.full(p))
                .context("flood open")?;
            std::io::Write::write_all(&mut f, b"x").context("flood write")?;
            c.push(b'x');
        }
        self.proj
            .tree
            .insert(a.clone(), Node::file(&content_a, 0o644));
        self.proj
            .tree
            .insert(b.clone(), Node::file(&content_b, 0o644));
        let who = self.who();
        self.note(format!(
            "{who}: {appends} appends to ~flood-a/b (queue {queue})"
        ));
        self.edit()?;
        // The edits after the flood may have moved or replaced it.
        let still_file = matches!(self.proj.tree.get(&a), Some(Node::File { .. }));
        if still_file && self.rng.chance(50) {
            std::fs::remove_file(self.proj.full(&a)).context("rm flood")?;
            self.proj.tree.remove(&a);
            self.note(format!("{who}: rm ~flood-a"));
        }
        self.world.signal(libc::SIGCONT)?;
        self.note("SIGCONT the daemon".into());
        self.stats.overflows += 1;
        Ok(())
    }

    /// Kills the daemon in the middle of a rewind or redo: with the
    /// daemon's test pause (deterministic) or after a random delay. After a
    /// restart the tree must be exactly one of the two states.
    fn kill_mid_rewind(&mut self, pause: bool) -> anyhow::Result<()> {
        let redo = !self.applied.is_empty() && self.rng.chance(35);
        let n = if redo { None } else { self.pick_turn() };
        if !redo && n.is_none() {
            return Ok(());
        }
        self.check_model("a killed rewind")?;
        // What the request would do; a refused one gives no window.
        let mut closed = self.clone_turns();
        if let Some((id, start)) = &self.open {
            closed.push(Turn {
                id: *id,
                live: true,
                touched: rules::touched(start, &self.proj.tree),
            });
        }
        let e = match (redo, n) {
            (true, _) => match self.applied.last() {
                Some(last) => rules::redo(&self.proj.tree, last, true),
                None => return Ok(()),
            },
            (false, Some(n)) => rules::rewind(&self.proj.tree, &closed, n, true),
            (false, None) => return Ok(()),
        };
        if e.refused {
            return Ok(());
        }
        let args: Vec<String> = match n {
            Some(n) if !redo => vec![
                "--json".into(),
                "rewind".into(),
                n.to_string(),
                "--force".into(),
            ],
            _ => vec!["--json".into(), "redo".into(), "--force".into()],
        };
        let what = args[1..].join(" ");
        // The daemon's own plan, so that a tree it recovers to can be told
        // apart from a plan that differs from the contract.
        let mut dry_args = args.clone();
        dry_args.push("--dry-run".into());
        let own_plan: Option<RewindReply> = self.call(&dry_args)?.parse().ok();
        let marker = self.world.pause_marker();
        let _ = std::fs::remove_file(&marker);
        let k = self.rng.below(e.changed.len().max(1) + 1);
        let delay = self.rng.below(15);
        let pause = pause && !self.opts.spare_rewinds;
        if pause {
            self.world.stop()?;
            self.world.start(&[
                ("CKPT_TEST_PAUSE_REWIND_AFTER", k.to_string()),
                ("CKPT_TEST_PAUSE_MARKER", marker.display().to_string()),
            ])?;
        }
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut child = self.world.spawn_ctl(&a)?;
        if pause {
            // The daemon announces its pause with the marker; a rewind with
            // fewer steps than k simply finishes.
            while !marker.exists() && !World::done(&mut child)? {
                std::thread::sleep(Duration::from_millis(1));
            }
        } else if !self.opts.spare_rewinds {
            std::thread::sleep(Duration::from_millis(delay as u64));
        }
        let c = if self.opts.spare_rewinds {
            let c = self.world.finish_ctl(child, &a)?;
            self.world.stop()?;
            c
        } else {
            self.world.kill()?;
            self.stats.kills += 1;
            self.world.finish_ctl(child, &a)?
        };
        let _ = std::fs::remove_file(&marker);
        self.note(format!(
            "{what} with the daemon killed {} -> exit {:?}",
            if self.opts.spare_rewinds {
                "(no: --spare-rewinds)".to_string()
            } else if pause {
                format!("at its pause before step {k}")
            } else {
                format!("after {delay} ms")
            },
            c.code
        ));
        if redo {
            self.stats.redos += 1;
        } else {
            self.stats.rewinds += 1;
        }
        self.world.start(&[])?;
        let s = self.world.ctl(&["sync"])?;
        if s.code != Some(0) {
            return mismatch(format!("sync after recovery failed: {}", s.describe()));
        }
        let l = self.world.ctl(&["--json", "log", "-n", "100000"])?;
        let log: LogReply = l.parse()?;
        let status = |id: i64| log.turns.iter().find(|t| t.id == id).map(|t| t.status);
        let disk = tree::read_disk(&self.proj.root)?;
        let done = e.turns.first().is_some_and(|t| {
            status(*t)
                == Some(if redo {
                    TurnStatus::Closed
                } else {
                    TurnStatus::Rewound
                })
        });
        // Did the request get as far as closing the open turn?
        if let Some((id, _)) = &self.open {
            if status(*id) != Some(TurnStatus::Open) {
                self.close_open();
            }
        }
        if done && disk == e.result {
            self.note("  recovered: finished".into());
            self.check_tree(&what, &e.result)?;
            self.apply(&e, redo);
        } else if !done && disk == self.proj.tree {
            self.note("  recovered: never happened (or rolled back)".into());
            self.check_tree(&what, &self.proj.tree.clone())?;
        } else {
            let d1 = tree::diff(&self.proj.tree, &disk);
            let d2 = tree::diff(&e.result, &disk);
            let own = match &own_plan {
                Some(r) if at_own_target(&self.proj.tree, &disk, r) => {
                    "\n  the tree is exactly the daemon's own plan applied (its dry run): recovery is \
                     consistent, the plan differs from the contract"
                }
                Some(_) => "\n  the tree is not the daemon's own plan applied (its dry run) either",
                None => "",
            };
            return mismatch(format!(
                "{what} killed mid-way: after recovery the turns say {} but the tree is {}{own}:\n  vs before:\n  {}\n  vs after:\n  {}",
                if done { "applied" } else { "not applied" },
                if d1.is_empty() { "the state before" } else if d2.is_empty() { "the state after" } else { "neither state" },
                d1.join("\n  "),
                d2.join("\n  ")
            ));
        }
        Ok(())
    }

    fn clone_turns(&self) -> Vec<Turn> {
        self.turns.clone()
    }

    /// The end of a sequence: close the turn, rewind everything live, redo.
    fn finish(&mut self) -> anyhow::Result<()> {
        if self.open.is_some() {
            self.turn_end()?;
        }
        if let Some(first) = self.live().first().copied() {
            self.check_model("the final rewind")?;
            self.forced_rewind(first, " (final)")?;
            if let Some(last) = self.applied.last().cloned() {
                let e = rules::redo(&self.proj.tree, &last, false);
                let c = self.call(&["--json".into(), "redo".into()])?;
                self.stats.redos += 1;
                self.judge("redo (final)", &c, &e, true, false)?;
            }
        }
        Ok(())
    }
}

fn git(dir: &Path, args: &[&str]) -> anyhow::Result<()> {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "Soak")
        .env("GIT_AUTHOR_EMAIL", "soak@example.com")
        .env("GIT_COMMITTER_NAME", "Soak")
        .env("GIT_COMMITTER_EMAIL", "soak@example.com")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .context("running git")?;
    if !out.status.success() {
        bail!("git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(())
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
                    x.action, x.path, x.current, x.target
                ))
                .collect()
        ),
    )
}

/// Whether `disk` is `before` with every action of the daemon's own plan
/// `r` done: each action's path at its target, every other path as before.
fn at_own_target(before: &Tree, disk: &Tree, r: &RewindReply) -> bool {
    let acted: BTreeMap<&[u8], &ckpt_proto::State> = r
        .actions
        .iter()
        .map(|a| (a.path.0.as_slice(), &a.target))
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
fn entry_diffs(
    want: &BTreeMap<Vec<u8>, rules::Change>,
    entries: Vec<ckpt_proto::TurnEntry>,
) -> Vec<String> {
    let mut got: BTreeMap<Vec<u8>, (ckpt_proto::State, ckpt_proto::State)> = BTreeMap::new();
    for e in entries {
        got.insert(
            e.path.0,
            (e.pre, e.post.unwrap_or(ckpt_proto::State::Absent)),
        );
    }
    let mut keys: BTreeSet<&Vec<u8>> = want.keys().collect();
    keys.extend(got.keys());
    let mut diffs = Vec::new();
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
