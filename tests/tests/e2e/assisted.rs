//! `workcopy commit` says who assisted: an `Assisted-by: AGENT:MODEL`
//! trailer per agent whose turns made the copy's changes (the model as its
//! transcript names it), never a `Signed-off-by` for an agent, and
//! `Co-authored-by` only as the `workcopy.co_authored_by` setting says.

use std::path::{Path, PathBuf};

use ckpt_e2e::*;
use serde_json::json;

fn git_text(dir: &Path, args: &[&str]) -> String {
    git(dir, args).stdout.trim_end().to_string()
}

#[test]
fn a_work_copy_commit_names_the_agents_that_assisted() {
    let env = Env::new();
    std::fs::create_dir_all(env.user_config().parent().unwrap()).unwrap();
    std::fs::write(
        env.user_config(),
        "[workcopy]\nco_authored_by = [\"Pair Person <pair@example.com>\"]\n",
    )
    .unwrap();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("a.txt", b"a\n"), ("b.txt", b"b\n")]);
    env.ctl_ok(&proj, &["watch"]);
    let wc = env.ctl_json(
        &proj,
        &["workcopy", "create", "--base", "head", "--name", "w"],
    );
    let copy = PathBuf::from(wc["copy"].as_str().expect("copy path"));

    // Claude Code works in the copy: its hook watches the copy, and its
    // transcript names the model.
    let transcript = env.path().join("claude.jsonl");
    std::fs::write(
        &transcript,
        "{\"type\":\"assistant\",\"message\":{\"model\":\"claude-opus-4-8\",\"content\":[]}}\n",
    )
    .unwrap();
    let payload = json!({"session_id": "S", "cwd": copy, "transcript_path": transcript,
                         "hook_event_name": "UserPromptSubmit", "prompt": "edit a"});
    for event in ["turn-start", "turn-end"] {
        let out = run_with_input(
            &mut env.ctl_cmd(&copy, &[event, "--from-hook=claude-code"]),
            Some(payload.to_string().as_bytes()),
        );
        assert!(out.status.success() && out.stderr.is_empty(), "{out:?}");
        if event == "turn-start" {
            sh(&copy, "echo A > a.txt");
        }
    }
    // A second agent without a transcript: named alone.
    env.ctl_ok(&copy, &["turn-start", "--agent", "codex", "--session", "C"]);
    sh(&copy, "echo B > b.txt");
    env.ctl_ok(&copy, &["turn-end", "--session", "C"]);

    env.ctl_json(&proj, &["workcopy", "preview", "w"]);
    env.ctl_ok(&proj, &["workcopy", "apply", "w"]);
    let out = env.ctl_json(&proj, &["workcopy", "commit", "w", "-m", "agent work"]);
    assert_eq!(
        out["commit"]["trailers"],
        json!([
            "Assisted-by: claude-code:claude-opus-4-8",
            "Assisted-by: codex",
            "Co-authored-by: Pair Person <pair@example.com>"
        ]),
        "{out:#}"
    );
    let trailers = git_text(&proj, &["log", "-1", "--format=%(trailers)"]);
    assert_eq!(
        trailers,
        "Assisted-by: claude-code:claude-opus-4-8\nAssisted-by: codex\nCo-authored-by: Pair Person <pair@example.com>",
    );
    let body = git_text(&proj, &["log", "-1", "--format=%B"]);
    assert!(body.starts_with("agent work\n\n"), "{body}");
    assert!(!body.contains("Signed-off-by"), "{body}");
}
