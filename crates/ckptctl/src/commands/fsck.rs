//! `ckptctl fsck`: check the project's store; exit 0 when it is sound, 1
//! with the list of problems.

use ckpt_proto::{FsckFinding, FsckReply, Request};

use super::Ctx;
use crate::output;

/// Exit code when fsck found problems (the report is still printed).
const EXIT_PROBLEMS: u8 = 1;

pub fn run(ctx: &Ctx) -> anyhow::Result<u8> {
    let r: FsckReply = ctx.reply(&Request::Fsck {
        dir: ctx.wire_dir(),
    })?;
    let code = if r.ok { 0 } else { EXIT_PROBLEMS };
    if ctx.g.json {
        output::json(&r)?;
    } else if !(ctx.g.quiet && r.ok) {
        print_report(&r);
    }
    Ok(code)
}

fn print_report(r: &FsckReply) {
    let c = &r.checked;
    let problems = r.problems.len() as u64 + r.problems_unlisted;
    let verdict = if r.ok {
        "ok".to_string()
    } else {
        format!("{problems} problem{}", plural(problems))
    };
    println!("fsck {}: {verdict}", r.project);
    println!(
        "checked {} blobs ({} packs, {} object files), {} cache rows, {} turn entries, {} rewind actions in {} ms",
        c.blobs, c.packs, c.objects, c.cache_rows, c.turn_entries, c.rewind_actions, r.elapsed_ms
    );
    print_list("problem", &r.problems, r.problems_unlisted);
    print_list("warning", &r.warnings, r.warnings_unlisted);
}

fn print_list(what: &str, list: &[FsckFinding], unlisted: u64) {
    for f in list {
        println!("{what}: {} {}: {}", f.kind, f.subject, f.detail);
    }
    if unlisted > 0 {
        println!("... and {unlisted} more {what}{}", plural(unlisted));
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
