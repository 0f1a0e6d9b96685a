//! `ckptctl diff N [PATH…]`: unified diff of a turn; binary files named.

use std::io::Write;
use std::path::PathBuf;

use ckpt_proto::{ChangeKind, DiffReply, Request, WirePath};
use clap::Args;

use super::Ctx;
use crate::cli::turn_id;
use crate::output;

/// The diff of a turn (only `paths`, when given): the document `--json` prints.
pub fn query(ctx: &Ctx, turn: i64, paths: Vec<WirePath>) -> anyhow::Result<DiffReply> {
    ctx.reply(&Request::Diff(ckpt_proto::Diff {
        dir: ctx.wire_dir(),
        turn,
        paths,
    }))
}

/// `ckptctl diff`'s arguments.
#[derive(Args, Debug)]
pub struct DiffArgs {
    /// A turn id, as `ckptctl log` lists them.
    #[arg(value_parser = turn_id)]
    pub turn: i64,
    /// Only these paths (and what is below them).
    pub paths: Vec<PathBuf>,
}

pub fn run(ctx: &Ctx, args: DiffArgs) -> anyhow::Result<u8> {
    let DiffArgs { turn, paths } = args;
    let paths = paths
        .iter()
        .map(|p| ctx.wire_path(p))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let d = query(ctx, turn, paths)?;
    if ctx.g.json {
        output::json(&d)?;
        return Ok(0);
    }
    let mut out = std::io::stdout().lock();
    for f in &d.files {
        match &f.unified {
            Some(text) => {
                if let Some(note) = &f.note {
                    writeln!(out, "# {}: {note}", f.path.quoted())?;
                }
                out.write_all(text.as_bytes())?;
                if !text.is_empty() && !text.ends_with('\n') {
                    writeln!(out)?;
                }
            }
            None => {
                let note = f.note.as_deref().unwrap_or("no text diff");
                if let Some(sizes) = note.strip_prefix("binary file") {
                    let a = match f.kind {
                        ChangeKind::Added => "/dev/null".to_string(),
                        _ => format!("a/{}", f.path),
                    };
                    let b = match f.kind {
                        ChangeKind::Deleted => "/dev/null".to_string(),
                        _ => format!("b/{}", f.path),
                    };
                    let sizes = sizes.trim().trim_start_matches('(').trim_end_matches(')');
                    writeln!(out, "Binary files {a} and {b} differ ({sizes})")?;
                } else {
                    writeln!(out, "# {}: {note}; no diff", f.path.quoted())?;
                }
            }
        }
    }
    Ok(0)
}
