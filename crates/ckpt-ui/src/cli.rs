//! `ckptctl ui`'s command line, parsed only when it runs
//! (`ckptctl::cli::Family`).

use ckptctl::cli::{FamilyCli, Global};
use clap::{Args, Parser};

/// The timeline in the terminal: turns newest first, their files and
/// diffs, rewind, redo and merge after a confirmation, the ledger.
#[derive(Parser, Debug)]
#[command(name = "ckptctl ui", bin_name = "ckptctl ui", version)]
pub struct UiCli {
    #[command(flatten)]
    pub global: Global,
    #[command(flatten)]
    pub args: UiArgs,
}

#[derive(Args, Debug, Clone)]
pub struct UiArgs {
    /// Show only this session's turns at first (`s` cycles the sessions).
    #[arg(long)]
    pub session: Option<String>,
    /// How often to look for new turns, in milliseconds.
    #[arg(long, default_value_t = 1000, value_name = "MS",
          value_parser = clap::value_parser!(u64).range(100..))]
    pub refresh_ms: u64,
}

impl FamilyCli for UiCli {
    type Action = UiArgs;
    fn split(self) -> (Global, UiArgs) {
        (self.global, self.args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_argument_has_help() {
        use clap::CommandFactory;
        let missing = ckptctl::cli::args_without_help(&UiCli::command());
        assert!(missing.is_empty(), "arguments without help: {missing:#?}");
    }
}
