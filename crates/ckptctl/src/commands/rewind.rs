//! `ckptctl rewind N` and `ckptctl redo`: print what was (or would be)
//! restored, deleted, recreated; exit 3 when conflicts (or, for a redo, a
//! tree it cannot put back exactly) refused it. With `--conversation`, the
//! agent's conversation follows the files once they are rewound
//! (`ckpt_agents::conversation`); whatever happens to it, the exit status is the
//! file rewind's.

use std::collections::BTreeSet;
use std::path::PathBuf;

use ckpt_proto::{
    ActionKind, MergeMode, MergeOutcome, OtherTurn, Outcome, Redo, Request, Rewind, RewindFlags,
    RewindReply, RewindTo, State, TurnStatus,
};
use clap::Args;
use serde::Serialize;

use super::{log, Ctx};
use crate::output;
use crate::EXIT_CONFLICTS;
use ckpt_agents::conversation::{self, TurnConversation};

/// The document `--json` prints: the daemon's reply, and with
/// `--conversation` what became of the conversation.
#[derive(Serialize)]
pub struct RewindDoc {
    #[serde(flatten)]
    pub reply: RewindReply,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conversation: Option<conversation::Report>,
}

/// `ckptctl rewind`'s arguments.
#[derive(Args, Debug)]
pub struct RewindArgs {
    /// The oldest turn to undo: it and every later live turn of its
    /// session are undone.
    #[arg(required_unless_present_any = ["last", "after"], conflicts_with_all = ["last", "after"], value_parser = crate::cli::turn_id)]
    pub turn: Option<i64>,
    /// Keep turn N and undo its session's later live turns (the state
    /// just after N).
    #[arg(long, value_name = "N", conflicts_with = "last", value_parser = crate::cli::turn_id)]
    pub after: Option<i64>,
    /// Rewind the newest live turn of --session (without it, of the
    /// default session: turns opened without one).
    #[arg(long)]
    pub last: bool,
    /// With --last: whose newest turn.
    #[arg(long, requires = "last")]
    pub session: Option<String>,
    /// Only these paths (and what is below them); repeatable.
    #[arg(long = "path", value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    #[command(flatten)]
    pub flags: RewindFlags,
    /// Merge text files edited after the agent instead of refusing:
    /// clean hunks are written (the agent's change undone, the later
    /// edit kept); a file whose changes overlap is left as it is, or
    /// with --merge=markers (or --merge markers) written with conflict
    /// markers labelled `current`, `agent (turn N)` and `before turn N`.
    #[arg(long, value_enum, num_args = 0..=1, require_equals = true, default_missing_value = "clean")]
    pub merge: Option<MergeMode>,
    /// Fork the agent's conversation back to before the turn too (a new
    /// session next to the original; prints the command that resumes it).
    #[arg(long)]
    pub conversation: bool,
    /// List every path (a long rewind lists its first 10 and counts the rest).
    #[arg(short, long)]
    pub verbose: bool,
}

/// `ckptctl redo`'s arguments.
#[derive(Args, Debug)]
pub struct RedoArgs {
    #[command(flatten)]
    pub flags: RewindFlags,
    /// Name the conversation that matches the files again (the original
    /// session, which a rewind never changes).
    #[arg(long)]
    pub conversation: bool,
    /// List every path (a long redo lists its first 10 and counts the rest).
    #[arg(short, long)]
    pub verbose: bool,
}

pub fn rewind(ctx: &Ctx, args: RewindArgs) -> anyhow::Result<u8> {
    let to = match (args.turn, args.after) {
        (Some(t), _) => RewindTo::Before(t),
        (None, Some(n)) => RewindTo::After(n),
        (None, None) => RewindTo::Before(last_turn(ctx, args.session.as_deref(), args.last)?),
    };
    let paths = args
        .paths
        .iter()
        .map(|p| ctx.wire_path(p))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let partial = !paths.is_empty();
    let r = request_rewind(
        ctx,
        Rewind {
            dir: ctx.wire_dir(),
            to,
            paths,
            flags: args.flags,
            merge: args.merge,
            list: listing(ctx, args.verbose),
        },
        true,
    )?;
    let after = match to {
        RewindTo::After(n) => Some(n),
        RewindTo::Before(_) => None,
    };
    finish(
        ctx,
        with(ctx, r, args.conversation, partial),
        args.flags,
        after,
        args.verbose,
    )
}

/// `rewind --last [--session S]`: the newest live turn of `session`;
/// without one, of the default session or a work copy's apply (the user's
/// own turns: an apply runs in a session of its own, which nobody names).
pub fn last_turn(ctx: &Ctx, session: Option<&str>, last: bool) -> anyhow::Result<i64> {
    anyhow::ensure!(last, "name a turn, or --last");
    let log = super::log::query(ctx, 100_000, session.map(str::to_string))?;
    let mine = |t: &&ckpt_proto::TurnInfo| match session {
        Some(_) => t.session.as_deref() == session,
        None => t.session.is_none() || ckpt_agents::workcopy_turn::is_apply(t),
    };
    log.turns
        .iter()
        .filter(mine)
        .find(|t| t.status != TurnStatus::Rewound)
        .map(|t| t.id)
        .ok_or_else(|| match session {
            Some(s) => anyhow::anyhow!("session {s} has no live turn in {}", log.project),
            None => anyhow::anyhow!(
                "no live turn without a session in {}; name one with --session",
                log.project
            ),
        })
}

pub fn redo(ctx: &Ctx, args: RedoArgs) -> anyhow::Result<u8> {
    let r = request_redo(ctx, args.flags, listing(ctx, args.verbose), true)?;
    finish(
        ctx,
        with(ctx, r, args.conversation, false),
        args.flags,
        None,
        args.verbose,
    )
}

/// The reply, and when asked for (and the files were or would be
/// rewound) the conversation's report. A rewind of some paths only
/// (`partial`) leaves the turns' other files as they are, so a
/// conversation forked to before them would not match the files.
pub fn with(ctx: &Ctx, reply: RewindReply, with_conversation: bool, partial: bool) -> RewindDoc {
    let conversation = (with_conversation && reply.outcome != Outcome::Refused).then(|| {
        if partial {
            conversation::Report::skipped(
                "only some paths were rewound (--path): the conversation is forked with a whole rewind only",
            )
        } else {
            conversation_of(ctx, &reply)
        }
    });
    RewindDoc {
        reply,
        conversation,
    }
}

/// Forks the conversation of the turn rewound to (for a redo: names the
/// original session, which holds every turn); other sessions whose changes
/// the rewind overwrites are named, not touched.
fn conversation_of(ctx: &Ctx, r: &RewindReply) -> conversation::Report {
    let turns = match turns_since(ctx, r.turn) {
        Ok(t) => t,
        Err(e) => {
            return conversation::Report::skipped(format!(
                "reading the turns: {}",
                output::error_message(&e)
            ))
        }
    };
    let Some(info) = turns.iter().find(|t| t.id == r.turn) else {
        return conversation::Report::skipped(format!("turn {} is not in the log", r.turn));
    };
    let position = info.conversation.as_ref().map(|c| c.to_string());
    let t = TurnConversation {
        turn: info.id,
        agent: info.agent.as_deref(),
        session: info.session.as_deref(),
        transcript: info.transcript.as_deref(),
        position: position.as_deref(),
    };
    let mut report = if r.redo {
        conversation::resume_original(&t)
    } else {
        conversation::fork(&t, r.outcome == Outcome::DryRun)
    };
    // A rewind undoes one session's turns; another session's shows up
    // when its change to a path was overwritten (--force) or would be.
    let others: BTreeSet<&str> = turns
        .iter()
        .filter(|t| r.turns.contains(&t.id))
        .filter_map(|t| t.session.as_deref())
        .chain(
            r.conflicts
                .iter()
                .filter_map(|c| c.other.as_ref()?.session.as_deref()),
        )
        .filter(|s| Some(*s) != info.session.as_deref())
        .collect();
    report.other_sessions = others.into_iter().map(str::to_string).collect();
    report
}

/// Turn `from` and every later one (the log holds them newest first).
fn turns_since(ctx: &Ctx, from: i64) -> anyhow::Result<Vec<ckpt_proto::TurnInfo>> {
    let newest = log::query(ctx, 1, None)?
        .turns
        .first()
        .map_or(from, |t| t.id);
    let count = usize::try_from(newest - from + 1).unwrap_or(1).max(1);
    Ok(log::query(ctx, count, None)?.body.turns)
}

/// Asks for a rewind (or its plan): the document `--json` prints. With
/// `progress`, a long one shows it on a terminal.
pub fn request_rewind(ctx: &Ctx, req: Rewind, progress: bool) -> anyhow::Result<RewindReply> {
    let after = matches!(req.to, RewindTo::After(_));
    let req = Request::Rewind(req);
    let reply = match progress {
        true => ctx.reply_showing(&req, "rewinding"),
        false => ctx.reply(&req),
    };
    reply.map_err(|e| {
        // A daemon that predates `after` refuses the request for want of
        // `turn` (ckpt_proto::RewindTo): say so, not just the serde words.
        if after && format!("{e:#}").contains("missing field `turn`") {
            e.context("the running ckptd predates `rewind --after`; restart it (stop ckptd, then run ckptctl again)")
        } else {
            e
        }
    })
}

/// How many actions the reply is to list ([`output::to_list`]); `-q`
/// still prints a refused plan.
fn listing(ctx: &Ctx, verbose: bool) -> Option<u64> {
    output::to_list(ctx.g.json, false, verbose)
}

/// Asks for a redo (or its plan): the document `--json` prints. With
/// `progress`, a long one shows it on a terminal. `list`: as [`Redo::list`].
pub fn request_redo(
    ctx: &Ctx,
    flags: RewindFlags,
    list: Option<u64>,
    progress: bool,
) -> anyhow::Result<RewindReply> {
    let req = Request::Redo(Redo {
        dir: ctx.wire_dir(),
        flags,
        list,
    });
    match progress {
        true => ctx.reply_showing(&req, "redoing"),
        false => ctx.reply(&req),
    }
}

/// Exits as the real run would: 3 when it is (or, for a dry run, would
/// be) refused.
/// `after`: the turn a `rewind --after` keeps.
fn finish(
    ctx: &Ctx,
    doc: RewindDoc,
    flags: RewindFlags,
    after: Option<i64>,
    verbose: bool,
) -> anyhow::Result<u8> {
    let r = &doc.reply;
    let would_refuse = r.outcome == Outcome::DryRun
        && (!r.blocked.is_empty() || (!flags.force && !r.conflicts.is_empty()));
    if ctx.g.json {
        output::json(&doc)?;
    } else {
        // What it does not undo comes first, even with --quiet (on stderr).
        let mut caveats = Vec::new();
        output::caveats(&mut caveats, &r.caveats)?;
        let caveats = String::from_utf8_lossy(&caveats);
        if ctx.g.quiet {
            eprint!("{caveats}");
        } else {
            print!("{caveats}");
        }
        if !ctx.g.quiet || r.outcome == Outcome::Refused || would_refuse {
            print(r, flags, after, verbose);
        }
    }
    if let Some(c) = &doc.conversation {
        print_conversation(ctx, r, c);
    }
    Ok(if r.outcome == Outcome::Refused || would_refuse {
        EXIT_CONFLICTS
    } else {
        0
    })
}

/// `turn 3`, `turns 3, 4`.
fn turns(list: &[i64]) -> String {
    let ids = output::ids(list);
    match list.len() {
        1 => format!("turn {ids}"),
        _ => format!("turns {ids}"),
    }
}

fn print(r: &RewindReply, flags: RewindFlags, after: Option<i64>, verbose: bool) {
    let what = if r.redo {
        format!(
            "redo of the rewind to before turn {} ({})",
            r.turn,
            turns(&r.turns)
        )
    } else if let Some(n) = after {
        format!("rewind to after turn {n} (undoing {})", turns(&r.turns))
    } else {
        format!(
            "rewind to before turn {} (undoing {})",
            r.turn,
            turns(&r.turns)
        )
    };
    let would = r.outcome != Outcome::Applied;
    match r.outcome {
        Outcome::Applied => println!(
            "{what}: {} in {} ms",
            output::count(r.counts().total(), "path"),
            r.elapsed_ms
        ),
        Outcome::DryRun => println!("dry run of the {what}: nothing changed"),
        Outcome::Refused => eprintln!("{what} refused: nothing changed"),
    }
    // A merged file is listed once, with its merge, below.
    let merged = |a: &&ckpt_proto::Action| {
        r.merged
            .iter()
            .any(|m| m.path == a.path && m.outcome != MergeOutcome::Overlapping)
    };
    let listed: Vec<&ckpt_proto::Action> = r.actions.iter().filter(|a| !merged(a)).collect();
    // The reply lists every merged file's action (each a restore) and the
    // first of the rest; its counts are of all.
    let mut counts = r.counts();
    counts.restore = counts
        .restore
        .saturating_sub((r.actions.len() - listed.len()) as u64);
    let (shown, left_out) = output::listed_of(&listed, counts.total() as usize, verbose);
    if left_out > 0 {
        // Counts by kind first, so the cut list still says what happened.
        let by_kind = [
            (ActionKind::Restore, "restore"),
            (ActionKind::Delete, "delete"),
            (ActionKind::Recreate, "recreate"),
        ]
        .iter()
        .filter_map(|(k, verb)| {
            let n = counts.of_kind(*k);
            if n == 0 {
                return None;
            }
            let verb = if would {
                format!("would {verb}")
            } else {
                format!("{verb}d")
            };
            Some(format!("{verb} {}", output::thousands(n)))
        })
        .collect::<Vec<_>>()
        .join(", ");
        let line = format!("  ({by_kind})");
        if r.outcome == Outcome::Refused {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    }
    for a in shown {
        let verb = match (a.kind(), would) {
            (ActionKind::Restore, false) => "restored ",
            (ActionKind::Delete, false) => "deleted  ",
            (ActionKind::Recreate, false) => "recreated",
            (ActionKind::Restore, true) => "would restore ",
            (ActionKind::Delete, true) => "would delete  ",
            (ActionKind::Recreate, true) => "would recreate",
        };
        let dir = matches!(a.current, State::Dir { .. }) || matches!(a.target, State::Dir { .. });
        let line = format!(
            "  {verb}  {}{}",
            a.path.quoted(),
            if dir { "/" } else { "" }
        );
        if r.outcome == Outcome::Refused {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    }
    if left_out > 0 {
        let more = format!(
            "  … and {} more (`-v` lists every path)",
            output::thousands(left_out as u64)
        );
        if r.outcome == Outcome::Refused {
            eprintln!("{more}");
        } else {
            println!("{more}");
        }
    }
    for s in &r.skipped {
        println!("  skipped    {}  ({})", s.path.quoted(), s.reason);
    }
    for b in &r.blocked {
        eprintln!("  blocked    {}  ({})", b.path.quoted(), b.reason);
    }
    for c in &r.conflicts {
        match &c.other {
            Some(OtherTurn { turn: t, session }) => eprintln!(
                "  conflict   {}: also changed by turn {t} of {}",
                c.path.quoted(),
                session
                    .as_deref()
                    .map_or("the default session".to_string(), |s| format!(
                        "session {s}"
                    ))
            ),
            None if r.redo => eprintln!(
                "  conflict   {}: changed since the rewind (expected {}, found {})",
                c.path.quoted(),
                output::state(&c.expected),
                output::state(&c.current)
            ),
            None => eprintln!(
                "  conflict   {}: edited after the agent (expected {}, found {})",
                c.path.quoted(),
                output::state(&c.expected),
                output::state(&c.current)
            ),
        }
        if let Some(why) = &c.not_mergeable {
            eprintln!("             not merged: {why}");
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
        println!("  {what}  {}", m.path.quoted());
        if let Some(hunks) = &m.hunks {
            for line in hunks.lines() {
                println!("    {line}");
            }
        }
    }
    let unmergeable = r
        .conflicts
        .iter()
        .filter(|c| c.not_mergeable.is_some())
        .count();
    if !r.blocked.is_empty() {
        eprintln!(
            "the redo cannot put the tree back exactly as it was before the rewind \
             (--force does not change that); move the blocking paths away, or \
             rewind the later turns first"
        );
    } else if r.outcome == Outcome::Refused && r.redo {
        // redo takes neither --merge nor --path.
        eprintln!(
            "{} changed since the rewind; --force overwrites them",
            output::count(r.conflicts.len() as u64, "path")
        );
    } else if r.outcome == Outcome::Refused && unmergeable == r.conflicts.len() {
        // --merge was given and could do nothing more for these.
        eprintln!(
            "{} cannot be merged; --force overwrites {} with the content from before \
             turn {}, or --path naming only the other paths leaves {} as {}",
            output::count(unmergeable as u64, "path"),
            if unmergeable == 1 { "it" } else { "them" },
            r.turn,
            if unmergeable == 1 { "it" } else { "them" },
            if unmergeable == 1 {
                "it is"
            } else {
                "they are"
            },
        );
    } else if r.outcome == Outcome::Refused {
        eprintln!(
            "{} changed after the rewound turns touched them; \
             use --merge to keep those edits, --force to overwrite them, or --path to \
             rewind other paths only",
            output::count(r.conflicts.len() as u64, "path")
        );
    } else if !r.conflicts.is_empty() && r.outcome == Outcome::DryRun && !flags.force {
        eprintln!(
            "  ({} in conflict: the rewind is refused without --force)",
            output::count(r.conflicts.len() as u64, "path")
        );
    } else if !r.conflicts.is_empty() {
        println!(
            "  ({} in conflict overwritten: --force)",
            output::count(r.conflicts.len() as u64, "path")
        );
    }
    for c in &r.continued {
        let whose = c
            .session
            .as_deref()
            .map_or("the default session".to_string(), |s| {
                format!("session {s}")
            });
        match c.opened {
            Some(new) => println!(
                "  turn {} of {whose} was open: ended here, continued as turn {new}",
                c.ended
            ),
            None if r.outcome == Outcome::DryRun => println!(
                "  turn {} of {whose} is open: it would end here and continue as a new turn",
                c.ended
            ),
            None => {}
        }
    }
    if r.outcome == Outcome::Applied && !r.redo {
        println!("`ckptctl redo` puts it back");
    }
}

/// What became of the conversation: a skip is one line on stderr, even
/// with `--json` (whose document holds it as `skipped`).
fn print_conversation(ctx: &Ctx, r: &RewindReply, c: &conversation::Report) {
    if let Some(why) = &c.skipped {
        eprintln!("ckptctl: conversation not rewound: {why}");
    }
    if ctx.g.json || ctx.g.quiet {
        return;
    }
    let agent = c.agent.as_deref().unwrap_or("agent");
    let original = c.original_session.as_deref().unwrap_or("?");
    if let Some(cmd) = &c.resume_command {
        if r.redo {
            println!("conversation: the original {agent} session {original} holds these turns; resume it: {cmd}");
        } else {
            println!(
                "conversation: forked {agent} session {original} before turn {} into {} ({}): {}",
                r.turn,
                c.forked_session.as_deref().unwrap_or("?"),
                output::count(c.entries.unwrap_or(0) as u64, "entry"),
                c.path.as_deref().unwrap_or("?"),
            );
            println!("  resume it: {cmd}");
        }
    } else if c.dry_run && c.skipped.is_none() {
        println!(
            "conversation: would fork {agent} session {original} before turn {} into a new \
             session ({}) next to it; the real run names it and the command that resumes it",
            r.turn,
            output::count(c.entries.unwrap_or(0) as u64, "entry"),
        );
    }
    if !c.other_sessions.is_empty() {
        println!(
            "  turns of other sessions were undone too; their conversations are as they were: {}",
            c.other_sessions.join(", ")
        );
    }
}
