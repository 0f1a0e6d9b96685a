//! `ckptctl tool-start` and `tool-end`: a session's tool call, which
//! narrows where the changes seen meanwhile go (docs/architecture.md,
//! "Sessions").

use super::turn_requests::window;
use super::Ctx;
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
