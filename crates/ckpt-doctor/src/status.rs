//! `ckptctl status`: the daemon, every project (watcher, watches, capture
//! health, store size, open turns per session), the agents found with
//! their hooks and MCP server, failing hooks, and the conversation
//! adapters (each agent's session directory and the format version of its
//! newest transcript).

use anyhow::Context;
use serde_json::json;

use ckpt_agents::calls::{self, Call, Calls};
use ckpt_agents::conversation::{self, AdapterStatus};
use ckpt_agents::{Agent, Home};
use ckpt_hooks::agents::{Scope, Target};
use ckpt_hooks::detect::AgentReport;
use ckpt_proto::{DaemonInfo, ProjectInfo};
use ckptctl::commands::projects::print_project;
use ckptctl::commands::status::{last_call, query};
use ckptctl::commands::{sibling, Ctx};
use ckptctl::output;

pub fn run(ctx: &Ctx) -> anyhow::Result<u8> {
    let s = query(ctx)?;
    let failing = failing_hooks(ctx);
    let adapters = Home::from_env()
        .map(|h| conversation::adapters_status(&h))
        .unwrap_or_default();
    let agents = agent_reports(ctx)?;
    if ctx.g.json {
        let mut doc = serde_json::to_value(&s)?;
        doc["agents"] = json!(agents
            .iter()
            .filter(|r| r.relevant())
            .map(|r| {
                let mut a = r.json();
                a["summary"] = json!(r.summary());
                a
            })
            .collect::<Vec<_>>());
        doc["failing_hooks"] = json!(failing
            .iter()
            .map(|(agent, call)| json!({"agent": agent.name(), "call": call}))
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
    println!("watcher: {}", watcher(d));
    if let Some(e) = &d.config_error {
        println!("config: {e} (the last good settings stay in force)");
    }
    if s.projects.is_empty() {
        println!("no watched projects");
    }
    for p in &s.projects {
        print_project(p);
        print_project_detail(p);
    }
    let found: Vec<&AgentReport> = agents.iter().filter(|r| r.relevant()).collect();
    if found.is_empty() {
        println!("agents: none found (`ckptctl hooks install AGENT` names one)");
    }
    for r in found {
        println!("agent {}: {}", r.agent, r.summary());
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

/// `inotify, 57 watches`.
fn watcher(d: &DaemonInfo) -> String {
    match d.watches {
        Some(n) => format!("{}, {}", d.watcher, watches(n)),
        None => d.watcher.clone(),
    }
}

/// `1 watch`, `57 watches` (`output::count` makes nouns in -y plural).
fn watches(n: u64) -> String {
    if n == 1 {
        "1 watch".to_string()
    } else {
        format!("{n} watches")
    }
}

/// What `projects` leaves out: watches and each session's open turn.
fn print_project_detail(p: &ProjectInfo) {
    let mut line = format!("    {}", watches(p.watches));
    if p.open_turns.is_empty() {
        line.push_str(", no open turn");
    }
    for t in &p.open_turns {
        let session = t.session.as_deref().unwrap_or("default session");
        line.push_str(&format!(", turn {} open ({session})", t.turn));
    }
    println!("{line}");
    print_integrity(p);
}

/// Turns whose capture is not complete, with what to do about it (as
/// watchman's recrawl warning says how often it rescanned, and why).
fn print_integrity(p: &ProjectInfo) {
    if p.partial_turns > 0 {
        println!(
            "    {} with a partial capture: a rewind cannot restore everything they changed (`ckptctl log` marks them, \
             `ckptctl show N` says what is missing). To capture more: raise capture.max_file_mib \
             for large files, make unreadable files readable by you, and see `degraded` and \
             `ckptctl doctor` for the watch limit or a full disk",
            output::count(p.partial_turns, "turn")
        );
    }
    if p.rescanned_turns > 0 {
        println!(
            "    {} complete only after a rescan: the file watcher lost events (a queue \
             overflow). Nothing is missing; to avoid the rescans, raise \
             fs.inotify.max_queued_events (sysctl) or exclude busy directories in .ckptignore",
            output::count(p.rescanned_turns, "turn")
        );
    }
}

/// Every agent ckpt supports, read at user scope and at the scope of the
/// project holding the current directory (or `-C`'s).
pub fn agent_reports(ctx: &Ctx) -> anyhow::Result<Vec<AgentReport>> {
    let home = Home::from_env()?;
    // Installs run the ckptctl beside this executable: the same as here.
    let ckptctl = sibling::path("ckptctl")?;
    let ckptctl = ckptctl
        .canonicalize()
        .with_context(|| format!("finding {}", ckptctl.display()))?;
    let project = ckpt_proto::paths::discover_root(&ctx.dir);
    let target = |scope| Target {
        scope,
        home: &home,
        project: &project,
        ckptctl: &ckptctl,
    };
    AgentReport::all(&target(Scope::User), &target(Scope::Project))
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
