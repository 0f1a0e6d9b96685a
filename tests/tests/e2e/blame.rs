//! `ckptctl blame` through the real binaries: lines followed across turns
//! edited by shell commands, a rewound turn, a user edit between turns, an
//! open turn; clear errors for what has no lines; the `--json` shape.

use ckpt_e2e::*;

fn turn(env: &Env, proj: &std::path::Path, label: &str, script: &str) -> i64 {
    let t = env.ctl_json(
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
    t["turn"].as_i64().expect("a turn id")
}

#[test]
fn blame_follows_lines_across_turns_rewinds_and_user_edits() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("app", &[("f.txt", b"one\ntwo\nthree\n"), ("g.txt", b"g\n")]);
    env.ctl_ok(&proj, &["watch"]);

    let t1 = turn(
        &env,
        &proj,
        "fix the header of the file",
        "sed -i 's/two/TWO/' f.txt",
    );
    env.ctl_ok(&proj, &["turn-end"]);
    let t2 = turn(&env, &proj, "append", "echo four >> f.txt");
    env.ctl_ok(&proj, &["turn-end"]);
    // An editor's atomic save: write a temp file, rename it over.
    let t3 = turn(
        &env,
        &proj,
        "rename",
        "sed 's/one/ONE/' f.txt > f.tmp && mv f.tmp f.txt",
    );
    env.ctl_ok(&proj, &["turn-end"]);
    let t4 = turn(&env, &proj, "undone", "sed -i 's/three/THREE/' f.txt");
    env.ctl_ok(&proj, &["turn-end"]);
    env.ctl_ok(&proj, &["rewind", &t4.to_string()]);
    // The user's own edit, no turn open.
    sh(&proj, "sed -i '1i by hand' f.txt");
    env.ctl_ok(&proj, &["sync"]);
    // A turn still open: blame sees what it wrote so far.
    let t5 = turn(&env, &proj, "open", "echo five >> f.txt");

    let b = env.ctl_json(&proj, &["blame", "f.txt", "--json"]);
    let lines = b["lines"].as_array().expect("a lines array");
    let got: Vec<(i64, &str, &str, Option<i64>)> = lines
        .iter()
        .map(|l| {
            (
                l["line"].as_i64().unwrap(),
                l["text"].as_str().unwrap(),
                l["origin"].as_str().unwrap(),
                l["turn"].as_i64(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (1, "by hand", "between-turns", None),
            (2, "ONE", "turn", Some(t3)),
            (3, "TWO", "turn", Some(t1)),
            (4, "three", "baseline", None),
            (5, "four", "turn", Some(t2)),
            (6, "five", "turn", Some(t5)),
        ],
        "{b}"
    );
    assert_eq!(lines[2]["agent"], "claude-code", "{b}");
    assert_eq!(lines[2]["session"], "s1", "{b}");
    assert_eq!(lines[2]["label"], "fix the header of the file", "{b}");
    assert_eq!(b["path"], "f.txt", "{b}");

    // Text output, git-blame style; labels cut to 20 characters.
    let text = env.ctl_ok(&proj, &["blame", "f.txt"]);
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(rows.len(), 6, "{text}");
    assert!(
        rows[0].contains("user") && rows[0].ends_with("| by hand"),
        "{text}"
    );
    assert!(
        rows[2].contains(&format!("t{t1}"))
            && rows[2].contains("claude-code")
            && rows[2].contains("fix the header of th")
            && !rows[2].contains("fix the header of the")
            && rows[2].ends_with("| TWO"),
        "{text}"
    );
    assert!(
        rows[3].contains("baseline") && rows[3].ends_with("| three"),
        "{text}"
    );

    // A file no turn touched is all baseline.
    let g = env.ctl_json(&proj, &["blame", "g.txt", "--json"]);
    assert_eq!(g["lines"][0]["origin"], "baseline", "{g}");
    assert_eq!(g["lines"].as_array().unwrap().len(), 1, "{g}");
}

#[test]
fn blame_refuses_what_has_no_lines() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("app", &[("bin.dat", b"\x00\x01\x02\xff"), ("d/f", b"x\n")]);
    env.ctl_ok(&proj, &["watch"]);
    let outside = env.dir("outside");
    std::fs::write(outside.join("o.txt"), "o\n").unwrap();
    let cases = [
        ("bin.dat".to_string(), "binary"),
        ("missing.txt".to_string(), "no such file"),
        ("d".to_string(), "directory"),
        (".git/config".to_string(), ".git"),
        (
            outside.join("o.txt").display().to_string(),
            "not inside the project",
        ),
    ];
    for (path, says) in cases {
        let out = env.ctl(&proj, &["blame", &path]);
        assert_eq!(out.code(), 1, "{path}: {out:?}");
        assert!(out.stdout.is_empty(), "{path}: {out:?}");
        assert!(out.stderr.contains(says), "{path}: {out:?}");
    }
}

/// Lines an open slop-ledger entry covers are marked with its id, in text
/// and JSON; resolving the entry clears the mark.
#[test]
fn blame_marks_lines_of_open_ledger_entries() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("app", &[("f.txt", b"one\ntwo\nthree\nfour\n")]);
    env.ctl_ok(&proj, &["watch"]);
    turn(&env, &proj, "shim", "sed -i 's/two/TWO/' f.txt");
    let add = |target: &str| {
        env.ctl_json(
            &proj,
            &[
                "ledger",
                "add",
                target,
                "--bucket",
                "compat-shim",
                "--severity",
                "low",
                "--confidence",
                "0.9",
                "--note",
                "kept for old callers",
            ],
        )["id"]
            .as_i64()
            .expect("an id")
    };
    let span = add("f.txt:2-3");
    let whole = add("f.txt");
    env.ctl_ok(&proj, &["turn-end"]);

    let b = env.ctl_json(&proj, &["blame", "f.txt"]);
    let marks: Vec<Vec<i64>> = b["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| serde_json::from_value(l["ledger"].clone()).unwrap())
        .collect();
    assert_eq!(
        marks,
        [
            vec![whole],
            vec![span, whole],
            vec![span, whole],
            vec![whole]
        ],
        "{b}"
    );
    let text = env.ctl_ok(&proj, &["blame", "f.txt"]);
    let line2 = text.lines().nth(1).unwrap();
    assert!(line2.contains(&format!("#{span},#{whole}")), "{text}");

    for id in [span, whole] {
        env.ctl_ok(
            &proj,
            &["ledger", "resolve", &id.to_string(), "--why", "done"],
        );
    }
    let b = env.ctl_json(&proj, &["blame", "f.txt"]);
    assert!(
        b["lines"]
            .as_array()
            .unwrap()
            .iter()
            .all(|l| l["ledger"] == serde_json::json!([])),
        "{b}"
    );
}
