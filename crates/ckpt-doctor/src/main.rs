//! `ckpt-doctor`, run as `ckptctl status` and `ckptctl doctor` (with that
//! command line as it is). An executable of its own because both read the
//! agents' configs (`ckpt_hooks::detect`), whose parsers `ckptctl`, started
//! on every hook call, does not link.
//!
//! ```text
//! $ ckptctl doctor
//! ok    daemon: ckptd 0.1.0 (pid 4121) answers on /run/user/1000/ckpt/ckptd.sock, as this ckptctl
//! warn  service: no systemd user unit (~/.config/systemd/user/ckptd.service): ckptd starts on demand, not at login
//!       fix: ckptctl service install
//! ```

use std::process::ExitCode;

use ckptctl::commands::{Cli, Command, Ctx};
use clap::Parser;

mod checks;
mod finding;
mod status;

fn main() -> ExitCode {
    // SAFETY: at start-up, before any thread exists.
    unsafe { ckptctl::default_sigpipe() };
    let cli = Cli::parse();
    let json = cli.global.json;
    let result = match cli.command {
        Command::Status => Ctx::new(cli.global).and_then(|ctx| status::run(&ctx)),
        Command::Doctor => Ctx::new(cli.global).and_then(|ctx| checks::run(&ctx)),
        _ => Err(anyhow::anyhow!(
            "ckpt-doctor runs only `ckptctl status` and `ckptctl doctor`; run the rest with ckptctl"
        )),
    };
    ckptctl::exit_code(result, json)
}
