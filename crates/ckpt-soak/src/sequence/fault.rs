//! Fault injection: the daemon killed (idle, in a burst of events, in the
//! middle of a rewind or redo, at a turn boundary), stopped and restarted
//! with edits while it is down, or made to overflow the inotify queue.
//!
//! After each fault the daemon is running again and the model still
//! matches the tree: what the fault may have done is read back from
//! `log` and the disk, and anything but one of the allowed states is a
//! mismatch.

use std::time::Duration;

use anyhow::Context;
use ckpt_proto::{LogReply, RewindReply, TurnStatus};

use super::check::at_own_target;
use super::{mismatch, Seq};
use crate::rules;
use crate::tree::{self, show, Node};
use crate::world::World;

impl Seq<'_> {
    pub(super) fn fault(&mut self) -> anyhow::Result<()> {
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
            self.open_turn(new);
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
        let n = if redo { None } else { self.pick_rewind()? };
        if !redo && n.is_none() {
            return Ok(());
        }
        self.check_model("a killed rewind")?;
        // What the request would do; a refused one gives no window.
        let closed = self.planned_turns();
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
        self.kill_during(args, e, redo, pause)
    }

    /// The id of the newest rewind or redo the daemon applied (0: none).
    fn newest_applied_rewind(&self) -> anyhow::Result<i64> {
        let r = self.world.ctl(&["--json", "rewinds", "--all"])?;
        let doc: serde_json::Value = r.parse()?;
        Ok(doc["rewinds"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|r| r["state"] == "applied" || r["state"] == "redone")
            .filter_map(|r| r["id"].as_i64())
            .max()
            .unwrap_or(0))
    }

    /// Runs the rewind or redo `args` (whose contract is `e`) and kills the
    /// daemon in the middle: at its test pause (`pause`) or after a random
    /// delay. After a restart the tree must be exactly one of the two
    /// states, as the turn table says.
    pub(super) fn kill_during(
        &mut self,
        args: Vec<String>,
        e: rules::Expect,
        redo: bool,
        pause: bool,
    ) -> anyhow::Result<()> {
        let what = args[1..].join(" ");
        // The daemon's own plan, so that a tree it recovers to can be told
        // apart from a plan that differs from the contract.
        let mut dry_args = args.clone();
        dry_args.push("--dry-run".into());
        let own_plan: Option<RewindReply> = self.call(&dry_args)?.parse().ok();
        let newest_before = self.newest_applied_rewind()?;
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
        // A redo of a `--path` rewind marks no turn (its turns stayed
        // live): the tree says, or, where both states are the same tree
        // (seed 3600271216153963617), the daemon's record of it.
        let recorded =
            || -> anyhow::Result<bool> { Ok(self.newest_applied_rewind()? > newest_before) };
        let done = match e.turns.first() {
            _ if e.result == self.proj.tree => recorded()?,
            _ if e.partial => disk == e.result,
            None => disk == e.result,
            Some(t) => {
                status(*t)
                    == Some(if redo {
                        TurnStatus::Closed
                    } else {
                        TurnStatus::Rewound
                    })
            }
        };
        // Did the request get as far as journaling? Then it ended the open
        // turn and opened the one that continues it, in one transaction.
        let mut continued = None;
        if let Some((id, _)) = &self.open {
            if status(*id) != Some(TurnStatus::Open) {
                self.close_open();
                let open = log.turns.iter().filter(|t| t.status == TurnStatus::Open);
                continued = open.map(|t| t.id).max();
                if continued.is_none() {
                    return mismatch(format!(
                        "{what} killed mid-way: it ended the open turn and none continues it"
                    ));
                }
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
        if let Some(new) = continued {
            self.note(format!("  the open turn continues as turn {new}"));
            self.open_turn(new);
        }
        Ok(())
    }
}
