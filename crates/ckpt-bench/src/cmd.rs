//! Running child processes: wall-clock timed, with a watchdog so a hung
//! child (a daemon that never answers) fails the sample instead of the run.
//!
//! The watchdog is one long-lived thread shared by every call, so arming it
//! costs a mutex and a futex wake, not a thread spawn, inside the timed region.

use std::ffi::OsStr;
use std::io::Write;
use std::process::{Command, ExitStatus, Output, Stdio};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

struct Armed {
    pid: u32,
    deadline: Instant,
}

struct Watchdog {
    slot: Mutex<Option<Armed>>,
    cv: Condvar,
}

static WATCHDOG: OnceLock<Watchdog> = OnceLock::new();

fn lock(w: &Watchdog) -> MutexGuard<'_, Option<Armed>> {
    w.slot.lock().unwrap_or_else(|e| e.into_inner())
}

fn watchdog() -> &'static Watchdog {
    let mut first = false;
    let w = WATCHDOG.get_or_init(|| {
        first = true;
        Watchdog {
            slot: Mutex::new(None),
            cv: Condvar::new(),
        }
    });
    if first {
        std::thread::spawn(move || watch_loop(w));
    }
    w
}

fn watch_loop(w: &'static Watchdog) {
    let mut g = lock(w);
    loop {
        let next = g.as_ref().map(|a| (a.pid, a.deadline));
        g = match next {
            None => w.cv.wait(g).unwrap_or_else(|e| e.into_inner()),
            Some((pid, deadline)) => {
                let now = Instant::now();
                if now >= deadline {
                    // SAFETY: kill(2) with a pid we spawned and have not reaped
                    // yet (the slot is cleared right after the wait returns).
                    unsafe {
                        libc::kill(pid as libc::pid_t, libc::SIGKILL);
                    }
                    *g = None;
                    g
                } else {
                    w.cv.wait_timeout(g, deadline - now)
                        .unwrap_or_else(|e| e.into_inner())
                        .0
                }
            }
        };
    }
}

fn arm(pid: u32, deadline: Instant) {
    let w = watchdog();
    *lock(w) = Some(Armed { pid, deadline });
    w.cv.notify_one();
}

fn disarm() {
    *lock(watchdog()) = None;
}

/// A finished child process and how long it took, spawn to reap.
pub struct Timed {
    pub out: Output,
    pub elapsed: Duration,
}

impl Timed {
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.stdout).into_owned()
    }

    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.out.stderr).into_owned()
    }

    pub fn status(&self) -> ExitStatus {
        self.out.status
    }
}

fn describe(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args().map(OsStr::to_string_lossy) {
        s.push(' ');
        s.push_str(&a);
    }
    s
}

/// Runs `cmd` to completion (stdout and stderr captured, `input` fed on stdin)
/// and times it from just before spawn to just after reap. A non-zero exit is
/// not an error here; see [`run_ok`].
pub fn run(cmd: &mut Command, input: Option<&[u8]>, timeout: Duration) -> Result<Timed> {
    cmd.stdin(if input.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .with_context(|| format!("spawning `{}`", describe(cmd)))?;
    arm(child.id(), start + timeout);
    let out = std::thread::scope(|s| {
        if let (Some(data), Some(mut stdin)) = (input, child.stdin.take()) {
            // A separate writer so a large input cannot deadlock against a
            // child that fills its stdout pipe first.
            s.spawn(move || {
                let _ = stdin.write_all(data);
            });
        }
        child.wait_with_output()
    });
    let elapsed = start.elapsed();
    disarm();
    let out = out.with_context(|| format!("waiting for `{}`", describe(cmd)))?;
    if elapsed >= timeout {
        bail!("`{}` timed out after {:?}", describe(cmd), timeout);
    }
    Ok(Timed { out, elapsed })
}

/// Like [`run`], but a non-zero exit is an error carrying the child's stderr.
pub fn run_ok(cmd: &mut Command, input: Option<&[u8]>, timeout: Duration) -> Result<Timed> {
    let t = run(cmd, input, timeout)?;
    if !t.status().success() {
        bail!(
            "`{}` failed ({}): {}",
            describe(cmd),
            t.status(),
            t.stderr().trim()
        );
    }
    Ok(t)
}

/// A `git` command isolated from the caller's environment and config.
///
/// Timed commands of either system take `-C DIR`, not a working directory:
/// the bench is linked statically, like every binary of the workspace, and
/// Rust's std then starts a child that changes directory by forking the
/// whole bench (19 ms at 300 MB resident, against 1 ms with `posix_spawn`).
pub fn git() -> Command {
    let mut c = Command::new("git");
    for v in [
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_CEILING_DIRECTORIES",
        "GIT_NAMESPACE",
    ] {
        c.env_remove(v);
    }
    c.env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_AUTHOR_NAME", "ckpt-bench")
        .env("GIT_AUTHOR_EMAIL", "bench@localhost")
        .env("GIT_COMMITTER_NAME", "ckpt-bench")
        .env("GIT_COMMITTER_EMAIL", "bench@localhost")
        .env("GIT_AUTHOR_DATE", "2025-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2025-01-01T00:00:00Z");
    c
}
