//! One file per subcommand, behind one central `match`.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::Context;
use ckpt_proto::{Reply, Request, Response, WirePath};
use clap::{Parser, Subcommand};

use crate::cli::{Family, Global};
pub use crate::client::unexpected;
use crate::client::{Client, FromResponse};
use crate::output;

pub mod blame;
pub mod diff;
pub mod export;
mod fsck;
mod hook;
mod hook_line;
pub mod ledger;
pub mod log;
mod mcp;
pub mod projects;
mod retention;
pub mod rewind;
pub mod rewinds;
mod run;
pub mod service;
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
    Watch(watch::WatchArgs),
    /// Stop watching a project; its history is kept unless --drop-data.
    Unwatch(unwatch::UnwatchArgs),
    /// List watched projects.
    Projects,
    #[command(flatten)]
    Hook(HookCommand),
    /// Wait until every change made so far has been captured (and the
    /// space of files rewinds removed is free).
    Sync,
    /// Turns, newest first.
    Log(log::LogArgs),
    /// The paths of one turn.
    Show(show::ShowArgs),
    /// Unified diff of a turn (pre-image to post-image, or to now if open).
    Diff(diff::DiffArgs),
    /// Freeze turns as changes.patch (for `git apply`), files.zip,
    /// report.md and manifest.json, read from the store.
    Export(export::ExportArgs),
    /// Each line of FILE with the turn that last introduced it (or
    /// `baseline`, or `user` for an edit made between turns).
    Blame(blame::BlameArgs),
    /// Restore the state from just before TURN, undoing it and every later turn.
    Rewind(rewind::RewindArgs),
    /// Past rewinds and redos, newest first: when, which turns, whole or
    /// partial, and which paths were left as they were.
    Rewinds(rewinds::RewindsArgs),
    /// Undo the last rewind exactly.
    #[command(mut_arg("force", |a| a.help("Overwrite paths edited since the rewind")))]
    Redo(rewind::RedoArgs),
    /// The daemon; every project with its watcher, watches, capture
    /// health, store size and open turns per session; the agents found
    /// with their hooks, MCP server and conversation adapters.
    Status,
    /// Check the whole setup: the daemon and its version, the service,
    /// inotify watches against the limit, each agent's hooks (installed,
    /// trusted, running the ckptctl on PATH) and MCP server, free space,
    /// the stores (fsck), degraded projects. Each finding says ok, warn or
    /// fail, and the command that fixes it; exits 1 when any fails.
    Doctor,
    /// Check the project's store, read-only (blobs, references to them, the
    /// rewind journal, the database); exits 1 listing any problem. Safe
    /// while the daemon captures; repairs and deletes nothing.
    Fsck,
    /// Run a command as one turn: turn-start, the command, turn-end. Exits
    /// with the command's status. With --json, stdout holds only the JSON
    /// document: the command's stdout goes to stderr.
    Run(run::RunArgs),
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
    Service(service::ServiceArgs),
    /// Keep TURN, and every later turn, past retention.
    Pin(retention::PinArgs),
    /// Let retention drop TURN again.
    Unpin(retention::PinArgs),
    /// Run retention now: drop the turns past the policy (and, over the
    /// store budget, the oldest that may go), then unreferenced blobs;
    /// says the turns and bytes.
    Gc(retention::GcArgs),
    /// Settings: every value and where it comes from; `get`, `set`,
    /// `unset`, `--edit` (`ckptctl config --help`).
    #[command(disable_help_flag = true)]
    Config(Family),
    /// The shell's completion script: commands, flags, and the project's
    /// turn numbers and session ids as you type.
    Completions(crate::cli::CompletionsArgs),
    /// The manual page (roff), or with --out a page per command.
    Man(crate::cli::ManArgs),
    /// The timeline in the terminal: turns newest first, their files and
    /// diffs, rewind, redo and merge after a confirmation, the ledger
    /// (`ckptctl ui --help`).
    #[command(disable_help_flag = true)]
    Ui(Family),
    /// Provenance that travels: Agent Trace records of turns or a commit,
    /// git-ai notes under refs/notes/ai (`ckptctl trace --help`).
    #[command(disable_help_flag = true)]
    Trace(Family),
}

/// The commands agents' hooks call: read by [`hook_line`] without
/// building the whole command tree, and shown in `--help` where they sit.
#[derive(Subcommand, Debug)]
pub enum HookCommand {
    /// Barrier, close the session's open turn (--session; without it, the
    /// default session's), open a new one; prints its id.
    TurnStart(turn_start::TurnStartArgs),
    /// Barrier, close the session's open turn; prints what it changed.
    TurnEnd(turn_end::TurnEndArgs),
    /// A tool call of the session starts (agents' pre-tool hooks): until
    /// tool-end, a change seen while only this session runs tools goes to
    /// its turn alone instead of to every open turn.
    ToolStart(tool::ToolArgs),
    /// The session's tool call ended (agents' post-tool hooks).
    ToolEnd(tool::ToolArgs),
}

/// Parses the command line: a hook command (or `--version` alone) with
/// [`hook_line`], anything else, or anything it does not take, with
/// [`Cli`] (so every message is clap's).
pub fn parse(args: Vec<std::ffi::OsString>) -> Cli {
    if let Some(version) = hook_line::version(&args) {
        print!("{version}");
        std::process::exit(0);
    }
    hook_line::parse(&args).unwrap_or_else(|| Cli::parse_from(args))
}

impl Command {
    /// The name of a command that acts on no single project, where `-C`
    /// means nothing.
    pub fn projectless(&self) -> Option<&'static str> {
        match self {
            Command::Projects => Some("projects"),
            Command::Status => Some("status"),
            Command::Service(_) => Some("service"),
            Command::Completions(_) => Some("completions"),
            Command::Man(_) => Some("man"),
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
    /// The projects whose degraded capture was told already: a command
    /// that asks several times warns once.
    warned: Mutex<Vec<WirePath>>,
}

impl Ctx {
    /// The context of the global flags: `-C DIR`, made absolute, or the
    /// current directory.
    pub fn new(g: Global) -> anyhow::Result<Ctx> {
        let g = g.with_env();
        crate::term::init(g.color);
        let dir = match &g.dir {
            Some(d) => absolute(d)?,
            None => std::env::current_dir().context("reading the current directory")?,
        };
        Ok(Ctx {
            g,
            dir,
            warned: Mutex::default(),
        })
    }

    pub fn connect(&self) -> anyhow::Result<Client> {
        Client::connect(&self.g.connection())
    }

    /// Connects, sends one request, returns the reply.
    pub fn request(&self, req: &Request) -> anyhow::Result<Response> {
        self.connect()?.request(req)
    }

    /// [`Ctx::reply`] for a request that may take long (a scan, an
    /// apply): on a terminal, its progress is shown on stderr as `what`
    /// until the reply comes.
    pub fn reply_showing<T>(&self, req: &Request, what: &str) -> anyhow::Result<Reply<T>>
    where
        Reply<T>: FromResponse,
    {
        let r = Reply::<T>::from_response(self.request_showing(req, what)?)?;
        // Warned once the bar has cleared its line.
        self.warn_if_degraded(&r);
        Ok(r)
    }

    /// [`Ctx::request`] with its progress shown, as [`Ctx::reply_showing`].
    pub fn request_showing(&self, req: &Request, what: &str) -> anyhow::Result<Response> {
        if !crate::progress::wanted(self.g.json, self.g.quiet) {
            return self.request(req);
        }
        let mut client = Client::connect_asking(&self.g.connection(), true)?;
        let mut bar = crate::progress::Bar::start(what);
        let response = client.request_observed(req, &mut |p| bar.update(p));
        bar.finish();
        response
    }

    /// Connects, sends one request, and takes the reply it calls for.
    pub fn ask<T: FromResponse>(&self, req: &Request) -> anyhow::Result<T> {
        self.connect()?.reply(req)
    }

    /// [`Ctx::ask`] for a reply about one project: every command reads
    /// those through here, so each tells when capture is degraded.
    pub fn reply<T>(&self, req: &Request) -> anyhow::Result<Reply<T>>
    where
        Reply<T>: FromResponse,
    {
        let r = self.ask(req)?;
        self.warn_if_degraded(&r);
        Ok(r)
    }

    /// Every reply about a project may say its capture is degraded: warn
    /// on stderr (never on stdout, where `--json` prints), once per
    /// project.
    pub fn warn_if_degraded<T>(&self, r: &Reply<T>) {
        let Some(reason) = &r.degraded else {
            return;
        };
        let mut warned = self.warned.lock().unwrap_or_else(|e| e.into_inner());
        if !warned.contains(&r.project) {
            output::warn_degraded(&r.project, reason);
            warned.push(r.project.clone());
        }
    }

    /// Where a long human listing goes: through the pager unless
    /// `--no-pager` (and only on a terminal).
    pub fn paged(&self) -> crate::term::Output {
        crate::term::Output::new(!self.g.no_pager)
    }

    /// Stdout for human output, coloured when it should be.
    pub fn stdout(&self) -> crate::term::Output {
        crate::term::Output::new(false)
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
        Command::Watch(args) => watch::run(&ctx, args),
        Command::Unwatch(args) => unwatch::run(&ctx, args),
        Command::Projects => projects::run(&ctx),
        Command::Hook(HookCommand::TurnStart(args)) => turn_start::run(ctx, args),
        Command::Hook(HookCommand::TurnEnd(args)) => turn_end::run(ctx, args),
        Command::Hook(HookCommand::ToolStart(args)) => tool::run(ctx, args, true),
        Command::Hook(HookCommand::ToolEnd(args)) => tool::run(ctx, args, false),
        Command::Sync => sync::run(&ctx),
        Command::Log(args) => log::run(&ctx, args),
        Command::Show(args) => show::run(&ctx, args),
        Command::Diff(args) => diff::run(&ctx, args),
        Command::Export(args) => export::run(&ctx, args),
        Command::Blame(args) => blame::run(&ctx, args),
        Command::Rewind(args) => rewind::rewind(&ctx, args),
        Command::Rewinds(args) => rewinds::run(&ctx, args),
        Command::Redo(args) => rewind::redo(&ctx, args),
        // Both read the agents' configs: ckpt-doctor links their parsers.
        Command::Status | Command::Doctor => {
            sibling::forward(sibling::DOCTOR, "the status and doctor tool")
        }
        Command::Fsck => fsck::run(&ctx),
        Command::Run(args) => run::run(&ctx, args),
        Command::Service(args) => service::run(&ctx, args),
        Command::Mcp => mcp::run(&ctx),
        Command::Ledger(f) => {
            let (g, action) = f.parse::<ledger::LedgerCli>(&ctx.g);
            ledger::run(&Ctx::new(g)?, action)
        }
        // Its copy and walk stay out of the hook path: ckpt-workcopy runs it.
        Command::Workcopy(_) => sibling::forward(sibling::WORKCOPY, "the work copy tool"),
        // Its config editors stay out of the hook path: ckpt-hooks runs it.
        Command::Hooks(_) => sibling::forward(sibling::HOOKS, "the hooks installer"),
        Command::Pin(args) => retention::pin(&ctx, args, true),
        Command::Unpin(args) => retention::pin(&ctx, args, false),
        Command::Gc(args) => retention::gc(&ctx, args),
        // TOML editing and the editor stay out of the hook path.
        Command::Config(_) => sibling::forward(sibling::CONFIG, "the settings tool"),
        // clap_complete and clap_mangen too.
        Command::Completions(_) | Command::Man(_) => {
            sibling::forward(sibling::HOOKS, "the hooks installer")
        }
        // ratatui and crossterm stay out of the hook path: ckpt-ui runs it.
        Command::Ui(_) => sibling::forward(sibling::UI, "the terminal timeline"),
        // git, JSON schemas of other tools: ckpt-trace runs it.
        Command::Trace(_) => sibling::forward(sibling::TRACE, "the provenance tool"),
    }
}
