//! `ckptctl log [-n N] [--session S]`: turns, newest first.

use std::io::Write;

use ckpt_proto::{LogReply, Request, RewindRecord, RewindState, TurnInfo, TurnStatus};
use clap::Args;

use super::Ctx;
use crate::cli::LOG_LIMIT;
use crate::output;
use crate::term;

/// The newest `limit` turns (of `session`, if given): the document
/// `--json` prints.
pub fn query(ctx: &Ctx, limit: usize, session: Option<String>) -> anyhow::Result<LogReply> {
    ctx.reply(&Request::Log(ckpt_proto::Log {
        dir: ctx.wire_dir(),
        limit: Some(limit),
        session,
    }))
}

/// Every turn, for `--all` (the store keeps far fewer).
const ALL: usize = i64::MAX as usize;

/// `ckptctl log`'s arguments.
#[derive(Args, Debug)]
pub struct LogArgs {
    /// How many turns to list (1 or more).
    #[arg(short = 'n', long, default_value_t = LOG_LIMIT,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub limit: u32,
    /// Every turn (retention keeps the newest 100, up to 14 days old).
    #[arg(long, conflicts_with = "limit")]
    pub all: bool,
    /// Only this session's turns.
    #[arg(long)]
    pub session: Option<String>,
    /// Draw each session as a lane, as `git log --graph` draws branches.
    #[arg(long)]
    pub graph: bool,
    /// List each turn that changed nothing (consecutive ones are one line
    /// without it).
    #[arg(long)]
    pub empty: bool,
}

pub fn run(ctx: &Ctx, args: LogArgs) -> anyhow::Result<u8> {
    // `None` lists every turn.
    let limit = (!args.all).then_some(args.limit as usize);
    let session = args.session.clone();
    let shown = limit.unwrap_or(ALL);
    // One more than shown tells whether older turns were left out.
    let mut l = query(ctx, shown.saturating_add(1), session.clone())?;
    let more = l.turns.len() > shown;
    l.turns.truncate(shown);
    if ctx.g.json {
        output::json(&l)?;
        return Ok(0);
    }
    let mut out = ctx.paged();
    if l.turns.is_empty() {
        match &session {
            Some(s) => writeln!(out, "no turns of session {s} in {}", l.project)?,
            None => writeln!(out, "no turns yet in {}", l.project)?,
        }
        out.finish()?;
        return Ok(0);
    }
    // With older turns left out, only the rewinds since the oldest shown.
    let since = more.then(|| l.turns.last().map_or(i64::MIN, |t| t.started_ns));
    let fetch = |limit| Ok(super::rewinds::query(ctx, limit)?.body.rewinds);
    let rewinds = rewinds_since(fetch, since)?;
    let rows = rows(&l.turns, &rewinds, more, args.empty);
    let lanes = args.graph.then(|| Lanes::of(&rows));
    let graph = |i: usize| lanes.as_ref().map_or(String::new(), |g| g.at(&rows, i));
    writeln!(
        out,
        "{}{:>5}  {:<19}  {:>6}  {:<14}  {:<12}  {:<12}  {:<16}  LABEL",
        graph(usize::MAX),
        "TURN",
        "STARTED",
        "TOOK",
        "STATE",
        "AGENT",
        "SESSION",
        "CHANGES"
    )?;
    for (i, row) in rows.iter().enumerate() {
        match row {
            Row::Turn(t) => {
                let label = t.label.as_deref().unwrap_or("").replace('\n', " ");
                let label: String = label.chars().take(60).collect();
                let label = format!("{}{label}", output::marks(t));
                let took = t.ended_ns.map_or("-".to_string(), |e| {
                    output::duration(u64::try_from(e - t.started_ns).unwrap_or(0) / 1_000_000_000)
                });
                let agent: String = t.agent.as_deref().unwrap_or("-").chars().take(12).collect();
                let state = output::turn_state(t);
                let state_style = match t.status {
                    TurnStatus::Rewound => term::DIM,
                    TurnStatus::Open => term::ADDED,
                    TurnStatus::Closed => anstyle::Style::new(),
                };
                writeln!(
                    out,
                    "{}{}  {:<19}  {:>6}  {}  {:<12}  {:<12}  {:<16}  {}",
                    graph(i),
                    term::paint(term::TURN, format!("{:>5}", t.id)),
                    output::time(t.started_ns),
                    took,
                    term::paint(state_style, format!("{state:<14}")),
                    agent,
                    output::session_of(t),
                    output::counts(&t.counts),
                    label
                )?;
            }
            Row::Empty(run) => {
                let (newest, oldest) = (run[0], run[run.len() - 1]);
                writeln!(
                    out,
                    "{}{:>5}  {:<19}  {}",
                    graph(i),
                    format!("{}-{}", oldest.id, newest.id),
                    output::time(newest.started_ns),
                    term::paint(
                        term::DIM,
                        format!("{} turns without changes (`--empty` lists them)", run.len())
                    )
                )?;
            }
            Row::Rewind(r) => {
                writeln!(
                    out,
                    "{}{:>5}  {:<19}  {}",
                    graph(i),
                    "",
                    output::time(r.created_ns),
                    term::paint(term::CHANGED, rewind_line(r))
                )?;
            }
        }
    }
    if more {
        writeln!(
            out,
            "(the newest {shown}; `ckptctl log -n N` or `--all` shows more)"
        )?;
    }
    out.finish()?;
    Ok(0)
}

/// `rewind 3 to before turn 2 (turns 2, 3), 1 path`, as the history shows it.
fn rewind_line(r: &RewindRecord) -> String {
    let what = output::rewind_what(r, true);
    let partial = if r.partial() { ", partial" } else { "" };
    let state = match r.state {
        RewindState::Applied | RewindState::Redone => "",
        RewindState::Pending => ", pending",
        RewindState::Failed => ", failed and rolled back",
        RewindState::Other => ", ?",
    };
    format!(
        "{what}, {}{partial}{state}",
        output::count(r.changed, "path")
    )
}

/// One line of the history, newest first.
enum Row<'a> {
    Turn(&'a TurnInfo),
    /// Consecutive turns of one session that changed nothing, newest first.
    Empty(Vec<&'a TurnInfo>),
    Rewind(&'a RewindRecord),
}

impl Row<'_> {
    fn session(&self) -> Option<Option<&str>> {
        match self {
            Row::Turn(t) => Some(t.session.as_deref()),
            Row::Empty(run) => Some(run[0].session.as_deref()),
            Row::Rewind(_) => None,
        }
    }
}

/// The rewinds made at or after `since` (every one for `None`), newest
/// first and maybe some older, asked for in growing pages: the journal
/// keeps every rewind of the history (`log` read all 42,397 of one in
/// 157 ms, against 4 ms so).
fn rewinds_since(
    mut fetch: impl FnMut(Option<usize>) -> anyhow::Result<Vec<RewindRecord>>,
    since: Option<i64>,
) -> anyhow::Result<Vec<RewindRecord>> {
    let Some(since) = since else {
        return fetch(None);
    };
    let mut limit = 64;
    loop {
        let got = fetch(Some(limit))?;
        if got.len() < limit || got.last().is_some_and(|r| r.created_ns < since) {
            return Ok(got);
        }
        limit = limit.saturating_mul(4);
    }
}

/// The turns (newest first) with the rewinds and redos among them at their
/// time, and runs of empty turns folded into one row unless `empty`. With
/// older turns left out (`more`), only the rewinds since the oldest shown.
fn rows<'a>(
    turns: &'a [TurnInfo],
    rewinds: &'a [RewindRecord],
    more: bool,
    empty: bool,
) -> Vec<Row<'a>> {
    let oldest = turns.last().map_or(i64::MIN, |t| t.started_ns);
    let mut events: Vec<(i64, Row<'a>)> = turns
        .iter()
        .map(|t| (t.started_ns, Row::Turn(t)))
        .chain(
            rewinds
                .iter()
                .filter(|r| !more || r.created_ns >= oldest)
                // With --session, the rewinds of the turns listed.
                .filter(|r| r.turns.iter().any(|id| turns.iter().any(|t| t.id == *id)))
                .map(|r| (r.created_ns, Row::Rewind(r))),
        )
        .collect();
    // Newest first; a stable sort keeps the log's order among equals.
    events.sort_by_key(|(at, _)| std::cmp::Reverse(*at));
    let mut out: Vec<Row<'a>> = Vec::new();
    for (_, row) in events {
        let t = match row {
            Row::Turn(t) if !empty && t.is_empty() => t,
            other => {
                out.push(other);
                continue;
            }
        };
        match out.last_mut() {
            Some(Row::Empty(run)) if run[0].session == t.session => run.push(t),
            Some(Row::Turn(prev)) if prev.is_empty() && prev.session == t.session => {
                let prev = *prev;
                *out.last_mut().expect("just matched") = Row::Empty(vec![prev, t]);
            }
            _ => out.push(Row::Turn(t)),
        }
    }
    out
}

/// `--graph`: a lane per session, from its newest row to its oldest.
struct Lanes<'a> {
    /// Each lane's session and the rows it spans.
    lanes: Vec<(Option<&'a str>, usize, usize)>,
}

impl<'a> Lanes<'a> {
    fn of(rows: &'a [Row<'a>]) -> Lanes<'a> {
        let mut lanes: Vec<(Option<&'a str>, usize, usize)> = Vec::new();
        for (i, row) in rows.iter().enumerate() {
            let Some(session) = row.session() else {
                continue;
            };
            match lanes.iter_mut().find(|l| l.0 == session) {
                Some(l) => l.2 = i,
                None => lanes.push((session, i, i)),
            }
        }
        Lanes { lanes }
    }

    /// The graph column of row `i` (`usize::MAX`: the header's blank).
    fn at(&self, rows: &[Row<'_>], i: usize) -> String {
        let own = rows.get(i).and_then(Row::session);
        let mut s = String::new();
        for &(session, first, last) in &self.lanes {
            let c = if own == Some(session) {
                term::paint(term::TURN, "*")
            } else if i != usize::MAX && first < i && i < last {
                "|".to_string()
            } else {
                " ".to_string()
            };
            s.push_str(&c);
            s.push(' ');
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: i64) -> RewindRecord {
        RewindRecord {
            id,
            created_ns: id * 10,
            state: RewindState::Applied,
            turn: id,
            turns: vec![id],
            redoes: None,
            scope: Vec::new(),
            left: Vec::new(),
            changed: 1,
        }
    }

    /// The daemon's journal of `n` rewinds, newest first, and the limits
    /// asked of it.
    fn journal(n: i64) -> (Vec<RewindRecord>, Vec<Option<usize>>) {
        ((1..=n).rev().map(record).collect(), Vec::new())
    }

    #[test]
    fn log_asks_for_the_rewinds_since_its_oldest_turn_not_the_whole_journal() {
        for (n, since) in [
            (10_000, 9_990 * 10),
            (10_000, 9_900 * 10),
            (10_000, 0),
            (30, 5),
        ] {
            let (all, mut asked) = journal(n);
            let fetch = |limit: Option<usize>| {
                asked.push(limit);
                Ok(all
                    .iter()
                    .take(limit.unwrap_or(usize::MAX))
                    .cloned()
                    .collect())
            };
            let got = rewinds_since(fetch, Some(since)).unwrap();
            let wanted: Vec<i64> = all
                .iter()
                .filter(|r| r.created_ns >= since)
                .map(|r| r.id)
                .collect();
            let ids: Vec<i64> = got.iter().map(|r| r.id).collect();
            assert_eq!(&ids[..wanted.len()], &wanted[..], "every rewind since");
            assert!(
                got.len() <= (wanted.len() * 4).max(64) + 1,
                "{} for {}",
                got.len(),
                wanted.len()
            );
            assert!(asked.iter().all(Option::is_some), "{asked:?}");
        }
        let (all, _) = journal(100);
        let got = rewinds_since(|_| Ok(all.clone()), None).unwrap();
        assert_eq!(got.len(), 100, "every turn shown: every rewind");
    }
}
