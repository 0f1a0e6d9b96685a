//! `ckpt-hooks`, run as `ckptctl hooks …` (with that command line as it
//! is): installs ckpt into coding agents' configs, uninstalls it, shows its
//! status. An executable of its own so that the config editors it links
//! (`jsonc-parser`, `toml_edit`, `similar`) stay out of `ckptctl`, started
//! on every hook call: they made it 3.63 MB against 2.96 MB (the hook call's
//! time did not differ measurably; docs/measurements.md).

use std::process::ExitCode;

use ckpt_hooks::cli::HooksCli;
use ckpt_hooks::command as hooks;
use ckptctl::commands::Ctx;
use ckptctl::commands::{Cli, Command};
use clap::Parser;

fn main() -> ExitCode {
    // SAFETY: at start-up, before any thread exists.
    unsafe { ckptctl::default_sigpipe() };
    // The shell's completion requests come here, never to ckptctl.
    ckpt_hooks::shell::complete_if_asked();
    let cli = Cli::parse();
    let json = cli.global.json;
    let result = match cli.command {
        Command::Hooks(f) => {
            let (g, action) = f.parse::<HooksCli>(&cli.global);
            Ctx::new(g).and_then(|ctx| hooks::run(&ctx, action))
        }
        Command::Completions(args) => ckpt_hooks::shell::completions(&args),
        Command::Man(args) => ckpt_hooks::shell::man(&args),
        _ => Err(anyhow::anyhow!(
            "ckpt-hooks runs only `ckptctl hooks|completions|man …`; run the rest with ckptctl"
        )),
    };
    ckptctl::exit_code(result, json)
}
