//! `ckpt-ui`, run as `ckptctl ui …` (with that command line as it is):
//! the terminal timeline. An executable of its own because ratatui and
//! crossterm would grow `ckptctl`, which every agent hook call starts.

use std::process::ExitCode;

use ckpt_ui::cli::UiCli;
use ckptctl::commands::{Cli, Command, Ctx};
use clap::Parser;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let json = cli.global.json;
    let result = match cli.command {
        Command::Ui(f) => {
            let (g, args) = f.parse::<UiCli>(&cli.global);
            Ctx::new(g).and_then(|ctx| ckpt_ui::app::run(ctx, args))
        }
        _ => Err(anyhow::anyhow!(
            "ckpt-ui runs only `ckptctl ui`; run the rest with ckptctl"
        )),
    };
    ckptctl::exit_code(result, json)
}
