//! ckpt driven through its real binaries: a `ckptd` started by the bench
//! with an isolated socket and data dir, and one `ckptctl` process per call,
//! exactly as an agent hook runs it.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::Value;

use crate::ckpt_json;
use crate::cmd::run;
use crate::procstat;
use crate::system::{Blamed, StoreSize, System};
use crate::tree::dir_bytes;

/// Where the `ckptd` and `ckptctl` executables are.
#[derive(Clone, Debug)]
pub struct Bins {
    pub ctl: PathBuf,
    pub daemon: PathBuf,
}

impl Bins {
    /// `bin_dir`, or else the directory of the bench's own executable (cargo
    /// puts every workspace binary of a profile side by side).
    pub fn locate(bin_dir: Option<&Path>) -> Result<Self> {
        let dir = match bin_dir {
            // Absolute: the systems run with other working directories.
            Some(d) => std::path::absolute(d)
                .with_context(|| format!("resolving --bin-dir {}", d.display()))?,
            None => std::env::current_exe()
                .context("finding the bench's own executable")?
                .parent()
                .context("executable without a directory")?
                .to_path_buf(),
        };
        let b = Self {
            ctl: dir.join("ckptctl"),
            daemon: dir.join("ckptd"),
        };
        for p in [&b.ctl, &b.daemon] {
            let ok = fs::metadata(p)
                .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
                .unwrap_or(false);
            if !ok {
                bail!(
                    "{} not found; build the workspace first (cargo build --release --workspace) or pass --bin-dir",
                    p.display()
                );
            }
        }
        Ok(b)
    }
}

struct Daemon {
    child: Child,
    log: PathBuf,
}

pub struct Ckpt {
    bins: Bins,
    root: PathBuf,
    work: PathBuf,
    generation: usize,
    socket: PathBuf,
    data_dir: PathBuf,
    daemon: Option<Daemon>,
    timeout: Duration,
    notes: Vec<String>,
    /// Variables for the daemons this system starts (`CKPT_WATCHER`).
    daemon_env: Vec<(String, String)>,
    /// Where the daemons' sockets (and so their barrier cookies) go.
    runtime: tempfile::TempDir,
}

/// A user's runtime directory, where ckptd's default socket and its
/// barrier cookies live: `$XDG_RUNTIME_DIR` (a tmpfs), else `/dev/shm`
/// (one, where a machine has no login session), else the work directory.
fn runtime_base(work: &Path) -> PathBuf {
    let shm = Path::new("/dev/shm");
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(dir) if Path::new(&dir).is_dir() => PathBuf::from(dir),
        _ if shm.is_dir() => shm.to_path_buf(),
        _ => work.to_path_buf(),
    }
}

fn log_tail(path: &Path) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}

impl Ckpt {
    pub fn new(bins: Bins, root: &Path, work: &Path, timeout: Duration) -> Result<Self> {
        fs::create_dir_all(work).with_context(|| format!("creating {}", work.display()))?;
        Ok(Self {
            bins,
            root: root.to_path_buf(),
            work: work.to_path_buf(),
            generation: 0,
            socket: PathBuf::new(),
            data_dir: PathBuf::new(),
            daemon: None,
            timeout,
            notes: Vec::new(),
            daemon_env: Vec::new(),
            runtime: tempfile::Builder::new()
                .prefix("ckpt-bench-run")
                .tempdir_in(runtime_base(work))?,
        })
    }

    /// The socket of the running daemon.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// `ckptctl -C DIR ARGS` against this system's daemon, for a project
    /// other than its own root.
    pub fn ctl_in(&self, dir: &Path, args: &[&str]) -> Command {
        let mut c = Command::new(&self.bins.ctl);
        self.env(&mut c);
        c.arg("-C").arg(dir).args(args);
        c
    }

    /// Starts its daemons with `name=value` in their environment.
    pub fn with_daemon_env(mut self, name: &str, value: &str) -> Self {
        self.daemon_env.push((name.to_string(), value.to_string()));
        self
    }

    fn env(&self, c: &mut Command) {
        c.env("CKPT_SOCKET", &self.socket)
            .env("CKPT_DATA_DIR", &self.data_dir)
            .env("CKPT_NO_AUTOSTART", "1")
            .env_remove("RUST_LOG");
    }

    fn ctl_cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(&self.bins.ctl);
        self.env(&mut c);
        // `-C`, not a working directory: see `cmd::git`.
        c.arg("-C").arg(&self.root).args(args);
        c
    }

    /// `ckptctl ARGS` for `status`, which acts on no project and refuses `-C`.
    fn daemon_cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(&self.bins.ctl);
        self.env(&mut c);
        c.args(args);
        c
    }

    /// One `ckptctl ARGS --json` process: its reply if it printed JSON, and
    /// its stdout.
    fn ctl(&mut self, args: &[&str]) -> Result<(Option<Value>, String)> {
        self.ctl_as(args, "--json")
    }

    /// `ckptctl turn-start -q`, as an agent's hook starts a turn.
    pub fn hook_turn_start(&mut self) -> Result<()> {
        self.ctl_quiet(&["turn-start"])
    }

    /// One `ckptctl ARGS -q` process, as an agent's hook runs it: the
    /// daemon's reply lists only what the client may print.
    fn ctl_quiet(&mut self, args: &[&str]) -> Result<()> {
        self.ctl_as(args, "-q").map(|_| ())
    }

    fn ctl_as(&mut self, args: &[&str], mode: &str) -> Result<(Option<Value>, String)> {
        let mut full: Vec<&str> = args.to_vec();
        full.push(mode);
        let t = run(&mut self.ctl_cmd(&full), None, self.timeout)?;
        let out = t.stdout();
        let v = ckpt_json::parse(&out);
        if let Some(why) = v.as_ref().and_then(ckpt_json::degraded) {
            let note = format!("ckptctl {}: degraded: {why}", args[0]);
            if !self.notes.contains(&note) {
                self.notes.push(note);
            }
        }
        if !t.status().success() {
            let what = match t.status().code() {
                Some(3) => "refused because of conflicts (exit 3)".to_string(),
                _ => format!("failed ({})", t.status()),
            };
            let log = self
                .daemon
                .as_ref()
                .map(|d| format!(" (daemon log: {})", d.log.display()))
                .unwrap_or_default();
            bail!(
                "ckptctl {} {what}: {} {}{log}",
                args.join(" "),
                t.stderr().trim(),
                out.trim()
            );
        }
        Ok((v, out))
    }

    fn start_daemon(&mut self) -> Result<()> {
        self.generation += 1;
        let g = self.generation;
        let run_dir = self.runtime.path().join(format!("run-{g}"));
        fs::create_dir_all(&run_dir)?;
        fs::set_permissions(&run_dir, fs::Permissions::from_mode(0o700))?;
        self.socket = run_dir.join("ckptd.sock");
        self.data_dir = self.work.join(format!("data-{g}"));
        self.launch(false).map(|_| ())
    }

    /// Stops the daemon and starts it again on the same data; returns the
    /// time from its start until `ckptctl sync` of the project returned
    /// (restart to synced).
    pub fn restart_until_synced(&mut self) -> Result<Duration> {
        self.stop_daemon();
        self.launch(true)
    }

    /// Starts `ckptd` on the current socket and data dir and waits until it
    /// answers `ckptctl status` (or, with `synced`, until `ckptctl sync` of
    /// the project returns); returns the time that took.
    fn launch(&mut self, synced: bool) -> Result<Duration> {
        let g = self.generation;
        let log = self.work.join(format!("ckptd-{g}.log"));
        let logf = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)?;
        let mut c = Command::new(&self.bins.daemon);
        self.env(&mut c);
        c.envs(self.daemon_env.iter().map(|(k, v)| (k, v)));
        c.current_dir(&self.work)
            .stdin(Stdio::null())
            .stdout(logf.try_clone()?)
            .stderr(logf);
        let started = Instant::now();
        let child = c
            .spawn()
            .with_context(|| format!("starting {}", self.bins.daemon.display()))?;
        self.daemon = Some(Daemon { child, log });
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let d = self.daemon.as_mut().context("daemon vanished")?;
            if let Some(st) = d.child.try_wait()? {
                let tail = log_tail(&d.log);
                self.daemon = None;
                bail!("ckptd exited at start-up ({st}):\n{tail}");
            }
            let mut probe = if synced {
                self.ctl_cmd(&["sync"])
            } else {
                self.daemon_cmd(&["status", "--json"])
            };
            let t = run(&mut probe, None, self.timeout)?;
            if t.status().success() {
                return Ok(started.elapsed());
            }
            if Instant::now() > deadline {
                bail!("ckptd did not answer within 30 s: {}", t.stderr().trim());
            }
            std::thread::sleep(Duration::from_millis(if synced { 2 } else { 20 }));
        }
    }

    fn stop_daemon(&mut self) {
        let Some(mut d) = self.daemon.take() else {
            return;
        };
        // SAFETY: kill(2) on our own, not yet reaped child.
        unsafe {
            libc::kill(d.child.id() as libc::pid_t, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = d.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = d.child.kill();
        let _ = d.child.wait();
        self.notes
            .push("ckptd did not exit within 10 s of SIGTERM; killed".into());
    }
}

impl System for Ckpt {
    fn name(&self) -> &'static str {
        "ckpt"
    }

    fn root(&self) -> &Path {
        &self.root
    }

    fn prepare_fresh(&mut self) -> Result<()> {
        self.stop_daemon();
        if self.data_dir.as_os_str().is_empty() || !self.data_dir.exists() {
            return self.start_daemon();
        }
        let old = self.data_dir.clone();
        self.start_daemon()?;
        fs::remove_dir_all(&old).with_context(|| format!("removing {}", old.display()))
    }

    fn init(&mut self) -> Result<()> {
        // The project is `-C`'s (ckptctl refuses a second directory).
        self.ctl(&["watch"]).map(|_| ())
    }

    fn turn_start(&mut self) -> Result<u64> {
        let (v, out) = self.ctl(&["turn-start", "--label", "bench turn"])?;
        v.as_ref()
            .and_then(ckpt_json::turn_id)
            .or_else(|| ckpt_json::turn_id_from_text(&out))
            .with_context(|| format!("no turn id in turn-start's reply: {}", out.trim()))
    }

    fn turn_end(&mut self) -> Result<()> {
        self.ctl_quiet(&["turn-end"])
    }

    fn rewind(&mut self, turn: u64) -> Result<()> {
        let n = turn.to_string();
        self.ctl_quiet(&["rewind", &n])
    }

    fn redo(&mut self) -> Result<()> {
        self.ctl_quiet(&["redo"])
    }

    fn forget(&mut self) -> Result<()> {
        self.ctl(&["unwatch", "--drop-data"]).map(|_| ())
    }

    fn blame(&mut self, rel: &Path) -> Result<Blamed> {
        // Absolute: ckptctl resolves a relative path against its cwd, not -C.
        let abs = self.root.join(rel);
        let abs = abs.to_str().context("a UTF-8 bench path")?;
        let (v, out) = self.ctl(&["blame", abs])?;
        let lines = v
            .as_ref()
            .and_then(|v| v["lines"].as_array())
            .with_context(|| format!("no lines in blame's reply: {}", out.trim()))?;
        Ok(Blamed {
            lines: lines.len(),
            from_turns: lines.iter().filter(|l| l["origin"] == "turn").count(),
        })
    }

    fn settle(&mut self) -> Result<()> {
        self.ctl(&["sync"])?;
        // A rewind answers before the files it replaced are closed (their
        // blocks freed: up to 0.4 s after a fulltree rewind on a `discard`
        // mount), and `sync` waits for that, so it is not timed as the next
        // system's. Daemons of stop 54 and before freed them on `ckpt-free`
        // threads, which their `sync` did not wait for: wait for those too.
        if let Some(pid) = self.daemon_pid() {
            let deadline = Instant::now() + self.timeout;
            let freeing = || {
                procstat::sample(pid)
                    .is_ok_and(|s| s.switches.values().any(|(name, _)| name == "ckpt-free"))
            };
            while freeing() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        Ok(())
    }

    fn store_bytes(&self) -> StoreSize {
        let total = dir_bytes(&self.data_dir, &|_| false);
        let not_wal = dir_bytes(&self.data_dir, &|p| p.to_string_lossy().ends_with("-wal"));
        StoreSize {
            total,
            wal: total.saturating_sub(not_wal),
        }
    }

    fn floors(&mut self) -> Result<Vec<(&'static str, Duration)>> {
        let mut out = Vec::new();
        // Process spawn alone, if the client has a --version that needs no daemon.
        let t = run(&mut self.ctl_cmd(&["--version"]), None, self.timeout)?;
        if t.status().success() {
            out.push(("spawn", t.elapsed));
        }
        let t = run(
            &mut self.daemon_cmd(&["status", "--json"]),
            None,
            self.timeout,
        )?;
        if !t.status().success() {
            bail!("ckptctl status failed: {}", t.stderr().trim());
        }
        out.push(("connect", t.elapsed));
        Ok(out)
    }

    fn daemon_pid(&self) -> Option<u32> {
        self.daemon.as_ref().map(|d| d.child.id())
    }

    fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
    }

    fn shutdown(&mut self) {
        self.stop_daemon();
    }
}

impl Drop for Ckpt {
    fn drop(&mut self) {
        self.stop_daemon();
    }
}
