//! `ckptctl log [-n N] [--session S]`: turns, newest first.

use ckpt_proto::{LogReply, Request};
use clap::Args;

use super::Ctx;
use crate::cli::LOG_LIMIT;
use crate::output;

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
}

pub fn run(ctx: &Ctx, args: LogArgs) -> anyhow::Result<u8> {
    // `None` lists every turn.
    let limit = (!args.all).then_some(args.limit as usize);
    let session = args.session;
    let shown = limit.unwrap_or(ALL);
    // One more than shown tells whether older turns were left out.
    let mut l = query(ctx, shown.saturating_add(1), session.clone())?;
    let more = l.turns.len() > shown;
    l.turns.truncate(shown);
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
