//! The slop ledger through the real binaries: entries recorded in a turn,
//! anchors that follow the code, statuses that follow rewind and redo,
//! resolve/reopen history, filters, export/import between clones, and bad
//! input refused with nothing written.

use std::path::Path;

use ckpt_e2e::*;
use serde_json::Value;

const LINES: &[u8] = b"fn one() {}\nfn two() {}\nfn three() {}\nfn four() {}\n";

fn files() -> Vec<(&'static str, &'static [u8])> {
    vec![
        ("src/moved.rs", LINES),
        ("src/changed.rs", LINES),
        ("src/gone.rs", LINES),
        ("src/fresh.rs", LINES),
        ("README.md", b"# app\n"),
    ]
}

/// `ledger add` with `--json`; returns the id.
fn add(env: &Env, dir: &Path, target: &str, extra: &[&str]) -> i64 {
    let mut args = vec!["ledger", "add", target];
    args.extend_from_slice(extra);
    let out = env.ctl_json(dir, &args);
    out["id"].as_i64().unwrap_or_else(|| panic!("no id: {out}"))
}

fn list(env: &Env, dir: &Path, filter: &[&str]) -> Vec<Value> {
    let mut args = vec!["ledger", "list"];
    args.extend_from_slice(filter);
    let out = env.ctl_json(dir, &args);
    out["entries"].as_array().expect("entries").clone()
}

fn ids(entries: &[Value]) -> Vec<i64> {
    entries.iter().map(|e| e["id"].as_i64().unwrap()).collect()
}

fn by_id(entries: &[Value], id: i64) -> &Value {
    entries
        .iter()
        .find(|e| e["id"] == id)
        .unwrap_or_else(|| panic!("no entry {id} in {entries:?}"))
}

const SHIM: &[&str] = &[
    "--bucket",
    "compat-shim",
    "--severity",
    "high",
    "--confidence",
    "0.9",
    "--note",
    "old name kept for callers",
];

#[test]
fn entries_follow_their_turn_their_lines_and_their_status() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("app", &files());
    env.ctl_ok(&proj, &["watch"]);
    let turn = env.ctl_json(
        &proj,
        &["turn-start", "--agent", "claude", "--session", "s1"],
    );
    assert_eq!(turn["turn"], 1);
    sh(&proj, "echo 'pub fn new() {}' > src/new.rs");
    // Paths are relative to the current directory.
    let src = proj.join("src");
    let moved = add(&env, &src, "moved.rs:2-3", SHIM);
    let changed = add(
        &env,
        &src,
        "changed.rs:2-3",
        &[
            "--bucket",
            "naming-drift",
            "--severity",
            "low",
            "--confidence",
            "0.4",
            "--owner",
            "team-core",
            "--note",
            "two() should be second()",
        ],
    );
    let gone = add(
        &env,
        &src,
        "gone.rs:4",
        &[
            "--bucket",
            "suspected-dead-code",
            "--severity",
            "medium",
            "--confidence",
            "0.5",
            "--note",
            "nobody calls four()",
        ],
    );
    let fresh = add(&env, &src, "fresh.rs:1", SHIM);
    let whole = add(
        &env,
        &proj,
        "README.md",
        &[
            "--bucket",
            "stale-docs-tests",
            "--severity",
            "critical",
            "--confidence",
            "1",
            "--note",
            "says nothing of new.rs",
        ],
    );
    // turn-end and show count the entries the turn added.
    let ended = env.ctl(&proj, &["turn-end"]);
    assert!(
        ended.stdout.contains("5 slop-ledger entries"),
        "{}",
        ended.stdout
    );
    let turn = env.ctl_json(&proj, &["show", "1"]);
    assert_eq!(turn["turn"]["info"]["ledger_entries"], 5, "{turn}");
    assert!(env
        .ctl_ok(&proj, &["show", "1"])
        .contains("5 slop-ledger entries"));

    let show = env.ctl_json(&proj, &["ledger", "show", &moved.to_string()]);
    assert_eq!(show["turn"], 1, "{show}");
    assert_eq!(show["agent"], "claude", "{show}");
    assert_eq!(show["session"], "s1", "{show}");
    assert_eq!(show["owner"], "agent:claude", "{show}");
    assert_eq!(show["path"], "src/moved.rs", "{show}");
    assert_eq!(show["span"], serde_json::json!({"start": 2, "end": 3}));
    assert_eq!(show["history"].as_array().unwrap().len(), 1, "{show}");
    assert_eq!(
        by_id(&list(&env, &proj, &[]), changed)["owner"],
        "team-core"
    );

    // The user edits between turns: lines above one span, inside another,
    // a file removed, one left alone.
    sh(
        &proj,
        "sed -i '1i // header\\n// more' src/moved.rs && sed -i 's/two/second/' src/changed.rs && rm src/gone.rs",
    );
    let all = list(&env, &proj, &[]);
    assert_eq!(ids(&all), vec![moved, changed, gone, fresh, whole]);
    let anchor = |id| by_id(&all, id)["anchor"].clone();
    assert_eq!(
        anchor(moved),
        serde_json::json!({"state": "moved", "span": {"start": 4, "end": 5}})
    );
    assert_eq!(anchor(changed)["state"], "changed");
    assert_eq!(anchor(gone)["state"], "gone");
    assert_eq!(
        anchor(fresh),
        serde_json::json!({"state": "fresh", "span": {"start": 1, "end": 1}})
    );
    assert_eq!(anchor(whole)["state"], "fresh");
    for e in &all {
        for key in [
            "id",
            "bucket",
            "severity",
            "confidence",
            "owner",
            "path",
            "span",
            "note",
            "turn",
            "status",
            "anchor",
        ] {
            assert!(e.get(key).is_some(), "{key} missing from {e}");
        }
    }

    // Rewinding the turn marks its entries rewound; redo brings them back.
    let r = env.ctl_json(&proj, &["rewind", "1"]);
    assert_eq!(r["outcome"], "applied", "{r}");
    let rewind_id = r["rewind_id"].as_i64().unwrap();
    let after = list(&env, &proj, &[]);
    assert!(after.iter().all(|e| e["status"] == "rewound"), "{after:?}");
    assert_eq!(by_id(&after, moved)["rewound_by"], rewind_id);
    let text = env.ctl_ok(&proj, &["ledger", "show", &moved.to_string()]);
    assert!(
        text.contains(&format!("rewound by rewind {rewind_id}")),
        "{text}"
    );
    env.ctl_ok(&proj, &["redo"]);
    assert!(list(&env, &proj, &[]).iter().all(|e| e["status"] == "open"));

    // Resolve and reopen: who, why, in order.
    let id = gone.to_string();
    let r = env.ctl_json(
        &proj,
        &[
            "ledger",
            "resolve",
            &id,
            "--why",
            "file removed",
            "--who",
            "ana",
        ],
    );
    assert_eq!(r["status"], "resolved", "{r}");
    env.ctl_ok(&proj, &["ledger", "reopen", &id, "--why", "it came back"]);
    let r = env.ctl_json(
        &proj,
        &[
            "ledger",
            "resolve",
            &id,
            "--wont-fix",
            "--why",
            "kept on purpose",
        ],
    );
    assert_eq!(r["status"], "wont-fix");
    let h = env.ctl_json(&proj, &["ledger", "show", &id])["history"].clone();
    let steps: Vec<(String, String)> = h
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["status"].as_str().unwrap().to_string(),
                e["why"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let want = [
        ("open", "added"),
        ("resolved", "file removed"),
        ("open", "it came back"),
        ("wont-fix", "kept on purpose"),
    ];
    assert_eq!(
        steps,
        want.map(|(a, b)| (a.to_string(), b.to_string())).to_vec()
    );
    assert_eq!(h[1]["who"], "ana");

    // Every filter.
    let f = |args: &[&str]| ids(&list(&env, &proj, args));
    assert_eq!(f(&["--bucket", "compat-shim"]), vec![moved, fresh]);
    assert_eq!(f(&["--min-severity", "high"]), vec![moved, fresh, whole]);
    assert_eq!(f(&["--min-confidence", "0.9"]), vec![moved, fresh, whole]);
    assert_eq!(f(&["--path", "src/moved.rs"]), vec![moved]);
    assert_eq!(f(&["--path", "src"]), vec![moved, changed, gone, fresh]);
    assert_eq!(f(&["--path", "."]).len(), 5);
    assert_eq!(f(&["--turn", "1"]).len(), 5);
    assert_eq!(f(&["--turn", "2"]), Vec::<i64>::new());
    assert_eq!(f(&["--agent", "claude"]).len(), 5);
    assert_eq!(f(&["--agent", "codex"]), Vec::<i64>::new());
    assert_eq!(f(&["--owner", "team-core"]), vec![changed]);
    assert_eq!(f(&["--status", "wont-fix"]), vec![gone]);
    assert_eq!(f(&["--status", "open"]), vec![moved, changed, fresh, whole]);
    assert_eq!(f(&["--anchor", "moved"]), vec![moved]);
    assert_eq!(f(&["--anchor", "gone"]), vec![gone]);
    let sub = ids(&list(&env, &src, &["--path", "fresh.rs"]));
    assert_eq!(sub, vec![fresh], "--path is relative to the cwd");

    // The text list names the moved span.
    let text = env.ctl_ok(&proj, &["ledger", "list"]);
    assert!(
        text.contains("moved→4-5") && text.contains("src/fresh.rs:1"),
        "{text}"
    );
}

#[test]
fn an_export_imports_into_another_clone_once() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("app", &files());
    sh(env.path(), "cp -a app clone");
    let clone = env.path().join("clone");
    env.ctl_ok(&proj, &["watch"]);
    env.ctl_ok(&clone, &["watch"]);
    let a = add(&env, &proj, "src/moved.rs:2-3", SHIM);
    add(
        &env,
        &proj,
        "README.md",
        &[
            "--bucket",
            "tool-gap",
            "--severity",
            "low",
            "--confidence",
            "0.25",
            "--owner",
            "docs",
            "--note",
            "no | linter for docs",
        ],
    );
    env.ctl_ok(
        &proj,
        &[
            "ledger",
            "resolve",
            &a.to_string(),
            "--why",
            "done",
            "--who",
            "bo",
        ],
    );

    let export = env.ctl_ok(&proj, &["ledger", "export", "--format", "json"]);
    let file = env.path().join("ledger.json");
    std::fs::write(&file, &export).unwrap();
    let file = file.to_str().unwrap();
    let r = env.ctl_json(&clone, &["ledger", "import", file]);
    assert_eq!(
        (r["added"].clone(), r["skipped"].clone()),
        (2.into(), 0.into())
    );
    let text = env.ctl_ok(&clone, &["ledger", "import", file]);
    assert!(
        text.contains("imported 0") && text.contains("skipped 2"),
        "{text}"
    );

    let strip = |entries: Vec<Value>| -> Vec<Value> {
        entries
            .into_iter()
            .map(|e| {
                serde_json::json!([
                    e["path"],
                    e["span"],
                    e["bucket"],
                    e["severity"],
                    e["confidence"],
                    e["owner"],
                    e["note"],
                    e["status"],
                    e["anchor"]
                ])
            })
            .collect()
    };
    let there = list(&env, &clone, &[]);
    assert_eq!(strip(there.clone()), strip(list(&env, &proj, &[])));
    let first = &there[0]["id"].to_string();
    let h = env.ctl_json(&clone, &["ledger", "show", first])["history"].clone();
    assert_eq!(h.as_array().unwrap().len(), 2, "history came along: {h}");
    assert_eq!(h[1]["who"], "bo");

    let md = env.ctl_ok(&proj, &["ledger", "export", "--format", "markdown"]);
    for want in [
        "### compat-shim",
        "### tool-gap",
        "`src/moved.rs:2-3`",
        "old name kept for callers",
        "no \\| linter for docs",
        "| resolved |",
        "| 0.25 |",
    ] {
        assert!(md.contains(want), "{want} not in:\n{md}");
    }
}

#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("app", &files());
    env.dir("outside");
    std::fs::write(env.path().join("outside/o.rs"), "x\n").unwrap();
    env.ctl_ok(&proj, &["watch"]);
    let id = add(&env, &proj, "src/fresh.rs:1", SHIM).to_string();
    let before = env.ctl_ok(&proj, &["--json", "ledger", "export"]);
    let not_export = env.path().join("not-export.json");
    std::fs::write(&not_export, r#"{"entries": []}"#).unwrap();
    let garbage = env.path().join("garbage.txt");
    std::fs::write(&garbage, "hello").unwrap();
    let (not_export, garbage) = (not_export.to_str().unwrap(), garbage.to_str().unwrap());

    let with = |target: &str, field: &str, value: &str| -> Vec<String> {
        let mut args: Vec<String> = ["ledger", "add", target]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut flags = SHIM.to_vec();
        if let Some(i) = flags.iter().position(|f| *f == field) {
            flags[i + 1] = value;
        }
        args.extend(flags.iter().map(|s| s.to_string()));
        args
    };
    let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            with("src/a.rs", "--bucket", "shim"),
            "unknown bucket 'shim'",
        ),
        (
            with("src/fresh.rs", "--bucket", "shim"),
            "unknown bucket 'shim'",
        ),
        (
            with("src/fresh.rs", "--severity", "urgent"),
            "unknown severity 'urgent'",
        ),
        (
            with("src/fresh.rs", "--confidence", "1.5"),
            "between 0 and 1",
        ),
        (
            with("src/fresh.rs", "--confidence", "NaN"),
            "between 0 and 1",
        ),
        (with("src/fresh.rs", "--note", ""), "note is empty"),
        (with("../outside/o.rs", "", ""), "not inside the project"),
        (with(".git/config", "", ""), ".git"),
        (with("src/fresh.rs:5", "", ""), "past the end of the file"),
        (with("src/fresh.rs:3-2", "", ""), "starts after it ends"),
        (with("src/fresh.rs:0", "", ""), "numbered from 1"),
        (with("src/missing.rs", "", ""), "does not exist"),
        (with("src", "", ""), "not a regular file"),
        (owned(&["ledger", "show", "99"]), "no ledger entry 99"),
        (
            owned(&["ledger", "resolve", "99", "--why", "x"]),
            "no ledger entry 99",
        ),
        (
            owned(&["ledger", "reopen", "99", "--why", "x"]),
            "no ledger entry 99",
        ),
        (
            owned(&["ledger", "reopen", &id, "--why", "x"]),
            "already open",
        ),
        (owned(&["ledger", "resolve", &id, "--why", " "]), "empty"),
        (
            owned(&["ledger", "import", not_export]),
            "not a ledger export",
        ),
        (owned(&["ledger", "import", garbage]), "not a ledger export"),
        (
            owned(&["ledger", "list", "--status", "done"]),
            "unknown status",
        ),
        (
            owned(&["ledger", "list", "--anchor", "lost"]),
            "unknown anchor",
        ),
    ];
    for (args, want) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = env.ctl(&proj, &args);
        assert_ne!(out.code(), 0, "{args:?} succeeded: {out:?}");
        assert!(
            out.stderr.contains(want),
            "{args:?}: wanted {want:?} in {out:?}"
        );
    }
    // An import with one bad entry among good ones adds none of them.
    let mut doc: Value = serde_json::from_str(&before).unwrap();
    let mut bad = doc["entries"][0].clone();
    bad["note"] = "another".into();
    bad["path"] = "../escape.rs".into();
    let mut good = bad.clone();
    good["path"] = "src/moved.rs".into();
    doc["entries"] = serde_json::json!([good, bad]);
    let mixed = env.path().join("mixed.json");
    std::fs::write(&mixed, doc.to_string()).unwrap();
    let out = env.ctl(&proj, &["ledger", "import", mixed.to_str().unwrap()]);
    assert_ne!(out.code(), 0, "{out:?}");
    assert!(out.stderr.contains("entry 2 of the import"), "{out:?}");

    assert_eq!(env.ctl_ok(&proj, &["--json", "ledger", "export"]), before);
}

#[test]
fn an_entry_on_a_blank_line_is_fresh_and_who_is_known_without_user() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("a.rs", b"fn a() {}\n\nfn b() {}\n")]);
    env.ctl_ok(&proj, &["watch"]);
    // Neither USER nor LOGNAME: the account's name is used.
    let no_user = |args: &[&str]| {
        let mut full = vec!["--json"];
        full.extend_from_slice(args);
        let out = run(env
            .ctl_cmd(&proj, &full)
            .env_remove("USER")
            .env_remove("LOGNAME"));
        assert!(out.status.success(), "{args:?}: {out:?}");
        out.json()
    };
    let mut args = vec!["ledger", "add", "a.rs:2"];
    args.extend_from_slice(SHIM);
    let id = no_user(&args)["id"].as_i64().unwrap();
    let e = &list(&env, &proj, &[])[0];
    assert_eq!(e["anchor"]["state"], "fresh", "{e}");
    assert_eq!(e["anchor"]["span"]["start"], 2, "{e}");
    let name = run(std::process::Command::new("id").arg("-un")).stdout;
    let name = name.trim();
    assert!(!name.is_empty());
    assert_eq!(e["owner"], name, "{e}");
    let id = id.to_string();
    no_user(&["ledger", "resolve", &id, "--why", "done"]);
    let h = env.ctl_json(&proj, &["ledger", "show", &id])["history"].clone();
    assert_eq!(h[1]["who"], name, "{h}");
}
