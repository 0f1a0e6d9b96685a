//! How late a change's event comes after the write returned, with notify's
//! watcher in the recursive shape (`CKPT_WATCHER=notify`): the figures
//! behind the barrier's quiet window (docs/measurements.md, "Watcher
//! shapes"). Writes `--files` files in bursts of `--burst` into a watched
//! tree, with one directory made per burst (the backend then walks it),
//! and prints percentiles of the lag.
//!
//! ```text
//! cargo run -p ckptd --example event_lag -- 20000 200
//! ```

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use notify::{EventKindMask, RecursiveMode, Watcher};

fn main() -> notify::Result<()> {
    let mut args = std::env::args().skip(1);
    let files: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let burst: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(200);
    let dir = tempfile::tempdir()?;
    let root = dir.path().canonicalize()?;
    let (tx, rx) = mpsc::channel::<(PathBuf, Instant)>();
    let config = notify::Config::default()
        .with_follow_symlinks(false)
        .with_event_kinds(EventKindMask::CORE | EventKindMask::ACCESS_CLOSE);
    let mut w = notify::RecommendedWatcher::new(
        move |res: notify::Result<notify::Event>| {
            let at = Instant::now();
            if let Ok(ev) = res {
                for p in ev.paths {
                    let _ = tx.send((p, at));
                }
            }
        },
        config,
    )?;
    w.watch(&root, RecursiveMode::Recursive)?;

    let mut written: HashMap<PathBuf, Instant> = HashMap::new();
    for b in 0..files.div_ceil(burst) {
        let sub = root.join(format!("d{b}"));
        std::fs::create_dir(&sub)?;
        for i in 0..burst {
            let p = sub.join(format!("f{i}"));
            std::fs::write(&p, b"x")?;
            written.insert(p, Instant::now());
        }
    }
    let mut lags = Vec::with_capacity(written.len());
    let deadline = Instant::now() + Duration::from_secs(30);
    while !written.is_empty() && Instant::now() < deadline {
        let Ok((p, at)) = rx.recv_timeout(Duration::from_secs(1)) else {
            continue;
        };
        if let Some(t) = written.remove(&p) {
            lags.push(at.saturating_duration_since(t));
        }
    }
    lags.sort();
    let pct = |q: f64| lags[((lags.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e3;
    println!(
        "{} writes ({} never reported: made before their directory's watch): lag p50 {:.2} ms, p99 {:.2} ms, p99.9 {:.2} ms, max {:.2} ms",
        lags.len() + written.len(),
        written.len(),
        pct(0.5),
        pct(0.99),
        pct(0.999),
        pct(1.0)
    );
    Ok(())
}
