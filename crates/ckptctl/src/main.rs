//! The `ckptctl` executable: parses the command line and runs the command
//! (the library's doc says what each does).

use std::process::ExitCode;

use ckptctl::{cli, commands};

fn main() -> ExitCode {
    // SAFETY: at start-up, before any thread exists.
    unsafe { ckptctl::default_sigpipe() };
    let cli = commands::parse(cli::args_with_merge_mode_joined(std::env::args_os()));
    let json = cli.global.json;
    ckptctl::exit_code(commands::run(cli), json)
}
