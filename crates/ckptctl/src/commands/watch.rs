//! `ckptctl watch [DIR]`: watch a tree; returns once the baseline is taken.
//! On a terminal, the scan's progress (entries, bytes) shows on stderr.

use std::path::PathBuf;

use ckpt_proto::{Request, WatchedBody};
use clap::Args;

use super::{absolute, Ctx};
use crate::output;

/// `ckptctl watch`'s arguments.
#[derive(Args, Debug)]
pub struct WatchArgs {
    /// The directory to watch, exactly (not together with -C).
    pub dir: Option<PathBuf>,
}

pub fn run(ctx: &Ctx, args: WatchArgs) -> anyhow::Result<u8> {
    let dir = args.dir.as_deref();
    if dir.is_some() && ctx.g.dir.is_some() {
        crate::commands::usage_error("give the directory once: `watch DIR` or `watch -C DIR`");
    }
    let (dir, discover) = match dir {
        Some(d) => (absolute(d)?, false),
        None => (ctx.dir.clone(), true),
    };
    let w = ctx.reply_showing::<WatchedBody>(
        &Request::Watch {
            dir: dir.as_path().into(),
            discover,
        },
        &format!("watching {}", dir.display()),
    )?;
    if ctx.g.json {
        output::json(&w)?;
    } else if !ctx.g.quiet {
        if w.already {
            println!("already watching {}", w.project);
        } else {
            println!(
                "watching {}: {}, {} hashed in {:.1}s",
                w.project,
                output::count(w.scan.entries, "entry"),
                output::bytes(w.scan.bytes_hashed),
                w.elapsed_ms as f64 / 1000.0
            );
            print_paths(
                &format!("{} not captured:", w.scan.skipped.len()),
                &w.scan.skipped,
            );
            print_paths(
                &format!(
                    "{} could not be read (nothing below is captured):",
                    w.scan.unreadable.len()
                ),
                &w.scan.unreadable,
            );
        }
    }
    Ok(0)
}

/// A heading and up to 20 of `paths`, if there are any.
fn print_paths(heading: &str, paths: &[ckpt_proto::Skipped]) {
    if paths.is_empty() {
        return;
    }
    println!("{heading}");
    for s in paths.iter().take(20) {
        println!("  {}  ({})", s.path, s.reason);
    }
    if paths.len() > 20 {
        println!("  … and {} more", paths.len() - 20);
    }
}
