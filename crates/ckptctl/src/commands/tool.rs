//! `ckptctl tool-start` and `tool-end`: a session's tool call, which
//! narrows where the changes seen meanwhile go (docs/architecture.md,
//! "Sessions").

use ckpt_proto::{Request, Response, ToolReply};

use super::{unexpected, Ctx};
use crate::cli::{FromToolHook, TurnMeta};
use crate::output;
use ckpt_agents::Event;

pub fn run(
    ctx: Ctx,
    session: Option<String>,
    hook: FromToolHook,
    start: bool,
) -> anyhow::Result<u8> {
    if let Some(agent) = hook.from_hook {
        let meta = TurnMeta {
            session,
            ..TurnMeta::default()
        };
        let event = if start {
            Event::ToolStart
        } else {
            Event::ToolEnd
        };
        return super::hook::run(ctx, agent, event, meta);
    }
    let r = window(&ctx, session, start)?;
    if ctx.g.json {
        output::json(&r)?;
    } else if !ctx.g.quiet {
        let turn = r
            .turn
            .map_or("no open turn".to_string(), |t| format!("turn {t}"));
        println!("{} tool call(s) running ({turn})", r.running);
    }
    Ok(0)
}

pub fn window(ctx: &Ctx, session: Option<String>, start: bool) -> anyhow::Result<ToolReply> {
    let dir = ctx.wire_dir();
    let req = if start {
        Request::ToolStart { dir, session }
    } else {
        Request::ToolEnd { dir, session }
    };
    match ctx.request(&req)? {
        Response::Tool(r) => {
            output::warn_degraded(&r.project, &r.degraded);
            Ok(r)
        }
        other => Err(unexpected(other)),
    }
}
