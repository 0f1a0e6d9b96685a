//! `ckptctl hooks install|uninstall|status`: ckpt's hooks and MCP server in
//! each agent's own config. Run by the `ckpt-hooks` executable.

use anyhow::Context;
use serde_json::json;

use ckpt_agents::calls;
use ckptctl::commands::status::last_call;
use ckptctl::commands::{sibling, Ctx};
use ckptctl::output;

use crate::agents::{Agent, AgentSpec, Home, Scope, Target};
use crate::cli::{HooksAction, HooksArgs};
use crate::detect::{scope_name, AgentReport, ScopeReport};
use crate::files;
use crate::install::{self as hooks, Action, Backup, Change, Installed};

pub fn run(ctx: &Ctx, action: HooksAction) -> anyhow::Result<u8> {
    let home = Home::from_env()?;
    // This runs as ckpt-hooks; the hooks run the ckptctl beside it.
    let ckptctl = sibling::path("ckptctl")?
        .canonicalize()
        .context("finding ckptctl next to ckpt-hooks (the hooks run it)")?;
    let project = ckpt_proto::paths::discover_root(&ctx.dir);
    let target = |scope| Target {
        scope,
        home: &home,
        project: &project,
        ckptctl: &ckptctl,
    };
    match action {
        HooksAction::Install(args) => change(ctx, &target(scope(&args)), args, Action::Install),
        HooksAction::Uninstall(args) => {
            let scope = scope(&args);
            let code = change(ctx, &target(scope), args, Action::Uninstall)?;
            if scope == Scope::User && !ctx.g.json && !ctx.g.quiet {
                print_project_hooks(&target(Scope::Project))?;
            }
            Ok(code)
        }
        HooksAction::Status => status(ctx, &target(Scope::User), &target(Scope::Project)),
    }
}

fn scope(args: &HooksArgs) -> Scope {
    if args.project {
        Scope::Project
    } else {
        Scope::User
    }
}

fn change(ctx: &Ctx, target: &Target, args: HooksArgs, action: Action) -> anyhow::Result<u8> {
    let agents = match (args.agents.is_empty(), action) {
        (false, _) => {
            let mut named = args.agents.clone();
            named.dedup();
            named
        }
        // Uninstall looks everywhere: it only takes out what is ours.
        (true, Action::Uninstall) => Agent::ALL.to_vec(),
        (true, Action::Install) => {
            let found: Vec<(Agent, String)> = Agent::ALL
                .iter()
                .filter_map(|&a| a.detect(target.home).map(|how| (a, how)))
                .collect();
            anyhow::ensure!(
                !found.is_empty(),
                "found no agent on this machine (no config dir, none on PATH); name one: \
                 ckptctl hooks install AGENT ({})",
                names(&Agent::ALL)
            );
            if !ctx.g.json && !ctx.g.quiet {
                println!("found:");
                for (a, how) in &found {
                    println!("  {a:<12} {how}");
                }
            }
            found.into_iter().map(|(a, _)| a).collect()
        }
    };
    let changes = hooks::plan(&agents, target, action)?;
    if !args.dry_run {
        hooks::apply(&changes, target)?;
    }
    let mut notes: Vec<String> = Vec::new();
    if action == Action::Install {
        for a in &agents {
            notes.extend(a.spec().after_install.map(|n| format!("{a}: {n}")));
            if !args.dry_run {
                notes.extend(pending(*a, target)?.map(|n| format!("{a}: {n}")));
            }
        }
    }
    if ctx.g.json {
        let files: Vec<_> = changes
            .iter()
            .map(|c| {
                json!({
                    "path": c.path,
                    "agents": names(&c.agents),
                    "change": what(c),
                    "backup": (matches!(c.backup, Backup::Write | Backup::Kept) && !args.dry_run)
                        .then(|| files::backup_path(&c.path)),
                    "backup_action": backup_name(c.backup),
                })
            })
            .collect();
        output::json(&json!({
            "action": match action { Action::Install => "install", Action::Uninstall => "uninstall" },
            "scope": match target.scope { Scope::User => "user", Scope::Project => "project" },
            "dry_run": args.dry_run,
            "agents": names(&agents),
            "files": files,
            "notes": notes,
        }))?;
        return Ok(0);
    }
    if ctx.g.quiet {
        return Ok(0);
    }
    // A file that neither was nor will be is not worth a line.
    for c in changes
        .iter()
        .filter(|c| c.old.is_some() || c.new.is_some())
    {
        if args.dry_run && c.changes() {
            print_diff(c);
        } else {
            println!(
                "{:<10} {} ({})",
                what(c),
                c.path.display(),
                names(&c.agents)
            );
        }
    }
    for c in changes.iter().filter(|c| c.backup == Backup::Kept) {
        println!(
            "note: {} changed since install: ckpt's entries were taken out, your \
             changes stay; the file as it was before install is in {}",
            c.path.display(),
            files::backup_path(&c.path).display()
        );
    }
    for n in &notes {
        println!("note: {n}");
    }
    Ok(0)
}

fn backup_name(b: Backup) -> &'static str {
    match b {
        Backup::Untouched => "none",
        Backup::Write => "written",
        Backup::Restored => "restored",
        Backup::Kept => "kept",
        Backup::Stale => "removed",
    }
}

/// After a user-level uninstall: the hooks still installed in this
/// project, which a user-level uninstall does not touch, and how to
/// remove them.
fn print_project_hooks(project: &Target) -> anyhow::Result<()> {
    let mut there = Vec::new();
    for agent in Agent::ALL {
        if hooks::installed(agent, project)? != Installed::No {
            there.push(agent);
        }
    }
    if !there.is_empty() {
        println!(
            "note: this project ({}) has its own hooks for {}: remove them with \
             `ckptctl hooks uninstall --project` in it",
            project.project.display(),
            names(&there)
        );
    }
    Ok(())
}

fn what(c: &Change) -> &'static str {
    match (&c.old, &c.new) {
        _ if !c.changes() => "unchanged",
        (None, Some(_)) => "created",
        (Some(_), None) => "removed",
        _ => "updated",
    }
}

fn names(agents: &[Agent]) -> String {
    let v: Vec<&str> = agents.iter().map(|a| a.name()).collect();
    v.join(", ")
}

fn print_diff(c: &Change) {
    let old = c.old.as_deref().unwrap_or("");
    let new = c.new.as_deref().unwrap_or("");
    let path = c.path.display().to_string();
    let diff = similar::TextDiff::from_lines(old, new);
    print!(
        "{}",
        diff.unified_diff()
            .header(&format!("a{path}"), &format!("b{path}"))
    );
}

fn status(ctx: &Ctx, user: &Target, project: &Target) -> anyhow::Result<u8> {
    let data_dir = ctx.g.data_dir().ok();
    let mut rows = Vec::new();
    for report in AgentReport::all(user, project)? {
        let calls = data_dir
            .as_deref()
            .map(|d| calls::read(d, report.agent))
            .unwrap_or_default();
        rows.push((report, calls));
    }
    if ctx.g.json {
        let agents: Vec<_> = rows
            .iter()
            .map(|(r, calls)| {
                let warning = |s: &ScopeReport| s.ckptctl.as_ref().map(|c| c.message.clone());
                json!({
                    "agent": r.agent.name(),
                    "detected": r.found,
                    "user": r.user.installed.name(),
                    "project": r.project.installed.name(),
                    "pending": {"user": r.user.pending, "project": r.project.pending},
                    "hooks": r.agent.payload().is_some(),
                    "mcp": {"user": r.user.mcp, "project": r.project.mcp},
                    "last_ok": calls.last_ok,
                    "last_error": calls.last_error,
                    "failing": calls.failing().is_some(),
                    "ckptctl_warning": {"user": warning(&r.user), "project": warning(&r.project)},
                })
            })
            .collect();
        output::json(&json!({ "project": project.project, "agents": agents }))?;
        return Ok(0);
    }
    println!("project: {}", project.project.display());
    println!(
        "{:<12} {:<8} {:<7} {:<8} last hook call",
        "agent", "found", "user", "project"
    );
    for (r, calls) in &rows {
        println!(
            "{:<12} {:<8} {:<7} {:<8} {}",
            r.agent.name(),
            if r.found.is_some() { "yes" } else { "no" },
            r.user.installed.name(),
            r.project.installed.name(),
            last_call(r.agent, calls)
        );
    }
    for (r, _) in &rows {
        for s in [&r.user, &r.project] {
            if let Some(p) = &s.pending {
                println!("{} ({}): {p}", r.agent, scope_name(s.scope));
            }
        }
        for s in [&r.user, &r.project] {
            if let Some(w) = &s.ckptctl {
                println!(
                    "warning: {} ({}): {}",
                    r.agent,
                    scope_name(s.scope),
                    w.message
                );
            }
        }
    }
    Ok(0)
}

/// What keeps the agent from running the hooks installed at the target's
/// scope (`Spec::pending`); nothing where none are installed.
fn pending(agent: Agent, target: &Target) -> anyhow::Result<Option<String>> {
    match agent.spec().pending {
        Some(check) if hooks::installed(agent, target)? != Installed::No => check(target),
        _ => Ok(None),
    }
}
