//! `ckptctl run --bursts SECS`: while the command runs, a background thread
//! polls the daemon's `Activity` and, once the tree has seen a change since
//! the open turn started and then none for SECS, closes that turn and opens
//! the next. The command itself is never touched: it keeps the terminal.
//!
//! Always true: while the command runs, at most one turn of ours is open,
//! and a burst's turn is closed by turn-end (a barrier) before the next one
//! opens, so every change before the close lands in the closed turn. (A
//! change made in the few milliseconds between that turn-end and the next
//! turn-start belongs to no turn, as between any two turns.)

use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use anyhow::anyhow;
use ckpt_proto::{ActivityReply, ErrorKind, Request, TurnEnded};

use super::super::turn_requests as turn;
use super::super::Ctx;
use crate::cli::TurnMeta;
use crate::client::{Client, DaemonError};

/// The longest pause between two polls.
const MAX_POLL: Duration = Duration::from_millis(250);

/// How often to poll for a quiet time of `quiet`: a quarter of it, at most
/// [`MAX_POLL`], so a burst ends at most a quarter late.
pub fn poll_interval(quiet: Duration) -> Duration {
    (quiet / 4).clamp(Duration::from_millis(1), MAX_POLL)
}

/// Whether the open turn's burst is over: the daemon captured a change
/// after the turn opened (`opened_ns`), and neither a change nor queued
/// events (`busy_ns`, the last poll that saw some) for `quiet_ns` since.
/// All times are unix ns.
pub fn burst_over(
    opened_ns: i64,
    last_change_ns: Option<i64>,
    busy_ns: Option<i64>,
    now_ns: i64,
    quiet_ns: i64,
) -> bool {
    let Some(changed) = last_change_ns.filter(|&t| t > opened_ns) else {
        return false;
    };
    let latest = busy_ns.map_or(changed, |b| b.max(changed));
    now_ns.saturating_sub(latest) >= quiet_ns
}

pub use ckpt_types::now_ns;

/// One `Activity` request; an older daemon's refusal becomes advice. Not
/// warned about when degraded: it is polled, and the turns' own replies
/// warn.
pub fn activity(ctx: &Ctx, client: &mut Option<Client>) -> anyhow::Result<ActivityReply> {
    let c = match client {
        Some(c) => c,
        None => client.insert(ctx.connect()?),
    };
    let reply = c.reply(&Request::Activity {
        dir: ctx.wire_dir(),
    });
    match reply {
        Ok(a) => Ok(a),
        Err(e) => {
            *client = None;
            match e.downcast_ref::<DaemonError>() {
                Some(d) if d.kind == ErrorKind::BadFrame => Err(anyhow!(
                    "ckptd is too old for --bursts (it does not know the Activity request); \
                     restart it with this version's ckptd"
                )),
                _ => Err(e),
            }
        }
    }
}

/// The bursts of one `ckptctl run`.
pub struct Watch<'a> {
    pub ctx: &'a Ctx,
    /// Who opens the turns; its label is the first turn's.
    pub meta: TurnMeta,
    pub quiet: Duration,
    /// The first turn, open, and when it opened.
    pub turn: i64,
    pub opened_ns: i64,
}

impl Watch<'_> {
    /// Runs `wait` (the command) while a background thread splits the turn
    /// into bursts; returns what `wait` returned and the turns the thread closed, oldest
    /// first (the last turn is still open).
    pub fn around<T>(self, wait: impl FnOnce() -> T) -> (T, Vec<TurnEnded>) {
        let (stop_tx, stop_rx) = mpsc::channel::<()>();
        std::thread::scope(|s| {
            let poller = s.spawn(move || self.poll(&stop_rx));
            let out = wait();
            drop(stop_tx);
            let closed = poller.join().unwrap_or_else(|_| {
                eprintln!(
                    "ckptctl: the --bursts thread failed; the turns it closed are not listed"
                );
                Vec::new()
            });
            (out, closed)
        })
    }

    fn poll(self, stop: &mpsc::Receiver<()>) -> Vec<TurnEnded> {
        let mut closed = Vec::new();
        if let Err(e) = self.poll_into(stop, &mut closed) {
            eprintln!("ckptctl: no more bursts: {e:#}");
        }
        closed
    }

    fn poll_into(
        &self,
        stop: &mpsc::Receiver<()>,
        closed: &mut Vec<TurnEnded>,
    ) -> anyhow::Result<()> {
        let interval = poll_interval(self.quiet);
        let quiet_ns = i64::try_from(self.quiet.as_nanos()).unwrap_or(i64::MAX);
        let say = !self.ctx.g.quiet && !self.ctx.g.json;
        let base = self.meta.label.clone().unwrap_or_default();
        let mut turn = self.turn;
        let mut opened_ns = self.opened_ns;
        let mut busy_ns = None;
        let mut client = None;
        loop {
            match stop.recv_timeout(interval) {
                Err(RecvTimeoutError::Timeout) => {}
                Ok(()) | Err(RecvTimeoutError::Disconnected) => return Ok(()),
            }
            let a = activity(self.ctx, &mut client)?;
            if a.open_turn != Some(turn) {
                // Another turn-start or turn-end took over: theirs to close.
                anyhow::bail!("turn {turn} was closed by someone else");
            }
            if a.queued > 0 {
                busy_ns = Some(a.now_ns);
            }
            if !burst_over(opened_ns, a.last_change_ns, busy_ns, a.now_ns, quiet_ns) {
                continue;
            }
            let list = crate::output::to_list(self.ctx.g.json, true, false);
            let ended = turn::end(self.ctx, self.meta.session.clone(), None, list)?;
            if ended.left_open {
                anyhow::bail!("turn {turn} belongs to another session now");
            }
            let counts = crate::output::counts_long(&ended.turn.info.counts);
            closed.push(ended);
            let mut meta = self.meta.clone();
            meta.label = Some(format!("{base} (burst {})", closed.len() + 1));
            let started = turn::start(self.ctx, meta, None)?;
            opened_ns = now_ns();
            busy_ns = None;
            if say {
                eprintln!(
                    "ckptctl: turn {turn} closed: {counts}; turn {} started",
                    started.turn
                );
            }
            turn = started.turn;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;

    #[test]
    fn a_burst_ends_only_after_a_change_and_a_quiet_time() {
        let q = 2 * S;
        // Nothing changed since the turn opened, however long ago.
        assert!(!burst_over(10 * S, None, None, 100 * S, q));
        assert!(!burst_over(10 * S, Some(9 * S), None, 100 * S, q));
        // A change, then not yet quiet long enough.
        assert!(!burst_over(10 * S, Some(11 * S), None, 12 * S, q));
        assert!(burst_over(10 * S, Some(11 * S), None, 13 * S, q));
        assert!(burst_over(10 * S, Some(11 * S), None, 20 * S, q));
    }

    #[test]
    fn queued_events_keep_a_burst_going() {
        let q = 2 * S;
        assert!(!burst_over(10 * S, Some(11 * S), Some(12 * S), 13 * S, q));
        assert!(burst_over(10 * S, Some(11 * S), Some(12 * S), 14 * S, q));
        // Queued events alone are not a change.
        assert!(!burst_over(10 * S, None, Some(11 * S), 20 * S, q));
    }

    #[test]
    fn polls_come_at_a_quarter_of_the_quiet_time_at_most_every_250_ms() {
        assert_eq!(
            poll_interval(Duration::from_millis(500)),
            Duration::from_millis(125)
        );
        assert_eq!(poll_interval(Duration::from_secs(10)), MAX_POLL);
    }
}
