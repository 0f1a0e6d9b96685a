//! `ckptctl run -- CMD…`: one turn around a command (with `--bursts SECS`,
//! one turn per burst of changes; see [`bursts`]). The command's own
//! output stays on stdout and the turn summary goes to stderr; with
//! `--json`, stdout holds only the JSON document, so the command's stdout
//! goes to stderr.

mod bursts;

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use anyhow::Context;
use clap::Args;

use super::turn_requests as turn;
use super::Ctx;
use crate::cli::TurnMeta;
use crate::output;

/// `ckptctl run`'s arguments.
#[derive(Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub turn: TurnMeta,
    /// Start a new turn whenever the tree has been quiet for SECS
    /// seconds after a change (for agents without hooks), so a whole
    /// session is not one turn. Fractions allowed (0.5).
    #[arg(long, value_name = "SECS", allow_negative_numbers = true, value_parser = quiet_secs)]
    pub bursts: Option<Duration>,
    /// The command and its arguments (after `--`).
    #[arg(required = true, trailing_var_arg = true)]
    pub command: Vec<OsString>,
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

pub fn run(ctx: &Ctx, run_args: RunArgs) -> anyhow::Result<u8> {
    let RunArgs {
        turn: mut args,
        bursts: quiet,
        command,
    } = run_args;
    let command = &command[..];
    let (program, rest) = command
        .split_first()
        .context("no command given (ckptctl run -- CMD ARGS…)")?;
    if args.label.is_none() {
        let words: Vec<String> = command
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        args.label = Some(words.join(" "));
    }
    let session = args.session.clone();
    let meta = args.clone();
    let started = turn::start(ctx, args, None)?;
    let opened_ns = bursts::now_ns();
    if !ctx.g.quiet && !ctx.g.json {
        eprintln!("ckptctl: turn {} started", started.turn);
    }
    if quiet.is_some() {
        // An older daemon is found before the command runs.
        if let Err(e) = bursts::activity(ctx, &mut None) {
            let _ = turn::end(ctx, session, None, Some(0));
            return Err(e);
        }
    }
    let mut child = std::process::Command::new(program);
    child.args(rest).current_dir(&ctx.dir);
    if ctx.g.json {
        child.stdout(std::io::stderr());
    }
    let (status, closed) = match quiet {
        None => (child.status(), Vec::new()),
        Some(quiet) => bursts::Watch {
            ctx,
            meta,
            quiet,
            turn: started.turn,
            opened_ns,
        }
        .around(|| child.status()),
    };
    // Close the turn whether or not the command could run (with --session,
    // only if no other session's turn has replaced it meanwhile).
    // Text prints the counts only; `--json` the turn whole.
    let list = output::to_list(ctx.g.json, true, false);
    let ended = turn::end(ctx, session, None, list)?;
    let status = status.with_context(|| format!("running {}", program.to_string_lossy()))?;
    let code = match (status.code(), status.signal()) {
        (Some(c), _) => c,
        (None, Some(sig)) => 128 + sig,
        (None, None) => 1,
    };
    if ctx.g.json {
        let mut doc = serde_json::json!({
            "project": started.project,
            "turn": ended.turn,
            "exit_code": code,
        });
        if quiet.is_some() {
            let turns: Vec<_> = closed.iter().chain([&ended]).map(|t| &t.turn).collect();
            doc["turns"] = serde_json::to_value(turns).context("encoding the turns")?;
        }
        output::json(&doc)?;
    } else if !ctx.g.quiet {
        let info = &ended.turn.info;
        eprintln!(
            "ckptctl: turn {} closed: {}",
            info.id,
            output::counts_long(&info.counts)
        );
    }
    Ok(u8::try_from(code.clamp(0, 255)).unwrap_or(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_times_are_positive_seconds() {
        assert_eq!(quiet_secs("0.5"), Ok(Duration::from_millis(500)));
        assert_eq!(quiet_secs("2"), Ok(Duration::from_secs(2)));
        for bad in ["0", "-1", "0.0", "abc", "", "nan", "inf", "1e300", "1e-12"] {
            let e = quiet_secs(bad).expect_err(bad);
            assert!(e.contains("--bursts") && e.contains(bad), "{e}");
        }
    }
}
