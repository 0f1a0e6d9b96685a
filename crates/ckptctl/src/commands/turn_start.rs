//! `ckptctl turn-start`: barrier, close any open turn, open a new one.
//! Watches the project first if it is not watched yet.

use clap::Args;

use super::turn_requests::start;
use super::Ctx;
use crate::cli::{FromHook, TurnMeta};
use crate::output;
use ckpt_agents::Event;

/// `ckptctl turn-start`'s arguments.
#[derive(Args, Debug, Clone, Default)]
pub struct TurnStartArgs {
    #[command(flatten)]
    pub meta: TurnMeta,
    #[command(flatten)]
    pub hook: FromHook,
}

pub fn run(ctx: Ctx, args: TurnStartArgs) -> anyhow::Result<u8> {
    if let Some(agent) = args.hook.from_hook {
        return super::hook::run(ctx, agent, Event::TurnStart, args.meta);
    }
    let t = start(&ctx, args.meta, None)?;
    if ctx.g.json {
        output::json(&t)?;
    } else if !ctx.g.quiet {
        if t.watched_now {
            eprintln!("ckptctl: now watching {}", t.project);
        }
        if let Some(prev) = t.closed_turn {
            eprintln!("ckptctl: closed turn {prev}, which was still open");
        }
        println!("turn {}", t.turn);
    }
    Ok(0)
}
