//! `ckptctl tool-start` and `tool-end`: a session's tool call, which
//! narrows where the changes seen meanwhile go (docs/architecture.md,
//! "Sessions").

use clap::Args;

use super::turn_requests::window;
use super::Ctx;
use crate::cli::TurnMeta;
use crate::output;
use ckpt_agents::{Agent, Event};

/// `ckptctl tool-start`'s and `tool-end`'s arguments.
#[derive(Args, Debug)]
pub struct ToolArgs {
    /// The agent's session id.
    #[arg(long)]
    pub session: Option<String>,
    #[command(flatten)]
    pub hook: FromToolHook,
}

/// `--from-hook` of tool-start and tool-end: only the agents that have
/// tool hooks (`Agent::WITH_TOOL_HOOKS`).
#[derive(Args, Debug, Clone, Default)]
pub struct FromToolHook {
    /// Called from AGENT's tool hook (`ckptctl hooks install` writes
    /// these): read its JSON payload on stdin and print nothing. It never
    /// fails the agent: any error is one line on stderr, exit 0, and shows
    /// in `hooks status`.
    #[arg(
        long,
        value_name = "AGENT",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = crate::cli::BARE_FROM_HOOK.name(),
        value_parser = tool_hook_agent()
    )]
    pub from_hook: Option<Agent>,
}

fn tool_hook_agent() -> impl clap::builder::TypedValueParser<Value = Agent> {
    use clap::builder::TypedValueParser;
    use clap::ValueEnum;
    let values = Agent::WITH_TOOL_HOOKS.map(|a| a.to_possible_value().expect("not hidden"));
    clap::builder::PossibleValuesParser::new(values)
        .map(|name| Agent::from_str(&name, false).expect("one of the possible values"))
}

pub fn run(ctx: Ctx, args: ToolArgs, start: bool) -> anyhow::Result<u8> {
    let ToolArgs { session, hook } = args;
    if let Some(agent) = hook.from_hook {
        let meta = TurnMeta {
            session,
            ..TurnMeta::default()
        };
        let event = if start {
            Event::ToolStart
        } else {
            Event::ToolEnd
        };
        return super::hook::run(ctx, agent, event, meta);
    }
    let r = window(&ctx, session, start, None)?;
    if ctx.g.json {
        output::json(&r)?;
    } else if !ctx.g.quiet {
        let turn = r
            .turn
            .map_or("no open turn".to_string(), |t| format!("turn {t}"));
        println!("{} tool call(s) running ({turn})", r.running);
    }
    Ok(0)
}
