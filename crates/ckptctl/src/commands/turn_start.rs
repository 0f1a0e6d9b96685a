//! `ckptctl turn-start`: barrier, close any open turn, open a new one.
//! Watches the project first if it is not watched yet.

use ckpt_proto::{Request, Response, TurnStarted};

use super::{unexpected, Ctx};
use crate::cli::{TurnMeta, TurnStartArgs};
use crate::output;
use ckpt_agents::Event;

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

/// `conversation`: where the agent's conversation stands (a hook call's
/// session adapter), kept on the turn.
pub fn start(
    ctx: &Ctx,
    args: TurnMeta,
    conversation: Option<String>,
) -> anyhow::Result<TurnStarted> {
    let t = match ctx.request(&Request::TurnStart {
        dir: ctx.wire_dir(),
        label: args.label,
        agent: args.agent,
        session: args.session,
        transcript: args.transcript,
        auto_watch: true,
        conversation,
    })? {
        Response::TurnStarted(t) => t,
        other => return Err(unexpected(other)),
    };
    output::warn_degraded(&t.project, &t.degraded);
    Ok(t)
}
