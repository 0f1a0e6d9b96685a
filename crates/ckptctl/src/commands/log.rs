//! `ckptctl log [-n N] [--session S]`: turns, newest first.

use ckpt_proto::{LogReply, Request, Response};

use super::{unexpected, Ctx};
use crate::output;

/// The newest `limit` turns (of `session`, if given): the document
/// `--json` prints.
pub fn query(ctx: &Ctx, limit: usize, session: Option<String>) -> anyhow::Result<LogReply> {
    match ctx.request(&Request::Log(ckpt_proto::Log {
        dir: ctx.wire_dir(),
        limit: Some(limit),
        session,
    }))? {
        Response::Log(l) => Ok(l),
        other => Err(unexpected(other)),
    }
}

/// Every turn, for `--all` (the store keeps far fewer).
const ALL: usize = i64::MAX as usize;

/// `limit` `None` lists every turn.
pub fn run(ctx: &Ctx, limit: Option<usize>, session: Option<String>) -> anyhow::Result<u8> {
    let shown = limit.unwrap_or(ALL);
    // One more than shown tells whether older turns were left out.
    let mut l = query(ctx, shown.saturating_add(1), session.clone())?;
    let more = l.turns.len() > shown;
    l.turns.truncate(shown);
    output::warn_degraded(&l.project, &l.degraded);
    if ctx.g.json {
        output::json(&l)?;
        return Ok(0);
    }
    if l.turns.is_empty() {
        match &session {
            Some(s) => println!("no turns of session {s} in {}", l.project),
            None => println!("no turns yet in {}", l.project),
        }
        return Ok(0);
    }
    println!(
        "{:>5}  {:<19}  {:<14}  {:<12}  {:<16}  LABEL",
        "TURN", "STARTED", "STATE", "SESSION", "CHANGES"
    );
    for t in &l.turns {
        let label = t.label.as_deref().unwrap_or("").replace('\n', " ");
        let label: String = label.chars().take(60).collect();
        println!(
            "{:>5}  {:<19}  {:<14}  {:<12}  {:<16}  {}",
            t.id,
            output::time(t.started_ns),
            output::turn_state(t),
            output::session_of(t),
            output::counts(&t.counts),
            label
        );
    }
    if more {
        println!("(the newest {shown}; `ckptctl log -n N` or `--all` shows more)");
    }
    Ok(0)
}
