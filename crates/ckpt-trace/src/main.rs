//! `ckpt-trace`, run as `ckptctl trace …`, `ckptctl blame --rev|--notes`
//! and `ckptctl ledger export --format sarif` (with that command line as
//! it is): provenance in the formats other tools read. An executable of
//! its own because it runs git and builds those formats, which `ckptctl`,
//! started on every hook call, should not link.
//!
//! ```text
//! $ ckptctl trace export 3..5 --out trace.json     # Agent Trace 0.1.0
//! $ ckptctl trace notes write origin/main..HEAD    # git-ai notes, refs/notes/ai
//! $ ckptctl blame src/lib.rs --notes               # in a clone without ckpt's history
//! $ ckptctl ledger export --format sarif > ledger.sarif
//! ```

use std::process::ExitCode;

use ckptctl::commands::ledger::{ExportFormat, LedgerAction, LedgerCli};
use ckptctl::commands::{Cli, Command, Ctx};
use clap::Parser;

mod agent_trace;
mod blame;
mod facts;
mod git;
mod model;
mod notes;
mod sarif;
mod trace;

fn main() -> ExitCode {
    // SAFETY: at start-up, before any thread exists.
    unsafe { ckptctl::default_sigpipe() };
    let cli = Cli::parse();
    let json = cli.global.json;
    let result = match cli.command {
        Command::Trace(f) => {
            let (g, action) = f.parse::<trace::TraceCli>(&cli.global);
            Ctx::new(g).and_then(|ctx| trace::run(&ctx, action))
        }
        Command::Blame(args) if args.rev.is_some() || args.notes => {
            Ctx::new(cli.global).and_then(|ctx| blame::run(&ctx, args))
        }
        Command::Ledger(f) => match f.parse::<LedgerCli>(&cli.global) {
            (
                g,
                LedgerAction::Export {
                    format: ExportFormat::Sarif,
                },
            ) => Ctx::new(g).and_then(|ctx| sarif::run(&ctx)),
            _ => Err(not_mine()),
        },
        _ => Err(not_mine()),
    };
    ckptctl::exit_code(result, json)
}

fn not_mine() -> anyhow::Error {
    anyhow::anyhow!(
        "ckpt-trace runs only `ckptctl trace …`, `ckptctl blame --rev|--notes` and `ckptctl ledger export --format sarif`; run the rest with ckptctl"
    )
}
