//! Several sessions with turns open at once: interleaved edits (a change
//! seen while several turns are open is recorded in each of them, shared),
//! tool windows (a change while exactly one session runs a tool is that
//! session's alone), then a session-scoped rewind (`rewind N` or
//! `rewind --last --session S`) judged by the model.
//!
//! The default session's open turn is ended first, so the rest of the
//! sequence again has at most its one open turn.

use std::collections::{BTreeMap, BTreeSet};

use ckpt_proto::{LogReply, TurnEnded, TurnStarted, TurnStatus};

use super::check::entry_diffs;
use super::{mismatch, Seq};
use crate::ops;
use crate::rules::{self, Change, Turn};
use crate::tree::Node;

/// The sessions an episode draws from (reused across episodes, so a
/// session has turns from several of them).
const SESSIONS: &[&str] = &["s1", "s2", "s3"];

/// One session's open turn in an episode.
struct OpenTurn {
    session: &'static str,
    id: i64,
    started: u64,
    /// Every path a change attributed to this turn touched: (state before
    /// its first change, state after its last; the recorded post-image is
    /// the state at the turn's end).
    entries: BTreeMap<Vec<u8>, Change>,
    /// Paths changed while other sessions' turns were open too (and no
    /// tool call ran): recorded as shared.
    shared: BTreeSet<Vec<u8>>,
    /// Paths such a run of edits changed and put back: the daemon may or
    /// may not have seen the passing state, so either mark is right.
    maybe_shared: BTreeSet<Vec<u8>>,
    /// Paths whose entry came from the edits since the last sync.
    fresh: BTreeSet<Vec<u8>>,
    /// Paths whose first change the edits since a sync put back before it:
    /// the daemon may not have seen it, so its entry may start here (the
    /// state put back) or at the turn's next change of the path.
    unseen: BTreeMap<Vec<u8>, Option<Node>>,
}

/// An episode's state: the open turns and whose tool call runs.
struct Episode {
    open: Vec<OpenTurn>,
    /// Index into `open` of the one session running a tool.
    tool: Option<usize>,
    /// Sessions not started yet this episode.
    waiting: Vec<&'static str>,
    /// The shared run of edits since the last step that synced with the
    /// daemon: each path it touched, with its state before the run.
    run: BTreeMap<Vec<u8>, Option<Node>>,
}

impl Seq<'_> {
    pub(super) fn sessions_step(&mut self) -> anyhow::Result<()> {
        if self.open.is_some() {
            self.turn_end()?;
        }
        let k = self.rng.range(2, 3);
        let mut ep = Episode {
            open: Vec::new(),
            tool: None,
            waiting: SESSIONS[..k].to_vec(),
            run: BTreeMap::new(),
        };
        self.stats.sessions += 1;
        for _ in 0..self.rng.range(6, 16) {
            // start, edit, end, tool-start, tool-end, kill
            let w = [
                if ep.waiting.is_empty() { 0 } else { 30 },
                40,
                if ep.open.is_empty() { 0 } else { 8 },
                if ep.tool.is_none() && !ep.open.is_empty() {
                    12
                } else {
                    0
                },
                if ep.tool.is_some() { 10 } else { 0 },
                // A tool window open across the kill must survive it.
                if ep.open.len() >= 2 { 6 } else { 0 },
            ];
            let step = self.rng.weighted(&w);
            if step != 1 {
                self.end_shared_run(&mut ep);
            }
            match step {
                0 => self.session_start(&mut ep)?,
                1 => self.session_edit(&mut ep)?,
                2 => {
                    let i = self.rng.below(ep.open.len());
                    self.session_end(&mut ep, i)?;
                }
                3 => {
                    let i = self.rng.below(ep.open.len());
                    self.tool_call(&mut ep, Some(i))?;
                }
                4 => self.tool_call(&mut ep, None)?,
                _ => self.kill_with_sessions_open(&ep)?,
            }
        }
        self.end_shared_run(&mut ep);
        if ep.tool.is_some() {
            self.tool_call(&mut ep, None)?;
        }
        while !ep.open.is_empty() {
            let i = self.rng.below(ep.open.len());
            self.session_end(&mut ep, i)?;
        }
        if self.rng.chance(75) {
            self.session_rewind()?;
        }
        Ok(())
    }

    /// SIGKILL with several sessions' turns open (a tool call maybe
    /// running) and restart: every turn is still open, and what they
    /// record at their ends is still the model's.
    fn kill_with_sessions_open(&mut self, ep: &Episode) -> anyhow::Result<()> {
        self.world.kill()?;
        self.stats.kills += 1;
        self.world.start(&[])?;
        self.note(format!(
            "KILL -9 the daemon with turns {:?} open, restart",
            ep.open.iter().map(|o| o.id).collect::<Vec<_>>()
        ));
        let l = self.world.ctl(&["--json", "log", "-n", "100000"])?;
        let log: LogReply = l.parse()?;
        for o in &ep.open {
            let st = log.turns.iter().find(|t| t.id == o.id).map(|t| t.status);
            if st != Some(TurnStatus::Open) {
                return mismatch(format!(
                    "after a restart session {}'s turn {} is {st:?}, not open",
                    o.session, o.id
                ));
            }
        }
        Ok(())
    }

    /// Ends the run of edits (the next step syncs with the daemon): a path
    /// it left changed was seen changed, so it is shared in every open turn
    /// if the run was shared; one it put back may have changed too briefly
    /// to be seen, and so may a turn's entry for it that the run began.
    fn end_shared_run(&self, ep: &mut Episode) {
        for o in &mut ep.open {
            for p in std::mem::take(&mut o.fresh) {
                let now = self.proj.tree.get(&p).cloned();
                if o.entries.get(&p).is_some_and(|(pre, _)| *pre == now) {
                    o.entries.remove(&p);
                    o.unseen.entry(p).or_insert(now);
                }
            }
        }
        for (p, before) in std::mem::take(&mut ep.run) {
            let changed = self.proj.tree.get(&p) != before.as_ref();
            for o in &mut ep.open {
                if changed {
                    o.shared.insert(p.clone());
                } else {
                    o.maybe_shared.insert(p.clone());
                }
            }
        }
    }

    fn session_start(&mut self, ep: &mut Episode) -> anyhow::Result<()> {
        let s = ep.waiting.remove(self.rng.below(ep.waiting.len()));
        let c = self.world.ctl(&["--json", "turn-start", "--session", s])?;
        if c.code != Some(0) {
            return mismatch(format!("turn-start --session {s} failed: {}", c.describe()));
        }
        let t: TurnStarted = c.parse()?;
        if t.closed_turn.is_some() {
            return mismatch(format!(
                "session {s}'s turn-start closed turn {:?}, none of its own was open",
                t.closed_turn
            ));
        }
        self.note(format!("turn-start --session {s} -> turn {}", t.turn));
        let started = self.tick();
        ep.open.push(OpenTurn {
            session: s,
            id: t.turn,
            started,
            entries: BTreeMap::new(),
            shared: BTreeSet::new(),
            maybe_shared: BTreeSet::new(),
            fresh: BTreeSet::new(),
            unseen: BTreeMap::new(),
        });
        self.stats.turns += 1;
        Ok(())
    }

    /// Edits, each attributed to the tool's session alone, or to every
    /// open turn.
    fn session_edit(&mut self, ep: &mut Episode) -> anyhow::Result<()> {
        for _ in 0..self.rng.range(1, 3) {
            let before = self.proj.tree.clone();
            let Some(line) = ops::random_edit(&mut self.proj, &mut self.rng)? else {
                continue;
            };
            let who = match ep.tool {
                Some(i) => format!("{} (tool)", ep.open[i].session),
                None if ep.open.is_empty() => "user".into(),
                None => ep
                    .open
                    .iter()
                    .map(|o| o.session)
                    .collect::<Vec<_>>()
                    .join("+"),
            };
            self.note(format!("{who}: {line}"));
            let changes = rules::touched(&before, &self.proj.tree);
            let passed = std::mem::take(&mut self.proj.transient);
            if ep.tool.is_none() && ep.open.len() >= 2 {
                for p in changes.keys().chain(&passed) {
                    ep.run.entry(p.clone()).or_insert(before.get(p).cloned());
                }
            }
            // A path made and removed may have an entry the model cannot
            // know of (its turns' `unseen`).
            for (i, o) in ep.open.iter_mut().enumerate() {
                if ep.tool.is_some_and(|t| t != i) {
                    continue;
                }
                for p in &passed {
                    if !o.entries.contains_key(p) {
                        o.unseen.entry(p.clone()).or_insert(before.get(p).cloned());
                    }
                }
            }
            for (i, o) in ep.open.iter_mut().enumerate() {
                if ep.tool.is_some_and(|t| t != i) {
                    continue;
                }
                for (p, (pre, post)) in &changes {
                    o.entries
                        .entry(p.clone())
                        .and_modify(|e| e.1 = post.clone())
                        .or_insert_with(|| {
                            o.fresh.insert(p.clone());
                            (pre.clone(), post.clone())
                        });
                }
            }
        }
        Ok(())
    }

    /// `tool-start` for open turn `start`'s session, or `tool-end` of the
    /// running tool call.
    fn tool_call(&mut self, ep: &mut Episode, start: Option<usize>) -> anyhow::Result<()> {
        let (cmd, i) = match (start, ep.tool) {
            (Some(i), _) => ("tool-start", i),
            (None, Some(i)) => ("tool-end", i),
            (None, None) => return Ok(()),
        };
        let s = ep.open[i].session;
        let c = self.world.ctl(&["--json", cmd, "--session", s])?;
        self.note(format!("{cmd} --session {s} -> exit {:?}", c.code));
        if c.code != Some(0) {
            return mismatch(format!("{cmd} --session {s} failed: {}", c.describe()));
        }
        ep.tool = start;
        self.stats.tools += u64::from(start.is_some());
        Ok(())
    }

    /// `turn-end --session S` of open turn `i`: its entries must be the
    /// model's exactly.
    fn session_end(&mut self, ep: &mut Episode, i: usize) -> anyhow::Result<()> {
        if ep.tool == Some(i) {
            self.tool_call(ep, None)?;
        }
        let o = ep.open.remove(i);
        ep.tool = ep.tool.map(|t| if t > i { t - 1 } else { t });
        let c = self
            .world
            .ctl(&["--json", "turn-end", "--session", o.session])?;
        if c.code != Some(0) {
            return mismatch(format!(
                "turn-end --session {} failed: {}",
                o.session,
                c.describe()
            ));
        }
        let ended: TurnEnded = c.parse()?;
        self.note(format!(
            "turn-end --session {} (turn {}: {} paths)",
            o.session,
            o.id,
            ended.turn.entries.len()
        ));
        if ended.left_open || ended.turn.info.id != o.id {
            return mismatch(format!(
                "turn-end --session {} closed turn {} (left open: {}), not {}",
                o.session, ended.turn.info.id, ended.left_open, o.id
            ));
        }
        // A turn's post-image is the path's state when it ends, whoever
        // changed it last. Where the daemon saw a first change the model
        // cannot be sure it saw, its entry starts there.
        let mut entries = o.entries;
        for (p, pre) in o.unseen {
            let seen = ended.turn.entries.iter().any(|e| {
                e.path.as_bytes() == p.as_slice() && e.pre == Node::to_state(pre.as_ref())
            });
            if seen {
                entries.insert(p, (pre, None));
            }
        }
        let touched: BTreeMap<Vec<u8>, Change> = entries
            .into_iter()
            .map(|(p, (pre, _))| {
                let now = self.proj.tree.get(&p).cloned();
                (p, (pre, now))
            })
            .filter(|(_, (a, b))| a != b)
            .collect();
        let shared_diffs: Vec<String> = ended
            .turn
            .entries
            .iter()
            .filter(|e| touched.contains_key(e.path.as_bytes()))
            .filter(|e| e.shared != o.shared.contains(e.path.as_bytes()))
            .filter(|e| {
                o.shared.contains(e.path.as_bytes()) || !o.maybe_shared.contains(e.path.as_bytes())
            })
            .map(|e| {
                format!(
                    "{}: shared {}, the model says {}",
                    e.path, e.shared, !e.shared
                )
            })
            .collect();
        if !shared_diffs.is_empty() {
            return mismatch(format!(
                "capture: session {}'s turn {}'s shared marks differ from the model's:\n  {}",
                o.session,
                o.id,
                shared_diffs.join("\n  ")
            ));
        }
        let diffs = entry_diffs(&touched, ended.body.turn.entries);
        if !diffs.is_empty() {
            return mismatch(format!(
                "capture: session {}'s turn {}'s recorded changes differ from the model's:\n  {}",
                o.session,
                o.id,
                diffs.join("\n  ")
            ));
        }
        let ended = self.tick();
        self.turns.push(Turn {
            id: o.id,
            live: true,
            touched,
            session: Some(o.session.into()),
            started: o.started,
            ended,
        });
        Ok(())
    }

    /// `rewind --last --session S` or `rewind N` of a session's live turn:
    /// only that session's turns from N on are undone; a path another
    /// session's turn changed during or after them is a conflict.
    fn session_rewind(&mut self) -> anyhow::Result<()> {
        let s = SESSIONS[self.rng.below(SESSIONS.len())];
        let live: Vec<i64> = self
            .turns
            .iter()
            .filter(|t| t.live && t.session.as_deref() == Some(s))
            .map(|t| t.id)
            .collect();
        let Some(&last) = live.last() else {
            return Ok(());
        };
        self.check_model(&format!("a rewind of session {s}"))?;
        let last_flag = self.rng.chance(50);
        let n = if last_flag {
            last
        } else {
            live[self.rng.below(live.len())]
        };
        let force = self.rng.chance(20);
        let mut args = vec!["--json".to_string(), "rewind".into()];
        if last_flag {
            args.extend(["--last".into(), "--session".into(), s.into()]);
        } else {
            args.push(n.to_string());
        }
        if force {
            args.push("--force".into());
        }
        let e = rules::rewind(&self.proj.tree, &self.planned_turns(), n, force);
        let what = format!("{} (turn {n} of session {s})", args[1..].join(" "));
        let c = self.call(&args)?;
        self.stats.rewinds += 1;
        self.judge(&what, &c, &e, false, false)?;
        if e.refused && self.rng.chance(60) {
            self.forced_rewind(n, "")?;
        }
        Ok(())
    }
}
