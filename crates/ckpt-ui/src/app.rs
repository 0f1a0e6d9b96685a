//! The loop: draw, wait for a key or the next refresh, turn the key into
//! an action, run what the action needs of the daemon, feed the answer
//! back. The daemon is asked for the log every refresh interval, so turns
//! show up as agents make them.

use std::time::{Duration, Instant};

use ckpt_proto::RewindFlags;
use ckptctl::commands::Ctx;
use ratatui::crossterm::event::{self, Event, KeyEventKind};

use crate::cli::UiArgs;
use crate::daemon::Daemon;
use crate::state::{App, Effect, Filter, Status};
use crate::term::Screen;
use crate::{keys, render};

pub fn run(ctx: Ctx, args: UiArgs) -> anyhow::Result<u8> {
    let mut daemon = Daemon::new(ctx);
    let filter = match args.session {
        Some(s) => Filter::Session(Some(s)),
        None => Filter::All,
    };
    let mut app = App::new(filter, color());
    // Read once before taking the terminal: a daemon that cannot be
    // reached, or a directory no project holds, is an error on a normal
    // screen.
    app.on_log(daemon.log()?, now_ns());
    let mut screen = Screen::enter()?;
    let every = Duration::from_millis(args.refresh_ms);
    let mut refreshed = Instant::now();
    while !app.quit {
        screen.terminal.draw(|f| render::draw(f, &mut app))?;
        let wait = every.saturating_sub(refreshed.elapsed());
        if event::poll(wait)? {
            if let Event::Key(k) = event::read()? {
                if k.kind != KeyEventKind::Release {
                    let effect = keys::action(&app, k).and_then(|a| app.apply(a));
                    if let Some(effect) = effect {
                        perform(&mut app, &mut daemon, &mut screen, effect)?;
                    }
                }
            }
        }
        if refreshed.elapsed() >= every {
            refresh(&mut app, &mut daemon);
            refreshed = Instant::now();
        }
    }
    Ok(0)
}

/// The timeline again; a failure shows on the result line and the next
/// refresh tries again.
fn refresh(app: &mut App, daemon: &mut Daemon) {
    match daemon.log() {
        Ok(log) => {
            // A daemon error shown earlier is over once the log reads again.
            if matches!(&app.status, Some(Status::Error(e)) if e.starts_with("daemon: ")) {
                app.status = None;
            }
            app.on_log(log, now_ns());
        }
        Err(e) => app.status = Some(Status::Error(format!("daemon: {e:#}"))),
    }
}

/// Runs one effect against the daemon and feeds the answer back.
fn perform(
    app: &mut App,
    daemon: &mut Daemon,
    screen: &mut Screen,
    effect: Effect,
) -> anyhow::Result<()> {
    let project = app.project.clone().unwrap_or_default();
    let result = match effect {
        Effect::Log => {
            refresh(app, daemon);
            Ok(())
        }
        Effect::Show(turn) => daemon.show(turn).map(|r| app.on_show(r)),
        Effect::Diff { turn, path } => daemon
            .diff(&project, turn, &path)
            .map(|r| app.on_diff(turn, path, r)),
        Effect::Ledger(path) => daemon
            .ledger(&project, path.as_ref())
            .map(|r| app.on_ledger(path, r)),
        Effect::Plan(ask) => {
            let flags = RewindFlags {
                dry_run: true,
                force: false,
            };
            daemon.rewind(&ask, flags).map(|r| app.on_plan(ask, r))
        }
        Effect::Apply { ask, force } => {
            // Say what runs before it runs: a big rewind takes a while.
            app.status = Some(Status::Info("applying…".into()));
            screen.terminal.draw(|f| render::draw(f, app))?;
            let flags = RewindFlags {
                dry_run: false,
                force,
            };
            let r = daemon.rewind(&ask, flags).map(|r| app.on_applied(ask, r));
            if r.is_ok() {
                let status = app.status.take();
                refresh(app, daemon);
                app.status = status;
            }
            r
        }
    };
    if let Err(e) = result {
        app.on_error(&e);
    }
    Ok(())
}

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// Colours unless `NO_COLOR` is set to something (no-color.org).
fn color() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}
