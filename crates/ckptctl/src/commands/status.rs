//! `ckptctl status`: the daemon and every project.

use ckpt_proto::{Request, Response, StatusReply};

use super::projects::print_project;
use super::{unexpected, Ctx};
use crate::agents::Agent;
use crate::hooks::calls::{self, Call, Calls};
use crate::output;

/// The daemon and every project: the document `--json` prints.
pub fn query(ctx: &Ctx) -> anyhow::Result<StatusReply> {
    match ctx.request(&Request::Status)? {
        Response::Status(s) => Ok(s),
        other => Err(unexpected(other)),
    }
}

pub fn run(ctx: &Ctx) -> anyhow::Result<u8> {
    let s = query(ctx)?;
    let failing = failing_hooks(ctx);
    if ctx.g.json {
        let mut doc = serde_json::to_value(&s)?;
        doc["failing_hooks"] = serde_json::json!(failing
            .iter()
            .map(|(agent, call)| serde_json::json!({"agent": agent.name(), "call": call}))
            .collect::<Vec<_>>());
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
        println!("hook {agent}: {}", super::hooks::last_call(agent, &calls));
    }
    Ok(0)
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
