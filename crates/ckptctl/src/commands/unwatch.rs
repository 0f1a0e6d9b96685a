//! `ckptctl unwatch [DIR] [--drop-data]`.

use std::path::PathBuf;

use ckpt_proto::{Request, Unwatched};
use clap::Args;

use super::{absolute, Ctx};
use crate::output;

/// `ckptctl unwatch`'s arguments.
#[derive(Args, Debug)]
pub struct UnwatchArgs {
    /// A directory inside the project [default: -C's, else the current
    /// directory].
    pub dir: Option<PathBuf>,
    /// Delete the project's stored history too.
    #[arg(long)]
    pub drop_data: bool,
}

pub fn run(ctx: &Ctx, args: UnwatchArgs) -> anyhow::Result<u8> {
    let UnwatchArgs { dir, drop_data } = args;
    let dir = dir.as_deref();
    if dir.is_some() && ctx.g.dir.is_some() {
        crate::commands::usage_error("give the directory once: `unwatch DIR` or `unwatch -C DIR`");
    }
    let dir = match dir {
        Some(d) => absolute(d)?,
        None => ctx.dir.clone(),
    };
    let u: Unwatched = ctx.ask(&Request::Unwatch {
        dir: dir.as_path().into(),
        drop_data,
    })?;
    if ctx.g.json {
        output::json(&u)?;
    } else if !ctx.g.quiet {
        if u.dropped_data {
            println!("stopped watching {}; its history was deleted", u.project);
        } else {
            println!(
                "stopped watching {}; its history is kept (`ckptctl watch` resumes, `unwatch --drop-data` deletes it)",
                u.project
            );
        }
    }
    Ok(0)
}
