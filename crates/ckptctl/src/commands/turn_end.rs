//! `ckptctl turn-end`: barrier, close the open turn, print what it changed;
//! with a session, a turn another session opened stays open. `--if-open`
//! (a session's end) closes it only if there is one.

use ckpt_proto::{ErrorKind, Request, Response, TurnEnded};

use super::{unexpected, Ctx};
use crate::cli::{FromHook, TurnMeta};
use crate::client::DaemonError;
use crate::output;
use ckpt_agents::Event;

pub fn run(ctx: Ctx, session: Option<String>, if_open: bool, hook: FromHook) -> anyhow::Result<u8> {
    if let Some(agent) = hook.from_hook {
        let meta = TurnMeta {
            session,
            ..TurnMeta::default()
        };
        let event = if if_open {
            Event::SessionEnd
        } else {
            Event::TurnEnd
        };
        return super::hook::run(ctx, agent, event, meta);
    }
    let t = if if_open {
        match end_if_open(&ctx, session, None)? {
            Some(t) => t,
            None => {
                if ctx.g.json {
                    output::json(&serde_json::json!({ "turn": null }))?;
                } else if !ctx.g.quiet {
                    println!("no turn open");
                }
                return Ok(0);
            }
        }
    } else {
        end(&ctx, session, None)?
    };
    if ctx.g.json {
        output::json(&t)?;
    } else if !ctx.g.quiet {
        print(&t);
    }
    Ok(0)
}

pub fn end(
    ctx: &Ctx,
    session: Option<String>,
    transcript: Option<String>,
) -> anyhow::Result<TurnEnded> {
    let t = match ctx.request(&Request::TurnEnd {
        dir: ctx.wire_dir(),
        session,
        transcript,
    })? {
        Response::TurnEnded(t) => t,
        other => return Err(unexpected(other)),
    };
    output::warn_degraded(&t.project, &t.degraded);
    Ok(t)
}

/// [`end`], but a session (or project) with no turn open is no error: a
/// session's end, with or without a turn running, closes what is open.
pub fn end_if_open(
    ctx: &Ctx,
    session: Option<String>,
    transcript: Option<String>,
) -> anyhow::Result<Option<TurnEnded>> {
    match end(ctx, session, transcript) {
        Err(e)
            if e.downcast_ref::<DaemonError>().is_some_and(|d| {
                // A folder never watched has no turn either.
                matches!(d.kind, ErrorKind::NoOpenTurn | ErrorKind::NotWatched)
            }) =>
        {
            Ok(None)
        }
        ended => ended.map(Some),
    }
}

/// [`end`], but no turn open in a watched project is no error (an agent's
/// turn-end hook after a prompt that changed nothing, or a second end);
/// a folder not watched still is.
pub fn end_unless_none_open(
    ctx: &Ctx,
    session: Option<String>,
    transcript: Option<String>,
) -> anyhow::Result<Option<TurnEnded>> {
    match end(ctx, session, transcript) {
        Err(e)
            if e.downcast_ref::<DaemonError>()
                .is_some_and(|d| d.kind == ErrorKind::NoOpenTurn) =>
        {
            Ok(None)
        }
        ended => ended.map(Some),
    }
}

pub fn print(t: &TurnEnded) {
    let info = &t.turn.info;
    if t.left_open {
        let owner = info.session.as_deref().unwrap_or("another session");
        println!("turn {} left open: session {owner} opened it", info.id);
        return;
    }
    println!(
        "turn {} closed: {}{}",
        info.id,
        output::counts_long(&info.counts),
        output::ledger_entries(info.ledger_entries)
    );
    output::entries(&t.turn.entries);
}
