//! `ckptctl sync`: the barrier alone.

use ckpt_proto::{BarrierMethod, Request, Synced};

use super::Ctx;
use crate::output;

pub fn run(ctx: &Ctx) -> anyhow::Result<u8> {
    let s: Synced = ctx.reply(&Request::Sync {
        dir: ctx.wire_dir(),
    })?;
    if ctx.g.json {
        output::json(&s)?;
    } else if !ctx.g.quiet {
        let how = match s.method {
            BarrierMethod::Cookie => "watcher",
            BarrierMethod::Scan => "full scan",
        };
        println!("{} in sync ({how}, {} ms)", s.project, s.elapsed_ms);
    }
    Ok(0)
}
