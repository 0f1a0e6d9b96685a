//! `ckptctl run --bursts SECS`: a new turn whenever the tree has been quiet
//! for SECS after a change, while the command keeps its terminal.

use std::os::unix::net::UnixListener;

use ckpt_e2e::*;
use ckpt_proto::{write_frame, ErrorKind, Request, Response};

/// The paths a closed turn (as `turn-end` reports it) holds.
fn paths(turn: &serde_json::Value) -> Vec<&str> {
    let mut v: Vec<&str> = turn["entries"]
        .as_array()
        .unwrap_or_else(|| panic!("no entries: {turn}"))
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    v.sort();
    v
}

#[test]
fn quiet_gaps_split_a_run_into_turns_each_with_its_own_changes() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("keep", b"k\n")]);
    env.ctl_ok(&proj, &["watch"]);
    // Gaps of 2 s against a quiet time of 0.5 s: a burst closes and the
    // next opens well inside each gap, even on a loaded machine.
    let doc = env.ctl_json(
        &proj,
        &[
            "run",
            "--label",
            "edit",
            "--bursts",
            "0.5",
            "--",
            "sh",
            "-c",
            "echo a > f1; sleep 2; echo b > f2; sleep 2; echo c > f3",
        ],
    );
    assert_eq!(doc["exit_code"], 0, "{doc}");
    let turns = doc["turns"].as_array().expect("turns with --bursts");
    assert_eq!(turns.len(), 3, "{doc}");
    for (t, f) in turns.iter().zip(["f1", "f2", "f3"]) {
        assert_eq!(paths(t), [f], "{t}");
        assert_eq!(t["info"]["status"], "closed", "{t}");
    }
    assert_eq!(doc["turn"], turns[2], "`turn` is the last one");
    let labels: Vec<&str> = turns
        .iter()
        .map(|t| t["info"]["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["edit", "edit (burst 2)", "edit (burst 3)"]);
    let log = env.ctl_json(&proj, &["log"]);
    assert_eq!(log["turns"].as_array().unwrap().len(), 3, "{log}");
}

#[test]
fn a_run_without_a_quiet_gap_is_one_turn() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("keep", b"k\n")]);
    env.ctl_ok(&proj, &["watch"]);
    let doc = env.ctl_json(
        &proj,
        &[
            "run",
            "--bursts",
            "2",
            "--",
            "sh",
            "-c",
            "for i in 1 2 3 4 5 6 7 8 9 10; do echo $i > f$i; sleep 0.1; done",
        ],
    );
    let turns = doc["turns"].as_array().expect("turns with --bursts");
    assert_eq!(turns.len(), 1, "{doc}");
    assert_eq!(paths(&turns[0]).len(), 10, "{doc}");
    let log = env.ctl_json(&proj, &["log"]);
    assert_eq!(log["turns"].as_array().unwrap().len(), 1, "{log}");
}

#[test]
fn the_command_keeps_stdin_and_stdout() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("keep", b"k\n")]);
    env.ctl_ok(&proj, &["watch"]);
    let out = run_with_input(
        &mut env.ctl_cmd(
            &proj,
            &[
                "run",
                "--bursts",
                "1",
                "--",
                "sh",
                "-c",
                "read x; echo \"$x\" > got; echo out; exit 3",
            ],
        ),
        Some(b"hello\n"),
    );
    assert_eq!(out.code(), 3, "the command's exit status: {out:?}");
    assert_eq!(out.stdout, "out\n", "{out:?}");
    assert_eq!(std::fs::read(proj.join("got")).unwrap(), b"hello\n");
}

#[test]
fn bursts_must_be_positive_seconds() {
    let env = Env::new();
    for bad in ["0", "-1", "soon", "nan"] {
        let out = env.ctl(env.path(), &["run", "--bursts", bad, "--", "true"]);
        assert_eq!(out.code(), 2, "{bad}: {out:?}");
        assert!(
            out.stderr
                .contains("--bursts takes a number of seconds above 0"),
            "{}",
            out.stderr
        );
    }
}

/// A daemon that does not know `Activity` refuses its frame as bad: the
/// run stops before the command with advice, and closes the turn it opened.
#[test]
fn an_older_daemon_is_named_before_the_command_runs() {
    let env = Env::new();
    let proj = env.dir("p");
    std::fs::create_dir_all(env.socket.parent().unwrap()).unwrap();
    let listener = UnixListener::bind(&env.socket).unwrap();
    let server = std::thread::spawn(move || {
        let mut seen = Vec::new();
        for conn in listener.incoming() {
            let mut conn = conn.unwrap();
            let Request::Hello { version, .. } = ckpt_proto::read_frame(&mut conn).unwrap() else {
                panic!("no hello");
            };
            let hello = ckpt_proto::HelloReply {
                version,
                daemon_version: "0.0.1".into(),
                pid: 1,
            };
            write_frame(&mut conn, &Response::Hello(hello)).unwrap();
            let req: Request = ckpt_proto::read_frame(&mut conn).unwrap();
            let reply = match &req {
                Request::TurnStart(ckpt_proto::TurnStart { dir, .. }) => {
                    Response::TurnStarted(ckpt_proto::TurnStarted {
                        project: dir.clone(),
                        body: ckpt_proto::TurnStartedBody {
                            turn: 1,
                            watched_now: false,
                            closed_turn: None,
                        },
                        degraded: None,
                    })
                }
                // What an older daemon says to a request it cannot decode.
                Request::Activity { .. } => Response::Error {
                    kind: ErrorKind::BadFrame,
                    message: "unknown variant `Activity` (expected a request; is the client the same version?)".into(),
                },
                _ => Response::Error {
                    kind: ErrorKind::NoOpenTurn,
                    message: "fake".into(),
                },
            };
            write_frame(&mut conn, &reply).unwrap();
            let name = format!("{req:?}");
            seen.push(name.split([' ', '{', '(']).next().unwrap().to_string());
            if matches!(req, Request::TurnEnd(ckpt_proto::TurnEnd { .. })) {
                return seen;
            }
        }
        seen
    });
    let out = env.ctl(&proj, &["run", "--bursts", "1", "--", "touch", "ran"]);
    let seen = server.join().unwrap();
    assert_eq!(out.code(), 1, "{out:?}");
    assert!(
        out.stderr.contains("ckptd is too old for --bursts"),
        "{}",
        out.stderr
    );
    assert_eq!(seen, ["TurnStart", "Activity", "TurnEnd"]);
    assert!(!proj.join("ran").exists(), "the command did not run");
}
