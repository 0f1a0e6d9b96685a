//! One sequence's isolated world: a temp dir holding the socket dir, the
//! daemon's data dir, HOME, the project and a file outside it; the real
//! `ckptd` (started, killed, stopped) and `ckptctl` calls against it.

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use ckpt_proto::{read_frame, write_frame, Request, Response, PROTOCOL_VERSION};

/// Longest a single `ckptctl` call may take before the soak calls it hung.
const CALL_TIMEOUT: Duration = Duration::from_secs(120);
/// Longest a daemon may take to answer after it is started.
const START_TIMEOUT: Duration = Duration::from_secs(60);

pub struct World {
    /// Removed when the world is dropped, unless kept (`keep`).
    tmp: Option<tempfile::TempDir>,
    /// The temp dir's path.
    pub dir: PathBuf,
    pub bin: PathBuf,
    pub project: PathBuf,
    pub outside: PathBuf,
    socket: PathBuf,
    data: PathBuf,
    daemon: Option<Child>,
    /// Starts so far, for the log file name of each.
    starts: u32,
    /// `CKPT_TEST_PENDING_MAX` for its daemons, if set.
    pending_max: Option<usize>,
    /// `CKPT_TEST_PLAN_WINDOW` (actions to a block, blocks) for its
    /// daemons, if set.
    plan_window: Option<(usize, usize)>,
}

/// A finished `ckptctl` call.
pub struct Call {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Call {
    pub fn parse<T: serde::de::DeserializeOwned>(&self) -> anyhow::Result<T> {
        serde_json::from_str(&self.stdout)
            .with_context(|| format!("unexpected reply: {:?} {:?}", self.stdout, self.stderr))
    }

    pub fn describe(&self) -> String {
        format!(
            "exit {:?}, stderr: {}",
            self.code,
            self.stderr
                .trim()
                .lines()
                .take(12)
                .collect::<Vec<_>>()
                .join(" | ")
        )
    }
}

impl World {
    /// `pending_max`: the most paths a project's queue holds, if not the
    /// daemon's own figure; `plan_window`: the actions a rewind holds in
    /// memory (to a block, blocks), if not the daemon's own.
    pub fn new(
        bin: &Path,
        pending_max: Option<usize>,
        plan_window: Option<(usize, usize)>,
    ) -> anyhow::Result<World> {
        let tmp = tempfile::Builder::new()
            .prefix("ckpt-soak-")
            .tempdir()
            .context("creating the temp dir")?;
        let run = tmp.path().join("run");
        std::fs::create_dir_all(&run).context("mkdir run")?;
        std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o700))
            .context("chmod run")?;
        let project = tmp.path().join("p");
        std::fs::create_dir_all(&project).context("mkdir project")?;
        // An empty directory symlinks in the project may lead to.
        std::fs::create_dir_all(tmp.path().join("elsewhere")).context("mkdir elsewhere")?;
        let outside = tmp.path().join("outside.txt");
        std::fs::write(&outside, b"outside the project: never touched\n")
            .context("writing the outside file")?;
        Ok(World {
            socket: run.join("ckpt").join("ckptd.sock"),
            data: tmp.path().join("data").join("ckpt"),
            bin: bin.to_path_buf(),
            project,
            outside,
            dir: tmp.path().to_path_buf(),
            tmp: Some(tmp),
            daemon: None,
            starts: 0,
            pending_max,
            plan_window,
        })
    }

    fn env(&self, cmd: &mut Command) {
        let t = self.dir.as_path();
        cmd.env("XDG_RUNTIME_DIR", t.join("run"))
            .env("XDG_DATA_HOME", t.join("data"))
            .env("HOME", t)
            .env("CKPT_SOCKET", &self.socket)
            .env("CKPT_DATA_DIR", &self.data)
            .env("CKPT_NO_AUTOSTART", "1")
            .env_remove("CKPT_TEST_PAUSE_REWIND_AFTER")
            .env_remove("CKPT_TEST_PAUSE_MARKER");
        match self.pending_max {
            Some(n) => cmd.env("CKPT_TEST_PENDING_MAX", n.to_string()),
            None => cmd.env_remove("CKPT_TEST_PENDING_MAX"),
        };
        match self.plan_window {
            Some((block, blocks)) => cmd.env("CKPT_TEST_PLAN_WINDOW", format!("{block},{blocks}")),
            None => cmd.env_remove("CKPT_TEST_PLAN_WINDOW"),
        };
    }

    /// Keeps the temp dir (project, data dir, daemon log) for a post-mortem.
    pub fn keep(&mut self) -> PathBuf {
        if let Some(t) = self.tmp.take() {
            let _ = t.keep();
        }
        self.dir.clone()
    }

    pub fn log_path(&self) -> PathBuf {
        self.dir.as_path().join("ckptd.log")
    }

    /// The marker the daemon creates when a test pause begins.
    pub fn pause_marker(&self) -> PathBuf {
        self.dir.as_path().join("paused")
    }

    /// Starts the daemon (with extra env) and waits until it answers.
    pub fn start(&mut self, extra: &[(&str, String)]) -> anyhow::Result<()> {
        if self.daemon.is_some() {
            bail!("soak bug: daemon already running");
        }
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .context("daemon log")?;
        let log2 = log.try_clone().context("dup log")?;
        let mut cmd = Command::new(self.bin.join("ckptd"));
        self.env(&mut cmd);
        cmd.env(
            "RUST_LOG",
            std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into()),
        )
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log2);
        for (k, v) in extra {
            cmd.env(k, v);
        }
        self.starts += 1;
        let mut child = cmd
            .spawn()
            .with_context(|| format!("starting {}", self.bin.join("ckptd").display()))?;
        let deadline = Instant::now() + START_TIMEOUT;
        let mut pause = Duration::from_millis(1);
        loop {
            if hello(&self.socket).is_ok() {
                self.daemon = Some(child);
                return Ok(());
            }
            if let Some(st) = child.try_wait().context("try_wait ckptd")? {
                bail!("ckptd exited at start-up ({st}):\n{}", self.log_tail());
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                bail!("ckptd did not answer within {START_TIMEOUT:?}");
            }
            // Waiting for the daemon to bind its socket: nothing to wait on
            // but the socket itself.
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(10));
        }
    }

    pub fn signal(&self, sig: i32) -> anyhow::Result<()> {
        let Some(c) = &self.daemon else {
            bail!("soak bug: no daemon to signal");
        };
        // SAFETY: kill(2) on our own child's pid, which we have not reaped.
        let rc = unsafe { libc::kill(c.id() as i32, sig) };
        if rc != 0 {
            bail!(
                "kill({}, {sig}): {}",
                c.id(),
                std::io::Error::last_os_error()
            );
        }
        Ok(())
    }

    /// SIGKILL and reap.
    pub fn kill(&mut self) -> anyhow::Result<()> {
        self.signal(libc::SIGKILL)?;
        if let Some(mut c) = self.daemon.take() {
            c.wait().context("reaping ckptd")?;
        }
        Ok(())
    }

    /// SIGTERM and wait for a clean exit.
    pub fn stop(&mut self) -> anyhow::Result<()> {
        if self.daemon.is_none() {
            return Ok(());
        }
        self.signal(libc::SIGTERM)?;
        if let Some(mut c) = self.daemon.take() {
            match wait_timeout(&mut c, Duration::from_secs(60))? {
                Some(st) if st.success() => {}
                Some(st) => bail!("ckptd exited with {st} on SIGTERM"),
                None => bail!("ckptd ignored SIGTERM for 60 s"),
            }
        }
        Ok(())
    }

    /// `ckptctl args…` in the project, with the world's env.
    pub fn ctl_cmd<S: AsRef<OsStr>>(&self, args: &[S]) -> Command {
        let mut cmd = Command::new(self.bin.join("ckptctl"));
        self.env(&mut cmd);
        cmd.args(args).current_dir(&self.project);
        cmd
    }

    /// Runs `ckptctl`, waiting at most `CALL_TIMEOUT`.
    pub fn ctl<S: AsRef<OsStr> + std::fmt::Debug>(&self, args: &[S]) -> anyhow::Result<Call> {
        let child = self.spawn_ctl(args)?;
        self.finish_ctl(child, args)
    }

    /// Starts `ckptctl` without waiting (to kill the daemon under it).
    pub fn spawn_ctl<S: AsRef<OsStr>>(&self, args: &[S]) -> anyhow::Result<Child> {
        let out = std::fs::File::create(self.dir.as_path().join("ctl.out")).context("ctl.out")?;
        let err = std::fs::File::create(self.dir.as_path().join("ctl.err")).context("ctl.err")?;
        self.ctl_cmd(args)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .context("spawning ckptctl")
    }

    pub fn finish_ctl<S: std::fmt::Debug>(
        &self,
        mut child: Child,
        args: &[S],
    ) -> anyhow::Result<Call> {
        let Some(st) = wait_timeout(&mut child, CALL_TIMEOUT)? else {
            bail!("ckptctl {args:?} hung for {CALL_TIMEOUT:?}");
        };
        let read = |n: &str| {
            String::from_utf8_lossy(&std::fs::read(self.dir.as_path().join(n)).unwrap_or_default())
                .into_owned()
        };
        Ok(Call {
            code: st.code(),
            stdout: read("ctl.out"),
            stderr: read("ctl.err"),
        })
    }

    /// Whether a spawned call has finished.
    pub fn done(child: &mut Child) -> anyhow::Result<bool> {
        Ok(child.try_wait().context("try_wait ckptctl")?.is_some())
    }

    pub fn log_tail(&self) -> String {
        let text = std::fs::read(self.log_path()).unwrap_or_default();
        let text = String::from_utf8_lossy(&text);
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(25)..].join("\n")
    }
}

impl Drop for World {
    fn drop(&mut self) {
        if let Some(mut c) = self.daemon.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn wait_timeout(child: &mut Child, timeout: Duration) -> anyhow::Result<Option<ExitStatus>> {
    let deadline = Instant::now() + timeout;
    let mut pause = Duration::from_micros(200);
    loop {
        if let Some(s) = child.try_wait().context("try_wait")? {
            return Ok(Some(s));
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(None);
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(1));
    }
}

/// Connects and exchanges hellos: the daemon is up and serving.
fn hello(socket: &Path) -> anyhow::Result<()> {
    let mut s = UnixStream::connect(socket)?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    write_frame(
        &mut s,
        &Request::Hello {
            version: PROTOCOL_VERSION,
            client: "ckpt-soak".into(),
            progress: false,
        },
    )?;
    match read_frame::<_, Response>(&mut s)? {
        Response::Hello(_) => Ok(()),
        other => bail!("unexpected hello reply {other:?}"),
    }
}
