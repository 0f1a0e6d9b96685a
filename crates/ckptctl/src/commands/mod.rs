//! One file per subcommand, behind one central `match`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use ckpt_proto::{Request, Response, WirePath};
use clap::{Parser, Subcommand};

use crate::cli::*;
use crate::client::Client;

pub mod blame;
pub mod diff;
pub mod export;
mod fsck;
mod hook;
pub mod ledger;
pub mod log;
mod mcp;
mod projects;
pub mod rewind;
mod rewinds;
mod run;
mod service;
pub mod show;
pub mod sibling;
pub mod status;
mod sync;
mod tool;
mod turn_end;
mod turn_requests;
mod turn_start;
mod unwatch;
mod watch;

/// Rewind what an AI coding agent did to your project, turn by turn.
#[derive(Parser, Debug)]
#[command(name = "ckptctl", version, propagate_version = true)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

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
    /// Barrier, close the session's open turn (--session; without it, the
    /// default session's), open a new one; prints its id.
    TurnStart(TurnStartArgs),
    /// Barrier, close the session's open turn; prints what it changed.
    TurnEnd {
        /// The agent's session id: only its turn is closed; with none open,
        /// another session's turn is left open, and the reply says so.
        /// Without it, the default session's turn, or else the only open
        /// turn, is closed.
        #[arg(long)]
        session: Option<String>,
        /// The session ended or was interrupted (agents' session-end
        /// hooks): close its turn if it has one open; none open is no error.
        #[arg(long)]
        if_open: bool,
        #[command(flatten)]
        hook: FromHook,
    },
    /// A tool call of the session starts (agents' pre-tool hooks): until
    /// tool-end, a change seen while only this session runs tools goes to
    /// its turn alone instead of to every open turn.
    ToolStart {
        /// The agent's session id.
        #[arg(long)]
        session: Option<String>,
        #[command(flatten)]
        hook: FromToolHook,
    },
    /// The session's tool call ended (agents' post-tool hooks).
    ToolEnd {
        /// The agent's session id.
        #[arg(long)]
        session: Option<String>,
        #[command(flatten)]
        hook: FromToolHook,
    },
    /// Wait until every change made so far has been captured.
    Sync,
    /// Turns, newest first.
    Log {
        /// How many turns to list (1 or more).
        #[arg(short = 'n', long, default_value_t = LOG_LIMIT,
              value_parser = clap::value_parser!(u32).range(1..))]
        limit: u32,
        /// Every turn (retention keeps the newest 100, up to 14 days old).
        #[arg(long, conflicts_with = "limit")]
        all: bool,
        /// Only this session's turns.
        #[arg(long)]
        session: Option<String>,
    },
    /// The paths of one turn.
    Show {
        /// A turn id, as `ckptctl log` lists them.
        #[arg(value_parser = turn_id)]
        turn: i64,
    },
    /// Unified diff of a turn (pre-image to post-image, or to now if open).
    Diff {
        /// A turn id, as `ckptctl log` lists them.
        #[arg(value_parser = turn_id)]
        turn: i64,
        /// Only these paths (and what is below them).
        paths: Vec<PathBuf>,
    },
    /// Freeze turns as changes.patch (for `git apply`), files.zip,
    /// report.md and manifest.json, read from the store.
    Export {
        /// A turn (`4`) or a range of closed turns (`4..7`, both included).
        #[arg(value_parser = turn_range, value_name = "TURN[..TURN]")]
        range: (i64, i64),
        /// Where to write: a new or empty directory outside the project.
        #[arg(long)]
        out: PathBuf,
    },
    /// Each line of FILE with the turn that last introduced it (or
    /// `baseline`, or `user` for an edit made between turns).
    Blame {
        /// A text file in the project, as it is now.
        file: PathBuf,
    },
    /// Restore the state from just before TURN, undoing it and every later turn.
    Rewind(rewind::RewindArgs),
    /// Past rewinds and redos, newest first: when, which turns, whole or
    /// partial, and which paths were left as they were.
    Rewinds {
        /// How many to list (1 or more).
        #[arg(short = 'n', long, default_value_t = LOG_LIMIT,
              value_parser = clap::value_parser!(u32).range(1..))]
        limit: u32,
        /// Every one the store keeps.
        #[arg(long, conflicts_with = "limit")]
        all: bool,
    },
    /// Undo the last rewind exactly.
    #[command(mut_arg("force", |a| a.help("Overwrite paths edited since the rewind")))]
    Redo(rewind::RedoArgs),
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
        #[arg(long, value_name = "SECS", allow_negative_numbers = true, value_parser = quiet_secs)]
        bursts: Option<Duration>,
        /// The command and its arguments (after `--`).
        #[arg(required = true, trailing_var_arg = true)]
        command: Vec<std::ffi::OsString>,
    },
    /// Serve MCP on stdin/stdout (for the agent's model): tools to list,
    /// show, diff, rewind and redo turns of the project (-C's, else the
    /// current directory's) and to read the status. A rewind or redo only
    /// plans unless the tool call confirms it, and is never forced.
    Mcp,
    /// The slop ledger: residue a turn left (shims, unmigrated callers,
    /// dead code…) recorded so nobody mistakes it for design (`ckptctl
    /// ledger --help`).
    #[command(disable_help_flag = true)]
    Ledger(Family),
    /// Work copies: an independent copy of the project for an agent to work
    /// in, watched as a project of its own, previewed against the original
    /// (`ckptctl workcopy --help`).
    #[command(disable_help_flag = true)]
    Workcopy(Family),
    /// Wire ckpt into coding agents: their turn hooks and MCP server
    /// (`ckptctl hooks --help`).
    #[command(disable_help_flag = true)]
    Hooks(Family),
    /// Start ckptd at login: a systemd user unit (on macOS a launchd agent).
    Service {
        /// The service manager to write for [default: launchd on macOS,
        /// systemd elsewhere].
        #[arg(long, value_enum, global = true)]
        manager: Option<ServiceManager>,
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

/// What every command gets: the global flags and the directory it acts in.
pub struct Ctx {
    pub g: Global,
    /// Absolute: `-C DIR` or the current directory.
    pub dir: PathBuf,
}

impl Ctx {
    /// The context of the global flags: `-C DIR`, made absolute, or the
    /// current directory.
    pub fn new(g: Global) -> anyhow::Result<Ctx> {
        let g = g.with_env();
        let dir = match &g.dir {
            Some(d) => absolute(d)?,
            None => std::env::current_dir().context("reading the current directory")?,
        };
        Ok(Ctx { g, dir })
    }

    pub fn connect(&self) -> anyhow::Result<Client> {
        Client::connect(&self.g.connection())
    }

    /// Connects, sends one request, returns the reply.
    pub fn request(&self, req: &Request) -> anyhow::Result<Response> {
        self.connect()?.request(req)
    }

    pub fn wire_dir(&self) -> WirePath {
        WirePath::from(self.dir.as_path())
    }

    /// An absolute wire path for a path the user typed, relative to the cwd
    /// (not to `-C`, just as a shell would resolve it).
    pub fn wire_path(&self, p: &Path) -> anyhow::Result<WirePath> {
        Ok(WirePath::from(absolute(p)?))
    }
}

pub fn absolute(p: &Path) -> anyhow::Result<PathBuf> {
    if p.is_absolute() {
        return Ok(p.to_path_buf());
    }
    Ok(std::env::current_dir()
        .context("reading the current directory")?
        .join(p))
}

/// Runs the command; returns the exit code.
pub fn run(cli: Cli) -> anyhow::Result<u8> {
    if let (Some(_), Some(name)) = (&cli.global.dir, cli.command.projectless()) {
        usage_error(format!(
            "-C names a project, and `ckptctl {name}` acts on no single project; drop -C"
        ));
    }
    let ctx = Ctx::new(cli.global)?;
    match cli.command {
        Command::Watch { dir } => watch::run(&ctx, dir.as_deref()),
        Command::Unwatch { dir, drop_data } => unwatch::run(&ctx, dir.as_deref(), drop_data),
        Command::Projects => projects::run(&ctx),
        Command::TurnStart(args) => turn_start::run(ctx, args),
        Command::TurnEnd {
            session,
            if_open,
            hook,
        } => turn_end::run(ctx, session, if_open, hook),
        Command::ToolStart { session, hook } => tool::run(ctx, session, hook, true),
        Command::ToolEnd { session, hook } => tool::run(ctx, session, hook, false),
        Command::Sync => sync::run(&ctx),
        Command::Log {
            limit,
            all,
            session,
        } => log::run(&ctx, (!all).then_some(limit as usize), session),
        Command::Show { turn } => show::run(&ctx, turn),
        Command::Diff { turn, paths } => diff::run(&ctx, turn, &paths),
        Command::Export { range, out } => export::run(&ctx, range, &out),
        Command::Blame { file } => blame::run(&ctx, &file),
        Command::Rewind(args) => rewind::rewind(&ctx, args),
        Command::Rewinds { limit, all } => rewinds::run(&ctx, (!all).then_some(limit as usize)),
        Command::Redo(args) => rewind::redo(&ctx, args),
        Command::Status => status::run(&ctx),
        Command::Fsck => fsck::run(&ctx),
        Command::Run {
            turn,
            bursts,
            command,
        } => run::run(&ctx, turn, bursts, &command),
        Command::Service { manager, action } => service::run(&ctx, manager, action),
        Command::Mcp => mcp::run(&ctx),
        Command::Ledger(f) => {
            let (g, action) = f.parse::<LedgerCli>(&ctx.g);
            ledger::run(&Ctx::new(g)?, action)
        }
        // Its copy and walk stay out of the hook path: ckpt-workcopy runs it.
        Command::Workcopy(_) => sibling::forward(sibling::WORKCOPY, "the work copy tool"),
        // Its config editors stay out of the hook path: ckpt-hooks runs it.
        Command::Hooks(_) => sibling::forward(sibling::HOOKS, "the hooks installer"),
    }
}

/// The reply was not the one the request calls for.
pub fn unexpected(r: Response) -> anyhow::Error {
    anyhow::anyhow!("unexpected reply from ckptd: {r:?}")
}
