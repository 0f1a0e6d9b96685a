//! `ckptctl turn-end`: barrier, close the open turn, print what it changed;
//! with a session, a turn another session opened stays open.

use ckpt_proto::{Request, Response, TurnEnded};

use super::{unexpected, Ctx};
use crate::agents::Event;
use crate::cli::{FromHook, TurnMeta};
use crate::output;

pub fn run(ctx: Ctx, session: Option<String>, hook: FromHook) -> anyhow::Result<u8> {
    if let Some(agent) = hook.from_hook {
        let meta = TurnMeta {
            session,
            ..TurnMeta::default()
        };
        return super::hook::run(ctx, agent, Event::TurnEnd, meta);
    }
    let t = end(&ctx, session, None)?;
    if ctx.g.json {
        output::json(&t)?;
    } else if !ctx.g.quiet {
        print(&t);
    }
    Ok(0)
}

pub fn end(
    ctx: &Ctx,
    session: Option<String>,
    transcript: Option<String>,
) -> anyhow::Result<TurnEnded> {
    let t = match ctx.request(&Request::TurnEnd {
        dir: ctx.wire_dir(),
        session,
        transcript,
    })? {
        Response::TurnEnded(t) => t,
        other => return Err(unexpected(other)),
    };
    output::warn_degraded(&t.project, &t.degraded);
    Ok(t)
}

pub fn print(t: &TurnEnded) {
    let info = &t.turn.info;
    if t.left_open {
        let owner = info.session.as_deref().unwrap_or("another session");
        println!("turn {} left open: session {owner} opened it", info.id);
        return;
    }
    println!(
        "turn {} closed: {}{}",
        info.id,
        output::counts_long(&info.counts),
        output::ledger_entries(info.ledger_entries)
    );
    output::entries(&t.turn.entries);
}
