//! `ckptctl pin N`, `unpin N` and `gc [--dry-run]`: what retention keeps,
//! and running it now.

use clap::Args;

use ckpt_proto::{GcReply, PinReply, Request};

use super::projects::retention;
use super::Ctx;
use crate::output;

#[derive(Args, Debug)]
pub struct PinArgs {
    /// The turn, as `ckptctl log` lists it.
    #[arg(value_parser = crate::cli::turn_id)]
    pub turn: i64,
}

#[derive(Args, Debug)]
pub struct GcArgs {
    /// Only say what it would drop and free; change nothing.
    #[arg(long)]
    pub dry_run: bool,
}

pub fn pin(ctx: &Ctx, args: PinArgs, pinned: bool) -> anyhow::Result<u8> {
    let r: PinReply = ctx.reply(&Request::Pin {
        dir: ctx.wire_dir(),
        turn: args.turn,
        pinned,
    })?;
    if ctx.g.json {
        output::json(&r)?;
    } else if !ctx.g.quiet {
        let what = if pinned { "pinned" } else { "unpinned" };
        println!("turn {} {what}", r.turn);
        println!("retention: {}", retention(&r.retention));
    }
    Ok(0)
}

pub fn gc(ctx: &Ctx, args: GcArgs) -> anyhow::Result<u8> {
    let r: GcReply = ctx.reply(&Request::Gc {
        dir: ctx.wire_dir(),
        dry_run: args.dry_run,
    })?;
    if ctx.g.json {
        output::json(&r)?;
        return Ok(0);
    }
    if ctx.g.quiet {
        return Ok(0);
    }
    let (drop, free) = if r.dry_run {
        ("would drop", "would free")
    } else {
        ("dropped", "freed")
    };
    let turns = match r.through {
        Some(t) if r.turns_dropped > 0 => format!(
            "{drop} {} (up to turn {t})",
            output::count(r.turns_dropped, "turn")
        ),
        _ => format!("{drop} no turns"),
    };
    println!(
        "{turns}; {free} {} in {}; store {}",
        output::bytes(r.bytes_freed),
        output::count(r.blobs_removed, "blob"),
        output::bytes(r.store_bytes)
    );
    if r.over_budget {
        println!("still over the store budget: the turns left are pinned, open or otherwise held");
    }
    Ok(0)
}
