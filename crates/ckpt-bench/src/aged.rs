//! `--aged SECS`: hook calls on a project with a long history against the
//! same calls on a fresh one, in one run (issue 35: an idle turn and a
//! small rewind cost the same however long the history). One daemon
//! watches both; eight sessions age one project over the socket for SECS
//! seconds (turns back to back, every fourth rewound with `--path`), then
//! two clients at once for 15 s, one per project, each a `ckptctl`
//! process per call as a hook, time turn-start, a one-file turn-end and a
//! one-file rewind. Prints p50/p99 per operation and project and the
//! aged / fresh ratio of the p50s.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;

use crate::ckpt_runner::Bins;
use crate::conns::percentile;
use crate::many::{self, Load, Tally, Via};

/// How long the hook calls are timed.
const TIMED_SECS: u64 = 15;

pub fn run_aged(bins: &Bins, work: &Path, secs: u64, timeout: Duration) -> Result<bool> {
    let roots: Vec<PathBuf> = ["fresh", "aged"]
        .iter()
        .map(|p| work.join(format!("history/{p}")))
        .collect();
    let sys = Arc::new(many::watching(
        bins,
        &roots,
        &work.join("history-daemon"),
        timeout,
    )?);
    let back_to_back = |via| Load {
        via,
        pace: Duration::ZERO,
    };
    let aging = many::drive(
        &sys,
        &roots[1..],
        8,
        back_to_back(Via::Socket),
        secs,
        timeout,
        || Ok(()),
    )?;
    let mut aging = aging.into_iter().next().unwrap_or_default();
    println!(
        "aged project: {} turns and {} rewinds --path in {secs} s",
        aging.turn_start.len(),
        aging.rewind.len()
    );
    let mut wrong = std::mem::take(&mut aging.wrong);
    // One client on each project at once: both timed under the same load.
    let load = back_to_back(Via::Process);
    let timed = many::drive(&sys, &roots, 2, load, TIMED_SECS, timeout, || Ok(()))?;
    let Ok([mut fresh, mut aged]) = <[Tally; 2]>::try_from(timed) else {
        unreachable!("one tally per project");
    };
    wrong.append(&mut fresh.wrong);
    wrong.append(&mut aged.wrong);
    println!("| operation | fresh p50 / p99 | aged p50 / p99 | aged / fresh (p50) |");
    println!("|---|---|---|---|");
    for (name, f, a) in [
        ("turn-start", &mut fresh.turn_start, &mut aged.turn_start),
        (
            "turn-end, one file",
            &mut fresh.turn_end,
            &mut aged.turn_end,
        ),
        (
            "rewind --path, one file",
            &mut fresh.rewind,
            &mut aged.rewind,
        ),
    ] {
        if f.is_empty() || a.is_empty() {
            wrong.push(format!("no {name} finished"));
            continue;
        }
        let (f50, f99, a50, a99) = (
            percentile(f, 50),
            percentile(f, 99),
            percentile(a, 50),
            percentile(a, 99),
        );
        println!(
            "| {name} | {f50:.2} / {f99:.2} ms | {a50:.2} / {a99:.2} ms | {:.2}x |",
            a50 / f50
        );
    }
    for w in &wrong {
        println!("WRONG: {w}");
    }
    Ok(wrong.is_empty())
}
