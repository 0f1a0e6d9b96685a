//! `workcopy run`: a check in the copy, without a shell, stdin closed,
//! stdout and stderr to a log kept with the work copy, in a process group of
//! its own that is killed whole on timeout or Ctrl-C.

use std::ffi::OsString;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;

use super::state::{now_secs, RunRecord};

/// How long the group has after SIGTERM before SIGKILL.
const GRACE: Duration = Duration::from_secs(2);
const POLL: Duration = Duration::from_millis(20);

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Runs `command` in `dir`, logging to `log`; returns what happened.
pub fn run(
    dir: &Path,
    command: &[OsString],
    timeout: Option<Duration>,
    log: &Path,
) -> anyhow::Result<RunRecord> {
    let (prog, args) = command.split_first().context("no command given")?;
    if let Some(parent) = log.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    let out = std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
    let err = out
        .try_clone()
        .context("duplicating the log's descriptor")?;
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    let started = now_secs();
    let t0 = Instant::now();
    let mut child = Command::new(prog)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0)
        .spawn()
        .with_context(|| format!("starting {}", prog.to_string_lossy()))?;
    let pgid = child.id() as libc::pid_t;
    let mut timed_out = false;
    let mut interrupted = false;
    let mut killed_at: Option<Instant> = None;
    let status = loop {
        if let Some(status) = child.try_wait().context("waiting for the command")? {
            break status;
        }
        if killed_at.is_none() {
            timed_out = timeout.is_some_and(|t| t0.elapsed() >= t);
            interrupted = INTERRUPTED.load(Ordering::SeqCst);
            if timed_out || interrupted {
                // SAFETY: kill(2) on the group we created.
                unsafe { libc::kill(-pgid, libc::SIGTERM) };
                killed_at = Some(Instant::now());
            }
        } else if killed_at.is_some_and(|k| k.elapsed() >= GRACE) {
            // SAFETY: as above.
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
        }
        std::thread::sleep(POLL);
    };
    if killed_at.is_some() {
        // What is left of the group (children of the killed leader) goes too.
        // SAFETY: as above; ESRCH when nothing is left is fine.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
    }
    Ok(RunRecord {
        command: command
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        started,
        duration_ms: t0.elapsed().as_millis() as u64,
        exit_code: status.code(),
        signal: status.signal(),
        timed_out,
        interrupted,
        log: log.to_path_buf(),
        timeout_secs: timeout.map(|t| t.as_secs()),
    })
}
