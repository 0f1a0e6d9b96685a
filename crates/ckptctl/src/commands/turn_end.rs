//! `ckptctl turn-end`: barrier, close the open turn, print what it changed;
//! with a session, a turn another session opened stays open. `--if-open`
//! (a session's end) closes it only if there is one.

use std::io::Write;

use ckpt_proto::TurnEnded;
use clap::Args;

use super::turn_requests::{end, end_if_open};
use super::Ctx;
use crate::cli::{FromHook, TurnMeta};
use crate::output;
use ckpt_agents::Event;

/// `ckptctl turn-end`'s arguments.
#[derive(Args, Debug)]
pub struct TurnEndArgs {
    /// The agent's session id: only its turn is closed; with none open,
    /// another session's turn is left open, and the reply says so.
    /// Without it, the default session's turn, or else the only open
    /// turn, is closed.
    #[arg(long)]
    pub session: Option<String>,
    /// The session ended or was interrupted (agents' session-end
    /// hooks): close its turn if it has one open; none open is no error.
    #[arg(long)]
    pub if_open: bool,
    #[command(flatten)]
    pub hook: FromHook,
    /// List every path (a long turn lists its first 10 and counts the rest).
    #[arg(short, long)]
    pub verbose: bool,
}

pub fn run(ctx: Ctx, args: TurnEndArgs) -> anyhow::Result<u8> {
    let TurnEndArgs {
        session,
        if_open,
        hook,
        verbose,
    } = args;
    if let Some(agent) = hook.from_hook {
        let meta = TurnMeta {
            session,
            ..TurnMeta::default()
        };
        let event = if if_open {
            Event::SessionEnd
        } else {
            Event::TurnEnd
        };
        return super::hook::run(ctx, agent, event, meta);
    }
    let list = output::to_list(ctx.g.json, ctx.g.quiet, verbose);
    let t = if if_open {
        match end_if_open(&ctx, session, None, list)? {
            Some(t) => t,
            None => {
                if ctx.g.json {
                    output::json(&serde_json::json!({ "turn": null }))?;
                } else if !ctx.g.quiet {
                    println!("no turn open");
                }
                return Ok(0);
            }
        }
    } else {
        end(&ctx, session, None, list)?
    };
    if ctx.g.json {
        output::json(&t)?;
    } else if !ctx.g.quiet {
        print(&mut ctx.stdout(), &t, verbose)?;
    }
    Ok(0)
}

pub fn print(out: &mut impl Write, t: &TurnEnded, verbose: bool) -> std::io::Result<()> {
    let info = &t.turn.info;
    if t.left_open {
        let owner = info.session.as_deref().unwrap_or("another session");
        return writeln!(out, "turn {} left open: session {owner} opened it", info.id);
    }
    writeln!(
        out,
        "turn {} closed: {}{}",
        info.id,
        output::counts_long(&info.counts),
        output::ledger_entries(info.ledger_entries)
    )?;
    output::entries_of(
        out,
        &t.turn.entries,
        t.turn.total_entries(),
        info.id,
        verbose,
    )
}
