//! ckpt-bench: ckpt against the git-snapshot technique, side by side, in one run.
//!
//! What it measures (issue 4): on a real source tree — by default a copy of
//! the crate sources cargo downloaded for this workspace (~5,000 files),
//! made into a git repository with one commit, a user's uncommitted edit, an
//! untracked file and a gitignored `.env` — it runs each scenario against
//!
//! * `ckpt`: the real `ckptd` (started by the bench, isolated `CKPT_SOCKET`
//!   and `CKPT_DATA_DIR`) and one `ckptctl` process per call: `--json`,
//!   or `-q` (as an agent's hook calls it) for `turn-end`, `rewind` and
//!   `redo`, whose replies then list only the paths the client may print;
//! * `git-fresh`: a shadow git repository driven through the `git` binary with
//!   a fresh temporary index per snapshot (`add -A -f`, `write-tree`,
//!   `commit-tree`; restore by `diff-tree` + `checkout-index`);
//! * `git-kept`: the same with a private index kept between snapshots, the
//!   fastest honest way to do it with git (restore by `read-tree -m -u`).
//!
//! Systems run interleaved (A B C, A B C, …), each on its own copy of the
//! tree. Scenarios: `connect` (spawn and bare `ckptctl status` floors),
//! `watch` (baseline time and store size; daemon peak RSS and idle CPU),
//! `idle`, `small`, `fulltree`, `bigfile`, `blame` (a 5,000-line file edited
//! by 100 turns, then blamed: `ckptctl blame` against `git blame` of the
//! snapshot chain), and `scale` (watch, idle and small on the tree copied 10×). Every rewind and redo is verified
//! byte-for-byte against the state before the turn (and the user's `.git`
//! byte-identical); a wrong result is reported as WRONG and not timed.
//!
//! Output: a table of medians with ckpt/git ratios, the targets of issue 4
//! with met/missed, and (with `--json`) every sample.
//!
//! ```text
//! cargo build --release --workspace          # ckptd and ckptctl next to the bench
//! cargo run --release -p ckpt-bench -- --json bench.json
//! cargo run --release -p ckpt-bench -- --quick          # CI smoke test, correctness only
//! cargo run --release -p ckpt-bench -- --tree ~/src/app --scenarios idle,small
//! cargo run --release -p ckpt-bench -- --watch-shapes 100000  # issue 36's watcher shapes
//! cargo run --release -p ckpt-bench -- --idle-connections 1000 # issue 35's idle connections
//! cargo run --release -p ckpt-bench -- --many-clients 50       # issue 35's many agents
//! cargo run --release -p ckpt-bench -- --big-turn 5000,50000   # issue 35's peak RSS per turn size
//! cargo run --release -p ckpt-bench -- --floors 50000           # issue 35's operations against their floors
//! cargo run --release -p ckpt-bench -- --sizes 5000,50000,1000000 # issue 35's p50/p99 as the tree grows
//! cargo run --release -p ckpt-bench -- --store-bytes 100000     # issue 35's store bytes per small file
//! ```
//!
//! Exit status: 0 if every scenario was right, 1 if any was WRONG or failed.

mod aged;
mod bigturn;
mod ckpt_json;
mod ckpt_runner;
mod cmd;
mod conns;
mod floors;
mod git_snap;
mod many;
mod procstat;
mod report;
mod scenarios;
mod shapes;
mod sizes;
mod store_bytes;
mod system;
mod tree;
mod verify;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Parser;
use serde_json::json;

use ckpt_runner::{Bins, Ckpt};
use git_snap::{GitSnap, IndexMode};
use report::Results;
use scenarios::{Lab, Subject};
use system::System;

/// glibc's allocator frees small blocks onto lists that the next larger
/// request sweeps in one go: after a 10x tree's verification state is
/// dropped, the next timed command's spawn paid ~2 ms for the harness's own
/// garbage (seen under `perf` as `_int_malloc` inside the spawn).
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

const ALL_SCENARIOS: [&str; 9] = [
    "connect", "watch", "idle", "small", "scaffold", "fulltree", "bigfile", "blame", "scale",
];

#[derive(Parser, Debug)]
#[command(about = "Benchmark ckpt against the git-snapshot technique (see issue 4)")]
struct Args {
    /// Project tree to copy and use (default: crate sources from cargo's registry).
    #[arg(long)]
    tree: Option<PathBuf>,
    /// Small tree, one repetition: a correctness smoke test (timings are not meaningful).
    #[arg(long)]
    quick: bool,
    /// Write every sample, the medians and the targets to this JSON file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Scenarios to run (comma-separated): connect,watch,idle,small,scaffold,fulltree,bigfile,blame,scale.
    #[arg(long, value_delimiter = ',')]
    scenarios: Option<Vec<String>>,
    /// Systems to run (comma-separated): ckpt,git-fresh,git-kept.
    #[arg(long, value_delimiter = ',')]
    systems: Option<Vec<String>>,
    /// Directory holding `ckptd` and `ckptctl` (default: next to this executable).
    #[arg(long)]
    bin_dir: Option<PathBuf>,
    /// Repetitions per scenario (default 5; 1 with --quick).
    #[arg(long)]
    reps: Option<usize>,
    /// Approximate number of files in the default tree (default 5000; 300 with --quick).
    #[arg(long)]
    files: Option<usize>,
    /// Seconds of idleness over which the daemon's CPU is measured (default 10).
    #[arg(long)]
    idle_secs: Option<f64>,
    /// Work here instead of a new temporary directory (kept afterwards).
    #[arg(long)]
    work_dir: Option<PathBuf>,
    /// Keep the temporary directory (trees, stores, daemon logs).
    #[arg(long)]
    keep: bool,
    /// Only time the first watch of a tree of this many empty directories
    /// under each watcher shape (ckptd's inotify loop, `CKPT_WATCHER=notify`)
    /// and print the ratio (issue 36: at most 2x); nothing else runs.
    #[arg(long, value_name = "DIRS")]
    watch_shapes: Option<usize>,
    /// Only time hook calls (turn-start, turn-end) with this many idle
    /// connections open to the daemon against none, in one run, and print
    /// the p99 ratio (issue 35: at most 2x); nothing else runs.
    #[arg(long, value_name = "N")]
    idle_connections: Option<usize>,
    /// Only run this many clients at once against one daemon for
    /// `--seconds`, each a session on one of `--projects` projects (turns,
    /// and rewinds checked byte for byte); print p50/p99 per operation and
    /// the daemon's RSS over the run (issue 35); nothing else runs.
    #[arg(long, value_name = "N")]
    many_clients: Option<usize>,
    /// `--many-clients` calls over the socket from the bench's threads
    /// instead of a `ckptctl` process per call: the daemon's part alone.
    #[arg(long)]
    socket_clients: bool,
    /// Each `--many-clients` client starts a turn at most every this many
    /// milliseconds (0: back to back, the daemon saturated).
    #[arg(long, value_name = "MS", default_value_t = 0)]
    pace: u64,
    /// Only age one project for this many seconds (turns back to back,
    /// every fourth rewound with `--path`), then time hook calls on it
    /// against a fresh project at once and print the ratios (issue 35);
    /// nothing else runs.
    #[arg(long, value_name = "SECS")]
    aged: Option<u64>,
    /// Only measure the daemon's peak RSS through a turn that rewrites all
    /// of N files and its rewind, then one that creates N files in nested
    /// directories and its rewind, for each N given (e.g. 5000,50000), each
    /// with a fresh daemon (issue 35); nothing else runs.
    #[arg(long, value_name = "N,N", value_delimiter = ',')]
    big_turn: Vec<usize>,
    /// Only time ckpt's first watch, restart to synced and full-tree rewind
    /// of a tree of N small files against the least work each needs (the
    /// floor), alternating, and print the ratios (issue 35); nothing else
    /// runs.
    #[arg(long, value_name = "N")]
    floors: Option<usize>,
    /// With `--floors`: no rewind (its floors take minutes at 50,000 files);
    /// the tree is written back between rounds, untimed.
    #[arg(long)]
    floors_no_rewind: bool,
    /// Only time the first watch and restart (against their floors), idle
    /// turns, one-file rewinds and the hook call's floor on trees of each
    /// size given (e.g. 5000,50000,500000,1000000), and print p50/p99 per
    /// operation and size (issue 35); nothing else runs.
    #[arg(long, value_name = "N,N", value_delimiter = ',')]
    sizes: Vec<usize>,
    /// Only time the first watch of N files of ~17 bytes and measure the
    /// project database per b-tree (SQLite's dbstat), in bytes per file
    /// (issue 35); nothing else runs.
    #[arg(long, value_name = "N")]
    store_bytes: Option<usize>,
    /// Projects for `--many-clients`.
    #[arg(long, default_value_t = 20)]
    projects: usize,
    /// Seconds `--many-clients` runs.
    #[arg(long, default_value_t = 60)]
    seconds: u64,
    /// Seconds after which a single command is killed and counted as failed.
    #[arg(long, default_value_t = 600)]
    timeout: u64,
}

fn main() -> ExitCode {
    match real_main() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("ckpt-bench: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn subjects(
    base: &Path,
    work: &Path,
    tag: &str,
    systems: &[String],
    bins: Option<&Bins>,
    timeout: Duration,
) -> Result<Vec<Subject>> {
    let mut out = Vec::new();
    for name in systems {
        let dir = work.join(format!("{tag}-{name}"));
        let root = dir.join("project");
        tree::clone_tree(base, &root)?;
        let sys: Box<dyn System> = match name.as_str() {
            "ckpt" => Box::new(Ckpt::new(
                bins.context("ckpt binaries not located")?.clone(),
                &root,
                &dir.join("ckpt"),
                timeout,
            )?),
            "git-fresh" => Box::new(GitSnap::new(
                IndexMode::Fresh,
                &root,
                &dir.join("git"),
                timeout,
            )?),
            "git-kept" => Box::new(GitSnap::new(
                IndexMode::Kept,
                &root,
                &dir.join("git"),
                timeout,
            )?),
            other => bail!("unknown system {other:?} (ckpt, git-fresh, git-kept)"),
        };
        out.push(Subject::new(sys)?);
    }
    Ok(out)
}

fn read_trim(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

fn machine() -> serde_json::Value {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .map(|r| r.trim_start_matches([' ', '\t', ':']).to_string())
        })
        .unwrap_or_default();
    let git = std::process::Command::new("git")
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    json!({
        "cpu": cpu,
        "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "kernel": read_trim("/proc/sys/kernel/osrelease"),
        "git": git,
    })
}

fn shutdown(lab: &mut Lab) {
    for s in lab.subjects.iter_mut() {
        s.sys.shutdown();
    }
}

fn real_main() -> Result<bool> {
    let args = Args::parse();
    let started = Instant::now();
    let quick = args.quick;
    let reps = args.reps.unwrap_or(if quick { 1 } else { 5 }).max(1);
    let plan = scenarios::Plan {
        reps,
        idle_pairs: if quick { 2 } else { 3 },
        watch_reps: if quick { 1 } else { reps.min(3) },
        idle_secs: args.idle_secs.unwrap_or(if quick { 1.0 } else { 10.0 }),
    };
    let timeout = Duration::from_secs(args.timeout);
    let chosen: Vec<String> = args
        .scenarios
        .clone()
        .unwrap_or_else(|| ALL_SCENARIOS.iter().map(|s| s.to_string()).collect());
    for s in &chosen {
        if !ALL_SCENARIOS.contains(&s.as_str()) {
            bail!("unknown scenario {s:?}; known: {}", ALL_SCENARIOS.join(","));
        }
    }
    let sel = |n: &str| chosen.iter().any(|c| c == n);
    let systems: Vec<String> = args
        .systems
        .clone()
        .unwrap_or_else(|| report::SYSTEMS.iter().map(|s| s.to_string()).collect());
    let bins = if systems.iter().any(|s| s == "ckpt") {
        Some(Bins::locate(args.bin_dir.as_deref())?)
    } else {
        None
    };

    let tmp;
    let work = match &args.work_dir {
        Some(d) => {
            std::fs::create_dir_all(d)?;
            d.clone()
        }
        None => {
            tmp = tempfile::Builder::new().prefix("ckpt-bench-").tempdir()?;
            if args.keep {
                tmp.keep()
            } else {
                tmp.path().to_path_buf()
            }
        }
    };
    let mount = std::fs::canonicalize(&work)
        .ok()
        .and_then(|w| procstat::mount_of(&w));
    let fs_line = mount
        .as_ref()
        .map_or("filesystem unknown".to_string(), |m| {
            format!("{} on {} ({})", m.fstype, m.source, m.options)
        });
    eprintln!("[bench] working in {}: {fs_line}", work.display());

    if let Some(dirs) = args.watch_shapes {
        let bins = Bins::locate(args.bin_dir.as_deref())?;
        let reps = args.reps.unwrap_or(3).max(1);
        return shapes::run(&bins, &work, dirs, reps, timeout);
    }
    if let Some(n) = args.idle_connections {
        let bins = Bins::locate(args.bin_dir.as_deref())?;
        let reps = args.reps.unwrap_or(5).max(1);
        return conns::run(&bins, &work, n, reps, timeout);
    }
    if let Some(n) = args.floors {
        let bins = Bins::locate(args.bin_dir.as_deref())?;
        let reps = args.reps.unwrap_or(3).max(1);
        return floors::run(&bins, &work, n, reps, args.floors_no_rewind, timeout);
    }
    if !args.sizes.is_empty() {
        let bins = Bins::locate(args.bin_dir.as_deref())?;
        let reps = args.reps.unwrap_or(100).max(1);
        return sizes::run(&bins, &work, &args.sizes, reps, timeout);
    }
    if let Some(n) = args.store_bytes {
        let bins = Bins::locate(args.bin_dir.as_deref())?;
        let reps = args.reps.unwrap_or(1).max(1);
        let keep = args.keep || args.work_dir.is_some();
        return store_bytes::run(&bins, &work, n, reps, keep, timeout);
    }
    if !args.big_turn.is_empty() {
        let bins = Bins::locate(args.bin_dir.as_deref())?;
        return bigturn::run(&bins, &work, &args.big_turn, timeout);
    }
    if let Some(secs) = args.aged {
        let bins = Bins::locate(args.bin_dir.as_deref())?;
        return aged::run_aged(&bins, &work, secs, timeout);
    }
    if let Some(n) = args.many_clients {
        let bins = Bins::locate(args.bin_dir.as_deref())?;
        let via = if args.socket_clients {
            many::Via::Socket
        } else {
            many::Via::Process
        };
        return many::run_all(
            &bins,
            &work,
            n,
            args.projects,
            args.seconds,
            many::Load {
                via,
                pace: Duration::from_millis(args.pace),
            },
            timeout,
        );
    }
    let source = match &args.tree {
        Some(d) => tree::dir_source(d)?,
        None => tree::registry_source(args.files.unwrap_or(if quick { 300 } else { 5000 }))?,
    };
    eprintln!("[bench] tree: {}", source.describe);
    let base = work.join("base");
    tree::build_repo(&source, &base, 1)?;
    let user_edit = tree::user_edit_target(&base)?
        .strip_prefix(&base)?
        .to_path_buf();

    let mut res = Results::default();
    if mount.as_ref().is_some_and(|m| m.discards()) {
        // git's checkout blocks in blkdev_issue_discard there (docs/performance.md).
        res.note(format!(
            "the work dir's filesystem is mounted with `discard` ({fs_line}): a process that \
             frees blocks waits for the device to discard them. git's checkout unlinks the files \
             it replaces; ckpt closes them on a thread of its own. Rewinds of many files are far \
             slower for git here than on a filesystem without online discard."
        ));
    }
    let mut lab = Lab {
        prefix: "",
        base: base.clone(),
        user_edit: user_edit.clone(),
        subjects: subjects(&base, &work, "1x", &systems, bins.as_ref(), timeout)?,
        flush: !quick,
    };
    let (tree_files, tree_bytes) = lab
        .subjects
        .first()
        .map(|s| (s.clean.files().len(), s.clean.bytes()))
        .unwrap_or_default();
    eprintln!(
        "[bench] {} files, {:.1} MiB per copy",
        tree_files,
        tree_bytes as f64 / (1u64 << 20) as f64
    );

    if sel("watch") {
        scenarios::watch(&mut lab, &mut res, plan.watch_reps);
    } else {
        scenarios::init_all(&mut lab);
    }
    if sel("connect") {
        scenarios::connect(&mut lab, &mut res, plan.reps);
    }
    if sel("idle") {
        scenarios::idle(&mut lab, &mut res, plan.reps, plan.idle_pairs);
    }
    if sel("small") {
        scenarios::small(&mut lab, &mut res, plan.reps);
    }
    if sel("scaffold") {
        scenarios::scaffold(&mut lab, &mut res, plan.reps);
    }
    if sel("fulltree") {
        scenarios::fulltree(&mut lab, &mut res, plan.reps);
    }
    if sel("bigfile") {
        if let Some(s) = lab.subjects.first() {
            let text = scenarios::big_text(&s.clean, s.sys.root())?;
            scenarios::bigfile(&mut lab, &mut res, plan.reps, &text);
        }
    }
    if sel("blame") {
        scenarios::blame(&mut lab, &mut res, plan.reps);
    }
    if sel("watch") {
        scenarios::daemon_idle(&mut lab, &mut res, plan.idle_secs);
        scenarios::forget(&mut lab, &mut res);
    }
    shutdown(&mut lab);
    drop(lab);
    if let (true, Some(bins)) = (quick, &bins) {
        // Exercised, not judged: a tiny tree's bytes per file say little.
        if let Err(e) = store_bytes::run(bins, &work, 300, 1, false, timeout) {
            res.fail("store-bytes", "ckpt", "error", 1, format!("{e:#}"));
        }
    }

    let mut scale_meta = json!(null);
    if sel("scale") {
        let base10 = work.join("base10");
        eprintln!("[bench] building the 10x tree");
        tree::build_repo(&source, &base10, 10)?;
        let mut lab10 = Lab {
            prefix: "scale/",
            base: base10.clone(),
            user_edit: tree::user_edit_target(&base10)?
                .strip_prefix(&base10)?
                .to_path_buf(),
            subjects: subjects(&base10, &work, "10x", &systems, bins.as_ref(), timeout)?,
            flush: !quick,
        };
        if let Some(s) = lab10.subjects.first() {
            scale_meta = json!({"files": s.clean.files().len(), "bytes": s.clean.bytes()});
        }
        scenarios::watch(&mut lab10, &mut res, 1);
        scenarios::idle(&mut lab10, &mut res, plan.reps, plan.idle_pairs);
        scenarios::small(&mut lab10, &mut res, plan.reps);
        scenarios::scaffold(&mut lab10, &mut res, plan.reps);
        scenarios::daemon_idle(&mut lab10, &mut res, plan.idle_secs);
        scenarios::forget(&mut lab10, &mut res);
        shutdown(&mut lab10);
    }

    let table = report::table(&res);
    let targets = report::targets(&res);
    let command: Vec<String> = std::env::args().collect();
    println!(
        "\nckpt-bench: {} files, {:.1} MiB (+ .git); {} repetitions; {}; {fs_line}",
        tree_files,
        tree_bytes as f64 / (1u64 << 20) as f64,
        plan.reps,
        if quick {
            "QUICK: correctness only, timings not meaningful"
        } else {
            "medians"
        }
    );
    println!("{table}");
    println!("targets (issue 4):\n{}", report::targets_text(&targets));
    if !res.failures.is_empty() {
        println!("failures:");
        for f in &res.failures {
            println!(
                "  {} [{}] rep {}: {}: {}",
                f.scenario, f.system, f.rep, f.kind, f.message
            );
        }
    }
    if !res.notes.is_empty() {
        println!("notes:");
        for n in &res.notes {
            println!("  {n}");
        }
    }
    println!("took {:.0} s", started.elapsed().as_secs_f64());
    if let Some(out) = &args.json {
        let meta = json!({
            "command": command.join(" "),
            "tree": source.describe,
            "source_dirs": source.names,
            "files": tree_files,
            "bytes": tree_bytes,
            "scale_tree": scale_meta,
            "quick": quick,
            "reps": plan.reps,
            "idle_pairs": plan.idle_pairs,
            "watch_reps": plan.watch_reps,
            "idle_secs": plan.idle_secs,
            "systems": systems,
            "scenarios": chosen,
            "machine": machine(),
            "filesystem": mount.as_ref().map(|m| json!({
                "mount_point": m.point,
                "type": m.fstype,
                "source": m.source,
                "options": m.options,
            })),
            "unix_time": std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
        });
        report::write_json(out, meta, &res, &targets)?;
        eprintln!("[bench] wrote {}", out.display());
    }
    if args.keep || args.work_dir.is_some() {
        eprintln!("[bench] kept {}", work.display());
    } else {
        std::fs::remove_dir_all(&work).ok();
    }
    Ok(res.failures.is_empty())
}
