//! The client's output as a pipeline sees it.

use std::io::Read;
use std::process::Stdio;

use ckpt_e2e::*;

/// `ckptctl … | head` ends the client quietly when `head` stops reading,
/// as other Unix tools do, instead of a panic on the failed write.
#[test]
fn a_reader_that_goes_away_ends_the_client_quietly() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("README", b"r\n")]);
    env.ctl_ok(&proj, &["watch"]);
    // A turn of many paths: a reply far larger than a pipe's buffer.
    env.ctl_ok(&proj, &["turn-start"]);
    sh(
        &proj,
        "for i in $(seq 1 2000); do echo line $i > f$i.txt; done",
    );
    env.ctl_ok(&proj, &["turn-end"]);
    let mut child = env
        .ctl_cmd(&proj, &["--json", "show", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start ckptctl");
    let mut first = [0u8; 16];
    child
        .stdout
        .take()
        .expect("stdout")
        .read_exact(&mut first)
        .expect("some output");
    // Dropping our end of the pipe is `head` exiting.
    let status = wait_timeout(&mut child, std::time::Duration::from_secs(60)).expect("exits");
    let mut err = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err)
        .unwrap();
    assert!(err.is_empty(), "{status:?}: {err}");
}

#[test]
fn log_says_when_older_turns_are_left_out_and_which_session_has_none() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("a", b"0\n")]);
    env.ctl_ok(&proj, &["watch"]);
    for i in 1..=3 {
        env.ctl_ok(&proj, &["turn-start", "--label", &format!("t{i}")]);
        sh(&proj, &format!("echo {i} > a"));
        env.ctl_ok(&proj, &["turn-end"]);
    }
    let two = env.ctl_ok(&proj, &["log", "-n", "2"]);
    assert!(
        two.contains("t3") && two.contains("t2") && !two.contains("t1"),
        "{two}"
    );
    assert!(
        two.contains("(the newest 2; `ckptctl log -n N` or `--all` shows more)"),
        "{two}"
    );
    assert_eq!(
        env.ctl_json(&proj, &["log", "-n", "2"])["turns"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let all = env.ctl_ok(&proj, &["log", "--all"]);
    assert!(all.contains("t1") && !all.contains("shows more"), "{all}");
    let three = env.ctl_ok(&proj, &["log", "-n", "3"]);
    assert!(!three.contains("shows more"), "{three}");

    let zero = env.ctl(&proj, &["log", "-n", "0"]);
    assert_eq!(zero.code(), 2, "{zero:?}");
    let none = env.ctl_ok(&proj, &["log", "--session", "nope"]);
    assert!(none.contains("no turns of session nope"), "{none}");
}

#[test]
fn quiet_prints_nothing_and_json_prints_one_document_on_every_command() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("a.txt", b"0\n")]);
    let out_dir = env.path().join("export");
    let quiet: [&[&str]; 9] = [
        &["-q", "watch"],
        &["-q", "turn-start"],
        &["-q", "sync"],
        &["-q", "turn-end"],
        &["-q", "export", "1", "--out", out_dir.to_str().unwrap()],
        &["-q", "ledger", "export", "--format", "markdown"],
        &["-q", "rewind", "1"],
        &["-q", "redo"],
        &["-q", "workcopy", "list"],
    ];
    for args in quiet {
        if args.contains(&"sync") {
            sh(&proj, "echo 1 > a.txt");
        }
        let out = env.ctl(&proj, args);
        assert!(out.status.success(), "{args:?}: {out:?}");
        assert_eq!(out.stdout, "", "{args:?} printed with -q");
    }
    let md = env.ctl_json(&proj, &["ledger", "export", "--format", "markdown"]);
    assert!(md["markdown"].is_string(), "{md}");
}

#[test]
fn control_characters_in_names_are_quoted_as_git_does() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("a.txt", b"0\n")]);
    env.ctl_ok(&proj, &["watch"]);
    env.ctl_ok(&proj, &["turn-start"]);
    sh(
        &proj,
        "printf x > \"$(printf 'new\\nline')\" && printf y > 'tab\there' && printf z > café",
    );
    let end = env.ctl_ok(&proj, &["turn-end"]);
    for text in [end, env.ctl_ok(&proj, &["show", "1"])] {
        assert!(text.contains("  A  \"new\\nline\"\n"), "{text}");
        assert!(text.contains("  A  \"tab\\there\"\n"), "{text}");
        assert!(text.contains("  A  café\n"), "{text}");
        assert!(
            !text.lines().any(|l| l == "line" || l.starts_with("line\"")),
            "{text}"
        );
    }
    let rewind = env.ctl_ok(&proj, &["rewind", "1"]);
    assert!(rewind.contains("\"new\\nline\"\n"), "{rewind}");
    // JSON keeps the name itself.
    let show = env.ctl_json(&proj, &["show", "1"]);
    let names: Vec<&str> = show["turn"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"new\nline"), "{show}");
}

/// Every `mode` in a JSON document, wherever it is.
fn modes(v: &serde_json::Value, out: &mut Vec<serde_json::Value>) {
    match v {
        serde_json::Value::Object(o) => {
            for (k, c) in o {
                if k == "mode" {
                    out.push(c.clone());
                } else {
                    modes(c, out);
                }
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|c| modes(c, out)),
        _ => {}
    }
}

/// File modes read one way everywhere: octal strings in JSON (`show`,
/// `diff`, as in the export manifest), git's `old mode`/`new mode` in text.
#[test]
fn file_modes_are_octal_strings_in_json_and_one_arrow_in_text() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("run.sh", b"echo hi\n")]);
    sh(&proj, "chmod 644 run.sh");
    env.ctl_ok(&proj, &["watch"]);
    env.ctl_ok(&proj, &["turn-start"]);
    sh(&proj, "chmod 755 run.sh && echo bye >> run.sh");
    env.ctl_ok(&proj, &["turn-end"]);

    let show = env.ctl_json(&proj, &["show", "1"]);
    let mut found = Vec::new();
    modes(&show, &mut found);
    assert!(
        found.contains(&"644".into()) && found.contains(&"755".into()),
        "{found:?}: {show}"
    );
    assert!(found.iter().all(|m| m.is_string()), "{found:?}");

    let diff = env.ctl_json(&proj, &["diff", "1"]);
    assert_eq!(
        diff["files"][0]["mode"],
        serde_json::json!({"old": "644", "new": "755"}),
        "{diff}"
    );
    let text = env.ctl_ok(&proj, &["diff", "1"]);
    assert!(
        text.contains("old mode 100644\nnew mode 100755\n"),
        "{text}"
    );
}
