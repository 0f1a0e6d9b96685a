//! `ckptctl doctor` and the agents in `ckptctl status`, end to end: every
//! ckptctl here sees a temp HOME and XDG_CONFIG_HOME, and a PATH holding
//! `sh`, the ckptctl under test and a `systemctl` that answers as a user
//! systemd would; the hooks are installed by ckpt's own `hooks install`.
//! The inotify limit comes from `CKPT_TEST_MAX_USER_WATCHES` (test-only):
//! the pool is the user's, shared with every other test running.

use std::path::{Path, PathBuf};

use ckpt_e2e::*;
use serde_json::Value;

struct World {
    env: Env,
    home: PathBuf,
    xdg: PathBuf,
    bin: PathBuf,
    /// `CKPT_TEST_MAX_USER_WATCHES`.
    limit: String,
}

impl World {
    /// A world whose `systemctl --user is-active` prints `state`.
    fn new(state: &str) -> World {
        use std::os::unix::fs::PermissionsExt;
        let ckptctl = ckpt_e2e::bin("ckptctl");
        let env = Env::new();
        let home = env.dir("home");
        let xdg = env.dir("xdg");
        let bin = env.dir("bin");
        std::os::unix::fs::symlink("/bin/sh", bin.join("sh")).expect("link sh");
        std::os::unix::fs::symlink(ckptctl, bin.join("ckptctl")).expect("link ckptctl");
        let systemctl = bin.join("systemctl");
        std::fs::write(
            &systemctl,
            format!("#!/bin/sh\ncase \"$*\" in\n  *is-active*) echo {state}; [ {state} = active ];;\nesac\n"),
        )
        .unwrap();
        std::fs::set_permissions(&systemctl, std::fs::Permissions::from_mode(0o755)).unwrap();
        World {
            env,
            home,
            xdg,
            bin,
            limit: "1000000000".into(),
        }
    }

    fn ctl(&self, dir: &Path, args: &[&str]) -> Out {
        run(self
            .env
            .ctl_cmd(dir, args)
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", &self.xdg)
            .env("PATH", &self.bin)
            .env("CKPT_TEST_MAX_USER_WATCHES", &self.limit)
            .env_remove("CODEX_HOME")
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("COPILOT_HOME")
            .env_remove("GEMINI_CLI_HOME")
            .env_remove("SHELL"))
    }

    fn ctl_ok(&self, dir: &Path, args: &[&str]) -> String {
        let out = self.ctl(dir, args);
        assert!(out.status.success(), "ckptctl {args:?} failed: {out:?}");
        out.stdout
    }

    /// `doctor --json` in `dir`: its exit code and findings.
    fn doctor(&self, dir: &Path) -> (i32, Value) {
        let out = self.ctl(dir, &["--json", "doctor"]);
        assert!(out.stderr.is_empty(), "{out:?}");
        (out.code(), out.json())
    }

    /// A set-up a user would call healthy: the service installed and
    /// running, the daemon up, Claude Code's hooks installed, a project
    /// watched.
    fn healthy(&self) -> (Daemon, PathBuf) {
        self.ctl_ok(self.env.path(), &["service", "install", "--no-start"]);
        let d = self.env.start_daemon();
        self.ctl_ok(self.env.path(), &["hooks", "install", "claude-code"]);
        let proj = self
            .env
            .git_repo("p", &[("a.txt", b"one\n"), ("src/b.rs", b"fn b() {}\n")]);
        self.ctl_ok(&proj, &["watch"]);
        (d, proj)
    }
}

/// The findings of `check`.
fn findings<'a>(doc: &'a Value, check: &str) -> Vec<&'a Value> {
    doc["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["check"] == check)
        .collect()
}

fn one<'a>(doc: &'a Value, check: &str) -> &'a Value {
    let f = findings(doc, check);
    assert_eq!(f.len(), 1, "one {check} finding: {doc:#}");
    f[0]
}

#[test]
fn doctor_finds_a_healthy_setup_ok_in_json() {
    let w = World::new("active");
    let (_d, proj) = w.healthy();
    let (code, doc) = w.doctor(&proj);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(doc["ok"], true);
    for f in doc["findings"].as_array().unwrap() {
        assert_eq!(f["level"], "ok", "{f}");
        assert!(f["check"].is_string() && f["found"].is_string(), "{f}");
        assert!(f.get("fix").is_none(), "an ok finding has no fix: {f}");
    }
    for check in ["daemon", "service", "inotify", "agents", "disk"] {
        one(&doc, check);
    }
    let claude = one(&doc, "agent claude-code");
    assert_eq!(
        claude["found"], "hooks installed (user), mcp: yes",
        "its MCP server answered the handshake"
    );
    let p: Vec<&Value> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["check"].as_str().unwrap().starts_with("project "))
        .collect();
    assert_eq!(p.len(), 1, "{doc:#}");
    assert!(
        p[0]["found"].as_str().unwrap().contains("store sound"),
        "{p:?}"
    );
}

#[test]
fn doctor_names_a_missing_hook_and_the_install_that_fixes_it() {
    let w = World::new("active");
    let (_d, proj) = w.healthy();
    let settings = w.home.join(".claude/settings.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    assert!(v["hooks"].as_object_mut().unwrap().remove("Stop").is_some());
    std::fs::write(&settings, serde_json::to_string_pretty(&v).unwrap()).unwrap();

    let (code, doc) = w.doctor(&proj);
    assert_eq!(code, 1, "a failure exits 1: {doc:#}");
    assert_eq!(doc["ok"], false);
    let f = one(&doc, "agent claude-code");
    assert_eq!(f["level"], "fail", "{f}");
    assert!(
        f["found"]
            .as_str()
            .unwrap()
            .contains("partly installed (user)"),
        "{f}"
    );
    assert_eq!(f["fix"], "ckptctl hooks install claude-code");

    // The fix does fix it.
    w.ctl_ok(w.env.path(), &["hooks", "install", "claude-code"]);
    let (code, doc) = w.doctor(&proj);
    assert_eq!(code, 0, "{doc:#}");
}

#[test]
fn doctor_warns_when_the_hooks_run_another_ckptctl_than_the_one_on_path() {
    let w = World::new("active");
    let (_d, proj) = w.healthy();
    // Another build of ckptctl first on PATH.
    let other = w.env.dir("other");
    std::fs::copy(bin("ckptctl"), other.join("ckptctl")).unwrap();
    std::fs::remove_file(w.bin.join("ckptctl")).unwrap();
    std::os::unix::fs::symlink(other.join("ckptctl"), w.bin.join("ckptctl")).unwrap();
    let (code, doc) = w.doctor(&proj);
    assert_eq!(code, 0, "a warning alone exits 0: {doc:#}");
    let f = one(&doc, "agent claude-code");
    assert_eq!(f["level"], "warn", "{f}");
    let found = f["found"].as_str().unwrap();
    assert!(
        found.contains("but the ckptctl on PATH is")
            && found.contains(
                &std::fs::canonicalize(other.join("ckptctl"))
                    .unwrap()
                    .display()
                    .to_string()
            ),
        "{found}"
    );
    assert_eq!(f["fix"], "ckptctl hooks install claude-code");
}

#[test]
fn doctor_says_a_stopped_daemon_and_service_fail() {
    let w = World::new("inactive");
    w.ctl_ok(w.env.path(), &["service", "install", "--no-start"]);
    let (code, doc) = w.doctor(w.env.path());
    assert_eq!(code, 1, "{doc:#}");
    let d = one(&doc, "daemon");
    assert_eq!(d["level"], "fail", "{d}");
    assert!(
        d["found"]
            .as_str()
            .unwrap()
            .contains(&w.env.socket.display().to_string()),
        "names the socket: {d}"
    );
    assert_eq!(d["fix"], "ckptctl service install");
    let s = one(&doc, "service");
    assert_eq!(s["level"], "fail", "{s}");
    assert!(s["found"].as_str().unwrap().contains("not running"), "{s}");
    assert_eq!(s["fix"], "systemctl --user enable --now ckptd.service");
    assert!(
        !w.env.socket.exists(),
        "doctor starts no daemon: whether one runs is what it checks"
    );
}

#[test]
fn doctor_fails_when_the_watch_pool_is_used_up_and_names_ckptds_share() {
    let mut w = World::new("active");
    let (_d, proj) = w.healthy();
    let status: Value = serde_json::from_str(&w.ctl_ok(&proj, &["--json", "status"])).unwrap();
    if status["daemon"]["watcher"] != "inotify" {
        eprintln!("SKIPPED: the recursive watcher does not count its watches");
        return;
    }
    let held = status["daemon"]["watches"]
        .as_u64()
        .expect("inotify counts its watches");
    assert!(held >= 3, "the root, src/ and the cookie dir: {status:#}");
    w.limit = held.to_string();
    let (code, doc) = w.doctor(&proj);
    assert_eq!(code, 1, "{doc:#}");
    let f = one(&doc, "inotify");
    assert_eq!(f["level"], "fail", "{f}");
    let found = f["found"].as_str().unwrap();
    assert!(found.contains(&format!("ckptd holds {held}")), "{found}");
    assert!(
        found.contains(&format!("of the user's {held} watches")),
        "{found}"
    );
    assert!(
        f["fix"]
            .as_str()
            .unwrap()
            .starts_with("sudo sysctl -w fs.inotify.max_user_watches=524288"),
        "{f}"
    );
}

#[test]
fn doctor_tells_a_codex_project_not_trusted_then_its_hooks_not_trusted() {
    let w = World::new("active");
    let (_d, proj) = w.healthy();
    w.ctl_ok(&proj, &["hooks", "install", "codex", "--project"]);
    let (code, doc) = w.doctor(&proj);
    assert_eq!(code, 1, "{doc:#}");
    let f = findings(&doc, "agent codex");
    let untrusted = f
        .iter()
        .find(|f| {
            f["found"]
                .as_str()
                .unwrap()
                .contains("does not trust this project")
        })
        .unwrap_or_else(|| panic!("{doc:#}"));
    assert_eq!(untrusted["level"], "fail");
    let root = std::fs::canonicalize(&proj).unwrap();
    assert_eq!(
        untrusted["fix"],
        format!("run `codex` in {} and trust the folder", root.display())
    );

    // Trusted, as Codex records it: now its hooks wait for `/hooks`.
    let config = w.home.join(".codex/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(
        &config,
        format!(
            "[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
            root.display()
        ),
    )
    .unwrap();
    let (code, doc) = w.doctor(&proj);
    assert_eq!(code, 1, "{doc:#}");
    let f = one(&doc, "agent codex");
    assert!(
        f["found"].as_str().unwrap().contains("not trusted yet"),
        "{f}"
    );
    assert_eq!(f["fix"], "open `/hooks` in Codex");
}

#[test]
fn doctor_human_output() {
    let w = World::new("active");
    let (_d, proj) = w.healthy();
    let out = w.ctl(&proj, &["doctor"]);
    assert_eq!(out.code(), 0, "{out:?}");
    let mut s = insta::Settings::clone_current();
    s.set_prepend_module_to_snapshot(false);
    s.set_snapshot_path("snapshots");
    let tmp = std::fs::canonicalize(w.env.path()).unwrap();
    s.add_filter(&regex_escape(&tmp.to_string_lossy()), "[TMP]");
    s.add_filter(&regex_escape(&w.env.path().to_string_lossy()), "[TMP]");
    s.add_filter(
        r"ckptd \d+\.\d+\.\d+\S* \(pid \d+\)",
        "ckptd [VERSION] (pid [PID])",
    );
    // The pool is the user's: every process of theirs adds to it.
    s.add_filter(
        r"[\d,]+ of the user's [\d,]+ watches in use \(\d+%\), ckptd holds [\d,]+(; most of the rest: .*)?",
        "[N] of the user's [LIMIT] watches in use ([P]%), ckptd holds [N][; most of the rest: …]",
    );
    s.add_filter(
        r"ckptd's share unknown(; most of the rest: .*)?",
        "ckptd holds [N][; most of the rest: …]",
    );
    s.add_filter(r"[\d.]+ [KMGT]?i?B free", "[FREE] free");
    s.add_filter(
        r"fsck: \d+ blobs, \d+ turn entries in \d+ ms",
        "fsck: [N] blobs, [N] turn entries in [N] ms",
    );
    s.bind(|| insta::assert_snapshot!("doctor", out.stdout));
}

#[test]
fn status_shows_watches_open_turns_per_session_and_the_agents() {
    let w = World::new("active");
    let (_d, proj) = w.healthy();
    w.ctl_ok(&proj, &["turn-start", "--session", "s1"]);
    w.ctl_ok(&proj, &["turn-start", "--session", "s2"]);
    let text = w.ctl_ok(&proj, &["status"]);
    assert!(
        text.contains("turn 1 open (s1), turn 2 open (s2)"),
        "{text}"
    );
    assert!(
        text.contains("agent claude-code: hooks installed (user), mcp: yes"),
        "{text}"
    );
    let doc: Value = serde_json::from_str(&w.ctl_ok(&proj, &["--json", "status"])).unwrap();
    let p = &doc["projects"][0];
    assert_eq!(p["open_turns"][0]["session"], "s1", "{doc:#}");
    assert_eq!(p["open_turns"][1]["turn"], 2, "{doc:#}");
    assert!(p["watches"].as_u64().unwrap() >= 1, "{doc:#}");
    assert!(
        text.contains(&format!("    {} watch", p["watches"])),
        "the project's watches shown: {text}"
    );
    let agents = doc["agents"].as_array().unwrap();
    assert_eq!(agents.len(), 1, "only what is found or installed: {doc:#}");
    assert_eq!(agents[0]["agent"], "claude-code");
    assert_eq!(agents[0]["user"]["installed"], "yes");
    assert_eq!(agents[0]["project"]["installed"], "no");
}

fn regex_escape(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}
