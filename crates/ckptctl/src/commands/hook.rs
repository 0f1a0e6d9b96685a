//! A hook call: `turn-start`, `turn-end`, `tool-start` or `tool-end
//! --from-hook=AGENT`. The agent's
//! payload (JSON on stdin) gives the label, session, project dir and
//! transcript, read by that agent's names (`agents::*`); a turn-start also
//! records where the agent's conversation stands (`conversation`). A hook call never
//! breaks the agent: whatever fails is one line on stderr and exit 0, and
//! the outcome is recorded for `hooks status` and `status`.

use std::io::{IsTerminal, Read};

use anyhow::{bail, Context};

use super::turn_requests as turn;
use super::{absolute, Ctx};
use crate::cli::TurnMeta;
use crate::output;
use ckpt_agents::calls;
use ckpt_agents::conversation;
use ckpt_agents::{Agent, Event};

pub fn run(mut ctx: Ctx, agent: Agent, event: Event, meta: TurnMeta) -> anyhow::Result<u8> {
    detach();
    let outcome = call(&mut ctx, agent, event, meta);
    if let Err(e) = &outcome {
        eprintln!(
            "ckptctl: {agent} hook ({}): {}",
            event.name(),
            output::error_message(e)
        );
    }
    let record = match outcome {
        Ok(Some(done)) => Some(Ok(done)),
        Ok(None) => None,
        Err(e) => Some(Err(output::error_message(&e))),
    };
    if let (Some(record), Ok(data_dir)) = (record, ctx.g.data_dir()) {
        calls::record(&data_dir, agent, event, record);
    }
    Ok(0)
}

/// Leaves the agent's process group before anything else: an agent may
/// not wait for a hook (Claude Code exits ~30 ms after starting a
/// `StopFailure` hook), and a supervisor that then kills its process group,
/// or a Ctrl-C to the terminal's foreground group, must not stop a turn-end
/// on its way to the daemon, which finishes a request it has read. A group
/// of its own, not a session: `setsid` made each hook call 1.4 ms slower
/// (a new scheduler autogroup per call; docs/measurements.md). It fails
/// only for a session leader, which is outside the agent's group already.
/// An agent that is exiting (Ctrl-C, its SessionEnd budget spent) may also
/// signal its hook children directly: a hook call is short and ends by
/// itself, so it lets SIGINT, SIGTERM and SIGHUP pass and finishes.
fn detach() {
    // SAFETY: setpgid has no preconditions; its failure is harmless (above).
    unsafe { libc::setpgid(0, 0) };
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: SIG_IGN is a valid disposition for these signals.
        unsafe { libc::signal(sig, libc::SIG_IGN) };
    }
}

/// What the call did (the project it acted on, and a note when that was
/// nothing); None if the payload was not this agent's to act on.
fn call(
    ctx: &mut Ctx,
    agent: Agent,
    event: Event,
    mut meta: TurnMeta,
) -> anyhow::Result<Option<calls::Done>> {
    let payload = agent.payload().with_context(|| {
        format!("{agent} has no hooks (ckpt reaches it through MCP: `ckptctl mcp`)")
    })?;
    let input = payload.parse(&read_stdin()?)?;
    if input.other_agent {
        return Ok(None);
    }
    if let (Some(cwd), None) = (&input.cwd, &ctx.g.dir) {
        ctx.dir = absolute(cwd)?;
    }
    ctx.g.quiet = true;
    ctx.g.json = false;
    meta.session = meta.session.or(input.session);
    meta.transcript = meta.transcript.or(input.transcript);
    let project = match event {
        Event::TurnStart => {
            meta.label = meta.label.or(input.prompt);
            meta.agent = meta.agent.or_else(|| Some(agent.name().to_string()));
            // Read before the daemon's barrier, from the transcript's tail
            // only (`conversation::TAIL_BYTES`).
            let conversation = meta
                .transcript
                .as_deref()
                .and_then(|t| conversation::record(agent.name(), t));
            turn::start(ctx, meta, conversation)?.project
        }
        // Copilot CLI names its transcript only when the turn ends. A turn
        // already closed (or a prompt that never opened one) is no failure.
        Event::TurnEnd => match turn::end_unless_none_open(ctx, meta.session, meta.transcript)? {
            Some(t) => t.project,
            None => return Ok(Some(nothing_to_close(ctx))),
        },
        Event::SessionEnd => {
            match turn::end_if_open(ctx, meta.session, meta.transcript, Some(0))? {
                Some(t) => t.project,
                None => return Ok(Some(nothing_to_close(ctx))),
            }
        }
        Event::ToolStart => turn::window(ctx, meta.session, true, input.command)?.project,
        Event::ToolEnd => turn::window(ctx, meta.session, false, None)?.project,
    };
    Ok(Some(calls::Done {
        project: project.to_string(),
        note: None,
    }))
}

/// A turn end that found no turn open: normal, and recorded as a no-op.
fn nothing_to_close(ctx: &Ctx) -> calls::Done {
    calls::Done {
        project: ctx.dir.display().to_string(),
        note: Some(calls::NO_TURN_OPEN.to_string()),
    }
}

fn read_stdin() -> anyhow::Result<String> {
    let mut stdin = std::io::stdin();
    if stdin.is_terminal() {
        bail!("--from-hook reads the hook's JSON on stdin, but stdin is a terminal");
    }
    let mut text = String::new();
    stdin
        .read_to_string(&mut text)
        .context("reading the hook's input on stdin")?;
    Ok(text)
}
