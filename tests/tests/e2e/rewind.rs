//! Rewind and redo through `ckptctl`: several turns, conflicts (exit 3 and
//! nothing changed), `--force`, `--dry-run`, `--path`, and clear errors.

use std::path::Path;

use ckpt_e2e::*;

/// A watched repo with three closed turns; returns the tree before each turn
/// and after the last.
fn three_turns(env: &Env) -> (std::path::PathBuf, Vec<Tree>) {
    let proj = env.git_repo(
        "app",
        &[
            ("a.txt", b"a0\n"),
            ("b.txt", b"b0\n"),
            ("lib/c.rs", b"fn c() {}\n"),
        ],
    );
    env.ctl_ok(&proj, &["watch"]);
    let mut states = vec![snapshot_work(&proj)];
    let turns = [
        "echo a1 > a.txt && echo new > n1.txt",
        "sed -i 's/b0/b2/' b.txt && rm lib/c.rs && mkdir -p lib/deep && echo d > lib/deep/d.rs",
        "echo a3 >> a.txt && mv n1.txt renamed.txt && chmod +x b.txt",
    ];
    for (i, script) in turns.iter().enumerate() {
        let started = env.ctl_json(
            &proj,
            &["turn-start", "--label", &format!("step {}", i + 1)],
        );
        assert_eq!(started["turn"], i as i64 + 1);
        sh(&proj, script);
        env.ctl_ok(&proj, &["turn-end"]);
        states.push(snapshot_work(&proj));
    }
    (proj, states)
}

#[test]
fn multi_turn_rewind_then_redo() {
    let env = Env::new();
    let _d = env.start_daemon();
    let (proj, states) = three_turns(&env);

    // Rewind turn 2 undoes turns 2 and 3, keeps turn 1.
    let r = env.ctl_json(&proj, &["rewind", "2"]);
    assert_eq!(r["outcome"], "applied");
    assert_eq!(r["turns"], serde_json::json!([2, 3]));
    assert_same_tree(
        "rewound to before turn 2",
        &states[1],
        &snapshot_work(&proj),
    );
    let log = env.ctl_json(&proj, &["log"]);
    let status: Vec<&str> = log["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["status"].as_str().unwrap())
        .collect();
    assert_eq!(status, ["rewound", "rewound", "closed"]);

    // The rewind's own writes are not mistaken for anyone's changes: a turn
    // started right after it finds nothing changed.
    let t = env.ctl_json(&proj, &["turn-start"]);
    let ended = env.ctl_json(&proj, &["turn-end"]);
    assert_eq!(ended["turn"]["entries"], serde_json::json!([]), "{ended:#}");
    assert_eq!(t["turn"], 4);

    // Redo puts back exactly what was there.
    env.ctl_ok(&proj, &["redo"]);
    assert_same_tree("redo", &states[3], &snapshot_work(&proj));

    // Then all the way back to the start.
    env.ctl_ok(&proj, &["rewind", "1"]);
    assert_same_tree(
        "rewound to before turn 1",
        &states[0],
        &snapshot_work(&proj),
    );

    // A rewound turn cannot be rewound again.
    let out = env.ctl(&proj, &["rewind", "3"]);
    assert_eq!(out.code(), 1, "{out:?}");
    assert!(out.stderr.contains("already rewound"), "{}", out.stderr);
    assert_same_tree("refused re-rewind", &states[0], &snapshot_work(&proj));

    // Nothing to redo twice.
    env.ctl_ok(&proj, &["redo"]);
    assert_same_tree("second redo", &states[3], &snapshot_work(&proj));
    let again = env.ctl(&proj, &["redo"]);
    assert_eq!(again.code(), 1, "{again:?}");
    assert!(again.stderr.contains("nothing to redo"), "{}", again.stderr);
}

#[test]
fn conflicts_refuse_with_exit_3_and_change_nothing_until_forced() {
    let env = Env::new();
    let _d = env.start_daemon();
    let (proj, states) = three_turns(&env);

    // The user edits a file the agent touched, after the agent.
    sh(&proj, "echo 'my own edit' >> a.txt");
    let edited = snapshot_work(&proj);

    let out = env.ctl(&proj, &["rewind", "1"]);
    assert_eq!(out.code(), 3, "{out:?}");
    assert!(
        out.stderr.contains("conflict") && out.stderr.contains("a.txt"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("--force"), "{}", out.stderr);
    assert_same_tree("refused rewind", &edited, &snapshot_work(&proj));

    let out = env.ctl(&proj, &["--json", "rewind", "1"]);
    assert_eq!(out.code(), 3);
    let doc = out.json();
    assert_eq!(doc["outcome"], "refused");
    assert_eq!(doc["conflicts"][0]["path"], "a.txt");
    assert_same_tree("refused rewind (json)", &edited, &snapshot_work(&proj));

    // A dry run exits as the real run would: 3 without --force.
    let dry = env.ctl(&proj, &["rewind", "1", "--dry-run"]);
    assert_eq!(dry.code(), 3, "{dry:?}");
    assert!(dry.stderr.contains("refused without --force"), "{dry:?}");
    let dry = env.ctl(&proj, &["--json", "rewind", "1", "--dry-run"]);
    assert_eq!(dry.code(), 3, "{dry:?}");
    assert_eq!(dry.json()["outcome"], "dry_run");

    // --dry-run shows the plan and changes nothing.
    let dry = env.ctl_ok(&proj, &["rewind", "1", "--dry-run", "--force"]);
    assert!(
        dry.contains("would restore") && dry.contains("a.txt"),
        "{dry}"
    );
    assert!(
        dry.contains("would delete") && dry.contains("lib/deep"),
        "{dry}"
    );
    assert!(
        dry.contains("would recreate") && dry.contains("lib/c.rs"),
        "{dry}"
    );
    assert_same_tree("dry run", &edited, &snapshot_work(&proj));

    // --force overwrites; redo brings back even the user's edit.
    env.ctl_ok(&proj, &["rewind", "1", "--force"]);
    assert_same_tree("forced rewind", &states[0], &snapshot_work(&proj));
    env.ctl_ok(&proj, &["redo"]);
    assert_same_tree("redo after force", &edited, &snapshot_work(&proj));
}

#[test]
fn dry_run_changes_nothing() {
    let env = Env::new();
    let _d = env.start_daemon();
    let (proj, states) = three_turns(&env);
    let plan = env.ctl_json(&proj, &["rewind", "2", "--dry-run"]);
    assert_eq!(plan["outcome"], "dry_run");
    let paths: Vec<&str> = plan["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["path"].as_str().unwrap())
        .collect();
    for p in [
        "a.txt",
        "b.txt",
        "lib/c.rs",
        "lib/deep",
        "lib/deep/d.rs",
        "n1.txt",
        "renamed.txt",
    ] {
        assert!(paths.contains(&p), "{p} missing from plan {paths:?}");
    }
    assert_same_tree("dry run", &states[3], &snapshot_work(&proj));
    // And the turns are still live.
    let log = env.ctl_json(&proj, &["log"]);
    assert!(log["turns"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["status"] == "closed"));
}

#[test]
fn path_limited_rewind_touches_only_that_path() {
    let env = Env::new();
    let _d = env.start_daemon();
    let (proj, states) = three_turns(&env);

    // From a subdirectory, a relative --path, as a person would type it.
    let lib = proj.join("lib");
    env.ctl_ok(&lib, &["rewind", "2", "--path", "c.rs"]);
    let now = snapshot_work(&proj);
    assert_eq!(
        std::fs::read(proj.join("lib/c.rs")).unwrap(),
        b"fn c() {}\n"
    );
    // Everything else is as the last turn left it.
    let mut expected = states[3].clone();
    expected.insert(
        b"lib/c.rs".to_vec(),
        states[0][&b"lib/c.rs".to_vec()].clone(),
    );
    assert_same_tree("--path rewind", &expected, &now);

    // A path outside the project is refused clearly.
    let out = env.ctl(&proj, &["rewind", "2", "--path", "/etc/passwd"]);
    assert_eq!(out.code(), 1, "{out:?}");
    assert!(
        out.stderr.contains("not inside the project"),
        "{}",
        out.stderr
    );
}

#[test]
fn unknown_turn_and_unwatched_directory_are_clear_errors() {
    let env = Env::new();
    let _d = env.start_daemon();
    let (proj, states) = three_turns(&env);

    for args in [&["rewind", "42"][..], &["show", "42"], &["diff", "42"]] {
        let out = env.ctl(&proj, args);
        assert_eq!(out.code(), 1, "{args:?}: {out:?}");
        assert!(
            out.stderr.contains("no turn 42"),
            "{args:?}: {}",
            out.stderr
        );
    }
    let out = env.ctl(&proj, &["--json", "rewind", "42"]);
    assert_eq!(out.json()["error"]["kind"], "unknown_turn");
    assert_same_tree("after errors", &states[3], &snapshot_work(&proj));

    let elsewhere = env.dir("elsewhere");
    for args in [
        &["log"][..],
        &["turn-end"],
        &["sync"],
        &["rewind", "1"],
        &["redo"],
    ] {
        let out = env.ctl(&elsewhere, args);
        assert_eq!(out.code(), 1, "{args:?}: {out:?}");
        assert!(
            out.stderr.contains("not inside a watched project"),
            "{args:?}: {}",
            out.stderr
        );
    }
    let out = env.ctl(&elsewhere, &["--json", "log"]);
    assert_eq!(out.json()["error"]["kind"], "not_watched");

    // turn-end without an open turn.
    let out = env.ctl(&proj, &["turn-end"]);
    assert_eq!(out.code(), 1);
    assert!(out.stderr.contains("no turn is open"), "{}", out.stderr);

    // -C points commands at another directory.
    let log = env.ctl_json(&elsewhere, &["-C", proj.to_str().unwrap(), "log"]);
    assert_eq!(log["turns"].as_array().unwrap().len(), 3);
    assert!(Path::new(log["project"].as_str().unwrap()).ends_with("app"));
}

/// A program reading a file when the rewind replaces it (`tail -f`, a
/// server with it open) keeps reading what it opened: the rewind never
/// rewrites a file someone has open, though it reuses replaced files that
/// no one has.
#[test]
fn a_reader_of_a_replaced_file_keeps_its_content() {
    use std::io::{BufRead, BufReader, Read, Write};
    let env = Env::new();
    let d = env.start_daemon();
    let (proj, states) = three_turns(&env);
    // Holds a.txt (as turn 3 left it) open until told to read it.
    let mut reader = std::process::Command::new("sh")
        .args(["-c", "exec 3< a.txt; echo ready; read go; cat <&3"])
        .current_dir(&proj)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(reader.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line, "ready\n");

    env.ctl_ok(&proj, &["rewind", "1"]);
    assert_same_tree("rewound to the start", &states[0], &snapshot_work(&proj));
    writeln!(reader.stdin.take().unwrap()).unwrap();
    let mut seen = String::new();
    out.read_to_string(&mut seen).unwrap();
    assert!(reader.wait().unwrap().success());
    assert_eq!(seen, "a1\na3\n", "the reader's open file changed");

    // Someone opening a file the rewind holds a lease on signals SIGIO,
    // which must not end the daemon.
    // SAFETY: sends a signal to our own child.
    assert_eq!(unsafe { libc::kill(d.pid(), libc::SIGIO) }, 0);
    env.ctl_ok(&proj, &["redo"]);
    assert_same_tree("redone", &states[3], &snapshot_work(&proj));
}

/// A rewind across many directories holds a handle on each; the daemon
/// raises its soft open-file limit (often 1024) to the hard one, so a wide
/// tree does not fail with "too many open files".
#[test]
fn a_rewind_across_more_directories_than_the_soft_file_limit() {
    let mut env = Env::new();
    env.daemon_open_files = Some(64);
    let _d = env.start_daemon();
    let files: Vec<(String, Vec<u8>)> = (0..150)
        .map(|i| (format!("d{i:03}/f.txt"), format!("{i}\n").into_bytes()))
        .collect();
    let refs: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_slice()))
        .collect();
    let proj = env.git_repo("wide", &refs);
    env.ctl_ok(&proj, &["watch"]);
    let before = snapshot_work(&proj);
    env.ctl_ok(&proj, &["turn-start"]);
    sh(&proj, "for f in d*/f.txt; do echo changed >> \"$f\"; done");
    env.ctl_ok(&proj, &["turn-end"]);
    env.ctl_ok(&proj, &["rewind", "1"]);
    assert_same_tree("rewound", &before, &snapshot_work(&proj));
}

/// A turn over a big project: turn-end, show, rewind and redo list every
/// path, so their replies outgrow what a request may be (16 MiB), as they do
/// for a formatter run over ~53,000 source files (42,416 made 13.3 MB).
/// Here 2,200 symlinks with 4,000-byte targets (a state carries its target,
/// ~8 KB an entry) make such replies cheaply. Every reply must still
/// arrive, whole.
#[test]
fn replies_larger_than_any_request_still_arrive() {
    const LINKS: usize = 2_200;
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.dir("big");
    let long = "t".repeat(3_980);
    for i in 0..LINKS {
        std::os::unix::fs::symlink(format!("a/{long}/{i}"), proj.join(format!("l{i}"))).unwrap();
    }
    env.ctl_ok(&proj, &["watch"]);
    let before = snapshot_work(&proj);

    env.ctl_ok(&proj, &["turn-start"]);
    sh(
        &proj,
        &format!(
            "long=$(printf '%3980s' | tr ' ' t); \
             for i in $(seq 0 {}); do ln -sfn \"b/$long/$i\" l$i; done",
            LINKS - 1
        ),
    );
    let after = snapshot_work(&proj);
    let ended = env.ctl_json(&proj, &["turn-end"]);
    let wire = serde_json::to_vec(&ended).unwrap().len();
    assert!(
        wire > ckpt_proto::MAX_REQUEST,
        "the reply ({wire} bytes) must outgrow a request for this test to mean anything"
    );
    assert_eq!(ended["turn"]["entries"].as_array().unwrap().len(), LINKS);

    let shown = env.ctl_ok(&proj, &["show", "1", "-v"]);
    assert_eq!(
        shown.lines().filter(|l| l.starts_with("  M  ")).count(),
        LINKS
    );

    let r = env.ctl_json(&proj, &["rewind", "1"]);
    assert_eq!(r["outcome"], "applied");
    assert_eq!(r["actions"].as_array().unwrap().len(), LINKS);
    assert_same_tree("rewound", &before, &snapshot_work(&proj));
    let redone = env.ctl_ok(&proj, &["redo", "-v"]);
    assert_eq!(
        redone.lines().filter(|l| l.contains("restored")).count(),
        LINKS
    );
    assert_same_tree("redone", &after, &snapshot_work(&proj));
}

/// 17,000,000 bytes of `x`: over the 16 MiB size cap, so never captured.
const BIG: usize = 17_000_000;

fn is_big(path: &std::path::Path) -> bool {
    let data = std::fs::read(path).unwrap();
    data.len() == BIG && data.iter().all(|&b| b == b'x')
}

/// A file over the size cap holds content ckpt never captured: a rewind
/// leaves it and says so, even forced (overwritten, it could never be
/// given back), and the redo puts the tree back exactly.
#[test]
fn a_forced_rewind_never_overwrites_content_ckpt_could_not_capture() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("keep.txt", b"keep\n")]);
    env.ctl_ok(&proj, &["watch"]);
    env.ctl_ok(&proj, &["turn-start"]);
    sh(&proj, "echo small > data.bin");
    env.ctl_ok(&proj, &["turn-end"]);
    env.ctl_ok(&proj, &["turn-start"]);
    sh(
        &proj,
        &format!("head -c {BIG} /dev/zero | tr '\\0' x > data.bin && echo b > b.txt"),
    );
    env.ctl_ok(&proj, &["turn-end"]);

    let out = env.ctl_json(&proj, &["rewind", "2", "--force"]);
    assert_eq!(out["outcome"], "applied", "{out}");
    let skipped = &out["skipped"][0];
    assert_eq!(skipped["path"], "data.bin", "{out}");
    assert!(
        skipped["reason"].as_str().unwrap().contains("not captured"),
        "{out}"
    );
    assert!(is_big(&proj.join("data.bin")), "the big file is left alone");
    assert!(!proj.join("b.txt").exists());

    let redo = env.ctl_json(&proj, &["redo"]);
    assert_eq!(redo["outcome"], "applied", "{redo}");
    assert!(is_big(&proj.join("data.bin")));
    assert_eq!(std::fs::read(proj.join("b.txt")).unwrap(), b"b\n");
}

/// A file over the size cap that a turn rewrites at the same size keeps
/// its recorded state (skipped, with its size): the turn still names it,
/// and a forced rewind says it cannot give it back.
#[test]
fn a_file_over_the_cap_rewritten_at_the_same_size_is_in_the_turn() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("keep.txt", b"keep\n")]);
    sh(
        &proj,
        &format!("head -c {BIG} /dev/zero | tr '\\0' y > data.bin"),
    );
    env.ctl_ok(&proj, &["watch"]);
    env.ctl_ok(&proj, &["turn-start"]);
    sh(
        &proj,
        &format!("head -c {BIG} /dev/zero | tr '\\0' x > data.bin && echo b > b.txt"),
    );
    env.ctl_ok(&proj, &["turn-end"]);
    let shown = env.ctl_json(&proj, &["show", "1"]);
    let paths: Vec<&str> = shown["turn"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["b.txt", "data.bin"], "{shown}");

    let out = env.ctl_json(&proj, &["rewind", "1", "--force"]);
    assert_eq!(out["outcome"], "applied", "{out}");
    assert_eq!(out["skipped"][0]["path"], "data.bin", "{out}");
    assert!(is_big(&proj.join("data.bin")), "the big file is left alone");
    assert!(!proj.join("b.txt").exists());
}

/// A redo that would have to overwrite content ckpt never captured (a
/// file grown over the cap since the rewind) cannot put the tree back
/// exactly: it is refused, force or not, and the file stays.
#[test]
fn a_redo_over_content_ckpt_could_not_capture_is_refused() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("keep.txt", b"keep\n")]);
    env.ctl_ok(&proj, &["watch"]);
    env.ctl_ok(&proj, &["turn-start"]);
    sh(&proj, "echo small > data.bin");
    env.ctl_ok(&proj, &["turn-end"]);
    env.ctl_ok(&proj, &["rewind", "1"]);
    assert!(!proj.join("data.bin").exists());
    sh(
        &proj,
        &format!("head -c {BIG} /dev/zero | tr '\\0' x > data.bin"),
    );
    for force in [false, true] {
        let mut args = vec!["--json", "redo"];
        if force {
            args.push("--force");
        }
        let out = env.ctl(&proj, &args);
        assert_eq!(out.code(), 3, "{out:?}");
        let doc = out.json();
        assert_eq!(doc["blocked"][0]["path"], "data.bin", "{doc}");
        assert!(is_big(&proj.join("data.bin")));
    }
}

#[test]
fn a_refused_redo_names_what_changed_since_the_rewind_and_only_options_redo_takes() {
    let env = Env::new();
    let _d = env.start_daemon();
    let (proj, _) = three_turns(&env);
    let out = env.ctl_ok(&proj, &["rewind", "3"]);
    assert!(out.contains("(undoing turn 3)"), "{out}");
    sh(&proj, "echo mine > a.txt");
    let out = env.ctl(&proj, &["redo"]);
    assert_eq!(out.code(), 3, "{out:?}");
    assert!(
        out.stderr.contains("a.txt: changed since the rewind"),
        "{out:?}"
    );
    assert!(
        out.stderr
            .contains("1 path changed since the rewind; --force overwrites them"),
        "{out:?}"
    );
    assert!(
        !out.stderr.contains("--merge") && !out.stderr.contains("--path"),
        "{out:?}"
    );
    assert!(!out.stderr.contains("after the agent"), "{out:?}");
}

/// A `--path` that no rewound turn touched (a typo) is an error naming it:
/// nothing changes and nothing is journaled, so `redo` has nothing to do;
/// `diff N PATH` says the same of a path the turn did not touch.
#[test]
fn a_path_no_rewound_turn_touched_is_an_error_and_nothing_is_journaled() {
    let env = Env::new();
    let _d = env.start_daemon();
    let (proj, states) = three_turns(&env);
    let out = env.ctl(
        &proj,
        &["rewind", "2", "--path", "typo/path", "--path", "lib"],
    );
    assert_eq!(out.code(), 1, "{out:?}");
    assert!(
        out.stderr.contains("no rewound turn touched typo/path (")
            && out.stderr.contains("undoes turns 2, 3")
            && !out.stderr.contains("lib,"),
        "{out:?}"
    );
    let doc = env
        .ctl(&proj, &["--json", "rewind", "2", "--path", "typo/path"])
        .json();
    assert_eq!(doc["error"]["kind"], "bad_request", "{doc}");
    assert_same_tree("refused --path", &states[3], &snapshot_work(&proj));
    assert_eq!(
        env.ctl_json(&proj, &["rewinds"])["rewinds"],
        serde_json::json!([])
    );
    let redo = env.ctl(&proj, &["redo"]);
    assert!(redo.stderr.contains("nothing to redo"), "{redo:?}");

    let diff = env.ctl(&proj, &["diff", "2", "nonexist"]);
    assert_eq!(diff.code(), 1, "{diff:?}");
    assert!(
        diff.stderr.contains("turn 2 did not touch nonexist"),
        "{diff:?}"
    );
    assert_eq!(diff.stdout, "", "{diff:?}");
}

/// A `--path` rewind undoes only the turns that touched those paths, and
/// its redo names the same turns.
#[test]
fn a_path_rewind_and_its_redo_list_only_the_turns_that_touched_the_paths() {
    let env = Env::new();
    let _d = env.start_daemon();
    let (proj, _) = three_turns(&env);
    // Turn 2 alone touched lib/; turns 1 and 3 did not.
    let r = env.ctl_json(&proj, &["rewind", "1", "--path", "lib"]);
    assert_eq!(r["outcome"], "applied", "{r}");
    assert_eq!(r["turns"], serde_json::json!([2]), "{r}");
    let redo = env.ctl_ok(&proj, &["redo"]);
    assert!(
        redo.starts_with("redo of the rewind to before turn 1 (turn 2):"),
        "{redo}"
    );
    let r = env.ctl_json(&proj, &["rewind", "1", "--path", "a.txt", "--dry-run"]);
    assert_eq!(r["turns"], serde_json::json!([1, 3]), "{r}");
    env.ctl_ok(&proj, &["rewind", "1", "--path", "a.txt"]);
    let redo = env.ctl_json(&proj, &["redo"]);
    assert_eq!(redo["turns"], serde_json::json!([1, 3]), "{redo}");
}

/// A rewind that restored only some of its turns' paths shows in `log`
/// and `show` (which paths), and `rewinds` lists every rewind and redo,
/// newest first, whole or partial.
#[test]
fn a_partial_rewind_shows_in_log_and_show_and_rewinds_lists_it() {
    let env = Env::new();
    let _d = env.start_daemon();
    let (proj, _) = three_turns(&env);
    env.ctl_ok(&proj, &["rewind", "1", "--path", "lib"]);

    let log = env.ctl_json(&proj, &["log"]);
    let t2 = &log["turns"][1];
    assert_eq!(
        (t2["id"].as_i64(), t2["status"].as_str()),
        (Some(2), Some("closed"))
    );
    assert_eq!(
        t2["partial"]["rewound"],
        serde_json::json!(["lib/c.rs", "lib/deep", "lib/deep/d.rs"]),
        "{t2}"
    );
    assert!(log["turns"][0].get("partial").is_none(), "{log}");
    let text = env.ctl_ok(&proj, &["log"]);
    let line2 = text
        .lines()
        .find(|l| l.trim_start().starts_with("2 "))
        .unwrap();
    assert!(line2.contains("partly rewound"), "{text}");
    let show = env.ctl_ok(&proj, &["show", "2"]);
    assert!(
        show.starts_with("turn 2 (partly rewound)")
            && show.contains("lib/c.rs, lib/deep, lib/deep/d.rs restored; its other paths are as the turn left them"),
        "{show}"
    );

    env.ctl_ok(&proj, &["redo"]);
    env.ctl_ok(&proj, &["rewind", "3"]);
    let list = env.ctl_json(&proj, &["rewinds"]);
    let kinds: Vec<(String, String, bool)> = list["rewinds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["kind"].as_str().unwrap().to_string(),
                r["state"].as_str().unwrap().to_string(),
                r["partial"].as_bool().unwrap(),
            )
        })
        .collect();
    let k = |a: &str, b: &str, p| (a.to_string(), b.to_string(), p);
    assert_eq!(
        kinds,
        [
            k("rewind", "applied", false),
            k("redo", "applied", false),
            k("rewind", "redone", true)
        ],
        "{list}"
    );
    assert_eq!(
        list["rewinds"][2]["scope"],
        serde_json::json!(["lib"]),
        "{list}"
    );
    assert_eq!(
        list["rewinds"][1]["turns"],
        serde_json::json!([2]),
        "{list}"
    );
    // Redone: turn 2 is as the agent left it again.
    assert!(env.ctl_json(&proj, &["show", "2"])["turn"]["info"]
        .get("partial")
        .is_none());
    let text = env.ctl_ok(&proj, &["rewinds"]);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].contains("rewind to before turn 3 (turns 3)")
            && lines[0].contains("whole  applied"),
        "{text}"
    );
    assert!(lines[1].contains("redo of rewind 1 (turns 2)"), "{text}");
    assert!(
        lines[2].contains("partial  redone") && lines[3].trim() == "only lib",
        "{text}"
    );
}

/// A whole rewind whose every path was skipped (content ckpt could not
/// capture) still marks the turn rewound; `log` and `rewinds` say what it
/// left.
#[test]
fn a_rewind_that_skipped_paths_is_shown_rewound_with_what_it_left() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("keep.txt", b"keep\n")]);
    env.ctl_ok(&proj, &["watch"]);
    env.ctl_ok(&proj, &["turn-start"]);
    sh(&proj, "echo small > data.bin");
    env.ctl_ok(&proj, &["turn-end"]);
    env.ctl_ok(&proj, &["turn-start"]);
    sh(
        &proj,
        &format!("head -c {BIG} /dev/zero | tr '\\0' x > data.bin"),
    );
    env.ctl_ok(&proj, &["turn-end"]);
    let out = env.ctl_json(&proj, &["rewind", "2", "--force"]);
    assert_eq!(out["actions"], serde_json::json!([]), "{out}");

    let t = &env.ctl_json(&proj, &["log"])["turns"][0];
    assert_eq!(t["status"], "rewound", "{t}");
    assert_eq!(t["partial"]["left"][0]["path"], "data.bin", "{t}");
    let text = env.ctl_ok(&proj, &["log"]);
    assert!(text.contains("rewound, 1 left"), "{text}");
    let r = &env.ctl_json(&proj, &["rewinds"])["rewinds"][0];
    assert_eq!(
        (r["partial"].as_bool(), r["changed"].as_u64()),
        (Some(true), Some(0)),
        "{r}"
    );
    assert_eq!(r["left"][0]["path"], "data.bin", "{r}");
}
