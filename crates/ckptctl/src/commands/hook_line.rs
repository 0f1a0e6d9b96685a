//! The command lines agents' hooks run (`turn-start`, `turn-end`,
//! `tool-start`, `tool-end` and their options), read without clap: clap
//! builds every argument of a command before it parses, 0.11 ms of a
//! hook call that takes about 1 ms (docs/measurements.md). A line this
//! does not take plainly — help, a repeated or unknown option, a value
//! that is empty or starts with `-`, a word that is not UTF-8 — is left
//! to clap, so every message stays clap's.

use std::ffi::OsString;
use std::path::PathBuf;

use ckpt_agents::Agent;
use clap::ValueEnum;
use lexopt::{Arg, Parser};

use super::{turn_end, turn_start, Cli, Command, HookCommand};
use crate::cli::{FromHook, Global, TurnMeta, BARE_FROM_HOOK};
use crate::term::When;

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    TurnStart,
    TurnEnd,
    ToolStart,
    ToolEnd,
}

/// What the options given set, each at most once.
#[derive(Default)]
struct Line {
    global: Global,
    label: Option<String>,
    agent: Option<String>,
    session: Option<String>,
    transcript: Option<String>,
    from_hook: Option<Agent>,
    if_open: bool,
    verbose: bool,
}

/// `args` (the program's name first) as clap reads them, or `None` where
/// clap must read them.
pub fn parse(args: &[OsString]) -> Option<Cli> {
    // After `--` clap takes no subcommand and no option.
    if args.iter().any(|a| a == "--") {
        return None;
    }
    let mut p = Parser::from_iter(args.iter().cloned());
    let mut line = Line::default();
    let mut kind = None;
    while let Some(arg) = p.next().ok()? {
        let g = &mut line.global;
        match (arg, kind) {
            (Arg::Value(word), None) => kind = Some(command(&word)?),
            (Arg::Short('C'), _) => once(&mut g.dir, path(&mut p)?)?,
            (Arg::Long("socket"), _) => once(&mut g.socket, path(&mut p)?)?,
            (Arg::Long("data-dir"), _) => once(&mut g.data_dir, path(&mut p)?)?,
            (Arg::Long("color"), _) => {
                once(&mut g.color, When::from_str(&text(&mut p)?, false).ok()?)?
            }
            (Arg::Short('q') | Arg::Long("quiet"), _) => flag(&mut g.quiet)?,
            (Arg::Long("json"), _) => flag(&mut g.json)?,
            (Arg::Long("no-pager"), _) => flag(&mut g.no_pager)?,
            (Arg::Long("session"), Some(_)) => once(&mut line.session, text(&mut p)?)?,
            (Arg::Long("from-hook"), Some(k)) => once(&mut line.from_hook, from_hook(&mut p, k)?)?,
            (Arg::Long("label"), Some(Kind::TurnStart)) => once(&mut line.label, text(&mut p)?)?,
            (Arg::Long("agent"), Some(Kind::TurnStart)) => once(&mut line.agent, text(&mut p)?)?,
            (Arg::Long("transcript"), Some(Kind::TurnStart)) => {
                once(&mut line.transcript, text(&mut p)?)?
            }
            (Arg::Long("if-open"), Some(Kind::TurnEnd)) => flag(&mut line.if_open)?,
            (Arg::Short('v') | Arg::Long("verbose"), Some(Kind::TurnEnd)) => {
                flag(&mut line.verbose)?
            }
            _ => return None,
        }
    }
    Some(line.into_cli(kind?))
}

/// What clap prints for `--version` (or `-V`) alone, without building the
/// whole parser (0.3 ms): the bench times it as a process's start.
pub fn version(args: &[OsString]) -> Option<String> {
    match args {
        [_, v] if v == "--version" || v == "-V" => {
            Some(format!("ckptctl {}\n", env!("CARGO_PKG_VERSION")))
        }
        _ => None,
    }
}

fn command(word: &std::ffi::OsStr) -> Option<Kind> {
    Some(match word.to_str()? {
        "turn-start" => Kind::TurnStart,
        "turn-end" => Kind::TurnEnd,
        "tool-start" => Kind::ToolStart,
        "tool-end" => Kind::ToolEnd,
        _ => return None,
    })
}

impl Line {
    fn into_cli(self, kind: Kind) -> Cli {
        let Line {
            global,
            label,
            agent,
            session,
            transcript,
            from_hook,
            if_open,
            verbose,
        } = self;
        let tool = |session, from_hook| super::tool::ToolArgs {
            session,
            hook: super::tool::FromToolHook { from_hook },
        };
        let command = match kind {
            Kind::TurnStart => HookCommand::TurnStart(turn_start::TurnStartArgs {
                meta: TurnMeta {
                    label,
                    agent,
                    session,
                    transcript,
                },
                hook: FromHook { from_hook },
            }),
            Kind::TurnEnd => HookCommand::TurnEnd(turn_end::TurnEndArgs {
                session,
                if_open,
                hook: FromHook { from_hook },
                verbose,
            }),
            Kind::ToolStart => HookCommand::ToolStart(tool(session, from_hook)),
            Kind::ToolEnd => HookCommand::ToolEnd(tool(session, from_hook)),
        };
        Cli {
            global,
            command: Command::Hook(command),
        }
    }
}

/// `--from-hook` alone is [`BARE_FROM_HOOK`]; `--from-hook AGENT`
/// (without `=`) is clap's to refuse. The tool hooks take only the agents that
/// have them.
fn from_hook(p: &mut Parser, kind: Kind) -> Option<Agent> {
    let agent = match p.optional_value() {
        Some(name) => Agent::from_str(name.to_str()?, false).ok()?,
        None => BARE_FROM_HOOK,
    };
    let tool = matches!(kind, Kind::ToolStart | Kind::ToolEnd);
    (!tool || Agent::WITH_TOOL_HOOKS.contains(&agent)).then_some(agent)
}

fn once<T>(slot: &mut Option<T>, value: T) -> Option<()> {
    slot.is_none().then(|| *slot = Some(value))
}

fn flag(slot: &mut bool) -> Option<()> {
    (!*slot).then(|| *slot = true)
}

/// An option's value: not empty, not starting with `-` (clap takes
/// neither as plainly).
fn value(p: &mut Parser) -> Option<OsString> {
    let v = p.value().ok()?;
    let plain = v.as_encoded_bytes().first().is_some_and(|&b| b != b'-');
    plain.then_some(v)
}

fn text(p: &mut Parser) -> Option<String> {
    value(p)?.into_string().ok()
}

fn path(p: &mut Parser) -> Option<PathBuf> {
    value(p).map(PathBuf::from)
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;

    fn words(line: &str) -> Vec<OsString> {
        line.split(' ').map(Into::into).collect()
    }

    /// Read here, the line must mean what it means to clap; left to clap,
    /// nothing is lost.
    fn check(line: &str) -> bool {
        let ours = parse(&words(line));
        let clap = Cli::try_parse_from(words(line));
        if let Some(ours) = &ours {
            let clap = clap.unwrap_or_else(|e| panic!("{line}: read here, clap refuses it: {e}"));
            assert_eq!(format!("{ours:?}"), format!("{clap:?}"), "{line}");
        }
        ours.is_some()
    }

    #[test]
    fn every_line_an_installed_hook_runs_is_read_here() {
        for agent in Agent::ALL {
            let flag = format!("--from-hook={}", agent.name());
            let mut lines = vec![
                format!("ckptctl turn-start {flag}"),
                format!("ckptctl turn-end {flag}"),
                format!("ckptctl turn-end {flag} --if-open"),
            ];
            if Agent::WITH_TOOL_HOOKS.contains(&agent) {
                lines.push(format!("ckptctl tool-start {flag}"));
                lines.push(format!("ckptctl tool-end {flag}"));
            }
            for line in lines {
                assert!(check(&line), "{line}");
            }
        }
        for line in [
            "ckptctl -C /p turn-start -q",
            "ckptctl -q -C /p turn-end --session s",
            "ckptctl --socket /s -qC /p tool-start --session=s",
            "ckptctl --color never turn-start --from-hook=codex",
            "ckptctl turn-start --label fix\u{a0}it --agent a --transcript /t --json",
            "ckptctl turn-end -v --data-dir /d --no-pager",
        ] {
            assert!(check(line), "{line}");
        }
    }

    #[test]
    fn prints_the_version_as_clap_does() {
        use clap::CommandFactory;
        let clap = Cli::command().render_version().to_string();
        for line in ["ckptctl --version", "ckptctl -V"] {
            assert_eq!(version(&words(line)).as_ref(), Some(&clap), "{line}");
        }
        for line in ["ckptctl --version log", "ckptctl -q --version", "ckptctl"] {
            assert_eq!(version(&words(line)), None, "{line}");
        }
    }

    #[test]
    fn what_is_not_plain_is_left_to_clap() {
        for line in [
            "ckptctl",
            "ckptctl log",
            "ckptctl turn-start --help",
            "ckptctl -h turn-end",
            "ckptctl -q -q turn-start",
            "ckptctl turn-start --label a --label b",
            "ckptctl turn-start --label -x",
            "ckptctl turn-start --label=",
            "ckptctl turn-start --from-hook codex",
            "ckptctl tool-start --from-hook=cursor",
            "ckptctl turn-start --if-open",
            "ckptctl turn-end --label x",
            "ckptctl turn-start extra",
            "ckptctl turn-start -- extra",
            "ckptctl turn-end --",
            "ckptctl -- turn-start",
            "ckptctl --color sometimes turn-end",
            "ckptctl --session s turn-end",
        ] {
            assert!(!check(line), "{line}");
        }
    }

    /// Thousands of lines built from the words hooks and people type,
    /// plain and not: whatever is read here reads as clap reads it.
    #[test]
    fn reads_every_line_as_clap_does_or_leaves_it() {
        const GLOBAL: [&str; 14] = [
            "-q",
            "--quiet",
            "--json",
            "--no-pager",
            "-C /p",
            "-C/p",
            "-C=/p",
            "-qC /p",
            "--socket /s",
            "--socket=/s",
            "--data-dir /d",
            "--color never",
            "--color=always",
            "--color bogus",
        ];
        const COMMAND: [&str; 6] = [
            "turn-start",
            "turn-end",
            "tool-start",
            "tool-end",
            "log",
            "--",
        ];
        const OPTION: [&str; 25] = [
            "--label x",
            "--label=x",
            "--label -x",
            "--label=-x",
            "--label=",
            "--agent a",
            "--session s",
            "--session=s",
            "--transcript /t",
            "--from-hook",
            "--from-hook=codex",
            "--from-hook=opencode",
            "--from-hook=nobody",
            "--from-hook codex",
            "--if-open",
            "-v",
            "--verbose",
            "-qv",
            "-vq",
            "-h",
            "--bogus",
            "extra",
            "-q",
            "--json",
            "--",
        ];
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut pick = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        let mut read = 0;
        for _ in 0..3000 {
            let mut line = vec!["ckptctl"];
            for _ in 0..pick(3) {
                line.push(GLOBAL[pick(GLOBAL.len())]);
            }
            line.push(COMMAND[pick(COMMAND.len())]);
            for _ in 0..pick(4) {
                line.push(if pick(3) == 0 {
                    GLOBAL[pick(GLOBAL.len())]
                } else {
                    OPTION[pick(OPTION.len())]
                });
            }
            read += usize::from(check(&line.join(" ")));
        }
        // Both kinds were tried.
        assert!((300..2700).contains(&read), "{read} of 3000 read here");
    }
}
