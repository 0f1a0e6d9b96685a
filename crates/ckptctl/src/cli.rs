//! The command line, as clap derive types.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Rewind what an AI coding agent did to your project, turn by turn.
#[derive(Parser, Debug)]
#[command(name = "ckptctl", version, propagate_version = true)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Args, Debug, Clone)]
pub struct Global {
    /// Print one JSON document on stdout instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    /// The daemon's socket [default: $XDG_RUNTIME_DIR/ckpt/ckptd.sock].
    #[arg(long, global = true, env = "CKPT_SOCKET", value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// The data dir given to a daemon this command starts [default: $XDG_DATA_HOME/ckpt].
    #[arg(long, global = true, env = "CKPT_DATA_DIR", value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Act on the project containing DIR instead of the current directory
    /// (refused by the commands that act on no single project).
    // Its own id: with the default `dir`, the `dir` arguments of watch and
    // unwatch shadowed it there ("unexpected argument '-C'").
    #[arg(short = 'C', global = true, value_name = "DIR", id = "project_dir")]
    pub dir: Option<PathBuf>,
    /// Print nothing on success (errors still go to stderr).
    #[arg(short, long, global = true)]
    pub quiet: bool,
}

/// How many turns `log` (and the MCP server's list_turns) lists by default.
pub const LOG_LIMIT: usize = 20;

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Watch a project; returns when the baseline is complete. Without DIR:
    /// the git top-level containing -C's directory (or the current one),
    /// else that directory.
    Watch {
        /// The directory to watch, exactly (not together with -C).
        dir: Option<PathBuf>,
    },
    /// Stop watching a project; its history is kept unless --drop-data.
    Unwatch {
        /// A directory inside the project [default: -C's, else the current
        /// directory].
        dir: Option<PathBuf>,
        /// Delete the project's stored history too.
        #[arg(long)]
        drop_data: bool,
    },
    /// List watched projects.
    Projects,
    /// Barrier, close any open turn, open a new one; prints its id.
    TurnStart(TurnStartArgs),
    /// Barrier, close the open turn; prints what it changed.
    TurnEnd {
        /// The agent's session id: a turn that another session opened is
        /// left open, and the reply says so. Without it, any open turn is
        /// closed.
        #[arg(long)]
        session: Option<String>,
        /// Called from a Claude Code hook (Stop): read the hook's JSON on
        /// stdin (`session_id` → session, `cwd` → project) and print nothing
        /// on success.
        #[arg(long)]
        from_hook: bool,
    },
    /// Wait until every change made so far has been captured.
    Sync,
    /// Turns, newest first.
    Log {
        /// How many turns to list.
        #[arg(short = 'n', long, default_value_t = LOG_LIMIT)]
        limit: usize,
    },
    /// The paths of one turn.
    Show { turn: i64 },
    /// Unified diff of a turn (pre-image to post-image, or to now if open).
    Diff {
        /// A turn id, as `ckptctl log` lists them.
        turn: i64,
        /// Only these paths (and what is below them).
        paths: Vec<PathBuf>,
    },
    /// Restore the state from just before TURN, undoing it and every later turn.
    Rewind {
        /// The oldest turn to undo (it and every later live turn are undone).
        turn: i64,
        /// Only these paths (and what is below them); repeatable.
        #[arg(long = "path", value_name = "PATH")]
        paths: Vec<PathBuf>,
        /// Show what would change; change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Overwrite paths edited after the agent.
        #[arg(long)]
        force: bool,
    },
    /// Undo the last rewind exactly.
    Redo {
        /// Show what would change; change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Overwrite paths edited since the rewind.
        #[arg(long)]
        force: bool,
    },
    /// The daemon and every project.
    Status,
    /// Check the project's store, read-only (blobs, references to them, the
    /// rewind journal, the database); exits 1 listing any problem. Safe
    /// while the daemon captures; repairs and deletes nothing.
    Fsck,
    /// Run a command as one turn: turn-start, the command, turn-end. Exits
    /// with the command's status. With --json, stdout holds only the JSON
    /// document: the command's stdout goes to stderr.
    Run {
        #[command(flatten)]
        turn: TurnMeta,
        /// Start a new turn whenever the tree has been quiet for SECS
        /// seconds after a change (for agents without hooks), so a whole
        /// session is not one turn. Fractions allowed (0.5).
        #[arg(long, value_name = "SECS", allow_negative_numbers = true)]
        bursts: Option<String>,
        /// The command and its arguments (after `--`).
        #[arg(required = true, trailing_var_arg = true)]
        command: Vec<std::ffi::OsString>,
    },
    /// Serve MCP on stdin/stdout (for the agent's model): tools to list,
    /// show, diff, rewind and redo turns of the project (-C's, else the
    /// current directory's) and to read the status. A rewind or redo only
    /// plans unless the tool call confirms it, and is never forced.
    Mcp,
    /// Start ckptd at login: a systemd user unit (on macOS a launchd agent,
    /// which no test runs).
    Service {
        #[command(subcommand)]
        action: ServiceAction,
    },
}

impl Command {
    /// The name of a command that acts on no single project, where `-C`
    /// means nothing.
    pub fn projectless(&self) -> Option<&'static str> {
        match self {
            Command::Projects => Some("projects"),
            Command::Status => Some("status"),
            Command::Service { .. } => Some("service"),
            _ => None,
        }
    }
}

/// Exits with a usage error (exit 2), as clap does for what it checks.
pub fn usage_error(message: impl std::fmt::Display) -> ! {
    use clap::CommandFactory;
    Cli::command()
        .error(clap::error::ErrorKind::ArgumentConflict, message)
        .exit()
}

/// Who opens a turn and why.
#[derive(Args, Debug, Clone, Default)]
pub struct TurnMeta {
    /// What the turn is about (e.g. the prompt).
    #[arg(long)]
    pub label: Option<String>,
    /// Which agent makes the turn.
    #[arg(long)]
    pub agent: Option<String>,
    /// The agent's session id.
    #[arg(long)]
    pub session: Option<String>,
    /// The agent's transcript (conversation) file.
    #[arg(long, value_name = "PATH")]
    pub transcript: Option<String>,
}

#[derive(Args, Debug, Clone, Default)]
pub struct TurnStartArgs {
    #[command(flatten)]
    pub meta: TurnMeta,
    /// Called from a Claude Code hook (UserPromptSubmit): read the hook's
    /// JSON on stdin (`prompt` → label, `session_id` → session, `cwd` →
    /// project) and print nothing on success, so nothing is added to the
    /// agent's context.
    #[arg(long)]
    pub from_hook: bool,
}

#[derive(Subcommand, Debug)]
pub enum ServiceAction {
    /// Write the unit (or plist) and enable it.
    Install {
        /// Only write the file; do not enable or start the service.
        #[arg(long)]
        no_start: bool,
    },
    /// Disable and remove it.
    Uninstall,
}
