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
}
