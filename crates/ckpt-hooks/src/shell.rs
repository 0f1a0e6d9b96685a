//! `ckptctl completions SHELL` and `ckptctl man`: the shell's completion
//! script and the manual pages, from `ckptctl`'s own clap command. They
//! live here, beside the other installers, so that clap_complete and
//! clap_mangen stay out of `ckptctl`, started on every hook call.
//!
//! Completion is clap_complete's dynamic kind: the script the shell loads
//! calls this executable (`CKPT_COMPLETE=bash ckpt-hooks -- ckptctl show
//! …`), which answers from the command line and, for turn numbers and
//! session ids, from the daemon (never starting one); work-copy names from
//! the work copies' own records.

use std::io::Write;
use std::path::Path;

use clap::CommandFactory;
use clap_complete::engine::{ArgValueCandidates, CompletionCandidate};
use clap_complete::env::{CompleteEnv, Shells};

use ckptctl::cli::{CompletionsArgs, Global, ManArgs};
use ckptctl::commands::{log, Cli, Ctx};

/// The environment variable that asks this executable for completions.
const VAR: &str = "CKPT_COMPLETE";

/// Answers a completion request and exits, when the shell made one.
pub fn complete_if_asked() {
    CompleteEnv::with_factory(command)
        .var(VAR)
        .bin("ckptctl")
        .complete();
}

/// `ckptctl`'s command, with the values the daemon knows attached to the
/// arguments that take them.
fn command() -> clap::Command {
    // `workcopy` is parsed by its sibling, so `ckptctl`'s tree holds only
    // its name: complete from the sibling's own tree.
    let cmd = Cli::command().mut_subcommand("workcopy", |outer| {
        let mut wc = ckpt_workcopy::cli::WorkcopyCli::command().name("workcopy");
        if let Some(about) = outer.get_about() {
            wc = wc.about(about.clone());
        }
        each_subcommands_args(wc, |a| match a.get_id().as_str() {
            "name" => a.add(ArgValueCandidates::new(workcopies)),
            _ => a,
        })
    });
    each_subcommands_args(cmd, |a| match a.get_id().as_str() {
        "turn" => a.add(ArgValueCandidates::new(turns)),
        "session" => a.add(ArgValueCandidates::new(sessions)),
        _ => a,
    })
}

/// `cmd` with every argument of each of its subcommands passed through `f`.
fn each_subcommands_args(
    mut cmd: clap::Command,
    f: impl Fn(clap::Arg) -> clap::Arg + Copy,
) -> clap::Command {
    let names: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    for name in names {
        // `mut_args` keeps the order (`mut_arg` moves an argument last,
        // which reorders positionals).
        cmd = cmd.mut_subcommand(name, |sub| sub.mut_args(f));
    }
    cmd
}

/// The project's turns, newest first, labelled; none when no daemon runs.
fn turns() -> Vec<CompletionCandidate> {
    recent()
        .iter()
        .map(|t| {
            let help = t.label.as_deref().unwrap_or("").replace('\n', " ");
            CompletionCandidate::new(t.id.to_string()).help(Some(help.into()))
        })
        .collect()
}

/// The sessions of the project's recent turns.
fn sessions() -> Vec<CompletionCandidate> {
    let mut seen: Vec<String> = Vec::new();
    for t in recent() {
        if let Some(s) = t.session {
            if !seen.contains(&s) {
                seen.push(s);
            }
        }
    }
    seen.into_iter().map(CompletionCandidate::new).collect()
}

/// The work copies' names, with the project each copies.
fn workcopies() -> Vec<CompletionCandidate> {
    let Ok(data) = Global::default().with_env().data_dir() else {
        return Vec::new();
    };
    ckpt_workcopy::state::Store::new(&data)
        .list()
        .unwrap_or_default()
        .into_iter()
        .map(|wc| {
            let help = wc.original.display().to_string();
            CompletionCandidate::new(wc.name).help(Some(help.into()))
        })
        .collect()
}

/// The current directory's project's newest turns; a completion never
/// starts the daemon, and a failure completes nothing.
fn recent() -> Vec<ckpt_proto::TurnInfo> {
    // Single-threaded still: the completer runs before anything else.
    std::env::set_var("CKPT_NO_AUTOSTART", "1");
    let Ok(ctx) = Ctx::new(Global::default()) else {
        return Vec::new();
    };
    log::query(&ctx, 100, None)
        .map(|l| l.body.turns)
        .unwrap_or_default()
}

/// `ckptctl completions SHELL`: the script that registers this executable
/// as `ckptctl`'s completer.
pub fn completions(args: &CompletionsArgs) -> anyhow::Result<u8> {
    let shell = args.shell.to_string();
    let shells = Shells::builtins();
    let Some(completer) = shells.completer(&shell) else {
        anyhow::bail!("no completion for the shell {shell}");
    };
    let me = std::env::current_exe()?;
    let mut out = std::io::stdout().lock();
    completer.write_registration(VAR, "ckptctl", "ckptctl", &me.to_string_lossy(), &mut out)?;
    out.flush()?;
    Ok(0)
}

/// `ckptctl man [--out DIR]`: ckptctl(1) on stdout, or a page per
/// command written into DIR.
pub fn man(args: &ManArgs) -> anyhow::Result<u8> {
    let cmd = Cli::command();
    match &args.out {
        Some(dir) => {
            std::fs::create_dir_all(dir)?;
            clap_mangen::generate_to(cmd, dir)?;
            let pages = std::fs::read_dir(dir)?
                .filter(|e| {
                    e.as_ref()
                        .is_ok_and(|e| Path::new(&e.file_name()).extension() == Some("1".as_ref()))
                })
                .count();
            println!("{pages} pages written to {}", dir.display());
        }
        None => {
            let mut out = std::io::stdout().lock();
            clap_mangen::Man::new(cmd).render(&mut out)?;
        }
    }
    Ok(0)
}
