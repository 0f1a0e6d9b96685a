//! The command line, as clap derive types.

use std::path::PathBuf;

use clap::{Args, Parser};

use ckpt_agents::Agent;

#[derive(Args, Debug, Clone, Default)]
pub struct Global {
    /// Print one JSON document on stdout instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    // CKPT_SOCKET and CKPT_DATA_DIR are read in `with_env`, not by clap: an
    // option clap fills from the environment shows in every usage line as
    // if it were required ("Usage: ckptctl rewind --socket <PATH> …").
    /// The daemon's socket [env: CKPT_SOCKET] [default: $XDG_RUNTIME_DIR/ckpt/ckptd.sock].
    #[arg(long, global = true, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// The data dir given to a daemon this command starts [env: CKPT_DATA_DIR]
    /// [default: $XDG_DATA_HOME/ckpt].
    #[arg(long, global = true, value_name = "DIR")]
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
    /// Colour the output: auto (on a terminal, unless NO_COLOR; CLICOLOR_FORCE
    /// forces it), always or never. JSON is never coloured.
    #[arg(long, global = true, value_name = "WHEN", value_enum)]
    pub color: Option<crate::term::When>,
    /// Print diff, log and show straight to stdout instead of through the
    /// pager ($CKPT_PAGER, else $PAGER, else `less -FRX`; only on a terminal).
    #[arg(long, global = true)]
    pub no_pager: bool,
}

impl Global {
    /// `--socket` and `--data-dir`, else `CKPT_SOCKET` and `CKPT_DATA_DIR`.
    pub fn with_env(mut self) -> Global {
        let var = |name| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        self.socket = self.socket.or_else(|| var("CKPT_SOCKET"));
        self.data_dir = self.data_dir.or_else(|| var("CKPT_DATA_DIR"));
        self
    }

    /// `--data-dir`, else the default data dir.
    pub fn data_dir(&self) -> anyhow::Result<PathBuf> {
        crate::client::data_dir_or_default(self.data_dir.as_deref())
    }

    /// What the transport needs of these flags.
    pub fn connection(&self) -> crate::client::Connection {
        crate::client::Connection::new(self.socket.clone(), self.data_dir.clone())
    }
}

/// How many turns `log` (and the MCP server's list_turns) lists by default.
pub const LOG_LIMIT: u32 = 20;

/// The arguments of a family of subcommands (`ledger`, `workcopy`,
/// `hooks`), parsed only when that family runs ([`Family::parse`]): clap
/// builds every argument of a parser before it parses, and building these
/// families' took every hook call 30+ page faults and ~100 µs
/// (docs/measurements.md, "`ckptctl hooks` and the hook path").
#[derive(Args, Debug, Clone)]
pub struct Family {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<std::ffi::OsString>,
}

impl Family {
    /// Parses the family's arguments into `P` (named `ckptctl NAME` in its
    /// help), with `outer`'s global flags under those given after NAME.
    pub fn parse<P: FamilyCli>(&self, outer: &Global) -> (Global, P::Action) {
        let p = P::parse_from(
            std::iter::once(std::ffi::OsString::from("ckptctl")).chain(self.args.iter().cloned()),
        );
        let (inner, action) = p.split();
        (outer.clone().under(inner), action)
    }
}

/// A family's own parser: the global flags and its subcommands.
pub trait FamilyCli: Parser {
    type Action;
    fn split(self) -> (Global, Self::Action);
}

/// A family's parser (`ckpt-workcopy` and `ckpt-hooks` declare theirs
/// beside their commands).
#[macro_export]
macro_rules! family_cli {
    ($name:ident, $bin:literal, $action:ty, $about:literal) => {
        #[doc = $about]
        #[derive(clap::Parser, Debug)]
        #[command(name = $bin, bin_name = $bin, version, about = $about)]
        pub struct $name {
            #[command(flatten)]
            pub global: $crate::cli::Global,
            #[command(subcommand)]
            pub action: $action,
        }

        impl $crate::cli::FamilyCli for $name {
            type Action = $action;
            fn split(self) -> ($crate::cli::Global, $action) {
                (self.global, self.action)
            }
        }
    };
}

impl Global {
    /// These flags, with `inner`'s (given after a family's name) on top.
    pub fn under(self, inner: Global) -> Global {
        Global {
            json: self.json || inner.json,
            socket: inner.socket.or(self.socket),
            data_dir: inner.data_dir.or(self.data_dir),
            dir: inner.dir.or(self.dir),
            quiet: self.quiet || inner.quiet,
            color: inner.color.or(self.color),
            no_pager: self.no_pager || inner.no_pager,
        }
    }
}

/// A turn id: 1 or more.
pub(crate) fn turn_id(s: &str) -> Result<i64, String> {
    match s.parse::<i64>() {
        Ok(t) if t >= 1 => Ok(t),
        _ => Err("a turn id is a number from 1, as `ckptctl log` lists them".into()),
    }
}

/// `4` or `4..7` as (first, last); the daemon judges the order.
pub fn turn_range(s: &str) -> Result<(i64, i64), String> {
    let range = match s.split_once("..") {
        Some((a, b)) => turn_id(a).and_then(|a| Ok((a, turn_id(b)?))),
        None => turn_id(s).map(|t| (t, t)),
    };
    range.map_err(|e| format!("{e}; a range is TURN..TURN"))
}

/// The command line with `rewind --merge markers` read as
/// `--merge=markers`: `--merge` takes its mode only after `=` (alone it
/// means `clean`, and a turn may follow it), but a mode given as the next
/// word cannot be a turn, so it is joined. Nothing after `--` is touched.
pub fn args_with_merge_mode_joined(
    args: impl IntoIterator<Item = std::ffi::OsString>,
) -> Vec<std::ffi::OsString> {
    let mut out: Vec<std::ffi::OsString> = Vec::new();
    let mut rewind = false;
    let mut args = args.into_iter().peekable();
    while let Some(arg) = args.next() {
        if arg == "--" {
            out.push(arg);
            out.extend(args);
            break;
        }
        rewind |= arg == "rewind";
        let mode = args
            .peek()
            .filter(|next| rewind && arg == "--merge" && (*next == "clean" || *next == "markers"))
            .cloned();
        match mode {
            Some(mode) => {
                args.next();
                let mut joined = std::ffi::OsString::from("--merge=");
                joined.push(mode);
                out.push(joined);
            }
            None => out.push(arg),
        }
    }
    out
}

/// `ckptctl completions`' arguments (ckpt-hooks writes the script).
#[derive(Args, Debug, Clone)]
pub struct CompletionsArgs {
    /// The shell to complete in: load the script with
    /// `source <(ckptctl completions bash)` (zsh alike), or for fish
    /// `ckptctl completions fish | source`.
    pub shell: Shell,
}

/// The shells `completions` writes for.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

impl std::fmt::Display for Shell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Shell::Bash => "bash",
            Shell::Zsh => "zsh",
            Shell::Fish => "fish",
        })
    }
}

/// `ckptctl man`'s arguments (ckpt-hooks writes the pages).
#[derive(Args, Debug, Clone)]
pub struct ManArgs {
    /// Write ckptctl.1 and a page per command (ckptctl-show.1, …) into
    /// DIR instead of printing ckptctl.1.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
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

/// The agent a bare `--from-hook` names (Claude Code's hooks were the
/// first to pass it without a value).
pub const BARE_FROM_HOOK: Agent = Agent::ClaudeCode;

#[derive(Args, Debug, Clone, Default)]
pub struct FromHook {
    /// Called from AGENT's hook (`ckptctl hooks install` writes these):
    /// read its JSON payload on stdin (prompt → label, session, project
    /// dir, transcript) and print nothing. It never fails the agent: any
    /// error is one line on stderr, exit 0, and shows in `hooks status`.
    #[arg(
        long,
        value_name = "AGENT",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = BARE_FROM_HOOK.name()
    )]
    pub from_hook: Option<Agent>,
}

/// The arguments of `cmd` and its subcommands that have no `--help` text
/// (a family's `args` are its own parser's, checked by its own crate).
pub fn args_without_help(cmd: &clap::Command) -> Vec<String> {
    fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
        let path = format!("{path} {}", cmd.get_name());
        for arg in cmd.get_arguments() {
            let builtin = matches!(arg.get_id().as_str(), "help" | "version" | "args");
            if !builtin && !arg.is_hide_set() && arg.get_help().is_none() {
                missing.push(format!("{path} {}", arg.get_id()));
            }
        }
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            walk(sub, &path, missing);
        }
    }
    let mut missing = Vec::new();
    walk(cmd, "", &mut missing);
    missing
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_one_turn_or_two() {
        assert_eq!(turn_range("4"), Ok((4, 4)));
        assert_eq!(turn_range("4..7"), Ok((4, 7)));
        assert_eq!(turn_range("5..3"), Ok((5, 3)), "parsed; the daemon refuses");
        assert!(turn_range("4..").is_err());
        assert!(turn_range("x").is_err());
        assert!(turn_range("x..2").unwrap_err().contains("TURN..TURN"));
        assert!(turn_range("0").is_err());
        assert!(turn_range("-1").is_err());
    }

    /// Every argument of every subcommand says what it is in `--help`
    /// (issue 31 item 36 found `show <TURN>` and `--why` with none).
    #[test]
    fn every_argument_has_help() {
        use clap::CommandFactory;
        let mut missing = args_without_help(&crate::commands::Cli::command());
        missing.extend(args_without_help(
            &crate::commands::ledger::LedgerCli::command(),
        ));
        assert!(missing.is_empty(), "arguments without help: {missing:#?}");
    }
}
