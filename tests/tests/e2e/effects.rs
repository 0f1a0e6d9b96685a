//! What a rewind cannot undo and what it cannot restore, said up front:
//! the shell commands a turn's tool calls ran (from the agents' real hook
//! payloads) with effects outside the tree, and each turn's capture
//! integrity (complete, complete after a rescan, partial and why), in
//! `show`, `log`, `status` and a rewind's plan.

use std::path::Path;

use ckpt_e2e::*;
use serde_json::{json, Value};

/// Runs `ckptctl ARGS --from-hook=claude-code` with Claude Code's payload
/// on stdin, as the hook `hooks install` writes does.
fn hook(env: &Env, proj: &Path, args: &[&str], payload: Value) {
    let mut full = args.to_vec();
    full.push("--from-hook=claude-code");
    let out = run_with_input(
        &mut env.ctl_cmd(proj, &full),
        Some(payload.to_string().as_bytes()),
    );
    assert!(out.status.success(), "{full:?}: {out:?}");
    assert!(out.stderr.is_empty(), "a hook call that failed: {out:?}");
}

/// A Claude Code turn whose Bash tool calls run `commands` (each one's
/// edits made by `edit` in its tool window); returns the turn's id.
fn claude_turn(env: &Env, proj: &Path, commands: &[(&str, &str)]) -> i64 {
    let base = json!({"session_id": "S", "cwd": proj, "permission_mode": "default",
                      "transcript_path": env.path().join("s.jsonl")});
    let with = |extra: Value| {
        let mut p = base.clone();
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        p
    };
    hook(
        env,
        proj,
        &["turn-start"],
        with(json!({"hook_event_name": "UserPromptSubmit", "prompt": "ship it"})),
    );
    for (i, (command, edit)) in commands.iter().enumerate() {
        let tool = json!({"tool_name": "Bash", "tool_input": {"command": command},
                          "tool_use_id": format!("toolu_{i}")});
        let mut pre = with(json!({"hook_event_name": "PreToolUse"}));
        pre.as_object_mut()
            .unwrap()
            .extend(tool.as_object().unwrap().clone());
        hook(env, proj, &["tool-start"], pre);
        sh(proj, edit);
        let mut post = with(json!({"hook_event_name": "PostToolUse", "tool_response": {}}));
        post.as_object_mut()
            .unwrap()
            .extend(tool.as_object().unwrap().clone());
        hook(env, proj, &["tool-end"], post);
    }
    hook(
        env,
        proj,
        &["turn-end"],
        with(json!({"hook_event_name": "Stop", "stop_hook_active": false})),
    );
    let log = env.ctl_json(proj, &["log"]);
    log["turns"][0]["id"].as_i64().expect("the turn")
}

#[test]
fn a_turn_that_pushed_is_flagged_in_show_and_in_the_rewind_plan() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("a.txt", b"a\n")]);
    env.ctl_ok(&proj, &["watch"]);
    let before = snapshot_work(&proj);
    let turn = claude_turn(
        &env,
        &proj,
        &[
            ("cargo test 2>&1 | tail -5", "echo b > a.txt"),
            ("git commit -am wip && git push --force origin main", "true"),
        ],
    );
    let line = format!(
        "turn {turn} ran `git commit -am wip && git push --force origin main`: a rewind does not undo that"
    );

    let show = env.ctl_json(&proj, &["show", &turn.to_string()]);
    assert_eq!(
        show["turn"]["commands"],
        json!([
            "cargo test 2>&1 | tail -5",
            "git commit -am wip && git push --force origin main"
        ]),
        "{show:#}"
    );
    let effects = show["turn"]["info"]["effects"].as_array().expect("effects");
    let rules: Vec<&str> = effects
        .iter()
        .map(|e| e["rule"].as_str().unwrap())
        .collect();
    assert_eq!(rules, ["git_force_push", "git_commit"], "{show:#}");
    assert_eq!(effects[0]["category"], "push");
    assert_eq!(effects[0]["turn"], turn);
    let text = env.ctl_ok(&proj, &["show", &turn.to_string()]);
    assert!(text.contains(&line), "{text}");
    assert!(text.contains("capture: complete"), "{text}");
    let log = env.ctl_ok(&proj, &["log"]);
    assert!(log.contains("[outside: push, git_state] ship it"), "{log}");

    // The dry run's plan says it, and so does the rewind, before its plan.
    let plan = env.ctl_json(&proj, &["rewind", &turn.to_string(), "--dry-run"]);
    assert_eq!(plan["outcome"], "dry_run");
    assert_eq!(plan["effects"], show["turn"]["info"]["effects"], "{plan:#}");
    assert_eq!(plan["partial_capture"], json!([]));
    let out = env.ctl(&proj, &["rewind", &turn.to_string()]);
    assert!(out.status.success(), "{out:?}");
    assert!(out.stdout.starts_with(&line), "{}", out.stdout);
    assert_same_tree("rewound", &before, &snapshot_work(&proj));
}

#[test]
fn commands_outside_a_turn_or_without_effects_flag_nothing() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("a.txt", b"a\n")]);
    env.ctl_ok(&proj, &["watch"]);
    // A tool call with no turn open belongs to no turn.
    let payload = json!({"session_id": "S", "cwd": proj, "hook_event_name": "PreToolUse",
                         "tool_name": "Bash", "tool_input": {"command": "git push"}});
    hook(&env, &proj, &["tool-start"], payload);
    hook(
        &env,
        &proj,
        &["tool-end"],
        json!({"session_id": "S", "cwd": proj}),
    );
    let turn = claude_turn(
        &env,
        &proj,
        &[("grep -r 'git push' . > hits.txt", "echo x > hits.txt")],
    );
    let show = env.ctl_json(&proj, &["show", &turn.to_string()]);
    assert_eq!(
        show["turn"]["commands"],
        json!(["grep -r 'git push' . > hits.txt"])
    );
    assert_eq!(show["turn"]["info"]["effects"], json!([]), "{show:#}");
}

#[test]
fn a_file_over_the_size_cap_makes_the_turn_partial_everywhere() {
    let env = Env::new();
    std::fs::create_dir_all(env.user_config().parent().unwrap()).unwrap();
    std::fs::write(env.user_config(), "[capture]\nmax_file_mib = 1\n").unwrap();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("a.txt", b"a\n")]);
    env.ctl_ok(&proj, &["watch"]);
    env.ctl_ok(&proj, &["turn-start", "--label", "big"]);
    std::fs::write(proj.join("big.bin"), binary(7, 2 << 20)).unwrap();
    sh(&proj, "echo b > a.txt");
    let ended = env.ctl_json(&proj, &["turn-end"]);
    let turn = ended["turn"]["info"]["id"].as_i64().unwrap();
    let integrity = &ended["turn"]["info"]["integrity"];
    assert_eq!(integrity["capture"], "partial", "{ended:#}");
    assert_eq!(integrity["gaps"][0]["kind"], "size_cap");
    assert_eq!(integrity["gaps"][0]["path"], "big.bin");

    let log = env.ctl_json(&proj, &["log"]);
    assert_eq!(log["turns"][0]["integrity"]["capture"], "partial");
    assert!(env
        .ctl_ok(&proj, &["log"])
        .contains("[partial capture] big"));
    let show = env.ctl_ok(&proj, &["show", &turn.to_string()]);
    assert!(
        show.contains(
            "capture: PARTIAL; a rewind cannot restore:\n  big.bin: larger than the 1 MiB cap"
        ),
        "{show}"
    );

    let plan = env.ctl_json(&proj, &["rewind", &turn.to_string(), "--dry-run"]);
    assert_eq!(plan["partial_capture"][0]["turn"], turn, "{plan:#}");
    let out = env.ctl(&proj, &["rewind", &turn.to_string(), "--dry-run"]);
    assert!(
        out.stdout.starts_with(&format!(
            "turn {turn}'s capture is partial: a rewind cannot restore big.bin: larger than"
        )),
        "{}",
        out.stdout
    );

    let status = env.ctl_json(&proj, &["status"]);
    assert_eq!(status["projects"][0]["partial_turns"], 1, "{status:#}");
    let text = env.ctl_ok(&proj, &["status"]);
    assert!(
        text.contains("1 turn with a partial capture") && text.contains("capture.max_file_mib"),
        "{text}"
    );
}

#[test]
fn an_unreadable_file_makes_the_turn_partial() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("a.txt", b"a\n")]);
    env.ctl_ok(&proj, &["watch"]);
    env.ctl_ok(&proj, &["turn-start"]);
    // chmod 000 stops every reader but root; a FIFO has no content to
    // capture for anyone.
    sh(&proj, "echo s > secret && chmod 000 secret && mkfifo pipe");
    let ended = env.ctl_json(&proj, &["turn-end"]);
    let integrity = &ended["turn"]["info"]["integrity"];
    assert_eq!(integrity["capture"], "partial", "{ended:#}");
    let gaps: Vec<(&str, &str)> = integrity["gaps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["kind"].as_str().unwrap(), g["path"].as_str().unwrap()))
        .collect();
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let want: &[(&str, &str)] = if root {
        &[("unreadable", "pipe")]
    } else {
        &[("unreadable", "pipe"), ("unreadable", "secret")]
    };
    assert_eq!(gaps, want, "{ended:#}");
    sh(&proj, "chmod 644 secret");
}

#[test]
fn an_overflow_makes_the_turn_complete_after_a_rescan() {
    if recursive_watcher() {
        eprintln!("skipped: the recursive watcher has no inotify queue to overflow");
        return;
    }
    let queue: usize = std::fs::read_to_string("/proc/sys/fs/inotify/max_queued_events")
        .expect("inotify's queue size")
        .trim()
        .parse()
        .unwrap();
    let env = Env::new();
    let d = env.start_daemon();
    let proj = env.git_repo("p", &[("a.txt", b"a\n")]);
    env.ctl_ok(&proj, &["watch"]);
    env.ctl_ok(&proj, &["turn-start", "--label", "flood"]);
    // A stopped daemon reads no events: more appends than the queue holds
    // (each at least one event; two files so none merge) overflow it.
    d.signal(libc::SIGSTOP);
    for i in 0..queue + 2000 {
        let name = if i % 2 == 0 { "flood-a" } else { "flood-b" };
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(proj.join(name))
            .unwrap();
        std::io::Write::write_all(&mut f, b"x").unwrap();
    }
    d.signal(libc::SIGCONT);
    let ended = env.ctl_json(&proj, &["turn-end"]);
    let integrity = &ended["turn"]["info"]["integrity"];
    assert_eq!(integrity["capture"], "rescanned", "{ended:#}");
    assert!(integrity["rescans"].as_u64().unwrap() >= 1);
    assert!(
        integrity.get("gaps").is_none(),
        "nothing is missing: {ended:#}"
    );
    let n = ended["turn"]["entries"].as_array().unwrap().len();
    assert_eq!(n, 2, "the rescan found both files: {ended:#}");

    assert!(env.ctl_ok(&proj, &["log"]).contains("[rescanned] flood"));
    let status = env.ctl_json(&proj, &["status"]);
    assert_eq!(status["projects"][0]["rescanned_turns"], 1, "{status:#}");
    assert!(env
        .ctl_ok(&proj, &["status"])
        .contains("fs.inotify.max_queued_events"));
}
