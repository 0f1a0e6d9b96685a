//! Several sessions in one project: each session's turns are its own, a
//! change seen while several are open goes to each (shared), a rewind
//! undoes only its session's turns and names another session's change as a
//! conflict; `rewind --merge` keeps a later edit instead of refusing.

use std::path::Path;

use ckpt_e2e::*;

fn read(proj: &Path, p: &str) -> String {
    std::fs::read_to_string(proj.join(p)).unwrap()
}

fn start(env: &Env, proj: &Path, session: &str) -> i64 {
    let t = env.ctl_json(
        proj,
        &["turn-start", "--session", session, "--label", session],
    );
    t["turn"].as_i64().expect("a turn id")
}

/// (path, shared) of a turn's entries.
fn entries(env: &Env, proj: &Path, turn: i64) -> Vec<(String, bool)> {
    let show = env.ctl_json(proj, &["show", &turn.to_string()]);
    show["turn"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["path"].as_str().unwrap().to_string(),
                e["shared"].as_bool().unwrap(),
            )
        })
        .collect()
}

/// A edits a.txt alone; then B opens a turn and b.txt changes while both
/// are open (`sed -i`: either could have done it); A ends; B edits c.txt
/// alone and ends.
fn interleaved(env: &Env) -> (std::path::PathBuf, i64, i64) {
    let proj = env.git_repo(
        "p",
        &[("a.txt", b"a\n"), ("b.txt", b"b\n"), ("c.txt", b"c\n")],
    );
    env.ctl_ok(&proj, &["watch"]);
    let ta = start(env, &proj, "A");
    sh(&proj, "echo A > a.txt");
    let tb = start(env, &proj, "B");
    sh(&proj, "sed -i 's/b/B/' b.txt");
    env.ctl_ok(&proj, &["turn-end", "--session", "A"]);
    sh(&proj, "echo B > c.txt.tmp && mv c.txt.tmp c.txt");
    env.ctl_ok(&proj, &["turn-end", "--session", "B"]);
    (proj, ta, tb)
}

#[test]
fn each_session_keeps_its_own_turns_and_shares_what_both_could_have_done() {
    let env = Env::new();
    let _d = env.start_daemon();
    let (proj, ta, tb) = interleaved(&env);
    let own = |p: &str| (p.to_string(), false);
    let both = |p: &str| (p.to_string(), true);
    assert_eq!(entries(&env, &proj, ta), [own("a.txt"), both("b.txt")]);
    assert_eq!(entries(&env, &proj, tb), [both("b.txt"), own("c.txt")]);
    let text = env.ctl_ok(&proj, &["show", &tb.to_string()]);
    assert!(text.contains("b.txt  (shared"), "{text}");

    let log = env.ctl_json(&proj, &["log", "--session", "B"]);
    let ids: Vec<i64> = log["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, [tb], "{log}");
}

#[test]
fn a_rewind_undoes_only_its_session_and_a_shared_path_is_refused_then_forced() {
    let env = Env::new();
    let _d = env.start_daemon();
    let (proj, ta, tb) = interleaved(&env);

    let out = env.ctl(&proj, &["rewind", &ta.to_string()]);
    assert_eq!(out.code(), 3, "{out:?}");
    assert!(
        out.stderr
            .contains(&format!("b.txt: also changed by turn {tb} of session B")),
        "{out:?}"
    );
    assert_eq!(
        (read(&proj, "a.txt"), read(&proj, "b.txt")),
        ("A\n".into(), "B\n".into())
    );
    let json = env
        .ctl(&proj, &["--json", "rewind", &ta.to_string()])
        .json();
    assert_eq!(json["conflicts"][0]["other_turn"], tb, "{json}");
    assert_eq!(json["conflicts"][0]["other_session"], "B", "{json}");
    assert_eq!(json["turns"], serde_json::json!([ta]), "{json}");

    env.ctl_ok(&proj, &["rewind", &ta.to_string(), "--force"]);
    assert_eq!(read(&proj, "a.txt"), "a\n");
    assert_eq!(read(&proj, "b.txt"), "b\n");
    assert_eq!(read(&proj, "c.txt"), "B\n", "B's own work is left alone");
    let log = env.ctl_json(&proj, &["log"]);
    let status = |t: i64| {
        log["turns"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["id"] == t)
            .unwrap()["status"]
            .clone()
    };
    assert_eq!(
        (status(ta), status(tb)),
        ("rewound".into(), "closed".into())
    );
    env.ctl_ok(&proj, &["redo"]);
    assert_eq!(
        (read(&proj, "a.txt"), read(&proj, "b.txt")),
        ("A\n".into(), "B\n".into())
    );
}

#[test]
fn rewind_last_of_a_session_leaves_the_other_sessions_work() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("a.txt", b"a\n"), ("b.txt", b"b\n")]);
    env.ctl_ok(&proj, &["watch"]);
    start(&env, &proj, "A");
    sh(&proj, "echo A1 > a.txt");
    env.ctl_ok(&proj, &["turn-end", "--session", "A"]);
    start(&env, &proj, "B");
    sh(&proj, "echo B1 > b.txt");
    env.ctl_ok(&proj, &["turn-end", "--session", "B"]);
    let ta2 = start(&env, &proj, "A");
    sh(&proj, "echo A2 > a.txt");
    env.ctl_ok(&proj, &["turn-end", "--session", "A"]);

    let out = env.ctl_json(&proj, &["rewind", "--last", "--session", "A"]);
    assert_eq!(out["turn"], ta2, "{out}");
    assert_eq!(read(&proj, "a.txt"), "A1\n");
    assert_eq!(read(&proj, "b.txt"), "B1\n");
    let none = env.ctl(&proj, &["rewind", "--last", "--session", "nobody"]);
    assert_eq!(none.code(), 1, "{none:?}");
    assert!(
        none.stderr.contains("session nobody has no live turn"),
        "{none:?}"
    );
}

/// `rewind --after N` keeps N and undoes its session's later turns only;
/// an edit after them is a conflict as for any rewind; nothing after N is
/// an error.
#[test]
fn rewind_after_keeps_the_turn_and_undoes_only_its_sessions_later_turns() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("a.txt", b"a\n"), ("b.txt", b"b\n")]);
    env.ctl_ok(&proj, &["watch"]);
    let ta1 = start(&env, &proj, "A");
    sh(&proj, "echo A1 > a.txt");
    env.ctl_ok(&proj, &["turn-end", "--session", "A"]);
    let ta2 = start(&env, &proj, "A");
    sh(&proj, "echo A2 > a.txt && echo new > n.txt");
    env.ctl_ok(&proj, &["turn-end", "--session", "A"]);
    start(&env, &proj, "B");
    sh(&proj, "echo B1 > b.txt");
    env.ctl_ok(&proj, &["turn-end", "--session", "B"]);

    // The user's edit after A's turns: refused, exit 3, nothing changed.
    sh(&proj, "echo mine > n.txt");
    let out = env.ctl(&proj, &["rewind", "--after", &ta1.to_string()]);
    assert_eq!(out.code(), 3, "{out:?}");
    assert!(
        out.stderr.contains("n.txt: edited after the agent"),
        "{out:?}"
    );
    assert_eq!(read(&proj, "a.txt"), "A2\n");
    sh(&proj, "echo new > n.txt");

    let out = env.ctl(&proj, &["rewind", "--after", &ta1.to_string()]);
    assert_eq!(out.code(), 0, "{out:?}");
    assert!(
        out.stdout.starts_with(&format!(
            "rewind to after turn {ta1} (undoing turn {ta2}): 2 paths"
        )),
        "{out:?}"
    );
    assert_eq!(read(&proj, "a.txt"), "A1\n");
    assert!(!proj.join("n.txt").exists());
    assert_eq!(read(&proj, "b.txt"), "B1\n", "B's work is left alone");

    // Nothing of A after turn 1 is live now: an error, nothing changed.
    let none = env.ctl(&proj, &["rewind", "--after", &ta1.to_string()]);
    assert_eq!(none.code(), 1, "{none:?}");
    assert!(none.stderr.contains("nothing after it"), "{none:?}");
    let json = env.ctl_json(&proj, &["redo"]);
    assert_eq!(json["turns"], serde_json::json!([ta2]), "{json}");
    assert_eq!(read(&proj, "a.txt"), "A2\n");
    // `--after` takes no turn beside it.
    let both = env.ctl(&proj, &["rewind", "1", "--after", "1"]);
    assert_eq!(both.code(), 2, "{both:?}");
}

const BASE: &str = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\n";

/// The agent's turn changes line 2 (sed -i); the user then edits `user_sed`.
fn agent_then_user(env: &Env, user_sed: &str) -> (std::path::PathBuf, i64) {
    let proj = env.git_repo(
        "p",
        &[("f.txt", BASE.as_bytes()), ("img.bin", b"\0\x01old")],
    );
    env.ctl_ok(&proj, &["watch"]);
    let t = env.ctl_json(&proj, &["turn-start"])["turn"]
        .as_i64()
        .unwrap();
    sh(
        &proj,
        "sed -i 's/^two$/TWO agent/' f.txt && printf '\\0\\001agent' > img.bin",
    );
    env.ctl_ok(&proj, &["turn-end"]);
    sh(&proj, &format!("sed -i '{user_sed}' f.txt"));
    (proj, t)
}

#[test]
fn merge_keeps_a_later_edit_and_redo_restores_what_it_replaced() {
    let env = Env::new();
    let _d = env.start_daemon();
    let (proj, t) = agent_then_user(&env, "s/^seven$/SEVEN user/");
    let user = read(&proj, "f.txt");
    let refused = env.ctl(&proj, &["rewind", &t.to_string()]);
    assert_eq!(refused.code(), 3, "{refused:?}");
    assert!(refused.stderr.contains("--merge"), "{refused:?}");

    let dry = env.ctl_ok(&proj, &["rewind", &t.to_string(), "--merge", "--dry-run"]);
    assert!(
        dry.contains("would merge") && dry.contains("    -TWO agent\n    +two\n"),
        "{dry}"
    );
    assert_eq!(read(&proj, "f.txt"), user);

    let out = env.ctl_json(&proj, &["rewind", &t.to_string(), "--merge"]);
    assert_eq!(out["merged"][0]["outcome"], "clean", "{out}");
    assert_eq!(read(&proj, "f.txt"), BASE.replace("seven", "SEVEN user"));
    assert_eq!(std::fs::read(proj.join("img.bin")).unwrap(), b"\0\x01old");
    env.ctl_ok(&proj, &["redo"]);
    assert_eq!(read(&proj, "f.txt"), user);
}

#[test]
fn overlapping_edits_are_left_or_marked_and_a_binary_is_not_mergeable() {
    let env = Env::new();
    let _d = env.start_daemon();
    let (proj, t) = agent_then_user(&env, "s/^TWO agent$/TWO user/");
    let user = read(&proj, "f.txt");

    let out = env.ctl_json(&proj, &["rewind", &t.to_string(), "--merge"]);
    assert_eq!(out["outcome"], "applied", "{out}");
    assert_eq!(out["merged"][0]["outcome"], "overlapping", "{out}");
    assert_eq!(read(&proj, "f.txt"), user, "left as it is");
    assert_eq!(std::fs::read(proj.join("img.bin")).unwrap(), b"\0\x01old");
    // The turn is rewound, and says which file it left.
    let turn = &env.ctl_json(&proj, &["show", &t.to_string()])["turn"]["info"];
    assert_eq!(turn["status"], "rewound", "{turn}");
    assert_eq!(turn["partial"]["left"][0]["path"], "f.txt", "{turn}");
    let shown = env.ctl_ok(&proj, &["show", &t.to_string()]);
    assert!(
        shown.contains("left as it was by the rewind: f.txt  (the changes overlap"),
        "{shown}"
    );
    env.ctl_ok(&proj, &["redo"]);
    assert_eq!(read(&proj, "f.txt"), user);

    let out = env.ctl_json(&proj, &["rewind", &t.to_string(), "--merge=markers"]);
    assert_eq!(out["merged"][0]["outcome"], "markers", "{out}");
    let marked = read(&proj, "f.txt");
    assert!(
        marked.contains("<<<<<<<") && marked.contains("TWO user") && marked.contains("\ntwo\n"),
        "{marked}"
    );
    env.ctl_ok(&proj, &["redo"]);
    assert_eq!(read(&proj, "f.txt"), user);

    sh(&proj, "printf '\\0\\001user' > img.bin");
    let out = env.ctl(&proj, &["rewind", &t.to_string(), "--merge=markers"]);
    assert_eq!(out.code(), 3, "{out:?}");
    assert!(out.stderr.contains("conflict   img.bin"), "{out:?}");
    assert_eq!(std::fs::read(proj.join("img.bin")).unwrap(), b"\0\x01user");
}

/// A side whose last line has no newline: the conflict marker after it is
/// a line of its own (git merge-file writes "last\n>>>>>>> theirs"), and
/// `redo` puts back the file the merge replaced.
#[test]
fn conflict_markers_stay_lines_of_their_own_when_a_side_lacks_a_final_newline() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("f.txt", b"a\nlast")]);
    env.ctl_ok(&proj, &["watch"]);
    env.ctl_ok(&proj, &["turn-start"]);
    sh(&proj, "printf 'a\\nagent\\n' > f.txt");
    env.ctl_ok(&proj, &["turn-end"]);
    sh(&proj, "printf 'a\\nuser\\n' > f.txt");
    let out = env.ctl_json(&proj, &["rewind", "1", "--merge=markers"]);
    assert_eq!(out["merged"][0]["outcome"], "markers", "{out}");
    assert_eq!(
        read(&proj, "f.txt"),
        "a\n<<<<<<< current\nuser\n||||||| agent (turn 1)\nagent\n=======\nlast\n>>>>>>> before turn 1\n"
    );
    env.ctl_ok(&proj, &["redo"]);
    assert_eq!(read(&proj, "f.txt"), "a\nuser\n");
}

/// Tool windows narrow attribution: a change inside exactly one session's
/// tool call is that session's alone; outside any, or inside two sessions'
/// at once, it is shared. The pre/post-tool hooks drive the same calls.
#[test]
fn a_tool_window_gives_a_change_to_its_session_alone() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo(
        "p",
        &[("b.txt", b"b\n"), ("c.txt", b"c\n"), ("d.txt", b"d\n")],
    );
    env.ctl_ok(&proj, &["watch"]);
    let ta = start(&env, &proj, "A");
    let tb = start(&env, &proj, "B");

    // B's edit tool, through Claude Code's PreToolUse/PostToolUse payload.
    let payload =
        serde_json::json!({"session_id": "B", "cwd": proj, "hook_event_name": "PreToolUse",
        "tool_name": "Edit"})
        .to_string();
    let hook = |cmd: &str| {
        let out = run_with_input(
            &mut env.ctl_cmd(&proj, &[cmd, "--from-hook=claude-code"]),
            Some(payload.as_bytes()),
        );
        assert_eq!(out.code(), 0, "{out:?}");
        assert_eq!(out.stdout, "", "{out:?}");
        assert_eq!(out.stderr, "", "{out:?}");
    };
    hook("tool-start");
    sh(&proj, "sed -i 's/b/B/' b.txt");
    hook("tool-end");
    // Nobody's tool: either could have.
    sh(&proj, "echo C > c.txt");
    // Both sessions' tools at once.
    for s in ["A", "B"] {
        env.ctl_ok(&proj, &["tool-start", "--session", s]);
    }
    sh(&proj, "echo D > d.txt");
    for s in ["A", "B"] {
        env.ctl_ok(&proj, &["tool-end", "--session", s]);
    }
    env.ctl_ok(&proj, &["turn-end", "--session", "A"]);
    env.ctl_ok(&proj, &["turn-end", "--session", "B"]);

    let own = |p: &str| (p.to_string(), false);
    let both = |p: &str| (p.to_string(), true);
    assert_eq!(entries(&env, &proj, ta), [both("c.txt"), both("d.txt")]);
    assert_eq!(
        entries(&env, &proj, tb),
        [own("b.txt"), both("c.txt"), both("d.txt")]
    );
    let status = env.ctl_json(&proj, &["hooks", "status"]);
    assert!(status.to_string().contains("tool-end"), "{status}");
}

/// A tool window open when the daemon is killed (OOM, reboot) is still
/// open after it starts again: the tool call's change after the restart is
/// its session's alone, not shared with the other open session's turn.
#[test]
fn a_tool_window_survives_a_daemon_restart() {
    let env = Env::new();
    let d = env.start_daemon();
    let proj = env.git_repo("p", &[("a.txt", b"one\n")]);
    env.ctl_ok(&proj, &["watch"]);
    let ta = start(&env, &proj, "A");
    let tb = start(&env, &proj, "B");
    env.ctl_ok(&proj, &["tool-start", "--session", "A"]);
    d.kill();

    let _d = env.start_daemon();
    sh(&proj, "echo two > a.txt");
    let end = env.ctl_json(&proj, &["tool-end", "--session", "A"]);
    assert_eq!(end["running"], 0, "{end}");
    env.ctl_ok(&proj, &["turn-end", "--session", "A"]);
    env.ctl_ok(&proj, &["turn-end", "--session", "B"]);
    assert_eq!(entries(&env, &proj, ta), [("a.txt".to_string(), false)]);
    assert_eq!(entries(&env, &proj, tb), []);
    let fsck = env.ctl_json(&proj, &["fsck"]);
    assert_eq!(fsck["ok"], true, "{fsck}");
}

/// The status of each turn, by id.
fn statuses(env: &Env, proj: &Path) -> Vec<(i64, String)> {
    let log = env.ctl_json(proj, &["log"]);
    let mut out: Vec<(i64, String)> = log["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let id = t["id"].as_i64().unwrap();
            (id, t["status"].as_str().unwrap().to_string())
        })
        .collect();
    out.sort();
    out
}

/// An agent asks what undoing an earlier turn would do, in the middle of
/// its turn: a dry run changes nothing, not the turns either, and neither
/// does a refused rewind; the agent's later edits stay in its turn.
#[test]
fn a_dry_run_or_a_refused_rewind_leaves_the_sessions_turn_open() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("a.txt", b"one\n"), ("b.txt", b"one\n")]);
    env.ctl_ok(&proj, &["watch"]);
    let t1 = start(&env, &proj, "A");
    sh(&proj, "echo two > a.txt");
    env.ctl_ok(&proj, &["turn-end", "--session", "A"]);
    let t2 = start(&env, &proj, "A");
    sh(&proj, "echo two > b.txt");
    let dry = env.ctl_json(&proj, &["rewind", &t1.to_string(), "--dry-run"]);
    assert_eq!(statuses(&env, &proj)[1], (t2, "open".to_string()));
    assert_eq!(dry["outcome"], "dry_run", "{dry}");
    assert_eq!(dry["turns"], serde_json::json!([t1, t2]), "{dry}");
    let would = serde_json::json!([{ "ended": t2, "session": "A", "opened": null }]);
    assert_eq!(dry["continued"], would, "{dry}");
    let text = env.ctl_ok(&proj, &["rewind", &t1.to_string(), "--dry-run"]);
    assert!(
        text.contains(&format!(
            "turn {t2} of session A is open: it would end here"
        )),
        "{text}"
    );

    // Another session changes a.txt: the rewind is refused, and changes no
    // turn.
    start(&env, &proj, "B");
    sh(&proj, "echo B > a.txt");
    env.ctl_ok(&proj, &["turn-end", "--session", "B"]);
    let out = env.ctl(&proj, &["rewind", &t1.to_string()]);
    assert_eq!(out.code(), 3, "{out:?}");
    sh(&proj, "echo three > b.txt");
    assert_eq!(statuses(&env, &proj)[1], (t2, "open".to_string()));
    env.ctl_ok(&proj, &["turn-end", "--session", "A"]);
    let own = |p: &str| (p.to_string(), false);
    let both = |p: &str| (p.to_string(), true);
    assert_eq!(entries(&env, &proj, t2), [both("a.txt"), own("b.txt")]);
    env.ctl_ok(&proj, &["rewind", &t2.to_string(), "--path", "b.txt"]);
    assert_eq!(read(&proj, "b.txt"), "one\n");
    assert_eq!(read(&proj, "a.txt"), "B\n");
}

/// A rewind run from a terminal while an agent's turn is open in that
/// session ends the turn and continues it in a new one (same session and
/// label); a redo does the same for every open turn, and its dry run or
/// refusal for none.
#[test]
fn a_rewind_or_redo_from_a_terminal_continues_the_open_turns() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo(
        "p",
        &[("a.txt", b"a0\n"), ("b.txt", b"b0\n"), ("c.txt", b"c0\n")],
    );
    env.ctl_ok(&proj, &["watch"]);
    let t1 = start(&env, &proj, "A");
    sh(&proj, "echo a1 > a.txt");
    env.ctl_ok(&proj, &["turn-end", "--session", "A"]);
    let t2 = start(&env, &proj, "A");
    sh(&proj, "echo b2 > b.txt");

    let text = env.ctl_ok(&proj, &["rewind", &t1.to_string()]);
    let t3 = t2 + 1;
    assert!(
        text.contains(&format!(
            "turn {t2} of session A was open: ended here, continued as turn {t3}"
        )),
        "{text}"
    );
    assert_eq!(
        (read(&proj, "a.txt"), read(&proj, "b.txt")),
        ("a0\n".into(), "b0\n".into())
    );
    sh(&proj, "echo c3 > c.txt");
    let t4 = start(&env, &proj, "B");
    assert_eq!(
        statuses(&env, &proj),
        [
            (t1, "rewound".into()),
            (t2, "rewound".into()),
            (t3, "open".into()),
            (t4, "open".into())
        ]
    );

    // A redo's dry run and a refused redo end no turn.
    let dry = env.ctl_json(&proj, &["redo", "--dry-run"]);
    assert_eq!(dry["continued"].as_array().unwrap().len(), 2, "{dry}");
    sh(&proj, "echo mine > b.txt");
    let out = env.ctl(&proj, &["redo"]);
    assert_eq!(out.code(), 3, "{out:?}");
    sh(&proj, "echo b0 > b.txt");
    assert_eq!(
        statuses(&env, &proj)[2..],
        [(t3, "open".into()), (t4, "open".into())]
    );

    let done = env.ctl_json(&proj, &["redo"]);
    let (t5, t6) = (t4 + 1, t4 + 2);
    assert_eq!(
        done["continued"],
        serde_json::json!([
            { "ended": t3, "session": "A", "opened": t5 },
            { "ended": t4, "session": "B", "opened": t6 }
        ]),
        "{done}"
    );
    assert_eq!(
        (read(&proj, "a.txt"), read(&proj, "b.txt")),
        ("a1\n".into(), "b2\n".into())
    );
    assert_eq!(entries(&env, &proj, t3), [("c.txt".to_string(), false)]);
    let ended = env.ctl_json(&proj, &["turn-end", "--session", "A"]);
    assert_eq!(ended["turn"]["info"]["id"], t5, "{ended}");
    assert_eq!(ended["turn"]["info"]["label"], "A", "{ended}");
    let ended = env.ctl_json(&proj, &["turn-end", "--session", "B"]);
    assert_eq!(ended["turn"]["info"]["id"], t6, "{ended}");
}

/// `--merge` on a binary file edited since cannot merge it: the refusal
/// says so and offers what can be done (not `--merge` again).
#[test]
fn merge_on_a_binary_file_says_it_cannot_be_merged_and_offers_force_or_path() {
    let env = Env::new();
    let _d = env.start_daemon();
    let (proj, _) = agent_then_user(&env, "s/^seven$/SEVEN user/");
    sh(&proj, "printf '\\0\\001user' > img.bin");
    let out = env.ctl(&proj, &["rewind", "--last", "--merge"]);
    assert_eq!(out.code(), 3, "{out:?}");
    assert!(
        out.stderr.contains("conflict   img.bin")
            && out
                .stderr
                .contains("not merged: binary file: it cannot be merged"),
        "{out:?}"
    );
    assert!(
        out.stderr
            .contains("1 path cannot be merged; --force overwrites it")
            && out
                .stderr
                .contains("--path naming only the other paths leaves it as it is"),
        "{out:?}"
    );
    assert!(!out.stderr.contains("use --merge"), "{out:?}");
    let doc = env
        .ctl(&proj, &["--json", "rewind", "--last", "--merge"])
        .json();
    let why = doc["conflicts"][0]["not_mergeable"].as_str().unwrap();
    assert!(why.contains("binary"), "{doc}");
    assert_eq!(std::fs::read(proj.join("img.bin")).unwrap(), b"\0\x01user");
}

/// The markers name the sides for what they are, and `--merge markers`
/// (a space, not `=`) is the same as `--merge=markers`; `--merge` alone
/// before the turn still means the default mode.
#[test]
fn merge_markers_name_current_agent_and_before_and_the_mode_may_follow_a_space() {
    let env = Env::new();
    let _d = env.start_daemon();
    let (proj, t) = agent_then_user(&env, "s/^TWO agent$/TWO user/");
    let user = read(&proj, "f.txt");
    let out = env.ctl(&proj, &["rewind", "--merge", &t.to_string(), "--dry-run"]);
    assert_eq!(out.code(), 0, "{out:?}");
    assert!(
        out.stdout.contains("left as it is: the changes overlap"),
        "{out:?}"
    );

    let out = env.ctl_json(&proj, &["rewind", &t.to_string(), "--merge", "markers"]);
    assert_eq!(out["merged"][0]["outcome"], "markers", "{out}");
    let marked = read(&proj, "f.txt");
    let want = format!(
        "one\n<<<<<<< current\nTWO user\n||||||| agent (turn {t})\nTWO agent\n=======\ntwo\n>>>>>>> before turn {t}\nthree\n"
    );
    assert!(marked.starts_with(&want), "{marked}");
    env.ctl_ok(&proj, &["redo"]);
    assert_eq!(read(&proj, "f.txt"), user);
}

/// A merge's dry run lists each file once, with the hunks the merge makes
/// of the file as it is, not the whole merged file.
#[test]
fn a_merge_dry_run_prints_each_path_once_with_its_merged_hunks() {
    let env = Env::new();
    let _d = env.start_daemon();
    let long: String = (1..=200).map(|i| format!("line {i}\n")).collect();
    let proj = env.git_repo("p", &[("long.txt", long.as_bytes())]);
    env.ctl_ok(&proj, &["watch"]);
    env.ctl_ok(&proj, &["turn-start"]);
    sh(&proj, "sed -i 's/^line 2$/line 2 agent/' long.txt");
    env.ctl_ok(&proj, &["turn-end"]);
    sh(&proj, "sed -i 's/^line 150$/line 150 user/' long.txt");
    let dry = env.ctl_ok(&proj, &["rewind", "1", "--merge", "--dry-run"]);
    assert_eq!(
        dry.matches("long.txt").count(),
        3,
        "path line, ---, +++: {dry}"
    );
    assert!(dry.contains("  would merge  long.txt"), "{dry}");
    assert!(!dry.contains("would restore"), "{dry}");
    assert!(
        dry.contains("    @@ -1,5 +1,5 @@\n") && dry.contains("    -line 2 agent\n    +line 2\n"),
        "{dry}"
    );
    assert!(
        !dry.contains("line 150 user") && !dry.contains("line 100"),
        "{dry}"
    );
    assert!(dry.lines().count() < 20, "{dry}");
}
