//! `rewind N --conversation` end to end: real hook calls (`turn-start` and
//! `turn-end --from-hook=AGENT` with the agent's payload on stdin, naming
//! its transcript) while the test plays the agent, appending entries to a
//! transcript in that agent's format (the sources are cited in
//! `crates/ckptctl/src/conversation/*.rs`) and editing files; then the
//! rewind, through the real binaries. Every ckptctl sees a temp HOME.

use std::collections::HashSet;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use ckpt_e2e::*;
use serde_json::{json, Value};

struct World {
    env: Env,
    home: PathBuf,
    proj: PathBuf,
    _daemon: Daemon,
}

impl World {
    fn new() -> World {
        let env = Env::new();
        let home = env.dir("home");
        let proj = env.dir("app");
        fs::write(proj.join("base.txt"), "base\n").unwrap();
        let daemon = env.start_daemon();
        let w = World {
            env,
            home,
            proj,
            _daemon: daemon,
        };
        w.ctl_ok(&["watch"]);
        w
    }

    fn cmd(&self, args: &[&str]) -> std::process::Command {
        let mut cmd = self.env.ctl_cmd(&self.proj, args);
        cmd.env("HOME", &self.home)
            .env_remove("CODEX_HOME")
            .env_remove("GEMINI_CLI_HOME");
        cmd
    }

    fn ctl(&self, args: &[&str]) -> Out {
        run(&mut self.cmd(args))
    }

    fn ctl_ok(&self, args: &[&str]) -> Out {
        let out = self.ctl(args);
        assert!(out.status.success(), "ckptctl {args:?}: {out:?}");
        out
    }

    /// A hook call as the agent makes it; it must succeed quietly.
    fn hook(&self, agent: &str, event: &str, payload: Value) {
        let arg = format!("--from-hook={agent}");
        let mut cmd = self.cmd(&[event, &arg]);
        let out = run_with_input(&mut cmd, Some(payload.to_string().as_bytes()));
        assert!(out.status.success(), "{out:?}");
        assert_eq!(out.stdout, "", "a hook prints nothing on stdout");
        assert_eq!(out.stderr, "", "{agent} {event}: {out:?}");
    }

    /// `rewind`/`redo` with `--json`: the document and stderr.
    fn json(&self, args: &[&str]) -> (Value, String) {
        let mut full = vec!["--json"];
        full.extend_from_slice(args);
        let out = self.ctl_ok(&full);
        (out.json(), out.stderr)
    }

    /// One agent turn: turn-start, the agent's entries and file edit,
    /// turn-end. Returns how many lines the transcript held before the
    /// turn began: what a fork of it holds.
    fn turn(&self, a: &mut dyn Agent, prompt: &str, file: &str) -> usize {
        let transcript = a.transcript().to_str().unwrap().to_string();
        let session = a.session().to_string();
        let payload = |event: &str, prompt: Option<&str>| {
            let mut p = json!({"session_id": session, "transcript_path": transcript,
                "cwd": self.proj, "hook_event_name": event});
            if let Some(prompt) = prompt {
                p["prompt"] = json!(prompt);
            }
            p
        };
        let (start, end) = a.events();
        let before = fs::read_to_string(a.transcript()).map_or(0, |t| t.lines().count());
        a.before_hook(prompt);
        self.hook(a.name(), "turn-start", payload(start, Some(prompt)));
        a.prompt(prompt);
        fs::write(self.proj.join(file), format!("{prompt}\n")).unwrap();
        a.tool_call(file);
        self.hook(a.name(), "turn-end", payload(end, None));
        before
    }
}

fn append(path: &Path, entries: &[Value]) {
    let mut f = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    for e in entries {
        writeln!(f, "{e}").unwrap();
    }
}

fn lines(path: &Path) -> Vec<Value> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// An agent as far as its transcript goes.
trait Agent {
    fn name(&self) -> &'static str;
    fn session(&self) -> &str;
    fn transcript(&self) -> &Path;
    /// Its turn-start and turn-end hook events.
    fn events(&self) -> (&'static str, &'static str);
    /// What it writes for a turn before the turn-start hook runs.
    fn before_hook(&mut self, _prompt: &str) {}
    fn prompt(&mut self, text: &str);
    /// A tool call editing `file`, its result and a closing reply.
    fn tool_call(&mut self, file: &str);
}

struct Claude {
    session: String,
    path: PathBuf,
    n: u32,
    parent: Option<String>,
}

impl Claude {
    fn new(home: &Path, session: &str) -> Claude {
        let dir = home.join(".claude/projects/-w-app");
        fs::create_dir_all(&dir).unwrap();
        Claude {
            session: session.to_string(),
            path: dir.join(format!("{session}.jsonl")),
            n: 0,
            parent: None,
        }
    }

    fn entry(&mut self, kind: &str, extra: Value) -> Value {
        self.n += 1;
        let uuid = format!("{}-{:04}", &self.session[..8], self.n);
        let mut e = json!({"parentUuid": self.parent, "isSidechain": false, "userType": "external",
            "cwd": "/w/app", "sessionId": self.session, "version": "2.0.55", "gitBranch": "main",
            "type": kind, "uuid": uuid, "timestamp": format!("2026-12-01T10:00:{:02}.000Z", self.n % 60)});
        for (k, v) in extra.as_object().unwrap() {
            e[k] = v.clone();
        }
        self.parent = Some(uuid);
        e
    }

    /// `/compact`: a boundary (a new root naming the last entry) and the
    /// summary that continues the conversation.
    fn compact(&mut self) {
        let last = self.parent.take();
        let boundary = self.entry(
            "system",
            json!({"subtype": "compact_boundary",
            "content": "Conversation compacted", "logicalParentUuid": last,
            "compactMetadata": {"trigger": "manual", "preTokens": 12000}}),
        );
        let summary = self.entry("user", json!({"isCompactSummary": true,
            "message": {"role": "user", "content": "This session is being continued from a previous conversation."}}));
        append(&self.path, &[boundary, summary]);
    }
}

impl Agent for Claude {
    fn name(&self) -> &'static str {
        "claude-code"
    }
    fn session(&self) -> &str {
        &self.session
    }
    fn transcript(&self) -> &Path {
        &self.path
    }
    fn events(&self) -> (&'static str, &'static str) {
        ("UserPromptSubmit", "Stop")
    }
    /// `claude -p` queues the prompt, then runs the hook (Claude Code
    /// 2.1.197; `crates/ckptctl/src/conversation/claude_code.rs`).
    fn before_hook(&mut self, prompt: &str) {
        let op = |operation: &str| {
            json!({"type": "queue-operation", "operation": operation,
                "timestamp": "2026-12-01T10:00:00.000Z", "sessionId": self.session})
        };
        let mut enqueue = op("enqueue");
        enqueue["content"] = json!(prompt);
        append(&self.path, &[enqueue, op("dequeue")]);
    }
    fn prompt(&mut self, text: &str) {
        let e = self.entry(
            "user",
            json!({"message": {"role": "user", "content": text}}),
        );
        append(&self.path, &[e]);
    }
    fn tool_call(&mut self, file: &str) {
        let id = format!("toolu_{}", self.n);
        let entries = [
            self.entry(
                "assistant",
                json!({"requestId": "req_1", "message": {"id": "msg_1",
                "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                "content": [{"type": "tool_use", "id": id, "name": "Write",
                             "input": {"file_path": file, "content": "…"}}]}}),
            ),
            self.entry(
                "user",
                json!({"toolUseResult": {"type": "create", "filePath": file},
                "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": id,
                "content": "File created"}]}}),
            ),
            self.entry(
                "assistant",
                json!({"message": {"role": "assistant",
                "content": [{"type": "text", "text": "Done."}]}}),
            ),
        ];
        append(&self.path, &entries);
    }
}

/// Codex CLI 0.171.0's rollout (`crates/ckptctl/src/conversation/codex.rs`,
/// `testdata/codex-0.171.0.jsonl`): a turn opens with `task_started` and
/// its `turn_context` before the prompt hook runs.
struct Codex {
    session: String,
    path: PathBuf,
    /// The next line's `ordinal`.
    n: u32,
    turn: u32,
}

impl Codex {
    fn new(home: &Path, session: &str) -> Codex {
        let dir = home.join(".codex/sessions/2026/12/01");
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("rollout-2026-12-01T10-00-00-{session}.jsonl"));
        let mut c = Codex {
            session: session.to_string(),
            path,
            n: 0,
            turn: 0,
        };
        let meta = c.line(
            "session_meta",
            json!({"session_id": session, "id": session, "timestamp": "2026-12-01T10:00:00.000Z",
            "cwd": "/w/app", "originator": "codex_cli_rs", "cli_version": "0.171.0", "source": "cli",
            "thread_source": "user", "model_provider": "openai", "git": {"branch": "main"},
            "history_mode": "paginated", "context_window": {"window_id": "0199a000-0000-7000-8000-0000000000aa"}}),
        );
        append(&c.path, &[meta]);
        c
    }

    /// A rollout resumed by `codex resume`: Codex names the session by
    /// its `session_meta`'s `session_id` (its hooks send that id).
    fn resume(path: &Path) -> Codex {
        let all = lines(path);
        Codex {
            session: all[0]["payload"]["session_id"]
                .as_str()
                .unwrap()
                .to_string(),
            path: path.to_path_buf(),
            n: all.len() as u32,
            turn: 10,
        }
    }

    fn line(&mut self, kind: &str, payload: Value) -> Value {
        let ordinal = self.n;
        self.n += 1;
        json!({"timestamp": format!("2026-12-01T10:01:{:02}.{:03}Z", ordinal / 1000, ordinal % 1000),
               "ordinal": ordinal, "type": kind, "payload": payload})
    }

    fn turn_id(&self) -> String {
        format!("0199a000-0000-7000-9000-{:012}", self.turn)
    }
}

impl Agent for Codex {
    fn name(&self) -> &'static str {
        "codex"
    }
    fn session(&self) -> &str {
        &self.session
    }
    fn transcript(&self) -> &Path {
        &self.path
    }
    fn events(&self) -> (&'static str, &'static str) {
        ("UserPromptSubmit", "Stop")
    }
    fn before_hook(&mut self, _prompt: &str) {
        self.turn += 1;
        let turn_id = self.turn_id();
        let mut entries = vec![self.line(
            "event_msg",
            json!({"type": "task_started", "turn_id": turn_id, "model_context_window": 272000}),
        )];
        if self.turn == 1 {
            entries.push(self.line("response_item", json!({"type": "message", "role": "user",
                "content": [{"type": "input_text", "text": "<environment_context>\n  <cwd>/w/app</cwd>\n</environment_context>"}]})));
            entries.push(self.line(
                "world_state",
                json!({"full": true, "state": {"agents_md": {}}}),
            ));
        }
        entries.push(self.line(
            "turn_context",
            json!({"turn_id": turn_id, "cwd": "/w/app", "approval_policy": "on-request", "model": "gpt-5-codex"}),
        ));
        append(&self.path, &entries);
    }
    fn prompt(&mut self, text: &str) {
        let turn_id = self.turn_id();
        let entries = [
            self.line(
                "response_item",
                json!({"type": "message", "role": "user",
                "content": [{"type": "input_text", "text": text}],
                "internal_chat_message_metadata_passthrough": {"turn_id": turn_id}}),
            ),
            self.line(
                "event_msg",
                json!({"type": "item_completed", "thread_id": self.session, "turn_id": turn_id,
                "item": {"type": "UserMessage", "content": [{"type": "text", "text": text}]}}),
            ),
        ];
        append(&self.path, &entries);
    }
    fn tool_call(&mut self, file: &str) {
        let call = format!("call_{}", self.n);
        let turn_id = self.turn_id();
        let entries = [
            self.line(
                "response_item",
                json!({"type": "function_call", "name": "apply_patch",
                "arguments": format!("{{\"file\":\"{file}\"}}"), "call_id": call}),
            ),
            self.line(
                "response_item",
                json!({"type": "function_call_output", "call_id": call, "output": "ok"}),
            ),
            self.line(
                "response_item",
                json!({"type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": "Done."}]}),
            ),
            self.line(
                "token_usage_record",
                json!({"thread_id": self.session, "turn_id": turn_id, "session_id": self.session,
                "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}}),
            ),
            self.line(
                "event_msg",
                json!({"type": "task_complete", "turn_id": turn_id, "last_agent_message": "Done."}),
            ),
        ];
        append(&self.path, &entries);
    }
}

struct Gemini {
    session: String,
    path: PathBuf,
    n: u32,
}

impl Gemini {
    fn new(home: &Path, session: &str) -> Gemini {
        let dir = home.join(".gemini/tmp/0f3c/chats");
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("session-2026-12-01T10-00-{}.jsonl", &session[..8]));
        append(
            &path,
            &[json!({"sessionId": session, "projectHash": "0f3c",
            "startTime": "2026-12-01T10:00:00.000Z", "lastUpdated": "2026-12-01T10:00:00.000Z", "kind": "main"})],
        );
        Gemini {
            session: session.to_string(),
            path,
            n: 0,
        }
    }

    fn msg(&mut self, kind: &str, text: &str) -> Value {
        self.n += 1;
        json!({"id": format!("m{}", self.n), "timestamp": "2026-12-01T10:00:01.000Z", "type": kind,
               "content": [{"text": text}]})
    }
}

impl Agent for Gemini {
    fn name(&self) -> &'static str {
        "gemini"
    }
    fn session(&self) -> &str {
        &self.session
    }
    fn transcript(&self) -> &Path {
        &self.path
    }
    fn events(&self) -> (&'static str, &'static str) {
        ("BeforeAgent", "AfterAgent")
    }
    fn prompt(&mut self, text: &str) {
        let m = self.msg("user", text);
        append(
            &self.path,
            &[
                m,
                json!({"$set": {"lastUpdated": "2026-12-01T10:00:01.000Z"}}),
            ],
        );
    }
    fn tool_call(&mut self, file: &str) {
        let mut reply = self.msg("gemini", "");
        reply["toolCalls"] = json!([{"id": format!("c{}", self.n), "name": "write_file",
            "args": {"file_path": file}, "status": "success", "timestamp": "2026-12-01T10:00:02.000Z"}]);
        let mut again = reply.clone();
        again["tokens"] = json!({"input": 10, "output": 5, "cached": 0, "total": 15});
        append(&self.path, &[reply, again]);
    }
}

const SESSION_A: &str = "0d5a1c9e-4c2b-4f5e-9a1d-3b7c2e8f6a01";
const SESSION_B: &str = "7b2e9f10-8d3c-4a6b-b5e4-1c9d8e7f6a02";
const SESSION_C: &str = "c3f8a2d4-1e5b-4c7a-8d9e-2f1a0b3c4d03";

#[test]
fn claude_code_rewind_forks_the_conversation_before_the_turn() {
    let w = World::new();
    let mut a = Claude::new(&w.home, SESSION_A);
    w.turn(&mut a, "add one", "one.txt");
    let two = w.turn(&mut a, "add two", "two.txt");
    a.compact();
    let three = w.turn(&mut a, "add three", "three.txt");
    let original = fs::read(&a.path).unwrap();
    let shown = w.ctl_ok(&["show", "2"]).stdout;
    assert!(
        shown.contains("conversation before the prompt: {\"bytes\":"),
        "{shown}"
    );
    // An object in JSON, not JSON inside a string.
    let (show, _) = w.json(&["show", "2"]);
    assert!(
        show["turn"]["info"]["conversation"]["bytes"].is_u64(),
        "{show}"
    );
    let (log, _) = w.json(&["log"]);
    assert!(log["turns"][1]["conversation"].is_object(), "{log}");

    let (plan, _) = w.json(&["rewind", "3", "--conversation", "--dry-run"]);
    assert_eq!(plan["outcome"], "dry_run");
    assert_eq!(plan["conversation"]["dry_run"], true);
    let dir = a.path.parent().unwrap();
    assert_eq!(
        fs::read_dir(dir).unwrap().count(),
        1,
        "a dry run writes nothing"
    );

    let (doc, stderr) = w.json(&["rewind", "2", "--conversation"]);
    assert_eq!(doc["outcome"], "applied", "{doc}");
    assert_eq!(stderr, "");
    assert!(!w.proj.join("two.txt").exists() && !w.proj.join("three.txt").exists());
    assert!(w.proj.join("one.txt").exists());
    let c = &doc["conversation"];
    assert_eq!(c["agent"], "claude-code");
    assert_eq!(c["original_session"], SESSION_A);
    let forked = c["forked_session"].as_str().unwrap();
    assert_ne!(forked, SESSION_A);
    assert_eq!(c["resume_command"], format!("claude --resume {forked}"));
    let path = PathBuf::from(c["path"].as_str().unwrap());
    assert_eq!(path, a.path.with_file_name(format!("{forked}.jsonl")));
    assert!(c.get("skipped").is_none(), "{c}");

    let all = lines(&a.path);
    let fork = lines(&path);
    assert_eq!(fork.len(), two, "exactly the entries before turn 2 began");
    assert_eq!(c["entries"], two);
    let uuids: HashSet<&str> = fork.iter().filter_map(|e| e["uuid"].as_str()).collect();
    for (f, o) in fork.iter().zip(&all) {
        assert_eq!(f["uuid"], o["uuid"]);
        assert_eq!(f["sessionId"], forked, "every entry is the new session's");
        assert_eq!(f["message"], o["message"]);
        if let Some(p) = f["parentUuid"].as_str() {
            assert!(uuids.contains(p), "{p}: every parent is in the fork");
        }
    }
    assert_eq!(
        fs::read(&a.path).unwrap(),
        original,
        "the original is untouched"
    );

    let (redo, _) = w.json(&["redo", "--conversation"]);
    assert_eq!(redo["outcome"], "applied");
    assert_eq!(
        redo["conversation"]["resume_command"],
        format!("claude --resume {SESSION_A}")
    );
    assert!(w.proj.join("three.txt").exists());

    // Across a compaction: turn 3's fork holds the boundary and summary.
    let text = w.ctl_ok(&["rewind", "3", "--conversation"]).stdout;
    assert!(
        text.contains("conversation: forked claude-code session"),
        "{text}"
    );
    assert!(text.contains("resume it: claude --resume "), "{text}");
    let fork3 = fs::read_dir(a.path.parent().unwrap())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p != &a.path && p != &path)
        .collect::<Vec<_>>();
    assert_eq!(fork3.len(), 1, "{fork3:?}");
    let fork3 = lines(&fork3[0]);
    assert_eq!(fork3.len(), three);
    assert_eq!(fork3[fork3.len() - 2]["subtype"], "compact_boundary");
    assert_eq!(fs::read(&a.path).unwrap(), original);
}

/// Three turns of Claude Code, the transcript damaged by `damage`, then
/// `rewind 2 --conversation`: the files are rewound, the conversation not.
fn damaged(damage: impl FnOnce(&Path, &[u8])) -> (World, Value, String) {
    let w = World::new();
    let mut a = Claude::new(&w.home, SESSION_A);
    for (p, f) in [
        ("add one", "one.txt"),
        ("add two", "two.txt"),
        ("add three", "three.txt"),
    ] {
        w.turn(&mut a, p, f);
    }
    let original = fs::read(&a.path).unwrap();
    damage(&a.path, &original);
    let damaged = fs::read(&a.path).unwrap();
    let (doc, stderr) = w.json(&["rewind", "2", "--conversation"]);
    assert_eq!(doc["outcome"], "applied", "the file rewind goes on");
    assert!(!w.proj.join("two.txt").exists());
    assert_eq!(
        fs::read(&a.path).unwrap(),
        damaged,
        "the transcript is only read"
    );
    assert_eq!(
        fs::read_dir(a.path.parent().unwrap()).unwrap().count(),
        1,
        "no fork written"
    );
    let why = doc["conversation"]["skipped"]
        .as_str()
        .unwrap_or_else(|| panic!("not skipped: {doc}"))
        .to_string();
    assert_eq!(
        stderr.trim_end(),
        format!("ckptctl: conversation not rewound: {why}"),
        "one line"
    );
    (w, doc, why)
}

#[test]
fn a_truncated_transcript_rewinds_the_files_only_and_says_why() {
    let (_w, _, why) = damaged(|p, bytes| fs::write(p, &bytes[..bytes.len() / 4]).unwrap());
    assert!(why.contains("shorter"), "{why}");
}

#[test]
fn a_corrupted_transcript_rewinds_the_files_only_and_says_why() {
    let (_w, _, why) = damaged(|p, bytes| {
        let text = String::from_utf8(bytes.to_vec()).unwrap();
        // Same length, so the recorded position still falls on a line end.
        fs::write(
            p,
            text.replacen("\"type\":\"assistant\",", "\"type\":\"assistant\" ", 1),
        )
        .unwrap()
    });
    assert!(why.contains("not JSON"), "{why}");
}

#[test]
fn an_unknown_version_rewinds_the_files_only_and_says_why() {
    let (w, _, why) = damaged(|p, bytes| {
        let text = String::from_utf8(bytes.to_vec()).unwrap();
        fs::write(
            p,
            text.replace("\"version\":\"2.0.55\"", "\"version\":\"9.0.55\""),
        )
        .unwrap()
    });
    assert!(
        why.contains("Claude Code 9.0.55") && why.contains("newer"),
        "{why}"
    );
    // The text form says the same in one line on stderr.
    w.ctl_ok(&["redo"]);
    let out = w.ctl_ok(&["rewind", "2", "--conversation"]);
    assert!(out.stdout.contains("rewind to before turn 2"), "{out:?}");
    assert_eq!(
        out.stderr.trim_end(),
        format!("ckptctl: conversation not rewound: {why}")
    );
}

#[test]
fn turns_without_a_transcript_or_an_adapter_rewind_the_files_and_say_why() {
    let w = World::new();
    w.ctl_ok(&[
        "turn-start",
        "--agent",
        "aider",
        "--session",
        "s1",
        "--transcript",
        "/nowhere.jsonl",
    ]);
    fs::write(w.proj.join("one.txt"), "1\n").unwrap();
    w.ctl_ok(&["turn-end"]);
    w.ctl_ok(&["turn-start", "--agent", "claude-code", "--session", "s2"]);
    fs::write(w.proj.join("two.txt"), "2\n").unwrap();
    w.ctl_ok(&["turn-end"]);
    let (doc, _) = w.json(&["rewind", "2", "--conversation"]);
    assert_eq!(doc["outcome"], "applied");
    let why = doc["conversation"]["skipped"].as_str().unwrap();
    assert!(why.contains("turn 2 recorded no transcript"), "{why}");
    let out = w.ctl_ok(&["rewind", "1", "--conversation"]);
    assert!(!w.proj.join("one.txt").exists());
    assert!(
        out.stderr
            .contains("conversation not rewound: aider has no session adapter"),
        "{out:?}"
    );
    // Some paths only: the other files of the turn stay, so no fork.
    w.ctl_ok(&["redo"]);
    let (doc, _) = w.json(&["rewind", "1", "--path", "one.txt", "--conversation"]);
    assert_eq!(doc["outcome"], "applied");
    let why = doc["conversation"]["skipped"].as_str().unwrap();
    assert!(why.contains("only some paths were rewound"), "{why}");
    // Without --conversation the document has no `conversation`.
    w.ctl_ok(&["redo"]);
    let (doc, _) = w.json(&["rewind", "1"]);
    assert!(doc.get("conversation").is_none(), "{doc}");
}

#[test]
fn a_rewind_over_two_sessions_forks_turn_ns_session_and_names_the_other() {
    let w = World::new();
    let mut claude = Claude::new(&w.home, SESSION_A);
    let mut codex = Codex::new(&w.home, SESSION_B);
    w.turn(&mut claude, "add one", "one.txt");
    w.turn(&mut codex, "add two", "two.txt");
    let codex_second = w.turn(&mut codex, "add three", "three.txt");
    let claude_second = w.turn(&mut claude, "change three", "three.txt");
    let originals = [
        fs::read(&claude.path).unwrap(),
        fs::read(&codex.path).unwrap(),
    ];

    // Turn 4 alone: Claude Code's session, no other.
    let (doc, _) = w.json(&["rewind", "4", "--conversation"]);
    let c = &doc["conversation"];
    assert_eq!(c["original_session"], SESSION_A, "{doc}");
    assert_eq!(c["entries"], claude_second);
    assert!(c.get("other_sessions").is_none(), "{c}");
    w.ctl_ok(&["redo"]);

    // Turn 3 is Codex's; turn 4, Claude Code's, changed its file since:
    // refused, then forced, naming Claude Code's session.
    let refused = w.ctl(&["rewind", "3", "--conversation"]);
    assert_eq!(refused.code(), 3, "{refused:?}");
    let (doc, _) = w.json(&["rewind", "3", "--conversation", "--force"]);
    let c = &doc["conversation"];
    assert_eq!(c["agent"], "codex", "{doc}");
    assert_eq!(c["original_session"], SESSION_B);
    assert_eq!(c["other_sessions"], json!([SESSION_A]));
    let forked = c["forked_session"].as_str().unwrap();
    assert_eq!(c["resume_command"], format!("codex resume {forked}"));
    let path = PathBuf::from(c["path"].as_str().unwrap());
    let name = path.file_name().unwrap().to_str().unwrap();
    assert!(name.starts_with("rollout-") && name.ends_with(&format!("-{forked}.jsonl")));
    let all = lines(&codex.path);
    let fork = lines(&path);
    assert_eq!(fork.len(), codex_second);
    assert_eq!(c["entries"], fork.len());
    assert_eq!(fork[0]["payload"]["id"], forked);
    assert_eq!(fork[0]["payload"]["forked_from_id"], SESSION_B);
    assert_eq!(
        fork[0]["payload"]["git"], all[0]["payload"]["git"],
        "copied through"
    );
    assert_eq!(&fork[1..], &all[1..fork.len()]);
    // Codex's turn 3 is undone (with Claude Code's change to its file,
    // forced); the turns before it, of either session, are not.
    assert!(!w.proj.join("three.txt").exists());
    assert!(w.proj.join("one.txt").exists() && w.proj.join("two.txt").exists());

    w.ctl_ok(&["redo"]);
    // Forced, as the real run above: a dry run exits as that run would.
    let out = w.ctl_ok(&["rewind", "3", "--conversation", "--dry-run", "--force"]);
    assert!(out.stdout.contains("would fork codex session"), "{out:?}");
    assert!(
        out.stdout.contains(SESSION_A),
        "the other session is named: {out:?}"
    );
    // Codex's first turn: nothing before it to resume.
    let (doc, _) = w.json(&["rewind", "2", "--conversation", "--dry-run", "--force"]);
    let why = doc["conversation"]["skipped"].as_str().unwrap();
    assert!(why.contains("no prompt before turn 2"), "{why}");
    assert_eq!(fs::read(&claude.path).unwrap(), originals[0]);
    assert_eq!(fs::read(&codex.path).unwrap(), originals[1]);
}

#[test]
fn gemini_sessions_fork_through_their_hooks() {
    let w = World::new();
    let mut g = Gemini::new(&w.home, SESSION_C);
    w.turn(&mut g, "add one", "one.txt");
    w.turn(&mut g, "add two", "two.txt");
    let three = w.turn(&mut g, "add three", "three.txt");
    let original = fs::read(&g.path).unwrap();
    let (doc, _) = w.json(&["rewind", "3", "--conversation"]);
    let c = &doc["conversation"];
    assert_eq!(c["agent"], "gemini", "{doc}");
    let forked = c["forked_session"].as_str().unwrap();
    assert_eq!(c["resume_command"], format!("gemini --resume {forked}"));
    let path = PathBuf::from(c["path"].as_str().unwrap());
    assert!(path
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .ends_with(&format!("-{}.jsonl", &forked[..8])));
    let all = lines(&g.path);
    let fork = lines(&path);
    assert_eq!(fork.len(), three);
    assert_eq!(fork[0]["sessionId"], forked);
    assert_eq!(fork[0]["projectHash"], "0f3c");
    assert_eq!(&fork[1..], &all[1..fork.len()]);
    assert_eq!(fs::read(&g.path).unwrap(), original);
}

#[test]
fn status_lists_the_adapters_and_the_newest_format() {
    let w = World::new();
    let mut a = Claude::new(&w.home, SESSION_A);
    w.turn(&mut a, "add one", "one.txt");
    let doc = w.json(&["status"]).0;
    let adapters = doc["conversation_adapters"].as_array().unwrap();
    let by = |agent: &str| {
        adapters
            .iter()
            .find(|a| a["agent"] == agent)
            .unwrap_or_else(|| panic!("{agent} in {adapters:?}"))
    };
    assert_eq!(by("claude-code")["found"], true);
    assert_eq!(by("claude-code")["transcripts"], 1);
    assert_eq!(by("claude-code")["newest_version"], "2.0.55");
    assert_eq!(by("codex")["found"], false);
    assert_eq!(by("gemini")["found"], false);
    let text = w.ctl_ok(&["status"]).stdout;
    assert!(
        text.contains("conversation adapter claude-code: ")
            && text.contains("(1 transcripts, newest format 2.0.55)"),
        "{text}"
    );
}

#[test]
fn a_claude_code_fork_holds_no_text_of_the_rewound_prompt() {
    let w = World::new();
    let mut a = Claude::new(&w.home, SESSION_A);
    w.turn(&mut a, "add one", "one.txt");
    let two = w.turn(&mut a, "add two, token SECRET-2", "two.txt");
    w.turn(&mut a, "add three, token SECRET-3", "three.txt");
    let (doc, _) = w.json(&["rewind", "2", "--conversation"]);
    let c = &doc["conversation"];
    assert!(c.get("skipped").is_none(), "{c}");
    let text = fs::read_to_string(c["path"].as_str().unwrap()).unwrap();
    assert!(!text.contains("SECRET-"), "{text}");
    assert_eq!(text.lines().count(), two, "what turn 1 wrote");
    let queued: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "queue-operation")
        .collect();
    assert_eq!(queued.len(), 2, "turn 1's enqueue and dequeue stay: {text}");
    assert_eq!(queued[0]["content"], "add one");
}

#[test]
fn a_codex_fork_ends_before_the_rewound_turn_began() {
    let w = World::new();
    let mut x = Codex::new(&w.home, SESSION_B);
    w.turn(&mut x, "add one", "one.txt");
    w.turn(&mut x, "add two", "two.txt");
    let three = w.turn(&mut x, "add three", "three.txt");
    let (doc, _) = w.json(&["rewind", "3", "--conversation"]);
    let c = &doc["conversation"];
    assert!(c.get("skipped").is_none(), "{c}");
    let fork = lines(Path::new(c["path"].as_str().unwrap()));
    let all = lines(&x.path);
    // Turn 3's `task_started` and `turn_context` came before its hook.
    assert_eq!(fork.len(), three);
    assert_eq!(&fork[1..], &all[1..three]);
    assert_eq!(
        fork[three - 1]["payload"]["type"],
        "task_complete",
        "the fork ends with turn 2's end, no turn left open"
    );
}

#[test]
fn a_resumed_codex_fork_files_its_turns_under_the_forked_session() {
    let w = World::new();
    let mut x = Codex::new(&w.home, SESSION_B);
    w.turn(&mut x, "add one", "one.txt");
    w.turn(&mut x, "add two", "two.txt");
    let (doc, _) = w.json(&["rewind", "2", "--conversation"]);
    let c = &doc["conversation"];
    let forked = c["forked_session"].as_str().unwrap().to_string();
    let mut resumed = Codex::resume(Path::new(c["path"].as_str().unwrap()));
    w.turn(&mut resumed, "add two again", "two.txt");
    let (log, _) = w.json(&["log", "--session", &forked]);
    let turns = log["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 1, "{log}");
    assert_eq!(turns[0]["session"], forked.as_str());
    assert_eq!(turns[0]["agent"], "codex");
}

/// A dry run says what would happen, in the conditional, and names no
/// forked session: the real run makes the id when it writes the fork.
#[test]
fn a_conversation_dry_run_says_what_would_happen_and_invents_no_session() {
    let w = World::new();
    let mut a = Claude::new(&w.home, SESSION_A);
    w.turn(&mut a, "add one", "one.txt");
    w.turn(&mut a, "add two", "two.txt");
    let (plan, _) = w.json(&["rewind", "2", "--conversation", "--dry-run"]);
    let c = &plan["conversation"];
    assert_eq!(
        (c["dry_run"].as_bool(), c["entries"].as_u64().is_some()),
        (Some(true), true),
        "{plan}"
    );
    for invented in ["forked_session", "path", "resume_command"] {
        assert!(c.get(invented).is_none(), "{invented}: {plan}");
    }
    let out = w.ctl_ok(&["rewind", "2", "--conversation", "--dry-run"]);
    assert!(
        out.stdout.contains(&format!(
            "conversation: would fork claude-code session {SESSION_A} before turn 2 into a new session"
        )),
        "{out:?}"
    );
    assert!(
        !out.stdout.contains("forked ") && !out.stdout.contains("resume it:"),
        "{out:?}"
    );
    let (done, _) = w.json(&["rewind", "2", "--conversation"]);
    assert!(done["conversation"]["forked_session"].is_string(), "{done}");
}
