//! `ckptctl watch [DIR]`: watch a tree; returns once the baseline is taken.
//! On a terminal, a spinner on stderr shows that the scan is going on.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ckpt_proto::{Request, Watched};
use clap::Args;

use super::{absolute, Ctx};
use crate::output;

/// `ckptctl watch`'s arguments.
#[derive(Args, Debug)]
pub struct WatchArgs {
    /// The directory to watch, exactly (not together with -C).
    pub dir: Option<PathBuf>,
}

pub fn run(ctx: &Ctx, args: WatchArgs) -> anyhow::Result<u8> {
    let dir = args.dir.as_deref();
    if dir.is_some() && ctx.g.dir.is_some() {
        crate::commands::usage_error("give the directory once: `watch DIR` or `watch -C DIR`");
    }
    let (dir, discover) = match dir {
        Some(d) => (absolute(d)?, false),
        None => (ctx.dir.clone(), true),
    };
    let mut client = ctx.connect()?;
    let show_progress = !ctx.g.json && !ctx.g.quiet && std::io::stderr().is_terminal();
    let spinner = show_progress.then(|| Spinner::start(format!("scanning {}", dir.display())));
    let reply = client.reply::<Watched>(&Request::Watch {
        dir: dir.as_path().into(),
        discover,
    });
    if let Some(s) = spinner {
        s.stop();
    }
    // Warned once the spinner has cleared its line.
    let w = reply?;
    ctx.warn_if_degraded(&w);
    if ctx.g.json {
        output::json(&w)?;
    } else if !ctx.g.quiet {
        if w.already {
            println!("already watching {}", w.project);
        } else {
            println!(
                "watching {}: {}, {} hashed in {:.1}s",
                w.project,
                output::count(w.scan.entries, "entry"),
                output::bytes(w.scan.bytes_hashed),
                w.elapsed_ms as f64 / 1000.0
            );
            print_paths(
                &format!("{} not captured:", w.scan.skipped.len()),
                &w.scan.skipped,
            );
            print_paths(
                &format!(
                    "{} could not be read (nothing below is captured):",
                    w.scan.unreadable.len()
                ),
                &w.scan.unreadable,
            );
        }
    }
    Ok(0)
}

/// A heading and up to 20 of `paths`, if there are any.
fn print_paths(heading: &str, paths: &[ckpt_proto::Skipped]) {
    if paths.is_empty() {
        return;
    }
    println!("{heading}");
    for s in paths.iter().take(20) {
        println!("  {}  ({})", s.path, s.reason);
    }
    if paths.len() > 20 {
        println!("  … and {} more", paths.len() - 20);
    }
}

/// A one-line spinner with elapsed time, on stderr.
struct Spinner {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

impl Spinner {
    fn start(message: String) -> Spinner {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let frames = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
            let start = Instant::now();
            let mut i = 0;
            // Quick baselines finish before the spinner would even show.
            std::thread::sleep(Duration::from_millis(150));
            while !flag.load(Ordering::Relaxed) {
                let mut err = std::io::stderr().lock();
                let _ = write!(
                    err,
                    "\r\x1b[2K{} {message}… {:.1}s",
                    frames[i % frames.len()],
                    start.elapsed().as_secs_f64()
                );
                let _ = err.flush();
                drop(err);
                i += 1;
                std::thread::sleep(Duration::from_millis(100));
            }
            if i > 0 {
                let _ = write!(std::io::stderr(), "\r\x1b[2K");
            }
        });
        Spinner { stop, thread }
    }

    fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.thread.join();
    }
}
