//! `ckptctl show N`: the paths of one turn.

use ckpt_proto::{Request, ShowReply, TurnStatus};
use std::io::Write;

use clap::Args;

use super::Ctx;
use crate::cli::turn_id;
use crate::output;

/// One turn and its paths: the document `--json` prints. `list`: as
/// [`ckpt_proto::TurnEnd::list`].
pub fn query(ctx: &Ctx, turn: i64, list: Option<u64>) -> anyhow::Result<ShowReply> {
    ctx.reply(&Request::Show {
        dir: ctx.wire_dir(),
        turn,
        list,
    })
}

/// `ckptctl show`'s arguments.
#[derive(Args, Debug)]
pub struct ShowArgs {
    /// A turn id, as `ckptctl log` lists them.
    #[arg(value_parser = turn_id)]
    pub turn: i64,
    /// List every path (a long turn lists its first 10 and counts the rest).
    #[arg(short, long)]
    pub verbose: bool,
}

pub fn run(ctx: &Ctx, args: ShowArgs) -> anyhow::Result<u8> {
    let s = query(
        ctx,
        args.turn,
        output::to_list(ctx.g.json, false, args.verbose),
    )?;
    if ctx.g.json {
        output::json(&s)?;
        return Ok(0);
    }
    let mut out = ctx.paged();
    let i = &s.turn.info;
    let ended = i
        .ended_ns
        .map(|e| format!(", ended {}", output::time(e)))
        .unwrap_or_default();
    writeln!(
        out,
        "turn {} ({}), started {}{ended}",
        i.id,
        output::turn_state(i),
        output::time(i.started_ns)
    )?;
    if let Some(l) = &i.label {
        writeln!(out, "label:   {l}")?;
    }
    if let Some(a) = &i.agent {
        writeln!(out, "agent:   {a}")?;
    }
    if let Some(se) = &i.session {
        writeln!(out, "session: {se}")?;
    }
    if let Some(p) = &i.partial {
        output::partial(&mut out, p)?;
    }
    if let Some(t) = &i.transcript {
        writeln!(out, "transcript: {t}")?;
    }
    if let Some(c) = &i.conversation {
        writeln!(out, "conversation before the prompt: {c}")?;
    }
    output::integrity(&mut out, &i.integrity)?;
    if !s.turn.commands.is_empty() {
        let (shown, left_out) = output::listed(&s.turn.commands, args.verbose);
        writeln!(
            out,
            "{} run by its tool calls:",
            output::count(s.turn.commands.len() as u64, "command")
        )?;
        for c in shown {
            writeln!(out, "  $ {}", c.replace('\n', " "))?;
        }
        output::more(&mut out, left_out, "-v lists them all")?;
    }
    for e in &i.effects {
        writeln!(out, "{}", output::effect(e))?;
    }
    writeln!(
        out,
        "{}{}",
        output::counts_long(&i.counts),
        output::ledger_entries(i.ledger_entries)
    )?;
    output::entries_of(
        &mut out,
        &s.turn.entries,
        s.turn.total_entries(),
        i.id,
        args.verbose,
    )?;
    if i.status == TurnStatus::Open && !s.turn.entries.is_empty() {
        writeln!(
            out,
            "(the turn is open: `*` marks paths changed so far; turn-end records how)"
        )?;
    }
    out.finish()?;
    Ok(0)
}
