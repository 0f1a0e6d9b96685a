//! `ckptctl sync`: the barrier alone.

use ckpt_proto::{BarrierMethod, Request, Synced};

use super::Ctx;
use crate::output;

pub fn run(ctx: &Ctx) -> anyhow::Result<u8> {
    // A full scan (after lost events) shows its progress.
    let s: Synced = ctx.reply_showing(
        &Request::Sync {
            dir: ctx.wire_dir(),
        },
        "syncing",
    )?;
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
