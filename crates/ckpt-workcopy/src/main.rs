//! `ckpt-workcopy`, run as `ckptctl workcopy …` (with that command line as
//! it is): work copies. An executable of its own because what it links
//! (ckpt-core's walk with the `ignore` crate's matchers, for the capture
//! rules) took `ckptctl`, started on every hook call, from 3.3 to 5.1 MB.

use std::process::ExitCode;

use ckpt_workcopy::cli::WorkcopyCli;
use ckpt_workcopy::command as workcopy;
use ckptctl::commands::Ctx;
use ckptctl::commands::{Cli, Command};
use clap::Parser;

fn main() -> ExitCode {
    // SAFETY: at start-up, before any thread exists.
    unsafe { ckptctl::default_sigpipe() };
    let cli = Cli::parse();
    let json = cli.global.json;
    let result = match cli.command {
        Command::Workcopy(f) => {
            let (g, action) = f.parse::<WorkcopyCli>(&cli.global);
            Ctx::new(g).and_then(|ctx| workcopy::run(&ctx, action))
        }
        _ => Err(anyhow::anyhow!(
            "ckpt-workcopy runs only `ckptctl workcopy …`; run the rest with ckptctl"
        )),
    };
    ckptctl::exit_code(result, json)
}
