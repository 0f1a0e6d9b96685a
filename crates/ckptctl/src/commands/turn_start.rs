//! `ckptctl turn-start`: barrier, close any open turn, open a new one.
//! Watches the project first if it is not watched yet.

use ckpt_proto::{Request, Response, TurnStarted};

use super::{unexpected, Ctx};
use crate::cli::{TurnMeta, TurnStartArgs};
use crate::output;

pub fn run(mut ctx: Ctx, mut args: TurnStartArgs) -> anyhow::Result<u8> {
    if args.from_hook {
        let input = super::hook::read_stdin()?;
        args.meta.label = args.meta.label.or(input.prompt);
        args.meta.session = args.meta.session.or(input.session);
        if let (Some(cwd), None) = (input.cwd, &ctx.g.dir) {
            ctx.dir = super::absolute(&cwd)?;
        }
        ctx.g.quiet = true;
    }
    let ctx = &ctx;
    let t = start(ctx, args.meta)?;
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

pub fn start(ctx: &Ctx, args: TurnMeta) -> anyhow::Result<TurnStarted> {
    let t = match ctx.request(&Request::TurnStart {
        dir: ctx.wire_dir(),
        label: args.label,
        agent: args.agent,
        session: args.session,
        transcript: args.transcript,
        auto_watch: true,
    })? {
        Response::TurnStarted(t) => t,
        other => return Err(unexpected(other)),
    };
    output::warn_degraded(&t.project, &t.degraded);
    Ok(t)
}
