//! `ckptctl unwatch [DIR] [--drop-data]`.

use std::path::Path;

use ckpt_proto::{Request, Response};

use super::{absolute, unexpected, Ctx};
use crate::output;

pub fn run(ctx: &Ctx, dir: Option<&Path>, drop_data: bool) -> anyhow::Result<u8> {
    if dir.is_some() && ctx.g.dir.is_some() {
        crate::commands::usage_error("give the directory once: `unwatch DIR` or `unwatch -C DIR`");
    }
    let dir = match dir {
        Some(d) => absolute(d)?,
        None => ctx.dir.clone(),
    };
    let u = match ctx.request(&Request::Unwatch {
        dir: dir.as_path().into(),
        drop_data,
    })? {
        Response::Unwatched(u) => u,
        other => return Err(unexpected(other)),
    };
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
