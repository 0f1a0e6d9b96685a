//! One sequence: a fresh project and daemon, seeded random turns, edits,
//! rewinds, redos and faults, each checked against the model.
//!
//! The model is the tree as the soak made it plus every closed turn's
//! (start, end) states; `rules` says what a rewind or redo must leave. Every
//! rewind and redo is checked against the real tree exactly (and `.git`, the
//! file outside the project, `ckptctl fsck`); every turn-end's reported
//! pre/post images against the model's.

mod check;
mod dry;
mod fault;
mod files;
mod merge;
mod partial;
mod sessions;
mod workcopy;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{bail, Context};
use ckpt_proto::{TurnEnded, TurnStarted};

use self::check::entry_diffs;
use crate::ops::{self, Project};
use crate::rng::{self, Rng};
use crate::rules::{self, Applied, Expect, Turn};
use crate::tree::{self, Node, Tree};
use crate::world::{Call, World};

/// The session of the soak's second agent.
const OTHER_SESSION: &str = "other";

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
    pub sessions: u64,
    pub tools: u64,
    pub partials: u64,
    pub dry_runs: u64,
    pub merges: u64,
    pub fscks: u64,
    pub links: u64,
    pub big_files: u64,
    pub workcopies: u64,
    /// Sequences whose daemon's queue holds a few paths, so most events
    /// only name their directory.
    pub small_queues: u64,
    /// Sequences whose daemon holds a few of a rewind's actions in memory,
    /// so its lists go through their files.
    pub small_plans: u64,
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
    /// The sequence's clock: one tick per turn start and end.
    clock: u64,
    /// When the open turn started.
    open_started: u64,
}

impl<'a> Seq<'a> {
    pub fn new(seed: u64, bin: &Path, opts: &'a Options) -> anyhow::Result<Seq<'a>> {
        // One sequence in three: a queue of 1 to 16 paths.
        let pending_max = seed
            .is_multiple_of(3)
            .then_some(1 + (seed / 3 % 16) as usize);
        // One sequence in two: a rewind's lists go to their files past a
        // few actions (blocks of 1 to 3, 0 to 2 of them in memory).
        let plan_window =
            (seed % 2 == 1).then_some((1 + (seed / 2 % 3) as usize, (seed / 6 % 3) as usize));
        let world = World::new(bin, pending_max, plan_window)?;
        let proj = Project {
            root: world.project.clone(),
            tree: Tree::new(),
            transient: Vec::new(),
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
            stats: Stats {
                small_queues: pending_max.is_some() as u64,
                small_plans: plan_window.is_some() as u64,
                ..Stats::default()
            },
            opts,
            just_rewound: false,
            clock: 0,
            open_started: 0,
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
            self.fsck_step()?;
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
            // edit, turn-end, turn-start, rewind, redo, fault, -, sessions,
            // dry run, --path, merge, hard link, big file, work copy
            let fault = if self.opts.stress_overflow { 20 } else { 4 };
            self.rng
                .weighted(&[60, 14, 3, 4, 2, fault, 0, 2, 5, 3, 3, 1, 1, 1])
        } else {
            let redo = if was_rewound { 40 } else { 5 };
            match self
                .rng
                .weighted(&[30, 18, 14, redo, 4, 5, 8, 7, 4, 7, 3, 2, 4])
            {
                0 => 2,
                1 => 0,
                2 => 3,
                3 => 4,
                4 => 5,
                5 => 6,
                6 => 7,
                7 => 8,
                8 => 9,
                9 => 10,
                10 => 11,
                11 => 12,
                _ => 13,
            }
        };
        match choice {
            0 => self.edit(),
            1 => self.turn_end(),
            2 => self.turn_start(),
            3 => self.rewind_step(),
            4 => self.redo_step(),
            5 => self.fault(),
            6 => self.other_session_turn(),
            7 => self.sessions_step(),
            8 => self.dry_run_step(),
            9 => self.partial_rewind_step(),
            10 => self.merge_step(),
            11 => self.hard_link_step(),
            12 => self.big_file_step(),
            _ => self.workcopy_step(),
        }
    }

    /// A whole turn of another session (a second agent in the folder),
    /// while the default session has none open: the default session's
    /// rewinds must leave its changes alone, or refuse where they overlap.
    fn other_session_turn(&mut self) -> anyhow::Result<()> {
        let c = self
            .world
            .ctl(&["--json", "turn-start", "--session", OTHER_SESSION])?;
        if c.code != Some(0) {
            return mismatch(format!("turn-start --session failed: {}", c.describe()));
        }
        let t: TurnStarted = c.parse()?;
        if t.closed_turn.is_some() {
            return mismatch(format!(
                "another session's turn-start closed turn {:?}",
                t.closed_turn
            ));
        }
        self.note(format!(
            "turn-start --session {OTHER_SESSION} -> turn {}",
            t.turn
        ));
        let start = self.proj.tree.clone();
        let started = self.tick();
        for _ in 0..self.rng.range(1, 4) {
            if let Some(line) = ops::random_edit(&mut self.proj, &mut self.rng)? {
                self.note(format!("{OTHER_SESSION}: {line}"));
            }
        }
        let c = self
            .world
            .ctl(&["--json", "turn-end", "--session", OTHER_SESSION])?;
        if c.code != Some(0) {
            return mismatch(format!("turn-end --session failed: {}", c.describe()));
        }
        let ended: TurnEnded = c.parse()?;
        if ended.left_open || ended.turn.info.id != t.turn {
            return mismatch(format!(
                "turn-end --session {OTHER_SESSION} closed turn {} (left open: {}), not {}",
                ended.turn.info.id, ended.left_open, t.turn
            ));
        }
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
            session: Some(OTHER_SESSION.into()),
            started,
            ended,
        });
        self.stats.turns += 1;
        Ok(())
    }

    /// A live turn to rewind. A rewind of another session's turn leaves the
    /// default session's open turn open, which the model does not follow:
    /// that turn is ended first.
    fn pick_rewind(&mut self) -> anyhow::Result<Option<i64>> {
        let Some(n) = self.pick_turn() else {
            return Ok(None);
        };
        let other = self.turns.iter().any(|t| t.id == n && t.session.is_some());
        if other && self.open.is_some() {
            self.turn_end()?;
        }
        Ok(Some(n))
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
        self.open_turn(t.turn);
        self.stats.turns += 1;
        Ok(())
    }

    /// `ckptctl fsck` after every step (unless `--no-fsck`): the store is
    /// sound whatever the step did.
    fn fsck_step(&mut self) -> anyhow::Result<()> {
        if !self.opts.fsck {
            return Ok(());
        }
        let c = self.world.ctl(&["fsck"])?;
        self.stats.fscks += 1;
        if c.code != Some(0) {
            return mismatch(format!(
                "after step {}: ckptctl fsck: {} {}",
                self.step_no,
                c.describe(),
                c.stdout.trim()
            ));
        }
        Ok(())
    }

    /// The next tick of the sequence's clock.
    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    /// Records `id` as the default session's open turn, starting now.
    fn open_turn(&mut self, id: i64) {
        self.open = Some((id, self.proj.tree.clone()));
        self.open_started = self.tick();
    }

    /// Records the open turn as closed at the current tree.
    fn close_open(&mut self) {
        if let Some((id, start)) = self.open.take() {
            let ended = self.tick();
            self.turns.push(Turn {
                id,
                live: true,
                touched: rules::touched(&start, &self.proj.tree),
                session: None,
                started: self.open_started,
                ended,
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
        let diffs = entry_diffs(&want, t.body.turn.entries);
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

    fn rewind_step(&mut self) -> anyhow::Result<()> {
        let Some(n) = self.pick_rewind()? else {
            return Ok(());
        };
        self.check_model(&format!("rewind {n}"))?;
        let force = self.rng.chance(15);
        let dry = self.rng.chance(8);
        // The open turn is planned as if it ended now; only an applied
        // rewind ends it (and continues it in a new turn).
        let e = rules::rewind(&self.proj.tree, &self.planned_turns(), n, force);
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

    /// `rewind N --force`, judged against the model's forced plan.
    fn forced_rewind(&mut self, n: i64, note: &str) -> anyhow::Result<()> {
        let e = rules::rewind(&self.proj.tree, &self.planned_turns(), n, true);
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

    /// The closed turns, and the open one as if it ended now: what a
    /// rewind plans with (it ends the open turn only once applied).
    fn planned_turns(&self) -> Vec<Turn> {
        let mut turns = self.turns.clone();
        if let Some((id, start)) = &self.open {
            turns.push(Turn {
                id: *id,
                live: true,
                touched: rules::touched(start, &self.proj.tree),
                session: None,
                started: self.open_started,
                ended: u64::MAX,
            });
        }
        turns
    }

    /// Moves the model past an applied rewind or redo (`reply`, its
    /// document): the open turn, when the rewind undoes it (a redo: in any
    /// case), is ended and continued by the new turn the reply names, which
    /// starts from the tree the rewind leaves.
    /// A `--path` rewind names only the turns that touched its paths, but
    /// ends (and continues) the open turn of its session all the same.
    fn partial_spans(&self, e: &Expect, open: i64) -> bool {
        let Some(&first) = e.turns.first() else {
            return false;
        };
        let session = |id: i64| self.turns.iter().find(|t| t.id == id).map(|t| &t.session);
        e.partial && open > first && session(first).is_some_and(|s| s.is_none())
    }

    fn apply_continuing(
        &mut self,
        e: &Expect,
        redo: bool,
        reply: Option<&ckpt_proto::RewindReply>,
    ) -> anyhow::Result<()> {
        let ends = self
            .open
            .as_ref()
            .map(|o| o.0)
            .filter(|id| redo || e.turns.contains(id) || self.partial_spans(e, *id));
        let said: Vec<(i64, Option<i64>)> = reply
            .map(|r| r.continued.iter().map(|c| (c.ended, c.opened)).collect())
            .unwrap_or_default();
        let opened = match (ends, said.as_slice()) {
            (Some(id), [(ended, Some(new))]) if *ended == id => Some(*new),
            (None, []) => None,
            _ => {
                return mismatch(format!(
                    "the open turn to end and continue is {ends:?}; the reply says {said:?}"
                ))
            }
        };
        if ends.is_some() {
            self.close_open();
        }
        self.apply(e, redo);
        if let Some(new) = opened {
            self.note(format!("  the open turn continues as turn {new}"));
            self.open_turn(new);
        }
        Ok(())
    }

    /// Moves the model past an applied rewind or redo.
    fn apply(&mut self, e: &Expect, redo: bool) {
        self.proj.tree = e.result.clone();
        // A partial rewind leaves its turns live.
        let turns = if e.partial {
            Vec::new()
        } else {
            e.turns.clone()
        };
        for t in &mut self.turns {
            if turns.contains(&t.id) {
                t.live = redo;
            }
        }
        if redo {
            self.applied.pop();
        } else {
            // A redo names the turns its rewind named (and leaves live
            // what is live).
            self.applied.push(Applied {
                turns: e.turns.clone(),
                partial: e.partial,
                changed: e.changed.clone(),
            });
            self.just_rewound = true;
        }
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
