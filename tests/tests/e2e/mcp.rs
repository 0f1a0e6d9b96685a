//! `ckptctl mcp` as an agent's MCP client sees it: newline-delimited
//! JSON-RPC on the server's stdin and stdout, against the real daemon. The
//! tools answer with the documents `ckptctl --json` prints, rewind and redo
//! change nothing without `confirm: true`, never overwrite the user's edits,
//! and failures are tool errors carrying the CLI's message.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

use ckpt_e2e::*;
use serde_json::{json, Value};

/// How long one reply may take before the test fails instead of hanging.
const REPLY_TIMEOUT: Duration = Duration::from_secs(60);

/// A running `ckptctl mcp` and our end of its stdio.
struct Mcp {
    child: Child,
    /// `None` once closed.
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: u64,
}

impl Mcp {
    /// Starts `ckptctl -C DIR mcp` in `cwd`.
    fn start(env: &Env, cwd: &Path, dir: &Path) -> Mcp {
        let dir = dir.to_str().expect("UTF-8 temp path");
        let mut child = env
            .ctl_cmd(cwd, &["-C", dir, "mcp"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start ckptctl mcp");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        // A reader thread, so a missing reply times out instead of hanging.
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Mcp {
            child,
            stdin: Some(stdin),
            lines,
            next_id: 1,
        }
    }

    fn send(&mut self, msg: &Value) {
        let mut line = serde_json::to_vec(msg).expect("encode");
        line.push(b'\n');
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(&line).expect("write to ckptctl mcp");
        stdin.flush().expect("flush");
    }

    /// Sends a request; returns its `result`, panicking on a JSON-RPC error.
    fn request(&mut self, method: &str, params: Value) -> Value {
        let msg = self.exchange(method, params);
        assert!(msg.get("error").is_none(), "{method} failed: {msg}");
        msg["result"].clone()
    }

    /// Sends a request; returns the whole reply.
    fn exchange(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        loop {
            let line = self
                .lines
                .recv_timeout(REPLY_TIMEOUT)
                .unwrap_or_else(|e| panic!("no reply to {method} ({e})"));
            let msg: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("not one JSON message per line ({e}): {line}"));
            if msg["id"] != json!(id) {
                continue; // a notification or log message
            }
            assert_eq!(msg["jsonrpc"], "2.0", "{msg}");
            return msg;
        }
    }

    /// The handshake: initialize, then the initialized notification.
    fn initialize(&mut self) {
        let init = self.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": { "name": "ckpt-e2e", "version": "0" },
            }),
        );
        assert_eq!(init["serverInfo"]["name"], "ckpt", "{init}");
        assert!(init["capabilities"]["tools"].is_object(), "{init}");
        self.notify("notifications/initialized");
    }

    fn notify(&mut self, method: &str) {
        self.send(&json!({ "jsonrpc": "2.0", "method": method }));
    }

    /// Calls a tool; returns `isError` and its one text content.
    fn call(&mut self, tool: &str, args: Value) -> (bool, String) {
        let r = self.request("tools/call", json!({ "name": tool, "arguments": args }));
        let content = r["content"].as_array().expect("content");
        assert_eq!(content.len(), 1, "{tool}: {r}");
        assert_eq!(content[0]["type"], "text", "{tool}: {r}");
        let text = content[0]["text"].as_str().expect("text").to_string();
        (r["isError"] == json!(true), text)
    }

    /// Closes stdin, as a client that goes away does; returns how the
    /// server exited.
    fn close(&mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        wait_timeout(&mut self.child, REPLY_TIMEOUT).expect("ckptctl mcp exits on EOF")
    }

    /// Calls a tool that must succeed; returns its JSON document.
    fn call_ok(&mut self, tool: &str, args: Value) -> Value {
        let (is_error, text) = self.call(tool, args.clone());
        assert!(!is_error, "{tool} {args} failed: {text}");
        serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{tool}: not a JSON document ({e}): {text}"))
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn mcp_client_lists_plans_rewinds_and_redoes_turns() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo(
        "app",
        &[("a.txt", b"a0\n"), ("b.txt", b"b0\n"), ("lib/c.rs", b"c\n")],
    );
    env.ctl_ok(&proj, &["watch"]);
    let mut states = vec![snapshot_work(&proj)];
    let turns = [
        ("add n.txt", "echo a1 > a.txt && echo new > n.txt"),
        (
            "drop n.txt",
            "echo a2 > a.txt && rm n.txt && echo b2 > b.txt",
        ),
    ];
    for (label, script) in turns {
        env.ctl_ok(
            &proj,
            &["turn-start", "--label", label, "--agent", "claude-code"],
        );
        sh(&proj, script);
        env.ctl_ok(&proj, &["turn-end"]);
        states.push(snapshot_work(&proj));
    }

    // Started elsewhere, -C naming a folder inside the project.
    let mut mcp = Mcp::start(&env, env.path(), &proj.join("lib"));
    mcp.initialize();

    let tools = mcp.request("tools/list", json!({}));
    let tools = tools["tools"].as_array().expect("tools");
    let mut names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "diff_turn",
            "ledger_add",
            "ledger_query",
            "list_turns",
            "redo",
            "rewind",
            "show_turn",
            "status"
        ]
    );
    for t in tools {
        let props = &t["inputSchema"]["properties"];
        assert!(props.get("force").is_none(), "no tool forces: {t}");
        if t["name"] == "rewind" || t["name"] == "redo" {
            assert!(props["confirm"].is_object(), "{t}");
        }
    }

    // The read-only tools answer with exactly what `ckptctl --json` prints.
    let log = mcp.call_ok("list_turns", json!({}));
    assert_eq!(log, env.ctl_json(&proj, &["log"]));
    let ids: Vec<&Value> = log["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| &t["id"])
        .collect();
    assert_eq!(ids, [&json!(2), &json!(1)], "newest first: {log}");
    assert_eq!(log["turns"][1]["label"], "add n.txt");
    assert_eq!(log["turns"][1]["agent"], "claude-code");
    assert_eq!(log["turns"][1]["counts"]["added"], 1, "{log}");
    let one = mcp.call_ok("list_turns", json!({ "limit": 1 }));
    assert_eq!(one["turns"].as_array().unwrap().len(), 1, "{one}");
    assert_eq!(
        mcp.call_ok("show_turn", json!({ "turn": 2 })),
        env.ctl_json(&proj, &["show", "2"])
    );
    assert_eq!(
        mcp.call_ok("diff_turn", json!({ "turn": 1 })),
        env.ctl_json(&proj, &["diff", "1"])
    );
    let status = mcp.call_ok("status", json!({}));
    assert!(status["daemon"]["pid"].is_u64(), "{status}");

    // Without confirm: the plan, and nothing touched.
    let plan = mcp.call_ok("rewind", json!({ "turn": 1 }));
    assert_eq!(plan["outcome"], "dry_run", "{plan}");
    assert_eq!(plan["turns"], json!([1, 2]));
    let mut planned: Vec<&str> = plan["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["path"].as_str().unwrap())
        .collect();
    planned.sort();
    assert_eq!(planned, ["a.txt", "b.txt"], "{plan}");
    assert_same_tree("after the dry run", &states[2], &snapshot_work(&proj));
    // `after`: turn 1 is kept, only turn 2 would be undone.
    let plan = mcp.call_ok("rewind", json!({ "turn": 1, "after": true }));
    assert_eq!(plan["outcome"], "dry_run", "{plan}");
    assert_eq!(plan["turns"], json!([2]), "{plan}");
    assert_same_tree("after the dry run", &states[2], &snapshot_work(&proj));

    // Confirmed: back to before turn 1, on disk.
    let done = mcp.call_ok("rewind", json!({ "turn": 1, "confirm": true }));
    assert_eq!(done["outcome"], "applied", "{done}");
    assert_same_tree(
        "rewound to before turn 1",
        &states[0],
        &snapshot_work(&proj),
    );

    // Redo plans first too, then puts the turns back.
    let plan = mcp.call_ok("redo", json!({}));
    assert_eq!(plan["outcome"], "dry_run", "{plan}");
    assert_same_tree(
        "after the redo's dry run",
        &states[0],
        &snapshot_work(&proj),
    );
    let done = mcp.call_ok("redo", json!({ "confirm": true }));
    assert_eq!(done["outcome"], "applied", "{done}");
    assert_same_tree("redone", &states[2], &snapshot_work(&proj));

    // The user edits a file turn 2 wrote: a confirmed rewind is refused (a
    // tool error, nothing changed), and there is no way to force it.
    std::fs::write(proj.join("a.txt"), b"mine\n").unwrap();
    let edited = snapshot_work(&proj);
    let (is_error, text) = mcp.call("rewind", json!({ "turn": 2, "confirm": true }));
    assert!(is_error, "a refused rewind is a tool error: {text}");
    let refused: Value = serde_json::from_str(&text).expect("the rewind's document");
    assert_eq!(refused["outcome"], "refused", "{refused}");
    assert_eq!(refused["conflicts"][0]["path"], "a.txt", "{refused}");
    assert_same_tree("after the refused rewind", &edited, &snapshot_work(&proj));
    let forced = mcp.exchange(
        "tools/call",
        json!({ "name": "rewind", "arguments": { "turn": 2, "confirm": true, "force": true } }),
    );
    assert!(
        forced.get("error").is_some() || forced["result"]["isError"] == json!(true),
        "force is refused: {forced}"
    );
    assert_same_tree("after the forced call", &edited, &snapshot_work(&proj));
    // A merge keeps the user's edit: here it overlaps the turn's, so the
    // file would be left as it is, and the plan says so.
    let merge = mcp.call_ok("rewind", json!({ "turn": 2, "merge": true }));
    assert_eq!(merge["outcome"], "dry_run", "{merge}");
    assert_eq!(merge["merged"][0]["path"], "a.txt", "{merge}");
    assert_eq!(merge["merged"][0]["outcome"], "overlapping", "{merge}");
    assert_eq!(merge["conflicts"], json!([]), "{merge}");

    // Other paths can still be rewound: named relative to the project root,
    // not to the server's directory.
    let some = mcp.call_ok(
        "rewind",
        json!({ "turn": 2, "paths": ["b.txt"], "confirm": true }),
    );
    assert_eq!(some["outcome"], "applied", "{some}");
    assert_eq!(std::fs::read(proj.join("b.txt")).unwrap(), b"b0\n");
    assert_eq!(std::fs::read(proj.join("a.txt")).unwrap(), b"mine\n");

    // An unknown turn: a tool error with the message the CLI prints.
    let (is_error, text) = mcp.call("show_turn", json!({ "turn": 99 }));
    assert!(is_error, "{text}");
    let cli = env.ctl(&proj, &["show", "99"]);
    assert_eq!(cli.code(), 1, "{cli:?}");
    assert_eq!(cli.stderr.trim_end(), format!("ckptctl: error: {text}"));
    assert!(text.contains("99"), "{text}");
    let (is_error, text) = mcp.call("rewind", json!({ "turn": 99 }));
    assert!(is_error, "{text}");
    let cli = env.ctl(&proj, &["rewind", "99", "--dry-run"]);
    assert_eq!(cli.stderr.trim_end(), format!("ckptctl: error: {text}"));

    // The server ends when its client closes stdin.
    let status = mcp.close();
    assert!(status.success(), "{status:?}");
}

/// The model records residue in the slop ledger during its turn and finds
/// it again by path; bad input is a tool error that writes nothing.
#[test]
fn mcp_ledger_add_and_query() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("app", &[("src/a.rs", b"fn old() {}\nfn new() {}\n")]);
    env.ctl_ok(&proj, &["watch"]);
    env.ctl_ok(&proj, &["turn-start", "--agent", "claude-code"]);
    let mut mcp = Mcp::start(&env, &proj, &proj);
    mcp.initialize();
    let added = mcp.call_ok(
        "ledger_add",
        json!({ "path": "src/a.rs", "start_line": 1, "bucket": "compat-shim",
                "severity": "medium", "confidence": 0.8,
                "note": "old() forwards to new(); remove once callers move" }),
    );
    let id = added["id"].as_i64().expect("an id");
    let (is_error, text) = mcp.call(
        "ledger_add",
        json!({ "path": "src/a.rs", "start_line": 9, "bucket": "compat-shim",
                "severity": "medium", "confidence": 0.8, "note": "past the end" }),
    );
    assert!(is_error, "{text}");
    let (is_error, text) = mcp.call(
        "ledger_add",
        json!({ "path": "src/a.rs", "bucket": "debt", "severity": "low",
                "confidence": 0.5, "note": "unknown bucket" }),
    );
    assert!(is_error && text.contains("debt"), "{text}");

    let found = mcp.call_ok("ledger_query", json!({ "path": "src" }));
    let entries = found["entries"].as_array().expect("entries");
    assert_eq!(entries.len(), 1, "{found}");
    let e = &entries[0];
    assert_eq!(e["id"], id, "{e}");
    assert_eq!(e["owner"], "agent:claude-code", "{e}");
    assert_eq!(e["turn"], 1, "{e}");
    assert_eq!(e["anchor"]["state"], "fresh", "{e}");
    let none = mcp.call_ok("ledger_query", json!({ "status": "resolved" }));
    assert_eq!(none["entries"], json!([]), "{none}");
    assert!(mcp.close().success());
}

#[test]
fn mcp_without_ckpt_mcp_next_to_ckptctl_says_so() {
    let env = Env::new();
    let lonely = env.dir("lonely");
    let ctl = lonely.join("ckptctl");
    std::fs::copy(bin("ckptctl"), &ctl).expect("copy ckptctl alone");
    let mut cmd = std::process::Command::new(&ctl);
    cmd.arg("mcp")
        .current_dir(env.path())
        .env("CKPT_NO_AUTOSTART", "1");
    let out = run(&mut cmd);
    assert_eq!(out.code(), 1, "{}", out.stderr);
    let expected = format!(
        "the MCP server {} is missing",
        lonely.join("ckpt-mcp").display()
    );
    assert!(out.stderr.contains(&expected), "{}", out.stderr);
}

/// The `rewind` tool's `conversation: true`: a Claude Code transcript
/// grown over two hook-marked turns is forked back to before turn 2, and
/// the answer names the command that resumes it.
#[test]
fn mcp_rewind_forks_the_conversation_when_asked() {
    let env = Env::new();
    let proj = env.dir("app");
    std::fs::write(proj.join("a.txt"), "a\n").unwrap();
    let _daemon = env.start_daemon();
    env.ctl_ok(&proj, &["watch"]);
    let transcript = env.path().join("s1.jsonl");
    let entry = |uuid: &str, parent: Option<&str>, role: &str, text: &str| {
        json!({"parentUuid": parent, "isSidechain": false, "userType": "external", "cwd": proj,
               "sessionId": "s1", "version": "2.0.55", "type": role, "uuid": uuid,
               "timestamp": "2026-12-01T10:00:00.000Z", "message": {"role": role, "content": text}})
    };
    let mut parent: Option<String> = None;
    for (n, file) in ["b.txt", "c.txt"].iter().enumerate() {
        let payload = json!({"session_id": "s1", "transcript_path": transcript, "cwd": proj,
                             "hook_event_name": "UserPromptSubmit", "prompt": format!("add {file}")});
        let out = run_with_input(
            &mut env.ctl_cmd(&proj, &["turn-start", "--from-hook=claude-code"]),
            Some(payload.to_string().as_bytes()),
        );
        assert!(out.status.success() && out.stderr.is_empty(), "{out:?}");
        let (u, a) = (format!("u{n}"), format!("a{n}"));
        let lines = [
            entry(&u, parent.as_deref(), "user", &format!("add {file}")),
            entry(&a, Some(&u), "assistant", "done"),
        ];
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&transcript)
            .unwrap();
        for l in lines {
            writeln!(f, "{l}").unwrap();
        }
        parent = Some(a);
        std::fs::write(proj.join(file), "x\n").unwrap();
        env.ctl_ok(&proj, &["turn-end"]);
    }
    let original = std::fs::read(&transcript).unwrap();
    let mut mcp = Mcp::start(&env, &proj, &proj);
    mcp.initialize();
    let plan = mcp.call_ok("rewind", json!({ "turn": 2, "conversation": true }));
    assert_eq!(plan["conversation"]["dry_run"], true, "{plan}");
    let done = mcp.call_ok(
        "rewind",
        json!({ "turn": 2, "confirm": true, "conversation": true }),
    );
    let c = &done["conversation"];
    let forked = c["forked_session"].as_str().expect("forked");
    assert_eq!(c["resume_command"], format!("claude --resume {forked}"));
    assert_eq!(c["entries"], 2, "{c}");
    let fork = std::fs::read_to_string(c["path"].as_str().unwrap()).unwrap();
    assert_eq!(fork.lines().count(), 2);
    assert!(fork.contains(&format!("\"sessionId\":\"{forked}\"")));
    assert!(!proj.join("c.txt").exists() && proj.join("b.txt").exists());
    assert_eq!(std::fs::read(&transcript).unwrap(), original);
    // Without the option, no `conversation` in the answer.
    let redo = mcp.call_ok("redo", json!({ "confirm": true }));
    assert!(redo.get("conversation").is_none(), "{redo}");
}

/// Claude Code calls the `rewind` tool, confirmed, while its own turn is
/// open: the turns asked for are undone, this one's edits so far included,
/// and the session keeps an open turn for the rest of the prompt (same
/// session, agent and label), so later edits are recorded and rewindable
/// and the `Stop` hook's turn-end closes it.
#[test]
fn mcp_rewind_inside_the_agents_own_turn_keeps_recording_the_rest_of_the_prompt() {
    let env = Env::new();
    let proj = env.dir("app");
    std::fs::write(proj.join("a.txt"), "a0\n").unwrap();
    std::fs::write(proj.join("b.txt"), "b0\n").unwrap();
    let _daemon = env.start_daemon();
    env.ctl_ok(&proj, &["watch"]);
    let hook = |cmd: &str, event: &str, prompt: &str| {
        let payload = json!({"session_id": "s1", "cwd": proj, "hook_event_name": event,
                             "prompt": prompt});
        let out = run_with_input(
            &mut env.ctl_cmd(&proj, &[cmd, "--from-hook=claude-code"]),
            Some(payload.to_string().as_bytes()),
        );
        assert!(out.status.success(), "{out:?}");
        assert_eq!(out.stderr, "", "the {event} hook failed: {out:?}");
    };
    hook("turn-start", "UserPromptSubmit", "first");
    std::fs::write(proj.join("a.txt"), "a1\n").unwrap();
    hook("turn-end", "Stop", "");
    let prompt = "undo all that, then do it another way";
    hook("turn-start", "UserPromptSubmit", prompt);
    std::fs::write(proj.join("b.txt"), "b2\n").unwrap();

    let mut mcp = Mcp::start(&env, &proj, &proj);
    mcp.initialize();
    let done = mcp.call_ok("rewind", json!({ "turn": 1, "confirm": true }));
    assert_eq!(done["outcome"], "applied", "{done}");
    assert_eq!(done["turns"], json!([1, 2]), "{done}");
    assert_eq!(std::fs::read(proj.join("a.txt")).unwrap(), b"a0\n");
    assert_eq!(std::fs::read(proj.join("b.txt")).unwrap(), b"b0\n");

    // The rest of the prompt, then the Stop hook.
    std::fs::write(proj.join("a.txt"), "another way\n").unwrap();
    std::fs::write(proj.join("c.txt"), "c\n").unwrap();
    hook("turn-end", "Stop", "");
    assert_eq!(
        done["continued"],
        json!([{ "ended": 2, "session": "s1", "opened": 3 }]),
        "{done}"
    );
    let three = env.ctl_json(&proj, &["show", "3"]);
    let info = &three["turn"]["info"];
    assert_eq!(
        (
            &info["status"],
            &info["session"],
            &info["agent"],
            &info["label"]
        ),
        (
            &json!("closed"),
            &json!("s1"),
            &json!("claude-code"),
            &json!(prompt)
        ),
        "{three}"
    );
    let paths: Vec<&str> = three["turn"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["a.txt", "c.txt"], "{three}");
    let blame = env.ctl_json(&proj, &["blame", "a.txt"]);
    assert_eq!(blame["lines"][0]["turn"], 3, "{blame}");
    env.ctl_ok(&proj, &["rewind", "3"]);
    assert_eq!(std::fs::read(proj.join("a.txt")).unwrap(), b"a0\n");
    assert!(!proj.join("c.txt").exists());
}

/// A turn whose capture is partial (a file over the size cap) is not
/// rewound through MCP until the model passes `accept_partial: true`; the
/// refusal says what cannot be restored and changes nothing.
#[test]
fn mcp_rewind_refuses_a_partial_turn_without_accept_partial() {
    let env = Env::new();
    std::fs::create_dir_all(env.user_config().parent().unwrap()).unwrap();
    std::fs::write(env.user_config(), "[capture]\nmax_file_mib = 1\n").unwrap();
    let _d = env.start_daemon();
    let proj = env.git_repo("app", &[("a.txt", b"a0\n")]);
    env.ctl_ok(&proj, &["watch"]);
    let before = snapshot_work(&proj);
    env.ctl_ok(&proj, &["turn-start", "--label", "big"]);
    sh(&proj, "echo a1 > a.txt");
    std::fs::write(proj.join("big.bin"), binary(3, 2 << 20)).unwrap();
    env.ctl_ok(&proj, &["turn-end"]);
    let after = snapshot_work(&proj);

    let mut mcp = Mcp::start(&env, &proj, &proj);
    mcp.initialize();
    // The plan says it; only applying it is refused.
    let plan = mcp.call_ok("rewind", json!({"turn": 1}));
    assert_eq!(
        plan["partial_capture"][0]["gaps"][0]["path"], "big.bin",
        "{plan:#}"
    );
    let (is_error, text) = mcp.call("rewind", json!({"turn": 1, "confirm": true}));
    assert!(is_error, "{text}");
    assert!(
        text.contains("accept_partial") && text.contains("cannot restore big.bin"),
        "{text}"
    );
    assert_same_tree("refused", &after, &snapshot_work(&proj));

    let done = mcp.call_ok(
        "rewind",
        json!({"turn": 1, "confirm": true, "accept_partial": true}),
    );
    assert_eq!(done["outcome"], "applied", "{done:#}");
    let mut now = snapshot_work(&proj);
    // A file ckpt could not capture is left as it is.
    assert!(now.remove(b"big.bin".as_slice()).is_some(), "{now:?}");
    assert_same_tree("rewound but for big.bin", &before, &now);
}
