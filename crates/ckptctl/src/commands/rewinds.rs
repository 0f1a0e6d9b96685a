//! `ckptctl rewinds [-n N | --all]`: past rewinds and redos, newest first.

use ckpt_proto::{Request, RewindRecord, RewindState, RewindsReply};
use clap::Args;

use super::Ctx;
use crate::cli::LOG_LIMIT;
use crate::output;

/// The newest `limit` rewinds and redos (every one for `None`): the
/// document `--json` prints.
pub fn query(ctx: &Ctx, limit: Option<usize>) -> anyhow::Result<RewindsReply> {
    ctx.reply(&Request::Rewinds {
        dir: ctx.wire_dir(),
        limit,
    })
}

/// `ckptctl rewinds`' arguments.
#[derive(Args, Debug)]
pub struct RewindsArgs {
    /// How many to list (1 or more).
    #[arg(short = 'n', long, default_value_t = LOG_LIMIT,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub limit: u32,
    /// Every one the store keeps.
    #[arg(long, conflicts_with = "limit")]
    pub all: bool,
}

pub fn run(ctx: &Ctx, args: RewindsArgs) -> anyhow::Result<u8> {
    let limit = (!args.all).then_some(args.limit as usize);
    // One more than shown tells whether older ones were left out.
    let mut r = query(ctx, limit.map(|n| n.saturating_add(1)))?;
    let more = limit.is_some_and(|n| r.rewinds.len() > n);
    if let Some(n) = limit {
        r.rewinds.truncate(n);
    }
    if ctx.g.json {
        output::json(&r)?;
        return Ok(0);
    }
    if r.rewinds.is_empty() {
        println!("no rewinds yet in {}", r.project);
        return Ok(0);
    }
    for rec in &r.rewinds {
        print_one(rec);
    }
    if more {
        println!(
            "(the newest {}; `ckptctl rewinds --all` shows more)",
            r.rewinds.len()
        );
    }
    Ok(0)
}

/// `#4  2026-12-02 11:00:00  rewind to before turn 2 (turns 2, 3)  partial  applied`,
/// then the paths it was limited to and those it left.
fn print_one(r: &RewindRecord) {
    let what = output::rewind_what(r, false);
    let whole = if r.partial() { "partial" } else { "whole" };
    let state = match r.state {
        RewindState::Pending => "pending",
        RewindState::Applied => "applied",
        RewindState::Failed => "failed, rolled back",
        RewindState::Redone => "redone",
        RewindState::Other => "?",
    };
    println!(
        "{:>4}  {}  {what}, {}  {whole}  {state}",
        r.id,
        output::time(r.created_ns),
        output::count(r.changed, "path"),
    );
    if !r.scope.is_empty() {
        let paths: Vec<String> = r.scope.iter().map(|p| p.quoted()).collect();
        println!("      only {}", paths.join(", "));
    }
    for s in &r.left {
        println!("      left {}  ({})", s.path.quoted(), s.reason);
    }
}
