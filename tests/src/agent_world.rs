//! What the real-agent tests share: a test daemon, a HOME of the test's own,
//! a project, the scripted model server and the agent's binary, with the
//! ckptctl calls and turn queries every agent's tests make. Each agent's
//! file wraps it with its own settings and how it starts the agent.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::model::ModelServer;
use crate::{run, tail, wait_for, wait_timeout, Daemon, Env, Out};

pub struct AgentWorld {
    pub env: Env,
    _daemon: Daemon,
    pub home: PathBuf,
    pub proj: PathBuf,
    pub server: ModelServer,
    /// The agent's executable.
    pub agent: PathBuf,
    /// Variables beside HOME that keep ckptctl and the agent in the test's
    /// HOME (XDG dirs, the agent's config dir), or `None` to remove one.
    isolation: Vec<(&'static str, Option<OsString>)>,
}

impl AgentWorld {
    /// A daemon, a HOME and a git project holding `files` (canonical when
    /// the agent resolves paths so), with `server` as the model.
    pub fn new(
        agent: PathBuf,
        server: ModelServer,
        files: &[(&str, &[u8])],
        canonical: bool,
    ) -> AgentWorld {
        let env = Env::new();
        let daemon = env.start_daemon();
        let home = env.dir("home");
        let mut proj = env.git_repo("app", files);
        if canonical {
            proj = proj.canonicalize().expect("canonical project");
        }
        AgentWorld {
            env,
            _daemon: daemon,
            home,
            proj,
            server,
            agent,
            isolation: Vec::new(),
        }
    }

    /// Sets `key` (or removes it, with `None`) for every ckptctl and agent
    /// command of the test.
    pub fn isolate_var(&mut self, key: &'static str, value: Option<OsString>) {
        self.isolation.push((key, value));
    }

    pub fn isolate<'c>(&self, cmd: &'c mut Command) -> &'c mut Command {
        cmd.env("HOME", &self.home);
        for (key, value) in &self.isolation {
            match value {
                Some(v) => cmd.env(key, v),
                None => cmd.env_remove(key),
            };
        }
        cmd
    }

    pub fn ctl_cmd(&self, dir: &Path, args: &[&str]) -> Command {
        let mut cmd = self.env.ctl_cmd(dir, args);
        self.isolate(&mut cmd);
        cmd
    }

    pub fn ctl(&self, dir: &Path, args: &[&str]) -> Out {
        run(&mut self.ctl_cmd(dir, args))
    }

    /// `ckptctl ARGS…` in the project, which must succeed.
    pub fn ctl_ok(&self, args: &[&str]) -> Out {
        let out = self.ctl(&self.proj, args);
        assert!(
            out.status.success(),
            "ckptctl {args:?}: {out:?}\ndaemon log:\n{}",
            tail(&self.env.log_path())
        );
        out
    }

    pub fn ctl_json(&self, args: &[&str]) -> Value {
        let mut full = vec!["--json"];
        full.extend_from_slice(args);
        self.ctl_ok(&full).json()
    }

    /// `AGENT ARGS…` in the project with nothing of the test's own
    /// environment but PATH (where `node` is, for an agent from npm); its
    /// hooks' ckptctl finds this test's daemon.
    pub fn agent_cmd(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.agent);
        cmd.args(args)
            .current_dir(&self.proj)
            .env_clear()
            .env(
                "PATH",
                std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
            )
            .env("CKPT_SOCKET", &self.env.socket)
            .env("CKPT_DATA_DIR", &self.env.data)
            .env("CKPT_NO_AUTOSTART", "1");
        self.isolate(&mut cmd);
        cmd
    }

    /// The turns, oldest first.
    pub fn turns(&self) -> Vec<Value> {
        let log = self.ctl_json(&["log"]);
        let mut turns = log["turns"].as_array().expect("turns").clone();
        turns.reverse();
        turns
    }

    pub fn turn(&self, id: i64) -> Value {
        self.turns()
            .into_iter()
            .find(|t| t["id"] == id)
            .unwrap_or_else(|| panic!("no turn {id}: {:#?}", self.turns()))
    }

    /// A turn's entries as `show --json` gives them.
    pub fn entries(&self, id: i64) -> Vec<Value> {
        let shown = self.ctl_json(&["show", &id.to_string()]);
        shown["turn"]["entries"]
            .as_array()
            .unwrap_or_else(|| panic!("no entries: {shown}"))
            .clone()
    }

    /// A turn's paths, in `show`'s order.
    pub fn paths(&self, id: i64) -> Vec<String> {
        self.entries(id)
            .iter()
            .map(|e| e["path"].as_str().expect("a path").to_string())
            .collect()
    }

    /// A turn's paths and how each changed (`added`, …; `open` while the
    /// turn is), sorted.
    pub fn changes(&self, id: i64) -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = self
            .entries(id)
            .iter()
            .map(|e| {
                (
                    e["path"].as_str().expect("a path").to_string(),
                    e["change"].as_str().unwrap_or("open").to_string(),
                )
            })
            .collect();
        v.sort();
        v
    }

    pub fn file(&self, rel: &str) -> Option<String> {
        std::fs::read_to_string(self.proj.join(rel)).ok()
    }

    /// The absolute path of `rel` in the project, as an agent's tool names it.
    pub fn path(&self, rel: &str) -> String {
        self.proj
            .join(rel)
            .to_str()
            .expect("UTF-8 path")
            .to_string()
    }

    /// What ckpt saw of the agent's hooks (`hooks status`), for failure
    /// messages.
    pub fn hook_status(&self) -> String {
        self.ctl(self.env.path(), &["--json", "hooks", "status"])
            .stdout
    }

    /// Waits until turn `id` has `status` (a hook may still be running).
    pub fn wait_status(&self, id: i64, status: &str) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let t = self.turn(id);
            if t["status"] == status {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "turn {id} is not {status}: {t}\nhooks status: {}",
                self.hook_status()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// There is one turn and it is closed.
    pub fn assert_one_closed_turn(&self) {
        let turns = self.turns();
        assert_eq!(turns.len(), 1, "{turns:?}");
        assert_eq!(
            turns[0]["status"],
            "closed",
            "{:?}\n{}",
            turns[0],
            self.hook_status()
        );
    }
}

/// Starts `cmd` in a process group of its own, waits (up to `wait`) for
/// `started` to exist, then presses Ctrl-C as a terminal does (SIGINT to
/// the group); the agent must exit within 30 s.
pub fn interrupt_once_started(cmd: &mut Command, started: &Path, wait: Duration) {
    std::os::unix::process::CommandExt::process_group(cmd, 0);
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the agent");
    let pgid = child.id() as i32;
    wait_for("the tool call to start", wait, || started.exists());
    // SAFETY: signalling the process group of our own child.
    unsafe { libc::kill(-pgid, libc::SIGINT) };
    if wait_timeout(&mut child, Duration::from_secs(30)).is_none() {
        // SAFETY: as above.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
        panic!(
            "{} did not exit on SIGINT",
            cmd.get_program().to_string_lossy()
        );
    }
}

/// `(path, change)` pairs, sorted, as [`AgentWorld::changes`] gives them.
pub fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = list
        .iter()
        .map(|(p, c)| (p.to_string(), c.to_string()))
        .collect();
    v.sort();
    v
}
