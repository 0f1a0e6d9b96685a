//! `ckptctl rewind N` and `ckptctl redo`: print what was (or would be)
//! restored, deleted, recreated; exit 3 when conflicts (or, for a redo, a
//! tree it cannot put back exactly) refused it.

use std::path::PathBuf;

use ckpt_proto::{
    ActionKind, MergeMode, MergeOutcome, Outcome, Request, Response, RewindReply, State,
    TurnStatus, WirePath,
};

use super::{unexpected, Ctx};
use crate::output;
use crate::EXIT_CONFLICTS;

pub fn rewind(
    ctx: &Ctx,
    turn: i64,
    paths: &[PathBuf],
    dry_run: bool,
    force: bool,
    merge: Option<MergeMode>,
) -> anyhow::Result<u8> {
    let paths = paths
        .iter()
        .map(|p| ctx.wire_path(p))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let r = request_rewind(ctx, turn, paths, dry_run, force, merge)?;
    finish(ctx, r)
}

/// `rewind --last [--session S]`: the newest live turn of `session` (the
/// default session without one).
pub fn last_turn(ctx: &Ctx, session: Option<&str>, last: bool) -> anyhow::Result<i64> {
    anyhow::ensure!(last, "name a turn, or --last");
    let log = super::log::query(ctx, 100_000, session.map(str::to_string))?;
    log.turns
        .iter()
        .find(|t| t.session.as_deref() == session && t.status != TurnStatus::Rewound)
        .map(|t| t.id)
        .ok_or_else(|| match session {
            Some(s) => anyhow::anyhow!("session {s} has no live turn in {}", log.project),
            None => anyhow::anyhow!(
                "no live turn without a session in {}; name one with --session",
                log.project
            ),
        })
}

pub fn redo(ctx: &Ctx, dry_run: bool, force: bool) -> anyhow::Result<u8> {
    let r = request_redo(ctx, dry_run, force)?;
    finish(ctx, r)
}

/// Asks for a rewind (or its plan): the document `--json` prints.
pub fn request_rewind(
    ctx: &Ctx,
    turn: i64,
    paths: Vec<WirePath>,
    dry_run: bool,
    force: bool,
    merge: Option<MergeMode>,
) -> anyhow::Result<RewindReply> {
    reply(ctx.request(&Request::Rewind {
        dir: ctx.wire_dir(),
        turn,
        paths,
        dry_run,
        force,
        merge,
    })?)
}

/// Asks for a redo (or its plan): the document `--json` prints.
pub fn request_redo(ctx: &Ctx, dry_run: bool, force: bool) -> anyhow::Result<RewindReply> {
    reply(ctx.request(&Request::Redo {
        dir: ctx.wire_dir(),
        dry_run,
        force,
    })?)
}

fn reply(r: Response) -> anyhow::Result<RewindReply> {
    match r {
        Response::Rewind(r) => Ok(r),
        other => Err(unexpected(other)),
    }
}

fn finish(ctx: &Ctx, r: RewindReply) -> anyhow::Result<u8> {
    output::warn_degraded(&r.project, &r.degraded);
    if ctx.g.json {
        output::json(&r)?;
    } else if !ctx.g.quiet || r.outcome == Outcome::Refused {
        print(&r);
    }
    Ok(if r.outcome == Outcome::Refused {
        EXIT_CONFLICTS
    } else {
        0
    })
}

fn turns(list: &[i64]) -> String {
    list.iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

fn print(r: &RewindReply) {
    let what = if r.redo {
        format!(
            "redo of the rewind to before turn {} (turns {})",
            r.turn,
            turns(&r.turns)
        )
    } else {
        format!(
            "rewind to before turn {} (undoing turns {})",
            r.turn,
            turns(&r.turns)
        )
    };
    let would = r.outcome != Outcome::Applied;
    match r.outcome {
        Outcome::Applied => println!("{what}: {} paths in {} ms", r.actions.len(), r.elapsed_ms),
        Outcome::DryRun => println!("dry run of the {what}: nothing changed"),
        Outcome::Refused => eprintln!("{what} refused: nothing changed"),
    }
    for a in &r.actions {
        let verb = match (a.action, would) {
            (ActionKind::Restore, false) => "restored ",
            (ActionKind::Delete, false) => "deleted  ",
            (ActionKind::Recreate, false) => "recreated",
            (ActionKind::Restore, true) => "would restore ",
            (ActionKind::Delete, true) => "would delete  ",
            (ActionKind::Recreate, true) => "would recreate",
        };
        let dir = matches!(a.current, State::Dir { .. }) || matches!(a.target, State::Dir { .. });
        let line = format!("  {verb}  {}{}", a.path, if dir { "/" } else { "" });
        if r.outcome == Outcome::Refused {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    }
    for s in &r.skipped {
        println!("  skipped    {}  ({})", s.path, s.reason);
    }
    for b in &r.blocked {
        eprintln!("  blocked    {}  ({})", b.path, b.reason);
    }
    for c in &r.conflicts {
        match (c.other_turn, &c.other_session) {
            (Some(t), session) => eprintln!(
                "  conflict   {}: also changed by turn {t} of {}",
                c.path,
                session
                    .as_deref()
                    .map_or("the default session".to_string(), |s| format!(
                        "session {s}"
                    ))
            ),
            (None, _) => eprintln!(
                "  conflict   {}: edited after the agent (expected {}, found {})",
                c.path,
                output::state(&c.expected),
                output::state(&c.current)
            ),
        }
    }
    for m in &r.merged {
        let what = match (m.outcome, would) {
            (MergeOutcome::Clean, false) => "merged   ",
            (MergeOutcome::Clean, true) => "would merge",
            (MergeOutcome::Markers, false) => "merged with conflict markers",
            (MergeOutcome::Markers, true) => "would merge with conflict markers",
            (MergeOutcome::Overlapping, _) => {
                "left as it is: the changes overlap (--merge=markers)"
            }
        };
        println!("  {what}  {}", m.path);
        if let Some(text) = &m.content {
            for line in text.lines() {
                println!("    | {line}");
            }
        }
    }
    if !r.blocked.is_empty() {
        eprintln!(
            "the redo cannot put the tree back exactly as it was before the rewind \
             (--force does not change that); move the blocking paths away, or \
             rewind the later turns first"
        );
    } else if r.outcome == Outcome::Refused {
        eprintln!(
            "{} path(s) changed after the agent's last turn touched them; \
             use --merge to keep those edits, --force to overwrite them, or --path to \
             rewind other paths only",
            r.conflicts.len()
        );
    } else if !r.conflicts.is_empty() && r.outcome == Outcome::DryRun {
        println!(
            "  ({} conflicting path(s): refused without --force)",
            r.conflicts.len()
        );
    } else if !r.conflicts.is_empty() {
        println!(
            "  ({} conflicting path(s) overwritten: --force)",
            r.conflicts.len()
        );
    }
    if r.outcome == Outcome::Applied && !r.redo {
        println!("`ckptctl redo` puts it back");
    }
}
