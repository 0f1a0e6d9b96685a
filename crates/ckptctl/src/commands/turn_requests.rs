//! The requests that mark a turn's or a tool call's boundary, shared by
//! `turn-start`, `turn-end`, `tool-start` and `tool-end` and by their hook
//! calls (`hook`), which use them without those commands' printing.

use ckpt_proto::{ErrorKind, Request, ToolReply, TurnEnded, TurnStarted};

use super::Ctx;
use crate::cli::TurnMeta;
use crate::client::DaemonError;

/// `conversation`: where the agent's conversation stands (a hook call's
/// session adapter), kept on the turn.
pub fn start(
    ctx: &Ctx,
    args: TurnMeta,
    conversation: Option<String>,
) -> anyhow::Result<TurnStarted> {
    ctx.reply(&Request::TurnStart(ckpt_proto::TurnStart {
        dir: ctx.wire_dir(),
        label: args.label,
        agent: args.agent,
        session: args.session,
        transcript: args.transcript,
        auto_watch: true,
        conversation,
    }))
}

/// `list`: as [`ckpt_proto::TurnEnd::list`].
pub fn end(
    ctx: &Ctx,
    session: Option<String>,
    transcript: Option<String>,
    list: Option<u64>,
) -> anyhow::Result<TurnEnded> {
    ctx.reply(&Request::TurnEnd(ckpt_proto::TurnEnd {
        dir: ctx.wire_dir(),
        session,
        transcript,
        list,
    }))
}

/// [`end`], but a session (or project) with no turn open is no error: a
/// session's end, with or without a turn running, closes what is open.
pub fn end_if_open(
    ctx: &Ctx,
    session: Option<String>,
    transcript: Option<String>,
    list: Option<u64>,
) -> anyhow::Result<Option<TurnEnded>> {
    match end(ctx, session, transcript, list) {
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
/// a folder not watched still is. Lists no entry: a hook prints none.
pub fn end_unless_none_open(
    ctx: &Ctx,
    session: Option<String>,
    transcript: Option<String>,
) -> anyhow::Result<Option<TurnEnded>> {
    match end(ctx, session, transcript, Some(0)) {
        Err(e)
            if e.downcast_ref::<DaemonError>()
                .is_some_and(|d| d.kind == ErrorKind::NoOpenTurn) =>
        {
            Ok(None)
        }
        ended => ended.map(Some),
    }
}

/// `command`: the shell command a starting tool call runs, if its hook
/// names one.
pub fn window(
    ctx: &Ctx,
    session: Option<String>,
    start: bool,
    command: Option<String>,
) -> anyhow::Result<ToolReply> {
    let dir = ctx.wire_dir();
    let req = if start {
        Request::ToolStart {
            dir,
            session,
            command,
        }
    } else {
        Request::ToolEnd { dir, session }
    };
    ctx.reply(&req)
}
