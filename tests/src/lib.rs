//! Harness for the end-to-end tests: each test gets its own temp dir with an
//! isolated socket and data dir, starts the real `ckptd`, drives the agent's
//! side with real shell commands and checks trees byte-for-byte.
//!
//! The binaries are found next to the test executable's parent directory
//! (`<target>/<triple>/debug/deps/test-…` → `<target>/<triple>/debug/ckptd`),
//! built on first use.
//!
//! ```no_run
//! use ckpt_e2e::Env;
//! let env = Env::new();
//! let _daemon = env.start_daemon();
//! let proj = env.git_repo("app", &[("a.txt", b"a\n")]);
//! env.ctl_ok(&proj, &["watch"]);
//! ```

pub mod agent_world;
pub mod model;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use ckpt_proto::{read_frame, write_frame, Request, Response, PROTOCOL_VERSION};

/// Longest any single command may take before the test fails (rather than
/// hanging CI).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(120);

/// A built binary of the workspace. `cargo test` builds only the test
/// harnesses of other packages, not their binaries, so the first call builds
/// them into the same target dir and profile with [`build_binaries`].
pub fn bin(name: &str) -> PathBuf {
    static BUILT: std::sync::OnceLock<Result<bool, String>> = std::sync::OnceLock::new();
    let exe = std::env::current_exe().expect("test executable path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("test executable lives in <target>/<profile>/deps");
    let path = profile_dir.join(name);
    match BUILT.get_or_init(|| build_binaries(env!("CARGO").as_ref(), profile_dir)) {
        Ok(true) => {}
        Ok(false) => panic!("no cargo target dir above {}", profile_dir.display()),
        Err(e) => panic!("{e}"),
    }
    assert!(
        path.is_file(),
        "{} is missing after the build",
        path.display()
    );
    path
}

/// Builds `ckptd` (with its `test-hooks` feature), `ckptctl` and the executables it
/// execs from next to itself (`ckpt-mcp`, `ckpt-hooks`, `ckpt-doctor`, `ckpt-workcopy`, `ckpt-config`, `ckpt-ui`, `ckpt-trace`) with `cargo`
/// into the target dir and profile of `profile_dir`. `Ok(false)`: no cargo
/// target dir above it, nothing built.
pub fn build_binaries(cargo: &std::ffi::OsStr, profile_dir: &Path) -> Result<bool, String> {
    // `<target>/<profile>`, or `<target>/<triple>/<profile>` when a target
    // is configured (as ours is). Cargo tags the target dir, and newer
    // versions `<triple>/` too: the outer one is the target dir (else the
    // build lands in `<triple>/<triple>/` and stale binaries are used).
    let Some(target_dir) = profile_dir
        .ancestors()
        .skip(1)
        .take(2)
        .filter(|d| d.join("CACHEDIR.TAG").is_file())
        .last()
    else {
        return Ok(false);
    };
    let mut cmd = Command::new(cargo);
    cmd.args([
        "build",
        "--quiet",
        "-p",
        "ckptd",
        "-p",
        "ckptctl",
        // The executables `ckptctl` execs from next to itself.
        "-p",
        "ckpt-mcp",
        "-p",
        "ckpt-hooks",
        "-p",
        "ckpt-doctor",
        "-p",
        "ckpt-workcopy",
        "-p",
        "ckpt-config",
        "-p",
        "ckpt-ui",
        "-p",
        "ckpt-trace",
        // The `CKPT_TEST_*` hooks some tests set; a plain build has none.
        "--features",
        "ckptd/test-hooks ckpt-doctor/test-hooks",
        "--target-dir",
    ])
    .arg(target_dir)
    .current_dir(env!("CARGO_MANIFEST_DIR"));
    if profile_dir.file_name().is_some_and(|p| p == "release") {
        cmd.arg("--release");
    }
    match cmd.status() {
        Ok(s) if s.success() => Ok(true),
        other => Err(format!(
            "building ckptd and ckptctl's executables: {other:?}"
        )),
    }
}

/// What a finished command left.
#[derive(Debug)]
pub struct Out {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Out {
    pub fn code(&self) -> i32 {
        self.status.code().unwrap_or(-1)
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}): {self:?}"))
    }
}

/// Runs a command to completion with a timeout; output captured.
pub fn run(cmd: &mut Command) -> Out {
    run_with_input(cmd, None)
}

/// Spawns `cmd`, again while its program is "busy": a test that copies a
/// binary and runs it races every other test thread's fork, whose child
/// holds the copy's write descriptor until it execs (ETXTBSY, seen in CI).
fn spawn_copied(cmd: &mut Command) -> Child {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match cmd.spawn() {
            Ok(child) => return child,
            Err(err) if err.raw_os_error() == Some(libc::ETXTBSY) && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(err) => panic!("spawning {cmd:?}: {err}"),
        }
    }
}

/// Like [`run`], with `input` as the command's stdin.
pub fn run_with_input(cmd: &mut Command, input: Option<&[u8]>) -> Out {
    let tmp = tempfile::tempdir().expect("temp dir for output");
    let (o, e) = (tmp.path().join("out"), tmp.path().join("err"));
    let stdin = match input {
        Some(bytes) => {
            let i = tmp.path().join("in");
            std::fs::write(&i, bytes).expect("stdin file");
            Stdio::from(std::fs::File::open(&i).expect("open stdin file"))
        }
        None => Stdio::null(),
    };
    cmd.stdin(stdin)
        .stdout(std::fs::File::create(&o).expect("stdout file"))
        .stderr(std::fs::File::create(&e).expect("stderr file"));
    let mut child = spawn_copied(cmd);
    let status = wait_timeout(&mut child, COMMAND_TIMEOUT)
        .unwrap_or_else(|| panic!("{cmd:?} did not finish within {COMMAND_TIMEOUT:?}"));
    Out {
        status,
        stdout: String::from_utf8_lossy(&std::fs::read(&o).unwrap_or_default()).into_owned(),
        stderr: String::from_utf8_lossy(&std::fs::read(&e).unwrap_or_default()).into_owned(),
    }
}

/// Waits for a child; kills it and returns `None` after `timeout`.
pub fn wait_timeout(child: &mut Child, timeout: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + timeout;
    let mut pause = Duration::from_millis(1);
    loop {
        if let Some(s) = child.try_wait().expect("waiting for child") {
            return Some(s);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

/// Polls `cond` until it holds; panics with `what` after `timeout`.
pub fn wait_for(what: &str, timeout: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Runs `script` with `sh -c` in `dir` (the agent's or the user's hands);
/// panics if it fails.
pub fn sh(dir: &Path, script: &str) {
    let out = run(Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .envs(git_env(dir)));
    assert!(out.status.success(), "sh -c {script:?} failed: {out:?}");
}

/// Runs git in `dir` with a fixed identity and no user config.
pub fn git(dir: &Path, args: &[&str]) -> Out {
    let out = run(Command::new("git")
        .args(args)
        .current_dir(dir)
        .envs(git_env(dir)));
    assert!(out.status.success(), "git {args:?} failed: {out:?}");
    out
}

fn git_env(dir: &Path) -> Vec<(&'static str, std::ffi::OsString)> {
    let home = dir.parent().unwrap_or(dir).as_os_str().to_os_string();
    vec![
        ("GIT_AUTHOR_NAME", "Test".into()),
        ("GIT_AUTHOR_EMAIL", "test@example.com".into()),
        ("GIT_COMMITTER_NAME", "Test".into()),
        ("GIT_COMMITTER_EMAIL", "test@example.com".into()),
        ("GIT_CONFIG_NOSYSTEM", "1".into()),
        ("GIT_CONFIG_GLOBAL", "/dev/null".into()),
        ("HOME", home),
    ]
}

/// One path of a tree as the tests compare it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Node {
    File { mode: u32, bytes: Vec<u8> },
    Dir { mode: u32 },
    Symlink { target: Vec<u8> },
}

/// A whole tree: relative raw path → node. Under `.git`, modification times
/// are recorded too, so "byte-identical" also means "not rewritten".
pub type Tree = BTreeMap<Vec<u8>, (Node, Option<i64>)>;

/// Reads every path under `root` (not `root` itself).
pub fn snapshot(root: &Path) -> Tree {
    let mut out = Tree::new();
    walk(root, root, false, &mut out);
    out
}

/// The tree without `.git`.
pub fn snapshot_work(root: &Path) -> Tree {
    snapshot(root)
        .into_iter()
        .filter(|(k, _)| !is_git(k))
        .collect()
}

/// Only `.git` and what is below it.
pub fn snapshot_git(root: &Path) -> Tree {
    snapshot(root)
        .into_iter()
        .filter(|(k, _)| is_git(k))
        .collect()
}

fn is_git(rel: &[u8]) -> bool {
    rel == b".git" || rel.starts_with(b".git/")
}

fn walk(root: &Path, dir: &Path, in_git: bool, out: &mut Tree) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .collect();
    entries.sort();
    for path in entries {
        let rel = path
            .strip_prefix(root)
            .expect("below root")
            .as_os_str()
            .as_bytes()
            .to_vec();
        let meta = std::fs::symlink_metadata(&path).expect("lstat");
        let git = in_git || path.file_name().is_some_and(|n| n == ".git");
        let mtime = git.then(|| meta.mtime() * 1_000_000_000 + meta.mtime_nsec());
        let mode = meta.permissions().mode() & 0o7777;
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&path).expect("readlink");
            out.insert(
                rel,
                (
                    Node::Symlink {
                        target: target.as_os_str().as_bytes().to_vec(),
                    },
                    mtime,
                ),
            );
        } else if meta.is_dir() {
            // A directory's mtime changes whenever an entry is added, even by
            // a temp file that is gone again; compare it only inside .git.
            out.insert(rel, (Node::Dir { mode }, mtime));
            walk(root, &path, git, out);
        } else {
            let bytes = std::fs::read(&path).expect("read file");
            out.insert(rel, (Node::File { mode, bytes }, mtime));
        }
    }
}

/// Panics with a readable list of differences.
pub fn assert_same_tree(what: &str, expected: &Tree, actual: &Tree) {
    if expected == actual {
        return;
    }
    let mut diffs = Vec::new();
    for (k, v) in expected {
        match actual.get(k) {
            None => diffs.push(format!("missing: {}", String::from_utf8_lossy(k))),
            Some(a) if a != v => diffs.push(format!(
                "differs: {} (expected {}, found {})",
                String::from_utf8_lossy(k),
                describe(v),
                describe(a)
            )),
            Some(_) => {}
        }
    }
    for k in actual.keys() {
        if !expected.contains_key(k) {
            diffs.push(format!("unexpected: {}", String::from_utf8_lossy(k)));
        }
    }
    panic!("{what}: trees differ:\n  {}", diffs.join("\n  "));
}

fn describe(n: &(Node, Option<i64>)) -> String {
    let t = n.1.map(|m| format!(", mtime {m}")).unwrap_or_default();
    match &n.0 {
        Node::File { mode, bytes } => format!("file {mode:o} {} bytes{t}", bytes.len()),
        Node::Dir { mode } => format!("dir {mode:o}{t}"),
        Node::Symlink { target } => format!("symlink -> {}", String::from_utf8_lossy(target)),
    }
}

/// Whether the daemons these tests start watch each project with one
/// recursive watch: always off Linux; on Linux with `CKPT_WATCHER=notify`
/// in the environment they inherit (CI runs the suite with each shape).
pub fn recursive_watcher() -> bool {
    !cfg!(target_os = "linux") || std::env::var("CKPT_WATCHER").is_ok_and(|v| v == "notify")
}

/// An isolated ckpt world: socket, data dir, projects, all in one temp dir.
pub struct Env {
    pub tmp: tempfile::TempDir,
    pub socket: PathBuf,
    pub data: PathBuf,
    /// Extra variables for daemons this env starts.
    pub daemon_env: Vec<(String, String)>,
    /// A soft limit on open files for daemons this env starts.
    pub daemon_open_files: Option<u64>,
}

impl Default for Env {
    fn default() -> Self {
        Env::new()
    }
}

impl Env {
    pub fn new() -> Env {
        let tmp = tempfile::Builder::new()
            .prefix("ckpt-e2e-")
            .tempdir()
            .expect("temp dir");
        let socket = tmp.path().join("run").join("ckptd.sock");
        let data = tmp.path().join("data");
        Env {
            tmp,
            socket,
            data,
            daemon_env: Vec::new(),
            daemon_open_files: None,
        }
    }

    pub fn path(&self) -> &Path {
        self.tmp.path()
    }

    /// A plain directory for a project.
    pub fn dir(&self, name: &str) -> PathBuf {
        let p = self.tmp.path().join(name);
        std::fs::create_dir_all(&p).expect("create project dir");
        p
    }

    /// A git repository with one commit of `files`.
    pub fn git_repo(&self, name: &str, files: &[(&str, &[u8])]) -> PathBuf {
        let p = self.dir(name);
        git(&p, &["init", "-q", "-b", "main", "."]);
        for (path, bytes) in files {
            let full = p.join(path);
            if let Some(parent) = full.parent() {
                std::fs::create_dir_all(parent).expect("create parent");
            }
            std::fs::write(&full, bytes).expect("write file");
        }
        git(&p, &["add", "-A"]);
        git(&p, &["commit", "-q", "-m", "initial"]);
        p
    }

    /// Starts `ckptd` on this env's socket and waits until it answers.
    pub fn start_daemon(&self) -> Daemon {
        self.start_daemon_with(&[])
    }

    pub fn start_daemon_with(&self, env: &[(&str, &str)]) -> Daemon {
        let child = self.spawn_daemon(env);
        let mut d = Daemon {
            child,
            log: self.log_path(),
        };
        let socket = self.socket.clone();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if hello(&socket).is_ok() {
                return d;
            }
            if let Some(status) = d.child.try_wait().expect("try_wait") {
                panic!("ckptd exited at start-up ({status}):\n{}", d.log_text());
            }
            assert!(
                Instant::now() < deadline,
                "ckptd did not answer:\n{}",
                d.log_text()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Spawns `ckptd` without waiting for it.
    pub fn spawn_daemon(&self, env: &[(&str, &str)]) -> Child {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .expect("daemon log");
        let log2 = log.try_clone().expect("dup log");
        let mut cmd = Command::new(bin("ckptd"));
        cmd.arg("--socket")
            .arg(&self.socket)
            .arg("--data-dir")
            .arg(&self.data)
            .env_remove("CKPT_SOCKET")
            .env_remove("CKPT_DATA_DIR")
            .envs(self.settings_env())
            .env(
                "RUST_LOG",
                std::env::var("RUST_LOG").unwrap_or_else(|_| "debug,notify=info".into()),
            )
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2);
        for k in ckpt_settings::KEYS {
            cmd.env_remove(k.env_var());
        }
        for (k, v) in &self.daemon_env {
            cmd.env(k, v);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        if let Some(soft) = self.daemon_open_files {
            use std::os::unix::process::CommandExt;
            // SAFETY: between fork and exec only async-signal-safe calls
            // (getrlimit, setrlimit) run.
            unsafe {
                cmd.pre_exec(move || {
                    let mut lim = libc::rlimit {
                        rlim_cur: 0,
                        rlim_max: 0,
                    };
                    if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    lim.rlim_cur = soft.min(lim.rlim_max);
                    if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        cmd.spawn().expect("spawn ckptd")
    }

    pub fn log_path(&self) -> PathBuf {
        self.tmp.path().join("ckptd.log")
    }

    /// `ckptctl rewind TURN` in `dir`, started in the background and left
    /// once the daemon's `CKPT_TEST_PAUSE_MARKER` file `marker` exists (the
    /// rewind paused at `CKPT_TEST_PAUSE_REWIND_AFTER`).
    pub fn rewind_until_paused(&self, dir: &Path, turn: &str, marker: &Path) -> Child {
        let rewind = self
            .ctl_cmd(dir, &["rewind", turn])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_for(
            "the rewind to reach its pause point",
            Duration::from_secs(60),
            || marker.exists(),
        );
        rewind
    }

    /// A `ckptctl` command in `dir`, pointed at this env, autostart off.
    pub fn ctl_cmd(&self, dir: &Path, args: &[&str]) -> Command {
        let mut cmd = Command::new(bin("ckptctl"));
        cmd.args(args)
            .current_dir(dir)
            .env("CKPT_SOCKET", &self.socket)
            .env("CKPT_DATA_DIR", &self.data)
            .env("CKPT_NO_AUTOSTART", "1")
            .envs(self.settings_env())
            // A developer's or CI's colour setting must not colour what
            // the tests read (tests that mean to, set it again).
            .env_remove("CLICOLOR_FORCE")
            .env_remove("NO_COLOR");
        for k in ckpt_settings::KEYS {
            cmd.env_remove(k.env_var());
        }
        cmd
    }

    /// This env's own config directory (`XDG_CONFIG_HOME`): the user's
    /// settings file is `config_home()/ckpt/config.toml`.
    pub fn config_home(&self) -> PathBuf {
        self.tmp.path().join("config")
    }

    /// The user's settings file the daemons and clients of this env read.
    pub fn user_config(&self) -> PathBuf {
        self.config_home().join("ckpt").join("config.toml")
    }

    /// What isolates the settings: this env's config dir (so a developer's
    /// own `~/.config/ckpt` never leaks in).
    fn settings_env(&self) -> [(&'static str, PathBuf); 1] {
        [("XDG_CONFIG_HOME", self.config_home())]
    }

    pub fn ctl(&self, dir: &Path, args: &[&str]) -> Out {
        run(&mut self.ctl_cmd(dir, args))
    }

    /// Runs `ckptctl`, asserting exit 0; returns stdout.
    pub fn ctl_ok(&self, dir: &Path, args: &[&str]) -> String {
        let out = self.ctl(dir, args);
        assert!(
            out.status.success(),
            "ckptctl {args:?} failed: {out:?}\ndaemon log:\n{}",
            tail(&self.log_path())
        );
        out.stdout
    }

    /// Runs `ckptctl --json …`, asserting exit 0; returns the document.
    pub fn ctl_json(&self, dir: &Path, args: &[&str]) -> serde_json::Value {
        let mut full = vec!["--json"];
        full.extend_from_slice(args);
        let out = self.ctl(dir, &full);
        assert!(
            out.status.success(),
            "ckptctl {full:?} failed: {out:?}\ndaemon log:\n{}",
            tail(&self.log_path())
        );
        out.json()
    }
}

/// The last lines of a log, for failure messages.
pub fn tail(path: &Path) -> String {
    let text = std::fs::read(path).unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

/// A running daemon; killed when dropped.
pub struct Daemon {
    pub child: Child,
    log: PathBuf,
}

impl Daemon {
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    pub fn signal(&self, sig: i32) {
        // SAFETY: sending a signal to our own child process.
        let rc = unsafe { libc::kill(self.pid(), sig) };
        assert_eq!(rc, 0, "kill({}, {sig})", self.pid());
    }

    /// SIGTERM, then wait; returns the exit status.
    pub fn terminate(mut self) -> ExitStatus {
        self.signal(libc::SIGTERM);
        let status = wait_timeout(&mut self.child, Duration::from_secs(30));
        status.unwrap_or_else(|| panic!("ckptd ignored SIGTERM:\n{}", self.log_text()))
    }

    /// SIGKILL, then reap.
    pub fn kill(mut self) {
        self.signal(libc::SIGKILL);
        let _ = self.child.wait();
    }

    pub fn log_text(&self) -> String {
        tail(&self.log)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        if std::thread::panicking() {
            eprintln!("---- ckptd log ----\n{}", self.log_text());
        }
    }
}

/// Connects and exchanges hellos over the raw protocol.
pub fn hello(socket: &Path) -> std::io::Result<UnixStream> {
    hello_asking(socket, false)
}

/// [`hello`]; with `progress`, the hello asks for progress frames.
pub fn hello_asking(socket: &Path, progress: bool) -> std::io::Result<UnixStream> {
    let mut s = UnixStream::connect(ckpt_proto::paths::socket_address(socket))?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    write_frame(
        &mut s,
        &Request::Hello {
            version: PROTOCOL_VERSION,
            client: "e2e".into(),
            progress,
        },
    )
    .map_err(|e| std::io::Error::other(e.to_string()))?;
    match read_frame::<_, Response>(&mut s) {
        Ok(Response::Hello(_)) => Ok(s),
        Ok(other) => Err(std::io::Error::other(format!("{other:?}"))),
        Err(e) => Err(std::io::Error::other(e.to_string())),
    }
}

/// Writes raw bytes to a stream.
pub fn send_raw(s: &mut UnixStream, bytes: &[u8]) {
    s.write_all(bytes).expect("write raw bytes");
}

/// Reads one response frame.
pub fn recv(s: &mut UnixStream) -> Response {
    read_frame(s).expect("a response frame")
}

/// Whether the peer has closed the stream (reads EOF).
pub fn closed(s: &mut UnixStream) -> bool {
    let mut buf = [0u8; 1];
    matches!(s.read(&mut buf), Ok(0))
}

/// The names of every file under `root`, for messages.
pub fn list(root: &Path) -> Vec<String> {
    snapshot(root)
        .keys()
        .map(|k| String::from_utf8_lossy(k).into_owned())
        .collect()
}

pub fn sha256_hex(data: &[u8]) -> String {
    <sha2::Sha256 as sha2::Digest>::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The fingerprint of `paths` as they are under `root`, written again from
/// the docs: for each path in byte order, the path, NUL, then `DELETED`, or
/// kind NUL octal mode NUL SHA-256 hex of the content; then a newline.
pub fn fingerprint(root: &Path, paths: &[String]) -> String {
    let mut sorted: Vec<&String> = paths.iter().collect();
    sorted.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    let mut text = Vec::new();
    for p in sorted {
        text.extend_from_slice(p.as_bytes());
        text.push(0);
        match std::fs::symlink_metadata(root.join(p)) {
            Err(_) => text.extend_from_slice(b"DELETED"),
            Ok(m) => {
                let (kind, mode, sha) = if m.file_type().is_symlink() {
                    let target = std::fs::read_link(root.join(p)).expect("readlink");
                    (
                        "symlink",
                        0o777,
                        sha256_hex(std::os::unix::ffi::OsStrExt::as_bytes(target.as_os_str())),
                    )
                } else if m.is_dir() {
                    (
                        "dir",
                        std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o7777,
                        String::new(),
                    )
                } else {
                    let bytes = std::fs::read(root.join(p)).expect("read");
                    (
                        "file",
                        std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o7777,
                        sha256_hex(&bytes),
                    )
                };
                text.extend_from_slice(format!("{kind}\0{mode:o}\0{sha}").as_bytes());
            }
        }
        text.push(b'\n');
    }
    sha256_hex(&text)
}

/// Bytes no text diff would take: NULs and invalid UTF-8.
pub fn binary(seed: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 3) as u8)
        .collect()
}

/// Writes a project's settings file, `.ckpt/config.toml`.
pub fn project_config(proj: &Path, toml: &str) {
    std::fs::create_dir_all(proj.join(".ckpt")).unwrap();
    std::fs::write(proj.join(".ckpt/config.toml"), toml).unwrap();
}

/// `len` bytes that do not compress, different for each `seed`.
pub fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(2).wrapping_add(1);
    (0..len)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 56) as u8
        })
        .collect()
}
