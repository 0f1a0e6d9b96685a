//! `ckptctl status`: the daemon, every project, failing hooks, and the
//! conversation adapters (each agent's session directory and the format
//! version of its newest transcript).

use ckpt_proto::{Request, StatusReply};

use super::projects::print_project;
use super::Ctx;
use crate::output;
use ckpt_agents::calls::{self, Call, Calls};
use ckpt_agents::conversation::{self, AdapterStatus};
use ckpt_agents::{Agent, Home};

/// The daemon and every project: the document `--json` prints.
pub fn query(ctx: &Ctx) -> anyhow::Result<StatusReply> {
    ctx.ask(&Request::Status)
}

pub fn run(ctx: &Ctx) -> anyhow::Result<u8> {
    let s = query(ctx)?;
    let failing = failing_hooks(ctx);
    let adapters = Home::from_env()
        .map(|h| conversation::adapters_status(&h))
        .unwrap_or_default();
    if ctx.g.json {
        let mut doc = serde_json::to_value(&s)?;
        doc["failing_hooks"] = serde_json::json!(failing
            .iter()
            .map(|(agent, call)| serde_json::json!({"agent": agent.name(), "call": call}))
            .collect::<Vec<_>>());
        doc["conversation_adapters"] = serde_json::to_value(&adapters)?;
        output::json(&doc)?;
        return Ok(0);
    }
    let d = &s.daemon;
    println!(
        "ckptd {} (pid {}, protocol {}), up {}",
        d.version,
        d.pid,
        d.protocol,
        output::duration(d.uptime_s)
    );
    println!("socket: {}", d.socket);
    println!("data:   {}", d.data_dir);
    println!("watcher: {}", d.watcher);
    if s.projects.is_empty() {
        println!("no watched projects");
    }
    for p in &s.projects {
        print_project(p);
    }
    for (agent, call) in failing {
        let calls = Calls {
            last_error: Some(call),
            last_ok: None,
        };
        println!("hook {agent}: {}", last_call(agent, &calls));
    }
    for a in &adapters {
        print_adapter(a);
    }
    Ok(0)
}

fn print_adapter(a: &AdapterStatus) {
    let found = if a.found {
        format!("{} transcripts", a.transcripts)
    } else {
        "not found".to_string()
    };
    let newest = match (&a.newest_version, &a.newest_error) {
        (Some(v), _) => format!(", newest format {v}"),
        (None, Some(e)) => format!(", newest unreadable: {e}"),
        (None, None) => String::new(),
    };
    println!(
        "conversation adapter {}: {} ({found}{newest})",
        a.agent, a.session_dir
    );
}

/// The agents whose last hook call failed (the hook itself stayed quiet).
fn failing_hooks(ctx: &Ctx) -> Vec<(Agent, Call)> {
    let Ok(dir) = ctx.g.data_dir() else {
        return Vec::new();
    };
    Agent::ALL
        .iter()
        .filter_map(|&a| calls::read(&dir, a).failing().map(|c| (a, c.clone())))
        .collect()
}

/// "never", "3m ago, turn-end in /src/app", or the failure.
pub fn last_call(agent: Agent, calls: &Calls) -> String {
    if agent.payload().is_none() {
        return "(no hooks; MCP only)".to_string();
    }
    let ago = |at_ms: u64| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        format!("{} ago", output::duration(now.saturating_sub(at_ms) / 1000))
    };
    if let Some(e) = calls.failing() {
        return format!(
            "FAILED {}, {}: {}",
            ago(e.at_ms),
            e.event,
            e.error.as_deref().unwrap_or("?")
        );
    }
    match &calls.last_ok {
        Some(ok) => format!(
            "{}, {} in {}{}",
            ago(ok.at_ms),
            ok.event,
            ok.project.as_deref().unwrap_or("?"),
            ok.note
                .as_deref()
                .map_or(String::new(), |n| format!(" (ok: {n})"))
        ),
        None => "never".to_string(),
    }
}
