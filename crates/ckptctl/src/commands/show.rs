//! `ckptctl show N`: the paths of one turn.

use ckpt_proto::{Request, Response, ShowReply, TurnStatus};

use super::{unexpected, Ctx};
use crate::output;

/// One turn and its paths: the document `--json` prints.
pub fn query(ctx: &Ctx, turn: i64) -> anyhow::Result<ShowReply> {
    match ctx.request(&Request::Show {
        dir: ctx.wire_dir(),
        turn,
    })? {
        Response::Show(s) => Ok(s),
        other => Err(unexpected(other)),
    }
}

pub fn run(ctx: &Ctx, turn: i64) -> anyhow::Result<u8> {
    let s = query(ctx, turn)?;
    output::warn_degraded(&s.project, &s.degraded);
    if ctx.g.json {
        output::json(&s)?;
        return Ok(0);
    }
    let i = &s.turn.info;
    let ended = i
        .ended_ns
        .map(|e| format!(", ended {}", output::time(e)))
        .unwrap_or_default();
    println!(
        "turn {} ({}), started {}{ended}",
        i.id,
        output::turn_state(i),
        output::time(i.started_ns)
    );
    if let Some(l) = &i.label {
        println!("label:   {l}");
    }
    if let Some(a) = &i.agent {
        println!("agent:   {a}");
    }
    if let Some(se) = &i.session {
        println!("session: {se}");
    }
    if let Some(p) = &i.partial {
        output::partial(p);
    }
    if let Some(t) = &i.transcript {
        println!("transcript: {t}");
    }
    if let Some(c) = &i.conversation {
        println!("conversation before the prompt: {c}");
    }
    println!(
        "{}{}",
        output::counts_long(&i.counts),
        output::ledger_entries(i.ledger_entries)
    );
    output::entries(&s.turn.entries);
    if i.status == TurnStatus::Open && !s.turn.entries.is_empty() {
        println!("(the turn is open: `*` marks paths changed so far; turn-end records how)");
    }
    Ok(0)
}
