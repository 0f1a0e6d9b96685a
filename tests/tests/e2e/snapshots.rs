//! Snapshots of the human-readable output of the main commands, through the
//! real binaries, on a small fixed project: a changed wording fails `cargo
//! test` until the snapshot is reviewed (`cargo insta review`, or the
//! `.snap.new` file moved over the `.snap`). What varies between runs and
//! machines (temp paths, times, durations, pids) is filtered out.

use std::path::Path;

use ckpt_e2e::*;

/// Exit code, stdout and stderr of one `ckptctl` call, as one text.
fn shown(env: &Env, proj: &Path, args: &[&str]) -> String {
    let out = env.ctl(proj, args);
    format!(
        "$ ckptctl {}\nexit: {}\n--- stdout\n{}--- stderr\n{}",
        args.join(" "),
        out.code(),
        out.stdout,
        out.stderr
    )
}

/// The filters for what differs between runs: the temp dir first (it holds
/// the project, the data dir and the socket), then times, durations, pids.
fn settings(env: &Env) -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_prepend_module_to_snapshot(false);
    s.set_snapshot_path("snapshots");
    let tmp = std::fs::canonicalize(env.path()).expect("temp dir");
    s.add_filter(&regex_escape(&tmp.to_string_lossy()), "[TMP]");
    s.add_filter(&regex_escape(&env.path().to_string_lossy()), "[TMP]");
    s.add_filter(
        r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?",
        "[TIME]",
    );
    s.add_filter(r"\b\d+(\.\d+)? ?(ns|µs|us|ms|s|min|h|d)\b", "[DUR]");
    s.add_filter(r"\bpid:? \d+", "pid [PID]");
    s.add_filter(r"ckptd \d+\.\d+\.\d+\S*", "ckptd [VERSION]");
    // Packed sizes vary with how the store packed this run's blobs.
    s.add_filter(r"\d+ B stored", "[N] B stored");
    // Whether the daemon caught a half-written user edit as a blob of its own.
    s.add_filter(
        r"checked \d+ blobs \(\d+ packs, \d+ object files\)",
        "checked [N] blobs ([N] packs, [N] object files)",
    );
    // The watcher's shape is chosen by CKPT_WATCHER, and CI runs both.
    s.add_filter(
        r"watcher: (inotify|notify-recursive)\b(, \d+ watch(es)?)?",
        "watcher: [WATCHER]",
    );
    // One watch per directory, or one per root (recursive watcher).
    s.add_filter(r"\b\d+ watch(es)?\b", "[N] watches");
    // The agents' transcript dirs are under the user's HOME, as found there.
    s.add_filter(
        r"(conversation adapter [a-z-]+): \S+ \([^)]*\)",
        "$1: [HOME DIR] ([FOUND])",
    );
    s
}

/// A literal string as a regex.
fn regex_escape(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// One turn of session s1: its start and end as the agent's hooks see them.
fn turn(env: &Env, proj: &Path, label: &str, script: &str) -> (String, String) {
    let start = shown(
        env,
        proj,
        &[
            "turn-start",
            "--agent",
            "claude-code",
            "--session",
            "s1",
            "--label",
            label,
        ],
    );
    sh(proj, script);
    let end = shown(env, proj, &["turn-end", "--session", "s1"]);
    (start, end)
}

#[test]
fn the_main_commands_print_what_the_snapshots_hold() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("a.txt", b"one\ntwo\nthree\n"), ("b.txt", b"bee\n")]);
    let _guard = settings(&env).bind_to_scope();

    insta::assert_snapshot!("watch", shown(&env, &proj, &["watch"]));
    let (start, end) = turn(
        &env,
        &proj,
        "first edit",
        "printf 'ONE\\ntwo\\nthree\\n' > a.txt && echo new > c.txt",
    );
    insta::assert_snapshot!("turn_start", start);
    insta::assert_snapshot!("turn_end", end);
    turn(&env, &proj, "second edit", "echo BEE > b.txt");
    // The user's own edit after both turns, below turn 1's change.
    sh(&proj, "printf 'ONE\\ntwo\\nthree\\nfour\\n' > a.txt");
    env.ctl_ok(&proj, &["sync"]);
    env.ctl_ok(
        &proj,
        &[
            "ledger",
            "add",
            "--bucket",
            "compat-shim",
            "--severity",
            "low",
            "--confidence",
            "0.5",
            "--owner",
            "agent:claude-code",
            "--note",
            "c.txt is a shim",
            "c.txt",
        ],
    );

    insta::assert_snapshot!("log", shown(&env, &proj, &["log"]));
    insta::assert_snapshot!("show", shown(&env, &proj, &["show", "1"]));
    insta::assert_snapshot!("diff", shown(&env, &proj, &["diff", "1"]));
    insta::assert_snapshot!("diff_stat", shown(&env, &proj, &["diff", "1", "--stat"]));
    insta::assert_snapshot!(
        "diff_name_status",
        shown(&env, &proj, &["diff", "1", "--name-status"])
    );
    insta::assert_snapshot!("blame", shown(&env, &proj, &["blame", "a.txt"]));
    insta::assert_snapshot!("ledger_list", shown(&env, &proj, &["ledger", "list"]));
    insta::assert_snapshot!("rewind_refused", shown(&env, &proj, &["rewind", "1"]));
    insta::assert_snapshot!(
        "rewind_merge_dry_run",
        shown(&env, &proj, &["rewind", "1", "--merge", "--dry-run"])
    );
    insta::assert_snapshot!("rewind_applied", shown(&env, &proj, &["rewind", "2"]));
    insta::assert_snapshot!("redo", shown(&env, &proj, &["redo"]));
    insta::assert_snapshot!("rewinds", shown(&env, &proj, &["rewinds"]));
    insta::assert_snapshot!("log_graph", shown(&env, &proj, &["log", "--graph"]));
    // Agents are found in HOME: an empty one finds none, on any machine.
    let home = env.dir("home");
    let out = run(env
        .ctl_cmd(&proj, &["status"])
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", &home)
        .env("PATH", "/nonexistent")
        .env_remove("CODEX_HOME")
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("COPILOT_HOME")
        .env_remove("GEMINI_CLI_HOME"));
    let status = format!(
        "$ ckptctl status\nexit: {}\n--- stdout\n{}--- stderr\n{}",
        out.code(),
        out.stdout,
        out.stderr
    );
    insta::assert_snapshot!("status", status);
    insta::assert_snapshot!("fsck", shown(&env, &proj, &["fsck"]));
}
