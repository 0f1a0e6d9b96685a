//! Turns: opening and closing them, and listing them with what they
//! changed. Their rows are read and written through `history`.

use rusqlite::Connection;

use crate::db;
use crate::error::{Error, Result};
use crate::history;
use crate::model::{
    CaptureNote, Caveats, ContinuedTurn, Counts, Effect, PartialCapture, TurnDetail, TurnInfo,
    TurnMeta,
};
use ckpt_types::now_ns;
use ckpt_types::turn::conversation_of;
use detail::{Gaps, PartlyRewound};

mod detail;

// Capture asks for the open turn and records changes through these.
pub(crate) use history::{open_turn, record_change, set_post};

/// Ends each turn `continued` names (open turns a rewind or redo is about
/// to write across: a turn never spans one) and opens the turn that
/// continues it, with the same agent, session, label, transcript and
/// conversation: an agent that asked for the rewind in the middle of its
/// prompt goes on recording, and its turn-end closes the new turn. Call in
/// the transaction that journals the rewind.
pub(crate) fn continue_turns(tx: &Connection, continued: &mut [ContinuedTurn]) -> Result<()> {
    for c in continued {
        let meta = history::turn(tx, c.ended)?
            .ok_or(Error::UnknownTurn(c.ended))?
            .meta;
        let now = now_ns();
        // The session's running tool calls go on in the turn that continues.
        let tools = history::tool_calls(tx, c.ended)?;
        history::close_turn(tx, c.ended, now)?;
        let opened = history::insert_turn(tx, &meta, now)?;
        history::set_tool_calls(tx, opened, tools)?;
        c.opened = Some(opened);
    }
    Ok(())
}

/// Where a change seen now is recorded ([`Turns::recipients`]).
pub(crate) struct Recipients {
    /// The open turns it goes to.
    pub to: Vec<i64>,
    /// Whether it goes to several: which session made it is not known.
    pub shared: bool,
    /// The other open turns: an entry one has for the path still gets
    /// its state now, as post-image.
    pub others: Vec<i64>,
}

/// Turn operations over the project's database (see [`crate::Project`],
/// which names each).
pub(crate) struct Turns<'a> {
    pub(crate) conn: &'a Connection,
    /// The project's root, which the commands a turn ran are read against.
    pub(crate) root: &'a std::path::Path,
}

impl Turns<'_> {
    /// Opens a new turn for `meta.session`, closing that session's open
    /// turn first; other sessions' turns stay open. Call after a barrier.
    pub(crate) fn turn_start(&self, meta: TurnMeta) -> Result<i64> {
        Ok(self.turn_start_closing(meta)?.1)
    }

    /// [`Turns::turn_start`], also returning the turn it closed.
    pub(crate) fn turn_start_closing(&self, meta: TurnMeta) -> Result<(Option<i64>, i64)> {
        // One transaction: each statement on its own took and dropped
        // SQLite's locks (see `db::writing`).
        db::writing(self.conn, || {
            // A tool window a lost hook left open ends with its turn
            // (closing it clears the count).
            let closed = history::open_turn_of(self.conn, meta.session.as_deref())?;
            if let Some(open) = closed {
                history::close_turn(self.conn, open, now_ns())?;
            }
            Ok((closed, history::insert_turn(self.conn, &meta, now_ns())?))
        })
    }

    /// A tool call of `session` starts: until it ends, a change seen while
    /// only this session (of those with open turns) runs tools goes to its
    /// turn alone. Call after a barrier, so what changed before is not
    /// counted as the tool's. The count is kept on the session's open turn
    /// (it outlives a daemon restart and ends with the turn); returns the
    /// session's running tool calls, 0 when it has no open turn.
    pub(crate) fn tool_start(&self, session: Option<&str>) -> Result<u32> {
        Ok(history::add_tool_call(self.conn, session, 1)?.unwrap_or(0))
    }

    /// A tool call of `session` ended. Call after a barrier, so what the
    /// tool changed is captured inside its window. Returns the session's
    /// tool calls still running.
    pub(crate) fn tool_end(&self, session: Option<&str>) -> Result<u32> {
        Ok(history::add_tool_call(self.conn, session, -1)?.unwrap_or(0))
    }

    /// Records `command` (a tool call's shell command) on `session`'s open
    /// turn; false when it has none.
    pub(crate) fn tool_command(&self, session: Option<&str>, command: &str) -> Result<bool> {
        history::add_command(self.conn, session, command, now_ns())
    }

    /// Notes what went wrong with capture on every open turn.
    pub(crate) fn note_capture(&self, note: &CaptureNote) -> Result<usize> {
        match note {
            CaptureNote::Rescanned => history::note_capture(self.conn, history::RESCANNED, ""),
            CaptureNote::Gap(kind, detail) => {
                history::note_capture(self.conn, kind.as_str(), detail)
            }
        }
    }

    /// What a rewind of `turns` does not undo, and what it cannot restore.
    pub(crate) fn caveats(&self, turns: &[i64]) -> Result<Caveats> {
        let mut out = Caveats::default();
        for &turn in turns {
            let commands = history::commands(self.conn, turn)?;
            out.effects.extend(effects_of(turn, &commands, self.root));
            // Entry by entry: a rewound turn of 50,000 files held them all
            // for this, 9 MB of the rewind's peak.
            let mut gaps = Gaps::noted(self.conn, turn)?;
            history::each_entry(self.conn, turn, |e| {
                gaps.add(&e, &detail::post_of(self.conn, &e)?);
                Ok(())
            })?;
            let integrity = gaps.integrity();
            if integrity.is_partial() {
                out.partial_capture.push(PartialCapture {
                    turn,
                    gaps: integrity.gaps,
                });
            }
        }
        Ok(out)
    }

    /// The open turns a change seen now goes to, and whether it is shared.
    /// Every open turn, unless tool calls are running: then the open turns
    /// of the sessions running them.
    pub(crate) fn recipients(&self) -> Result<Recipients> {
        let open = history::open_turns_running_tools(self.conn)?;
        let any_running = open.iter().any(|&(_, running)| running);
        let (mut to, mut others) = (Vec::new(), Vec::new());
        for (turn, running) in open {
            if running || !any_running {
                to.push(turn);
            } else {
                others.push(turn);
            }
        }
        to.sort_unstable();
        others.sort_unstable();
        let shared = to.len() > 1;
        Ok(Recipients { to, shared, others })
    }

    /// Closes the open turn of the default session, or else the only open
    /// turn: [`Turns::turn_end_of`] without a session.
    pub(crate) fn turn_end(&self) -> Result<TurnDetail> {
        self.turn_end_of(None, None, None)
    }

    /// Closes the open turn of `session` (`None`: the default session, or
    /// else the only open turn), recording each touched path's post-image
    /// (its state now), and keeps `transcript` on it unless it has one
    /// (some agents name their transcript only when the turn ends). Paths
    /// that ended as they began are dropped. Returns the turn with its
    /// first `list` entries ([`Turns::show_listing`]). Call after a barrier.
    pub(crate) fn turn_end_of(
        &self,
        session: Option<&str>,
        transcript: Option<&str>,
        list: Option<u64>,
    ) -> Result<TurnDetail> {
        // One transaction, the listing read in it (see `db::writing`).
        db::writing(self.conn, || {
            // Closing the turn ends its session's tool windows.
            let (turn, _) = self.open_for(session)?.ok_or(Error::NoOpenTurn)?;
            if let Some(t) = transcript {
                history::note_transcript(self.conn, turn, t)?;
            }
            history::close_turn(self.conn, turn, now_ns())?;
            self.listing(turn, list)
        })
    }

    /// The turn `turn_end_of(session)` would close, with its session.
    fn open_for(&self, session: Option<&str>) -> Result<Option<(i64, Option<String>)>> {
        let mut open = history::open_turns(self.conn)?;
        Ok(
            match open.iter().position(|(_, s)| s.as_deref() == session) {
                Some(i) => Some(open.swap_remove(i)),
                None if session.is_none() && open.len() == 1 => open.pop(),
                None => None,
            },
        )
    }

    /// Closes every open turn (when a project is no longer watched).
    pub(crate) fn close_open_turns(&self) -> Result<()> {
        db::writing(self.conn, || {
            for (turn, _) in history::open_turns(self.conn)? {
                history::close_turn(self.conn, turn, now_ns())?;
            }
            Ok(())
        })
    }

    /// The newest open turn, of any session.
    pub(crate) fn open_turn(&self) -> Result<Option<i64>> {
        open_turn(self.conn)
    }

    /// The open turn of `session` (`None`: the default session).
    pub(crate) fn open_turn_of(&self, session: Option<&str>) -> Result<Option<i64>> {
        history::open_turn_of(self.conn, session)
    }

    /// Who opened `turn` (label, agent, session), without reading its entries.
    pub(crate) fn turn_meta(&self, turn: i64) -> Result<TurnMeta> {
        Ok(history::turn(self.conn, turn)?
            .ok_or(Error::UnknownTurn(turn))?
            .meta)
    }

    /// Turns, newest first.
    pub(crate) fn log(&self, limit: usize) -> Result<Vec<TurnInfo>> {
        self.log_of(limit, None)
    }

    /// Turns, newest first; with `session`, only that session's.
    pub(crate) fn log_of(&self, limit: usize, session: Option<&str>) -> Result<Vec<TurnInfo>> {
        db::reading(self.conn, || {
            let ids = history::newest_turns(self.conn, limit, session)?;
            // No entries: a log line is the turn's counts.
            ids.into_iter()
                .map(|id| Ok(self.listing(id, Some(0))?.info))
                .collect()
        })
    }

    /// A turn with its entries. While the turn is open, `post` is `None` and
    /// the counts compare with the current state.
    pub(crate) fn show(&self, turn: i64) -> Result<TurnDetail> {
        self.show_listing(turn, None)
    }

    /// A turn with its first `list` entries (all with `None`), in path
    /// order; when that leaves some out, `total_entries` counts them all.
    /// The counts, gaps and partial rewinds are of every entry, read one
    /// at a time: a hook lists none of a 50,000-file turn and holds none.
    pub(crate) fn show_listing(&self, turn: i64, list: Option<u64>) -> Result<TurnDetail> {
        db::reading(self.conn, || self.listing(turn, list))
    }

    /// [`Turns::show_listing`] in the caller's transaction.
    fn listing(&self, turn: i64, list: Option<u64>) -> Result<TurnDetail> {
        let row = history::turn(self.conn, turn)?.ok_or(Error::UnknownTurn(turn))?;
        let mut counts = Counts::default();
        let mut gaps = Gaps::noted(self.conn, turn)?;
        let mut partial = PartlyRewound::of(self.conn, turn, row.status)?;
        let mut entries = Vec::new();
        let mut total = 0u64;
        history::each_entry(self.conn, turn, |e| {
            let post = detail::post_of(self.conn, &e)?;
            detail::count(&mut counts, &e.pre, &post);
            gaps.add(&e, &post);
            partial.add(&e.path);
            total += 1;
            if list.is_none_or(|list| total <= list) {
                entries.push(e);
            }
            Ok(())
        })?;
        let commands = history::commands(self.conn, turn)?;
        let effects = effects_of(turn, &commands, self.root);
        Ok(TurnDetail {
            info: TurnInfo {
                id: turn,
                started_ns: row.started_ns,
                ended_ns: row.ended_ns,
                label: row.meta.label,
                agent: row.meta.agent,
                session: row.meta.session,
                transcript: row.meta.transcript,
                status: row.status,
                counts,
                ledger_entries: crate::ledger::count_for_turn(self.conn, turn)?,
                conversation: row.meta.conversation.as_deref().map(conversation_of),
                partial: partial.finish(),
                integrity: gaps.integrity(),
                effects,
            },
            total_entries: (total > entries.len() as u64).then_some(total),
            entries,
            commands,
        })
    }
}

/// The commands' effects outside the tree, in the order they ran.
fn effects_of(turn: i64, commands: &[String], root: &std::path::Path) -> Vec<Effect> {
    commands
        .iter()
        .flat_map(|c| {
            crate::effects::classify(c, root)
                .into_iter()
                .map(move |r| Effect {
                    turn,
                    command: c.clone(),
                    category: r.category,
                    rule: r.name.to_string(),
                    reason: r.reason.to_string(),
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use super::*;

    /// A turn boundary is one transaction: its statements on their own
    /// took and dropped SQLite's locks each, and a turn-start that closed
    /// the session's turn could stop between the close and the open.
    #[test]
    fn each_turn_boundary_commits_once() {
        let (_t, root, mut p) = crate::project::tests::reconciled(&[("f", "1")]);
        let commits = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&commits);
        p.conn.commit_hook(Some(move || {
            counted.fetch_add(1, Ordering::Relaxed);
            false
        }));
        let meta = TurnMeta {
            session: Some("s".into()),
            ..TurnMeta::default()
        };
        let first = p.turn_start(meta.clone()).unwrap();
        assert_eq!(commits.swap(0, Ordering::Relaxed), 1);
        // Closes the session's open turn and opens the next.
        let (closed, second) = p.turn_start_closing(meta).unwrap();
        assert_eq!(
            (closed, commits.swap(0, Ordering::Relaxed)),
            (Some(first), 1)
        );
        std::fs::write(root.join("f"), "2").unwrap();
        p.check_paths([crate::RelPath::new("f").unwrap()]).unwrap();
        commits.store(0, Ordering::Relaxed);
        let ended = p.turn_end_of(Some("s"), Some("t.jsonl"), None).unwrap();
        assert_eq!(commits.load(Ordering::Relaxed), 1);
        assert_eq!((ended.info.id, ended.entries.len()), (second, 1));
        assert_eq!(ended.info.transcript.as_deref(), Some("t.jsonl"));
        assert_eq!(ended.info.status, crate::model::TurnStatus::Closed);
    }
}
