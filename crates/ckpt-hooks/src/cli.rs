//! `ckptctl hooks …`'s command line, parsed only when that
//! family runs (`ckptctl::cli::Family`).

use clap::{Args, Subcommand};

use ckpt_agents::Agent;

ckptctl::family_cli!(
    HooksCli,
    "ckptctl hooks",
    HooksAction,
    "Wire ckpt into coding agents: their turn hooks and MCP server."
);

#[derive(Subcommand, Debug)]
pub enum HooksAction {
    /// Add ckpt's hooks (turn-start before the agent acts on a prompt,
    /// turn-end after it finishes) and its MCP server to each agent's own
    /// config, keeping everything else in it. Without AGENT: the agents
    /// found on this machine.
    Install(HooksArgs),
    /// Take out exactly what install added.
    Uninstall(HooksArgs),
    /// Per agent: found or not, installed at user and project level, and
    /// its hooks' last call.
    Status,
}

#[derive(Args, Debug)]
pub struct HooksArgs {
    /// The agents to act on [default: install, every agent found on this
    /// machine; uninstall, every agent].
    pub agents: Vec<Agent>,
    /// The project's config (the git top level of -C's or the current
    /// directory) instead of the user's.
    #[arg(long, conflicts_with = "user")]
    pub project: bool,
    /// The user's config, for every project [the default].
    #[arg(long)]
    pub user: bool,
    /// Show each file's change; write nothing.
    #[arg(long)]
    pub dry_run: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every argument says what it is in `--help` (as `ckptctl::cli`'s
    /// `every_argument_has_help` checks for the rest of the command line).
    #[test]
    fn every_argument_has_help() {
        use clap::CommandFactory;
        let missing = ckptctl::cli::args_without_help(&HooksCli::command());
        assert!(missing.is_empty(), "arguments without help: {missing:#?}");
    }
}
