//! `ckptctl projects`: watched projects with their health.

use ckpt_proto::{Health, ProjectInfo, ProjectList, Request};

use super::Ctx;
use crate::output;

pub fn run(ctx: &Ctx) -> anyhow::Result<u8> {
    let list: ProjectList = ctx.ask(&Request::Projects)?;
    if ctx.g.json {
        output::json(&list)?;
    } else if list.projects.is_empty() {
        println!("no watched projects (`ckptctl watch` in a project starts)");
    } else {
        for p in &list.projects {
            print_project(p);
        }
    }
    Ok(0)
}

pub fn health(h: Health) -> &'static str {
    match h {
        Health::Ok => "ok",
        Health::Degraded => "DEGRADED",
        Health::Loading => "loading",
        Health::Unavailable => "UNAVAILABLE",
    }
}

/// Two lines or so per project, shared with `status`.
pub fn print_project(p: &ProjectInfo) {
    let mut line = format!(
        "{}  {}  {}  {} stored",
        p.root,
        health(p.health),
        output::count(p.entries, "entry"),
        output::bytes(p.store_bytes)
    );
    if let Some(t) = p.open_turn {
        line.push_str(&format!("  turn {t} open"));
    }
    if p.backlog > 0 {
        line.push_str(&format!("  backlog {}", p.backlog));
    }
    if p.skipped > 0 {
        line.push_str(&format!("  {} not captured", p.skipped));
    }
    if p.busy {
        line.push_str("  (busy)");
    }
    println!("{line}");
    if let Some(why) = &p.degraded {
        println!("    {}: {why}", health(p.health).to_lowercase());
    }
    if let Some(what) = &p.recovered {
        println!("    recovered: {what}");
    }
    if let Some(e) = &p.config_error {
        println!("    config error: {e} (the last good settings stay in force)");
    }
    if let Some(r) = &p.retention {
        println!("    retention: {}", retention(r));
    }
}

/// "keep 100 turns, 14 days, no budget; pinned 3; next: turn 1 goes …".
pub fn retention(r: &ckpt_proto::RetentionView) -> String {
    let p = &r.policy;
    let budget = p.budget_bytes.map_or("no budget".to_string(), |b| {
        format!("budget {}", output::bytes(b))
    });
    let mut s = format!(
        "keep {} turns, {} days, {budget}",
        p.keep_turns,
        p.max_age_secs / (24 * 3600)
    );
    if !r.pinned.is_empty() {
        s.push_str(&format!("; pinned {}", output::ids(&r.pinned)));
    }
    let next = match (r.due, r.next) {
        (Some(t), _) => format!("turns up to {t} are past it: the next gc drops them"),
        (None, Some(n)) if n.after_turns == 0 => {
            format!("turn {} goes once past {}", n.turn, output::time(n.at_ns))
        }
        (None, Some(n)) => format!(
            "turn {} goes once past {} and after {} more turns",
            n.turn,
            output::time(n.at_ns),
            n.after_turns
        ),
        (None, None) => "nothing to drop".to_string(),
    };
    s.push_str(&format!("; next: {next}"));
    if let Some(h) = r.held {
        s.push_str(&format!(
            "; kept from turn {} on ({})",
            h.turn,
            h.why.describe()
        ));
    }
    s
}
