//! `ckpt-soak`: a seeded, model-based random test of the real `ckptd` and
//! `ckptctl` on real files.
//!
//! Each sequence makes a fresh project (a git repo whose `.git` must never
//! change, and a file outside it that must never change) and a fresh daemon,
//! then runs random turns, edits (std::fs and shell tools), rewinds, redos
//! and faults (SIGKILL idle, mid-capture and mid-rewind; SIGSTOP through an
//! inotify queue overflow; edits while the daemon is down), several
//! sessions' turns open at once with tool windows, `--path` rewinds, dry
//! runs, `--merge` (git merge-file as the oracle), hard links, files over
//! the size cap, work copies and daemons whose event queue holds a few
//! paths, checking every rewind and redo against an in-memory model of the
//! tree exactly (docs/testing.md lists the kinds).
//!
//! ```text
//! cargo run --release -p ckpt-soak -- --seconds 60            # CI
//! cargo run --release -p ckpt-soak -- --seconds 1 --seed 42   # replay one sequence
//! ```
//!
//! It ends with `soak: N sequences, T turns, R rewinds, D redos, K kills,
//! O overflows, M mismatches; ...` (counts of the newer kinds) and exits 1
//! on any mismatch.

mod merge;
mod ops;
mod rng;
mod rules;
mod sequence;
mod tree;
mod world;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;

use crate::sequence::{Mismatch, Options, Seq, Stats};

#[derive(Parser, Debug)]
#[command(name = "ckpt-soak", version)]
struct Args {
    /// Run sequences until this many seconds have passed.
    #[arg(long, default_value_t = 60)]
    seconds: u64,
    /// Replay exactly one sequence with this seed (as a failure prints it).
    #[arg(long)]
    seed: Option<u64>,
    /// The master seed sequences' seeds are derived from [default: the clock].
    #[arg(long)]
    master_seed: Option<u64>,
    /// Where `ckptd` and `ckptctl` are [default: next to this executable].
    #[arg(long, value_name = "DIR")]
    bin_dir: Option<PathBuf>,
    /// Do not run `ckptctl fsck` after each step, rewind and redo.
    #[arg(long)]
    no_fsck: bool,
    /// Print the full report (operation log, daemon log) of at most this
    /// many failing sequences; later ones get one line each.
    #[arg(long, default_value_t = 3)]
    reports: usize,
    /// Let the rewinds and redos meant to be killed mid-way finish (the
    /// same sequence otherwise): is a failure the recovery's or the plan's?
    #[arg(long)]
    spare_rewinds: bool,
    /// With --seed: leave out as many steps as possible while the sequence
    /// still fails the same way (delta debugging), then report the
    /// smallest failing sequence found.
    #[arg(long, requires = "seed")]
    shrink: bool,
    /// Print every sequence's operations, not only failing ones'.
    #[arg(long)]
    print_log: bool,
    /// Faults five times as often inside turns, most of them inotify
    /// overflows (what happens right after a rescan).
    #[arg(long)]
    stress_overflow: bool,
    /// Keep the temp dir (project, daemon data and log) of failing sequences.
    #[arg(long)]
    keep_failed: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(0) => ExitCode::SUCCESS,
        Ok(_) => ExitCode::from(1),
        Err(e) => {
            eprintln!("soak: error: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// Under `cargo run`, builds `ckptd` and `ckptctl` into this executable's
/// target and profile dir first: `cargo run -p ckpt-soak` alone would test
/// whatever binaries an earlier build left there.
fn build_next_to_us(profile_dir: &std::path::Path) -> anyhow::Result<()> {
    let Some(cargo) = std::env::var_os("CARGO") else {
        return Ok(());
    };
    ckpt_e2e::build_binaries(&cargo, profile_dir).map_err(anyhow::Error::msg)?;
    Ok(())
}

/// The kills mid-rewind pause the daemon through its test hooks; a plain
/// build would let every such rewind finish first, and the run would
/// silently test less.
fn require_test_hooks(bin: &std::path::Path) -> anyhow::Result<()> {
    let out = std::process::Command::new(bin.join("ckptd"))
        .arg("--version")
        .output()
        .context("running ckptd --version")?;
    if String::from_utf8_lossy(&out.stdout).contains("(test hooks)") {
        return Ok(());
    }
    anyhow::bail!(
        "{} was built without the test-hooks feature, so no rewind could be \
         paused to kill the daemon mid-way: run the soak with `cargo run \
         --release -p ckpt-soak`, or build `cargo build --release -p ckptd \
         --features test-hooks`, or pass --spare-rewinds",
        bin.join("ckptd").display()
    )
}

fn run(args: &Args) -> anyhow::Result<u64> {
    let bin = match &args.bin_dir {
        Some(d) => d.clone(),
        None => {
            let dir = std::env::current_exe()
                .context("finding this executable")?
                .parent()
                .context("this executable has no directory")?
                .to_path_buf();
            build_next_to_us(&dir)?;
            dir
        }
    };
    for b in ["ckptd", "ckptctl"] {
        if !bin.join(b).is_file() {
            anyhow::bail!(
                "{} is missing: build it (cargo build --release) or pass --bin-dir",
                bin.join(b).display()
            );
        }
    }
    if !args.spare_rewinds {
        require_test_hooks(&bin)?;
    }
    if !args.no_fsck {
        // Said once, up front, rather than as a mismatch in every sequence.
        let st = std::process::Command::new(bin.join("ckptctl"))
            .args(["fsck", "--help"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .context("running ckptctl fsck --help")?;
        anyhow::ensure!(
            st.success(),
            "{} has no `fsck` command: pass --no-fsck to run without it",
            bin.join("ckptctl").display()
        );
    }
    // Modes in the model assume files 0644 and directories 0755.
    // SAFETY: umask(2) has no failure mode and touches only this process.
    unsafe {
        libc::umask(0o022);
    }
    let queue = std::fs::read_to_string("/proc/sys/fs/inotify/max_queued_events")
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok())
        // Flooding a much larger queue would take the soak's time.
        .filter(|&q| q <= 100_000);
    let opts = Options {
        fsck: !args.no_fsck,
        queue,
        spare_rewinds: args.spare_rewinds,
        stress_overflow: args.stress_overflow,
    };
    let master = args.master_seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    });
    match args.seed {
        Some(s) => println!("soak: replaying sequence seed {s}"),
        None => println!(
            "soak: master seed {master}, {} s, binaries in {}",
            args.seconds,
            bin.display()
        ),
    }
    if let (true, Some(seed)) = (args.shrink, args.seed) {
        return shrink(seed, &bin, &opts);
    }
    let deadline = Instant::now() + Duration::from_secs(args.seconds);
    let mut total = Stats::default();
    let (mut sequences, mut mismatches) = (0u64, 0u64);
    let mut i = 0u64;
    loop {
        let seed = args.seed.unwrap_or_else(|| rng::sequence_seed(master, i));
        i += 1;
        let mut seq = Seq::new(seed, &bin, &opts)?;
        let result = seq.run();
        sequences += 1;
        let s = seq.stats;
        total.turns += s.turns;
        total.rewinds += s.rewinds;
        total.redos += s.redos;
        total.kills += s.kills;
        total.overflows += s.overflows;
        total.sessions += s.sessions;
        total.tools += s.tools;
        total.partials += s.partials;
        total.dry_runs += s.dry_runs;
        total.merges += s.merges;
        total.fscks += s.fscks;
        total.links += s.links;
        total.big_files += s.big_files;
        total.workcopies += s.workcopies;
        total.small_queues += s.small_queues;
        total.small_plans += s.small_plans;
        if args.print_log && result.is_ok() {
            println!("---- sequence seed {seed}:");
            for l in &seq.log {
                println!("  {l}");
            }
        }
        if let Err(e) = result {
            mismatches += 1;
            let kind = if e.downcast_ref::<Mismatch>().is_some() {
                "MISMATCH"
            } else {
                "ERROR (harness or daemon)"
            };
            let first = format!("{e:#}");
            // One line that tells failures apart: the headline, the first
            // difference and what the daemon answered.
            let mut headline = first.lines().next().unwrap_or("").to_string();
            for l in first.lines().skip(1) {
                let l = l.trim();
                if l.starts_with("reply:") || l.contains(" vs found ") {
                    headline.push_str(" | ");
                    headline.push_str(l);
                }
                if headline.len() > 600 {
                    break;
                }
            }
            if mismatches as usize <= args.reports {
                println!("\n==== {kind} in sequence seed {seed} (replay: --seed {seed})");
                println!("---- operations:");
                for l in &seq.log {
                    println!("  {l}");
                }
                println!("---- difference:\n{first}");
                println!("---- daemon log (tail):\n{}", seq.daemon_log());
                if args.keep_failed {
                    println!("---- kept: {}", seq.keep().display());
                }
                println!("====\n");
            } else {
                println!("{kind} in sequence seed {seed}: {headline}");
            }
        }
        if args.seed.is_some() || Instant::now() >= deadline {
            break;
        }
    }
    println!(
        "soak: {sequences} sequences, {} turns, {} rewinds, {} redos, {} kills, {} overflows, {mismatches} mismatches; {} multi-session episodes, {} tool windows, {} --path rewinds, {} dry runs, {} merges, {} hard links, {} big files, {} work copy applies, {} fscks, {} small queues, {} small plans",
        total.turns, total.rewinds, total.redos, total.kills, total.overflows,
        total.sessions, total.tools, total.partials, total.dry_runs, total.merges, total.links, total.big_files, total.workcopies, total.fscks, total.small_queues, total.small_plans
    );
    Ok(mismatches)
}

/// A failure's kind: its first line without numbers or the daemon's words,
/// so a shrunk sequence must fail the same way, not just fail.
fn signature(err: &str) -> String {
    let head = err.lines().next().unwrap_or("");
    let head = head.split(" stderr").next().unwrap_or(head);
    let head: String = head
        .replace("(final)", "")
        .chars()
        .filter(|c| !c.is_ascii_digit())
        .collect();
    head.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Runs `seed` without the steps in `skip`; the failure, if any.
fn try_skip(
    seed: u64,
    skip: &std::collections::BTreeSet<usize>,
    bin: &std::path::Path,
    opts: &Options,
) -> anyhow::Result<Option<(String, Vec<String>, String)>> {
    let mut seq = Seq::new(seed, bin, opts)?;
    seq.skip = skip.clone();
    Ok(seq
        .run()
        .err()
        .map(|e| (format!("{e:#}"), seq.log.clone(), seq.daemon_log())))
}

fn shrink(seed: u64, bin: &std::path::Path, opts: &Options) -> anyhow::Result<u64> {
    let none = std::collections::BTreeSet::new();
    let Some((err, _, _)) = try_skip(seed, &none, bin, opts)? else {
        println!("soak: sequence {seed} passes; nothing to shrink");
        return Ok(0);
    };
    let want = signature(&err);
    println!("soak: shrinking sequence {seed}, failing as: {want}");
    let all: Vec<usize> = (1..=Seq::steps(seed)).collect();
    let mut kept = all.clone();
    let mut best = err;
    let mut n = 2usize;
    let mut trials = 0;
    // Delta debugging over steps, bounded so a flaky failure cannot loop.
    while kept.len() >= 2 && trials < 400 {
        let chunk = kept.len().div_ceil(n);
        let mut reduced = false;
        for start in (0..kept.len()).step_by(chunk) {
            let candidate: Vec<usize> = kept
                .iter()
                .enumerate()
                .filter(|(i, _)| *i < start || *i >= start + chunk)
                .map(|(_, s)| *s)
                .collect();
            let skip = all
                .iter()
                .filter(|s| !candidate.contains(s))
                .copied()
                .collect();
            trials += 1;
            if let Some((e, _, _)) = try_skip(seed, &skip, bin, opts)? {
                if signature(&e) == want {
                    kept = candidate;
                    best = e;
                    n = (n - 1).max(2);
                    reduced = true;
                    break;
                }
            }
        }
        if !reduced {
            if n >= kept.len() {
                break;
            }
            n = (n * 2).min(kept.len());
        }
    }
    let skip: std::collections::BTreeSet<usize> =
        all.iter().filter(|s| !kept.contains(s)).copied().collect();
    // One more run for the report (its log), which may differ if timing
    // decides the failure.
    let (err, log, daemon) =
        try_skip(seed, &skip, bin, opts)?.unwrap_or((best, Vec::new(), String::new()));
    println!(
        "\n==== shrunk after {trials} runs: steps {:?} of sequence seed {seed}",
        kept
    );
    println!("---- operations:");
    for l in log {
        println!("  {l}");
    }
    println!("---- difference:\n{err}\n---- daemon log (tail):\n{daemon}\n====");
    Ok(1)
}
