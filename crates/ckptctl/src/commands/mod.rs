//! One file per subcommand, behind one central `match`.

use std::path::{Path, PathBuf};

use anyhow::Context;
use ckpt_proto::{Request, Response, WirePath};

use crate::cli::{Cli, Command, Global, LedgerCli};
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
        crate::cli::usage_error(format!(
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
        Command::Service { action } => service::run(&ctx, action),
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
