//! `ckptctl log [-n N] [--session S]`: turns, newest first.

use ckpt_proto::{LogReply, Request, Response};

use super::{unexpected, Ctx};
use crate::output;

/// The newest `limit` turns (of `session`, if given): the document
/// `--json` prints.
pub fn query(ctx: &Ctx, limit: usize, session: Option<String>) -> anyhow::Result<LogReply> {
    match ctx.request(&Request::Log {
        dir: ctx.wire_dir(),
        limit: Some(limit),
        session,
    })? {
        Response::Log(l) => Ok(l),
        other => Err(unexpected(other)),
    }
}

pub fn run(ctx: &Ctx, limit: usize, session: Option<String>) -> anyhow::Result<u8> {
    let l = query(ctx, limit, session)?;
    output::warn_degraded(&l.project, &l.degraded);
    if ctx.g.json {
        output::json(&l)?;
        return Ok(0);
    }
    if l.turns.is_empty() {
        println!("no turns yet in {}", l.project);
        return Ok(0);
    }
    println!(
        "{:>5}  {:<19}  {:<7}  {:<16}  LABEL",
        "TURN", "STARTED", "STATE", "CHANGES"
    );
    for t in &l.turns {
        let label = t.label.as_deref().unwrap_or("").replace('\n', " ");
        let label: String = label.chars().take(60).collect();
        println!(
            "{:>5}  {:<19}  {:<7}  {:<16}  {}",
            t.id,
            output::time(t.started_ns),
            output::status(t.status),
            output::counts(&t.counts),
            label
        );
    }
    Ok(0)
}
