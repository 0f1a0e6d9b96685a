//! `ckptctl ui` driven in tmux at 80×24 (send-keys, capture-pane): the
//! timeline picks up a turn made while it runs, shows a turn's files and a
//! diff, and a real rewind and redo through its confirm dialog change the
//! files on disk and bring them back; a forced rewind takes a second `y`.
//!
//! tmux missing: with `CKPT_TMUX=require` (what `.ci/run` sets) the tests
//! fail; otherwise they say so on stderr and return early.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use ckpt_e2e::*;

/// A tmux server of the test's own (its own socket, no user config) with
/// one 80×24 window running a command.
struct Tmux {
    socket: PathBuf,
}

impl Tmux {
    /// `None` (after failing under `CKPT_TMUX=require`) when there is no tmux.
    fn available() -> bool {
        if Command::new("tmux")
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            return true;
        }
        let why = "tmux is not installed (apt-get install tmux)";
        if std::env::var("CKPT_TMUX").as_deref() == Ok("require") {
            panic!("{why} (CKPT_TMUX=require)");
        }
        eprintln!("SKIPPED: {why}");
        false
    }

    /// `ckptctl ui ARGS` in `dir`, pointed at `env`'s daemon.
    fn ui(env: &Env, dir: &Path, args: &str) -> Tmux {
        let socket = env.path().join("tmux.sock");
        let t = Tmux { socket };
        // After the UI exits, its status stays on the screen for the test to read.
        let script = format!(
            "env CKPT_SOCKET='{}' CKPT_DATA_DIR='{}' CKPT_NO_AUTOSTART=1 '{}' ui {args}; \
             echo \"ckptctl ui exited: $?\"; sleep 600",
            env.socket.display(),
            env.data.display(),
            bin("ckptctl").display(),
        );
        let out = t
            .cmd()
            .args([
                "new-session",
                "-d",
                "-x",
                "80",
                "-y",
                "24",
                "-s",
                "ui",
                "-c",
            ])
            .arg(dir)
            .arg(script)
            .output()
            .expect("running tmux");
        assert!(out.status.success(), "tmux new-session: {out:?}");
        t
    }

    fn cmd(&self) -> Command {
        let mut c = Command::new("tmux");
        c.arg("-S").arg(&self.socket).args(["-f", "/dev/null"]);
        c
    }

    fn capture(&self) -> String {
        let out = self
            .cmd()
            .args(["capture-pane", "-p", "-t", "ui"])
            .output()
            .expect("tmux capture-pane");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Sends keys, as tmux names them (`Down`, `Enter`, `Escape`, `y`).
    fn keys(&self, keys: &[&str]) {
        let out = self
            .cmd()
            .args(["send-keys", "-t", "ui"])
            .args(keys)
            .output()
            .expect("tmux send-keys");
        assert!(out.status.success(), "tmux send-keys {keys:?}: {out:?}");
    }

    /// Waits until the screen shows every one of `texts`; returns it.
    fn wait_for(&self, texts: &[&str]) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let screen = self.capture();
            if texts.iter().all(|t| screen.contains(t)) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "the screen never showed {texts:?}; it shows:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd().arg("kill-server").output();
    }
}

/// One turn of session s1 made through `ckptctl`, as a hook would.
fn turn(env: &Env, proj: &Path, label: &str, script: &str) {
    env.ctl_ok(
        proj,
        &[
            "turn-start",
            "--label",
            label,
            "--agent",
            "claude-code",
            "--session",
            "s1",
        ],
    );
    sh(proj, script);
    env.ctl_ok(proj, &["turn-end", "--session", "s1"]);
}

/// The screen for the test's log (`--nocapture` shows it).
fn show(what: &str, screen: &str) {
    eprintln!("--- {what} ---\n{screen}--- end ---");
}

#[test]
fn ui_rewinds_and_redoes_a_turn_in_tmux() {
    if !Tmux::available() {
        return;
    }
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("app", &[("a.txt", b"a0\n"), ("b.txt", b"b0\n")]);
    env.ctl_ok(&proj, &["watch"]);
    let mut states = vec![snapshot_work(&proj)];
    turn(
        &env,
        &proj,
        "first edit",
        "echo a1 > a.txt && echo new > n.txt",
    );
    states.push(snapshot_work(&proj));
    turn(&env, &proj, "second edit", "echo b2 > b.txt");
    states.push(snapshot_work(&proj));

    let ui = Tmux::ui(&env, &proj, "--refresh-ms 200");
    ui.wait_for(&["2 turns · all sessions", "second edit", "first edit"]);

    // A turn made while the timeline runs shows up without a key.
    turn(
        &env,
        &proj,
        "third edit",
        "echo c3 > c.txt && echo a3 >> a.txt",
    );
    states.push(snapshot_work(&proj));
    let before = ui.wait_for(&["3 turns", "third edit"]);
    show("the timeline before the rewind", &before);
    let rows: Vec<&str> = before.lines().skip(2).take(3).collect();
    assert!(
        rows[0].trim_start().starts_with("3 "),
        "newest first:\n{before}"
    );
    assert!(rows[2].contains("+1 ~1 -0"), "turn 1's counts:\n{before}");
    assert!(
        before.contains("claude-c") && before.contains("s1"),
        "{before}"
    );

    // Turn 2's files (the selection stayed on turn 2 when turn 3 came),
    // and a.txt's diff in turn 3.
    ui.keys(&["Enter"]);
    ui.wait_for(&["turn 2 · 1 path", "M b.txt"]);
    // An Escape goes alone: one right before another key's escape
    // sequence reads as Alt+key, as in any terminal program.
    ui.keys(&["Escape"]);
    ui.wait_for(&["3 turns · all sessions"]);
    ui.keys(&["Up", "Enter"]);
    ui.wait_for(&["turn 3 · 2 paths", "a.txt"]);
    ui.keys(&["Enter"]);
    let diff = ui.wait_for(&["turn 3 · diff of a.txt", "+a3"]);
    assert!(diff.contains(" a1"), "{diff}");
    ui.keys(&["Escape"]);
    ui.wait_for(&["turn 3 · 2 paths"]);
    ui.keys(&["Escape"]);
    ui.wait_for(&["3 turns · all sessions"]);

    // A plan cancelled changes nothing.
    ui.keys(&["Down", "r"]);
    let dialog = ui.wait_for(&["rewind to before turn 2?", "undoes turns 2, 3"]);
    show("the rewind's confirm dialog", &dialog);
    assert!(dialog.contains("restore   b.txt"), "{dialog}");
    assert!(dialog.contains("delete    c.txt"), "{dialog}");
    ui.keys(&["Escape"]);
    ui.wait_for(&["cancelled: nothing changed"]);
    assert_same_tree("after a cancel", &states[3], &snapshot_work(&proj));

    // The real rewind: to before turn 2, undoing 2 and 3.
    ui.keys(&["r"]);
    ui.wait_for(&["rewind to before turn 2?"]);
    assert_same_tree("before the y", &states[3], &snapshot_work(&proj));
    ui.keys(&["y"]);
    let after = ui.wait_for(&["rewound to before turn 2 (turns 2, 3)"]);
    assert_same_tree(
        "rewound to before turn 2",
        &states[1],
        &snapshot_work(&proj),
    );
    let after = if after.matches("rewound ").count() >= 2 {
        after
    } else {
        ui.wait_for(&["   3 rewound", "   2 rewound"])
    };
    show("the timeline after the rewind", &after);
    assert!(
        after.contains("   3 rewound") && after.contains("   2 rewound"),
        "{after}"
    );

    // The redo puts it back.
    ui.keys(&["R"]);
    let dialog = ui.wait_for(&[
        "redo the rewind to before turn 2?",
        "brings back turns 2, 3",
    ]);
    show("the redo's confirm dialog", &dialog);
    assert_same_tree("before the redo's y", &states[1], &snapshot_work(&proj));
    ui.keys(&["y"]);
    ui.wait_for(&["redid the rewind to before turn 2"]);
    assert_same_tree("redone", &states[3], &snapshot_work(&proj));
    let redone = ui.wait_for(&["redid the rewind"]);
    let redone = if redone.contains("rewound ") {
        // The refresh after the redo is on its way.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let s = ui.capture();
            if !s.lines().skip(2).take(3).any(|l| l.contains("rewound")) {
                break s;
            }
            assert!(Instant::now() < deadline, "turns still rewound:\n{s}");
            std::thread::sleep(Duration::from_millis(50));
        }
    } else {
        redone
    };
    show("the timeline after the redo", &redone);

    ui.keys(&["q"]);
    ui.wait_for(&["ckptctl ui exited: 0"]);
}

#[test]
fn ui_forces_a_rewind_only_after_a_second_confirmation() {
    if !Tmux::available() {
        return;
    }
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("app", &[("a.txt", b"a0\n")]);
    env.ctl_ok(&proj, &["watch"]);
    let before = snapshot_work(&proj);
    turn(&env, &proj, "agent edit", "echo a1 > a.txt");
    // The user edits the file after the agent: a conflict.
    sh(&proj, "echo mine > a.txt");
    let edited = snapshot_work(&proj);

    let ui = Tmux::ui(&env, &proj, "--refresh-ms 200");
    ui.wait_for(&["agent edit"]);
    ui.keys(&["r"]);
    let plan = ui.wait_for(&["conflict  a.txt: edited after the agent"]);
    assert!(plan.contains("refused unless forced"), "{plan}");
    ui.keys(&["y"]);
    let second = ui.wait_for(&["y again overwrites 1 edited path"]);
    show("the second confirmation of a forced rewind", &second);
    assert_same_tree("after the first y", &edited, &snapshot_work(&proj));
    ui.keys(&["y"]);
    ui.wait_for(&["rewound to before turn 1 (turns 1)"]);
    assert_same_tree("forced", &before, &snapshot_work(&proj));
    // The redo brings the user's edit back, not the agent's.
    ui.keys(&["R"]);
    ui.wait_for(&["redo the rewind to before turn 1?"]);
    ui.keys(&["y"]);
    ui.wait_for(&["redid the rewind"]);
    assert_same_tree("redone", &edited, &snapshot_work(&proj));
}

#[test]
fn ui_without_a_project_says_so_on_a_normal_screen() {
    let env = Env::new();
    let _d = env.start_daemon();
    let dir = env.dir("plain");
    let out = env.ctl(&dir, &["ui"]);
    assert_eq!(out.code(), 1, "{out:?}");
    assert!(out.stderr.contains("ckptctl: error:"), "{out:?}");
    let out = env.ctl(&dir, &["ui", "--help"]);
    assert!(out.stdout.contains("Usage: ckptctl ui"), "{out:?}");
}
