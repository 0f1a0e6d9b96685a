//! The command line, as clap derive types.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use ckpt_agents::Agent;

#[derive(Args, Debug, Clone)]
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

family_cli!(
    LedgerCli,
    "ckptctl ledger",
    LedgerAction,
    "The slop ledger: residue a turn left, recorded so nobody mistakes it for design."
);

impl Global {
    /// These flags, with `inner`'s (given after a family's name) on top.
    pub fn under(self, inner: Global) -> Global {
        Global {
            json: self.json || inner.json,
            socket: inner.socket.or(self.socket),
            data_dir: inner.data_dir.or(self.data_dir),
            dir: inner.dir.or(self.dir),
            quiet: self.quiet || inner.quiet,
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
pub(crate) fn turn_range(s: &str) -> Result<(i64, i64), String> {
    let range = match s.split_once("..") {
        Some((a, b)) => turn_id(a).and_then(|a| Ok((a, turn_id(b)?))),
        None => turn_id(s).map(|t| (t, t)),
    };
    range.map_err(|e| format!("{e}; a range is TURN..TURN"))
}

/// One of a ledger value's spellings, checked by the core's own list.
fn spelled<T: 'static>(
    parse: fn(&str) -> ckpt_core::Result<T>,
    as_str: fn(T) -> &'static str,
) -> impl Fn(&str) -> Result<String, String> + Clone + Send + Sync + 'static {
    move |s| {
        parse(s)
            .map(|v| as_str(v).to_string())
            .map_err(|e| e.to_string())
    }
}

fn confidence(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(c) if (0.0..=1.0).contains(&c) => Ok(c),
        _ => Err("a confidence is a number between 0 and 1".into()),
    }
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
    #[command(flatten)]
    pub hook: FromHook,
}

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
        default_missing_value = "claude-code"
    )]
    pub from_hook: Option<Agent>,
}

/// `--from-hook` of tool-start and tool-end: only the agents that have
/// tool hooks (`Agent::WITH_TOOL_HOOKS`).
#[derive(Args, Debug, Clone, Default)]
pub struct FromToolHook {
    /// Called from AGENT's tool hook (`ckptctl hooks install` writes
    /// these): read its JSON payload on stdin and print nothing. It never
    /// fails the agent: any error is one line on stderr, exit 0, and shows
    /// in `hooks status`.
    #[arg(
        long,
        value_name = "AGENT",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "claude-code",
        value_parser = tool_hook_agent()
    )]
    pub from_hook: Option<Agent>,
}

fn tool_hook_agent() -> impl clap::builder::TypedValueParser<Value = Agent> {
    use clap::builder::TypedValueParser;
    use clap::ValueEnum;
    let values = Agent::WITH_TOOL_HOOKS.map(|a| a.to_possible_value().expect("not hidden"));
    clap::builder::PossibleValuesParser::new(values)
        .map(|name| Agent::from_str(&name, false).expect("one of the possible values"))
}

#[derive(Subcommand, Debug)]
pub enum LedgerAction {
    /// Record residue at PATH (the whole file), PATH:LINE or PATH:START-END,
    /// in the open turn if there is one.
    Add {
        /// PATH[:LINE[-LINE]], PATH relative to the current directory.
        target: String,
        /// compat-shim, unmigrated-callers, duplicate-concept, naming-drift,
        /// stale-docs-tests, suspected-dead-code or tool-gap.
        #[arg(long, value_parser = spelled(ckpt_core::Bucket::parse, ckpt_core::Bucket::as_str))]
        bucket: String,
        /// low, medium, high or critical.
        #[arg(long, value_parser = spelled(ckpt_core::Severity::parse, ckpt_core::Severity::as_str))]
        severity: String,
        /// How sure you are, from 0 to 1.
        #[arg(long, value_parser = confidence)]
        confidence: f64,
        /// A person, a team or agent:NAME [default: agent:<the open
        /// turn's agent>, else $USER].
        #[arg(long)]
        owner: Option<String>,
        /// What it is and what should become of it.
        #[arg(long)]
        note: String,
    },
    /// Entries, oldest first, with where their lines are now.
    List(LedgerListArgs),
    /// One entry with its history.
    Show {
        /// An entry id, as `ckptctl ledger list` lists them.
        id: i64,
    },
    /// Mark an entry resolved (or won't fix).
    Resolve {
        /// An entry id, as `ckptctl ledger list` lists them.
        id: i64,
        /// Won't fix rather than resolved.
        #[arg(long)]
        wont_fix: bool,
        /// Why: what fixed it, or why it stays.
        #[arg(long)]
        why: String,
        /// Who decided [default: $USER].
        #[arg(long)]
        who: Option<String>,
    },
    /// Open a resolved or won't-fix entry again.
    Reopen {
        /// An entry id, as `ckptctl ledger list` lists them.
        id: i64,
        /// Why it is open again.
        #[arg(long)]
        why: String,
        /// Who decided [default: $USER].
        #[arg(long)]
        who: Option<String>,
    },
    /// Every entry, with its history: JSON (for `ledger import` in another
    /// clone) or Markdown (for a pull-request description).
    Export {
        /// JSON for `ledger import`, Markdown for people.
        #[arg(long, value_enum, default_value_t = ExportFormat::Json)]
        format: ExportFormat,
    },
    /// Add the entries of a JSON export from another clone of the project;
    /// entries already here are skipped.
    Import {
        /// A file written by `ckptctl ledger export --format json`.
        file: PathBuf,
    },
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormat {
    Json,
    Markdown,
}

#[derive(Args, Debug, Clone, Default)]
pub struct LedgerListArgs {
    /// Only this bucket (as `ledger add --bucket` takes).
    #[arg(long, value_parser = spelled(ckpt_core::Bucket::parse, ckpt_core::Bucket::as_str))]
    pub bucket: Option<String>,
    /// This severity or worse.
    #[arg(long, value_name = "SEVERITY", value_parser = spelled(ckpt_core::Severity::parse, ckpt_core::Severity::as_str))]
    pub min_severity: Option<String>,
    /// This confidence or more, from 0 to 1.
    #[arg(long, value_name = "C", value_parser = confidence)]
    pub min_confidence: Option<f64>,
    /// Entries about this path or below it (relative to the current directory).
    #[arg(long, value_name = "PREFIX")]
    pub path: Option<PathBuf>,
    /// Entries recorded in this turn.
    #[arg(long, value_parser = turn_id)]
    pub turn: Option<i64>,
    /// Entries recorded in turns of this agent.
    #[arg(long)]
    pub agent: Option<String>,
    /// Entries owned by this person, team or agent:NAME.
    #[arg(long)]
    pub owner: Option<String>,
    /// open, resolved, wont-fix or rewound.
    #[arg(long, value_parser = spelled(ckpt_core::LedgerStatus::parse, ckpt_core::LedgerStatus::as_str))]
    pub status: Option<String>,
    /// fresh, moved, changed or gone.
    #[arg(long, value_parser = spelled(ckpt_core::AnchorState::parse, ckpt_core::AnchorState::as_str))]
    pub anchor: Option<String>,
}

/// The service managers `service` writes for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ServiceManager {
    /// A systemd user unit (`~/.config/systemd/user/ckptd.service`).
    Systemd,
    /// A launchd agent (`~/Library/LaunchAgents/dev.ckpt.ckptd.plist`).
    Launchd,
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

/// The quiet time `--bursts` takes: seconds, fractions allowed, above 0.
pub fn quiet_secs(text: &str) -> Result<Duration, String> {
    let bad =
        || format!("--bursts takes a number of seconds above 0 (e.g. 2 or 0.5), not '{text}'");
    let secs: f64 = text.trim().parse().map_err(|_| bad())?;
    // Refuses negatives, NaN and infinities; rounds what is below 1 ns to 0.
    let quiet = Duration::try_from_secs_f64(secs).map_err(|_| bad())?;
    if quiet.is_zero() {
        return Err(bad());
    }
    Ok(quiet)
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

    #[test]
    fn quiet_times_are_positive_seconds() {
        assert_eq!(quiet_secs("0.5"), Ok(Duration::from_millis(500)));
        assert_eq!(quiet_secs("2"), Ok(Duration::from_secs(2)));
        for bad in ["0", "-1", "0.0", "abc", "", "nan", "inf", "1e300", "1e-12"] {
            let e = quiet_secs(bad).expect_err(bad);
            assert!(e.contains("--bursts") && e.contains(bad), "{e}");
        }
    }

    /// Every argument of every subcommand says what it is in `--help`
    /// (issue 31 item 36 found `show <TURN>` and `--why` with none).
    #[test]
    fn every_argument_has_help() {
        use clap::CommandFactory;
        let mut missing = args_without_help(&crate::commands::Cli::command());
        missing.extend(args_without_help(&LedgerCli::command()));
        assert!(missing.is_empty(), "arguments without help: {missing:#?}");
    }
}
