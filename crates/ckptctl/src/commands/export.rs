//! `ckptctl export TURN[..TURN] --out DIR`: the daemon writes the export of
//! a range of closed turns into DIR, which this command creates.

use std::path::{Path, PathBuf};

use anyhow::Context;
use ckpt_proto::{ExportReply, Request, WirePath};
use clap::Args;

use super::{absolute, Ctx};
use crate::cli::turn_range;
use crate::output;

/// Exports turns `from..=to` into `out` (absolute, existing, empty).
pub fn query(ctx: &Ctx, from: i64, to: i64, out: &Path) -> anyhow::Result<ExportReply> {
    ctx.reply(&Request::Export(ckpt_proto::Export {
        dir: ctx.wire_dir(),
        from,
        to,
        out: WirePath::from(out),
    }))
}

/// `ckptctl export`'s arguments.
#[derive(Args, Debug)]
pub struct ExportArgs {
    /// A turn (`4`) or a range of closed turns (`4..7`, both included).
    #[arg(value_parser = turn_range, value_name = "TURN[..TURN]")]
    pub range: (i64, i64),
    /// Where to write: a new or empty directory outside the project.
    #[arg(long)]
    pub out: PathBuf,
}

pub fn run(ctx: &Ctx, args: ExportArgs) -> anyhow::Result<u8> {
    let (from, to) = args.range;
    let out = absolute(&args.out)?;
    let existed = out.exists();
    std::fs::create_dir_all(&out)
        .with_context(|| format!("creating the export directory {}", out.display()))?;
    let out = out
        .canonicalize()
        .with_context(|| format!("resolving {}", out.display()))?;
    let reply = match query(ctx, from, to, &out) {
        Ok(r) => r,
        Err(e) => {
            if !existed {
                // Only if still empty: nothing of ours or anyone's is lost.
                let _ = std::fs::remove_dir(&out);
            }
            return Err(e);
        }
    };
    if ctx.g.json {
        let mut doc = serde_json::Map::new();
        doc.insert(
            "out".into(),
            serde_json::Value::from(out.display().to_string()),
        );
        if let serde_json::Value::Object(m) = reply.body.manifest {
            doc.extend(m);
        }
        output::json(&doc)?;
        return Ok(0);
    }
    if ctx.g.quiet {
        return Ok(0);
    }
    let m = &reply.manifest;
    let count = m["paths"].as_array().map_or(0, Vec::len);
    let skipped = m["skipped"].as_array().map_or(0, Vec::len);
    println!(
        "exported turns {from}..{to} ({count} paths, {skipped} skipped) to {}",
        out.display()
    );
    for name in ["changes.patch", "files.zip", "report.md", "manifest.json"] {
        println!("  {name}");
    }
    println!(
        "result fingerprint {}",
        m["result_fingerprint"].as_str().unwrap_or("?")
    );
    if m["live_matches_result"] == serde_json::Value::Bool(false) {
        println!("note: the tree has changed since; the export is of the recorded turns");
    }
    Ok(0)
}
