//! The real Codex CLI (the version `scripts/agents/install.sh` pins), with
//! `ckptctl hooks install` in a temp HOME, driven by a scripted model on
//! 127.0.0.1 (a custom `model_providers` entry with `wire_api =
//! "responses"`): what a user does with it, checked on ckpt's recorded
//! turns and on the files. Each test skips itself when the agent is not
//! installed (fails under `CKPT_REAL_AGENTS=require`).
//!
//! Codex runs hooks only once the user trusts them (`/hooks` records each
//! hook's key and hash under `[hooks.state]` in config.toml); [`World::new`]
//! trusts ckpt's as the user would, with the keys and hashes Codex's own
//! app server lists (`hooks/list`).

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use ckpt_e2e::agent_world::{pairs, AgentWorld};
use ckpt_e2e::model::responses::Responses;
use ckpt_e2e::model::{installed_agent, ModelServer, Recorded, Step, ToolCall};
use ckpt_e2e::*;
use serde_json::{json, Value};

/// A model whose metadata Codex 0.171 bundles: its tools are `exec_command`
/// and the freeform `apply_patch` (with an unknown model Codex falls back
/// to metadata without `apply_patch`).
const MODEL: &str = "gpt-5.5";

/// The files every test's project starts with.
const FILES: &[(&str, &[u8])] = &[
    ("a.txt", b"one\ntwo\n"),
    ("b.txt", b"x1\n"),
    ("d.txt", b"gone soon\n"),
];

struct World {
    w: AgentWorld,
    codex_home: PathBuf,
}

impl std::ops::Deref for World {
    type Target = AgentWorld;
    fn deref(&self) -> &AgentWorld {
        &self.w
    }
}

impl World {
    fn new(codex: PathBuf) -> World {
        let server = ModelServer::start(Responses::boxed());
        let mut w = AgentWorld::new(codex, server, FILES, false);
        let codex_home = w.home.join(".codex");
        std::fs::create_dir_all(&codex_home).expect("CODEX_HOME");
        w.isolate_var("CODEX_HOME", Some(codex_home.clone().into()));
        std::fs::write(
            codex_home.join("config.toml"),
            format!(
                r#"model = "{MODEL}"
model_provider = "ckpt-test"
check_for_update_on_startup = false

[model_providers.ckpt-test]
name = "ckpt's scripted model"
base_url = "{}/v1"
wire_api = "responses"
env_key = "CKPT_TEST_API_KEY"

[analytics]
enabled = false

# Plugins sync their marketplace with `git ls-remote
# https://github.com/openai/plugins.git` at start-up.
[features]
plugins = false
remote_plugin = false
in_app_updates = false
"#,
                w.server.url()
            ),
        )
        .expect("config.toml");
        let w = World { w, codex_home };
        w.ctl_ok(&["watch"]);
        let out = w.ctl_ok(&["hooks", "install", "codex"]);
        assert!(out.stdout.contains("codex"), "{out:?}");
        w.trust_hooks();
        w
    }

    /// `codex ARGS…` in the project; its only URL is the model server's.
    fn codex_cmd(&self, args: &[&str]) -> Command {
        let mut cmd = self.agent_cmd(args);
        cmd.env("LANG", "C.UTF-8")
            .env("CKPT_TEST_API_KEY", "sk-ckpt-test");
        cmd
    }

    /// Trusts every hook Codex lists, as `/hooks` does: Codex's app server
    /// (`codex app-server`, JSON-RPC on stdio) lists each hook's `key` and
    /// `currentHash` (`hooks/list`); trust is `[hooks.state."KEY"]
    /// trusted_hash = "HASH"` in config.toml.
    fn trust_hooks(&self) {
        let mut child = self
            .codex_cmd(&["app-server"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn codex app-server");
        let mut stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Ok(v) = serde_json::from_str::<Value>(&line) {
                    if v["id"] == 2 && tx.send(v).is_err() {
                        break;
                    }
                }
            }
        });
        for msg in [
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                   "params": {"clientInfo": {"name": "ckpt-e2e", "version": "1"}}}),
            json!({"jsonrpc": "2.0", "method": "initialized"}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "hooks/list",
                   "params": {"cwds": [self.proj]}}),
        ] {
            writeln!(stdin, "{msg}").expect("write to the app server");
        }
        let listed = rx.recv_timeout(Duration::from_secs(60));
        let _ = child.kill();
        let _ = child.wait();
        let listed = listed.expect("the app server's hooks/list answer");
        let hooks = listed["result"]["data"][0]["hooks"]
            .as_array()
            .unwrap_or_else(|| panic!("no hooks listed: {listed}"))
            .clone();
        let ours: Vec<&Value> = hooks
            .iter()
            .filter(|h| {
                h["command"]
                    .as_str()
                    .is_some_and(|c| c.contains("--from-hook=codex"))
            })
            .collect();
        for event in [
            "user_prompt_submit",
            "stop",
            "pre_tool_use",
            "post_tool_use",
        ] {
            assert!(
                ours.iter().any(|h| h["key"]
                    .as_str()
                    .is_some_and(|k| k.contains(&format!(":{event}:")))),
                "ckpt's {event} hook is not listed: {listed}"
            );
        }
        let mut config =
            std::fs::read_to_string(self.codex_home.join("config.toml")).expect("config.toml");
        for h in ours {
            assert_eq!(h["trustStatus"], "untrusted", "{h}");
            config.push_str(&format!(
                "\n[hooks.state.{}]\ntrusted_hash = {}\n",
                h["key"], h["currentHash"]
            ));
        }
        std::fs::write(self.codex_home.join("config.toml"), config).expect("config.toml");
    }

    /// `codex exec --json … PROMPT` (after `pre`, e.g. `resume ID`), which
    /// must succeed; returns the thread id it reports.
    fn exec(&self, pre: &[&str], prompt: &str) -> String {
        let mut args = vec![
            "exec",
            "--json",
            "--dangerously-bypass-approvals-and-sandbox",
        ];
        args.extend_from_slice(pre);
        args.push(prompt);
        let out = run(&mut self.codex_cmd(&args));
        assert!(out.status.success(), "codex {args:?}: {out:?}");
        assert_eq!(
            self.server.remaining(),
            0,
            "the script was not used up: {out:?}"
        );
        out.stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|e| e["type"] == "thread.started")
            .and_then(|e| e["thread_id"].as_str().map(str::to_string))
            .unwrap_or_else(|| panic!("no thread.started event: {out:?}"))
    }
}

/// Codex starts MCP servers with a stripped environment (issue 28 item 9):
/// a `ckpt-mcp` that cannot find the test's daemon starts one of its own
/// (data dir under the test's HOME, socket in `/tmp/ckpt-UID/`). Stop
/// those, and take away what they leave there, so that no test leaves a
/// daemon or its files behind.
impl Drop for World {
    fn drop(&mut self) {
        let mine = self.home.to_string_lossy().into_owned();
        let mut stopped = Vec::new();
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
                continue;
            };
            let args: Vec<String> = cmdline
                .split(|b| *b == 0)
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            if args.first().is_some_and(|a| a.ends_with("/ckptd"))
                && args.iter().any(|a| a.starts_with(&mine))
            {
                // SAFETY: a daemon this test's agent started.
                unsafe { libc::kill(pid, libc::SIGTERM) };
                stopped.push(pid);
            }
        }
        if stopped.is_empty() {
            return;
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while stopped
            .iter()
            .any(|p| std::path::Path::new(&format!("/proc/{p}")).exists())
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(20));
        }
        // SAFETY: getuid cannot fail.
        let dir = PathBuf::from(format!("/tmp/ckpt-{}", unsafe { libc::getuid() }));
        let lock = dir.join("ckptd.sock.lock");
        let ours = std::fs::read_to_string(&lock)
            .ok()
            .and_then(|t| t.trim().parse::<i32>().ok())
            .is_some_and(|p| stopped.contains(&p));
        if ours {
            let _ = std::fs::remove_file(dir.join("ckptd.sock"));
            let _ = std::fs::remove_file(&lock);
            let _ = std::fs::remove_dir(&dir);
        }
    }
}

/// An `apply_patch` call (a freeform tool: its input is the patch text).
fn patch(body: &str) -> ToolCall {
    ToolCall::new(
        "apply_patch",
        Value::String(format!("*** Begin Patch\n{body}*** End Patch\n")),
    )
}

fn shell(cmd: &str) -> ToolCall {
    ToolCall::new("exec_command", json!({"cmd": cmd}))
}

/// The user's prompts in a request's `input`: user messages' text that is
/// not context Codex adds itself (`<environment_context>`, `# AGENTS.md…`).
fn prompts(req: &Recorded) -> Vec<String> {
    let mut out = Vec::new();
    for item in req.json["input"].as_array().into_iter().flatten() {
        if item["type"] != "message" || item["role"] != "user" {
            continue;
        }
        for c in item["content"].as_array().into_iter().flatten() {
            if let Some(text) = c["text"].as_str() {
                let t = text.trim_start();
                if !t.starts_with('<') && !t.starts_with("# AGENTS.md") {
                    out.push(text.to_string());
                }
            }
        }
    }
    out
}

/// The tool calls the model made earlier, as a request's `input` replays
/// them: (name, input or arguments).
fn calls(req: &Recorded) -> Vec<(String, String)> {
    req.json["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|item| match item["type"].as_str() {
            Some("custom_tool_call") => Some((
                item["name"].as_str()?.to_string(),
                item["input"].as_str()?.to_string(),
            )),
            Some("function_call") => Some((
                item["name"].as_str()?.to_string(),
                item["arguments"].as_str()?.to_string(),
            )),
            _ => None,
        })
        .collect()
}

/// The output Codex sent back for each tool call in a request.
fn outputs(req: &Recorded) -> Vec<String> {
    req.json["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| {
            matches!(
                item["type"].as_str(),
                Some("function_call_output" | "custom_tool_call_output")
            )
        })
        .map(|item| match &item["output"] {
            Value::String(s) => s.clone(),
            // MCP results: content parts.
            Value::Array(parts) => parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
            other => other.to_string(),
        })
        .collect()
}

#[test]
fn edits_by_apply_patch_and_its_shell_are_one_turn_that_rewinds_and_redoes_exactly() {
    let Some(codex) = installed_agent("codex", "codex") else {
        return;
    };
    let w = World::new(codex);
    let before = snapshot(&w.proj);
    w.server.push(Step::Tools(vec![patch(
        "*** Update File: a.txt\n@@\n one\n-two\n+TWO\n*** Add File: src/c.txt\n+new file\n",
    )]));
    w.server.push(Step::Tools(vec![shell(
        "sed -i s/x1/y1/ b.txt && rm d.txt",
    )]));
    w.server.push(Step::Text("Done.".into()));
    let session = w.exec(&[], "tidy up the files");

    assert_eq!(w.file("a.txt").as_deref(), Some("one\nTWO\n"));
    assert_eq!(w.file("b.txt").as_deref(), Some("y1\n"));
    assert_eq!(w.file("src/c.txt").as_deref(), Some("new file\n"));
    assert_eq!(w.file("d.txt"), None);
    let after = snapshot(&w.proj);

    let turns = w.turns();
    assert_eq!(turns.len(), 1, "{turns:#?}");
    let t = &turns[0];
    assert_eq!(t["status"], "closed", "{t}");
    assert_eq!(t["agent"], "codex", "{t}");
    assert_eq!(t["label"], "tidy up the files", "{t}");
    assert_eq!(t["session"], session.as_str(), "{t}");
    let transcript = PathBuf::from(t["transcript"].as_str().expect("a transcript"));
    let name = transcript
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("");
    assert!(
        transcript.starts_with(w.codex_home.join("sessions"))
            && name.starts_with("rollout-")
            && name.ends_with(&format!("{session}.jsonl"))
            && transcript.is_file(),
        "{t}"
    );
    assert_eq!(
        w.changes(1),
        pairs(&[
            ("a.txt", "modified"),
            ("b.txt", "modified"),
            ("d.txt", "deleted"),
            ("src", "added"),
            ("src/c.txt", "added"),
        ])
    );

    w.ctl_ok(&["rewind", "1"]);
    assert_same_tree("after rewind 1", &before, &snapshot(&w.proj));
    w.ctl_ok(&["redo"]);
    assert_same_tree("after redo", &after, &snapshot(&w.proj));
}

const ONE: &str = "*** Add File: one.txt\n+1\n";

/// Two prompts in one session (`write one`, then `write two` resumed),
/// then `rewind 2 --conversation`: returns the original session and the
/// rewind's `conversation` document.
fn rewind_a_conversation(w: &World) -> (String, Value) {
    w.server.push(Step::Tools(vec![patch(ONE)]));
    w.server.push(Step::Text("Wrote one.".into()));
    let session = w.exec(&[], "write one");
    w.server
        .push(Step::Tools(vec![patch("*** Add File: two.txt\n+2\n")]));
    w.server.push(Step::Text("Wrote two.".into()));
    assert_eq!(w.exec(&["resume", &session], "write two"), session);
    let turns = w.turns();
    assert_eq!(turns.len(), 2, "{turns:#?}");
    assert!(
        turns.iter().all(|t| t["session"] == session.as_str()),
        "{turns:#?}"
    );

    let doc = w.ctl_json(&["rewind", "2", "--conversation"]);
    let c = &doc["conversation"];
    assert_eq!(c["agent"], "codex", "{doc}");
    assert_eq!(c["original_session"], session.as_str(), "{doc}");
    let fork = c["forked_session"]
        .as_str()
        .unwrap_or_else(|| panic!("not forked: {doc}"))
        .to_string();
    assert_ne!(fork, session);
    assert!(
        c["resume_command"]
            .as_str()
            .is_some_and(|r| r.contains(&fork)),
        "{doc}"
    );
    assert_eq!(w.file("one.txt").as_deref(), Some("1\n"));
    assert_eq!(w.file("two.txt"), None);
    (session, c.clone())
}

/// [`rewind_a_conversation`], then the fork resumed with Codex's own
/// command (`what did you write?`). Returns the original session, the
/// fork, and the index of the resumed fork's first step request.
fn resume_a_rewound_conversation(w: &World) -> (String, String, usize) {
    let (session, c) = rewind_a_conversation(w);
    let fork = c["forked_session"].as_str().expect("forked").to_string();
    let asked = w.server.step_requests().len();
    w.server.push(Step::Text("Where were we?".into()));
    assert_eq!(w.exec(&["resume", &fork], "what did you write?"), fork);
    (session, fork, asked)
}

#[test]
fn a_rewound_conversation_resumes_with_exactly_the_earlier_turns() {
    let Some(codex) = installed_agent("codex", "codex") else {
        return;
    };
    let w = World::new(codex);
    let (_, _, asked) = resume_a_rewound_conversation(&w);
    let sent = &w.server.step_requests()[asked];
    assert_eq!(
        prompts(sent),
        vec!["write one".to_string(), "what did you write?".to_string()],
        "the resumed request's prompts: {:#}",
        sent.json["input"]
    );
    assert_eq!(
        calls(sent),
        vec![(
            "apply_patch".to_string(),
            format!("*** Begin Patch\n{ONE}*** End Patch\n")
        )],
        "the resumed request's tool calls"
    );
    let turns = w.turns();
    assert_eq!(turns.len(), 3, "{turns:#?}");
    assert_eq!(turns[1]["status"], "rewound", "{turns:#?}");
    assert_eq!(turns[2]["status"], "closed", "{turns:#?}");
    assert_eq!(turns[2]["label"], "what did you write?", "{turns:#?}");
}

#[test]
fn the_resumed_fork_s_turns_are_filed_under_the_fork() {
    let Some(codex) = installed_agent("codex", "codex") else {
        return;
    };
    let w = World::new(codex);
    let (_, fork, _) = resume_a_rewound_conversation(&w);
    let turns = w.turns();
    assert_eq!(turns[2]["session"], fork.as_str(), "{turns:#?}");
    let log = w.ctl_json(&["log", "--session", &fork]);
    assert_eq!(log["turns"].as_array().map(Vec::len), Some(1), "{log}");
}

#[test]
fn ckpt_mcp_tools_are_listed_and_called_by_the_agent() {
    let Some(codex) = installed_agent("codex", "codex") else {
        return;
    };
    let w = World::new(codex);
    w.server
        .push(Step::Tools(vec![patch("*** Add File: x.txt\n+x\n")]));
    w.server.push(Step::Text("Wrote x.".into()));
    w.exec(&[], "write x");

    // Codex offers MCP tools through its tool search.
    w.server.push(Step::Tools(vec![ToolCall::new(
        "tool_search",
        json!({"query": "ckpt turns rewind", "limit": 20}),
    )]));
    w.server.push(Step::Tools(vec![ToolCall::new(
        "mcp__ckpt__list_turns",
        json!({}),
    )]));
    w.server.push(Step::Text("Turn 1 wrote x.txt.".into()));
    let asked = w.server.step_requests().len();
    w.exec(&[], "what did you do earlier?");
    let sent = &w.server.step_requests()[asked..];
    let found: Vec<String> = sent[1].json["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["type"] == "tool_search_output")
        .flat_map(|i| i["tools"].as_array().cloned().unwrap_or_default())
        .filter(|ns| ns["name"] == "mcp__ckpt")
        .flat_map(|ns| ns["tools"].as_array().cloned().unwrap_or_default())
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect();
    for tool in [
        "list_turns",
        "show_turn",
        "diff_turn",
        "rewind",
        "redo",
        "status",
    ] {
        assert!(
            found.iter().any(|f| f == tool),
            "{tool} not found by tool_search: {found:?}"
        );
    }
    let out = outputs(&sent[2]);
    let listed = out.last().expect("list_turns' output");
    assert!(
        listed.contains("what did you do earlier?") && listed.contains("write x"),
        "{listed}"
    );
}

#[test]
fn a_confirmed_mcp_rewind_from_inside_a_turn_keeps_that_turn() {
    let Some(codex) = installed_agent("codex", "codex") else {
        return;
    };
    let w = World::new(codex);
    w.server
        .push(Step::Tools(vec![patch("*** Add File: x.txt\n+x\n")]));
    w.server.push(Step::Text("Wrote x.".into()));
    let session = w.exec(&[], "write x");

    w.server.push(Step::Tools(vec![ToolCall::new(
        "mcp__ckpt__rewind",
        json!({"turn": 1, "confirm": true}),
    )]));
    w.server
        .push(Step::Tools(vec![patch("*** Add File: y.txt\n+y\n")]));
    w.server.push(Step::Text("Undid x, wrote y.".into()));
    let asked = w.server.step_requests().len();
    w.exec(&["resume", &session], "undo that and write y instead");
    let out = outputs(&w.server.step_requests()[asked + 1]);
    let answer = out.last().expect("rewind's output");
    assert!(answer.contains("x.txt"), "{answer}");

    assert_eq!(w.file("x.txt"), None, "turn 1 rewound");
    assert_eq!(w.file("y.txt").as_deref(), Some("y\n"));
    // The calling turn was rewound with turn 1, and the rest of the prompt
    // went on in turn 3 of the same session, which the Stop hook closed.
    let turns = w.turns();
    assert_eq!(turns[0]["status"], "rewound", "{turns:#?}");
    assert_eq!(turns[1]["status"], "rewound", "{turns:#?}");
    assert_eq!(
        turns[2]["status"], "closed",
        "the continued turn ends as usual: {turns:#?}"
    );
    assert_eq!(turns[2]["session"], turns[1]["session"], "{turns:#?}");
    assert_eq!(
        w.changes(3),
        vec![("y.txt".to_string(), "added".to_string())],
        "what the agent did after the rewind is its turn's"
    );
    w.ctl_ok(&["rewind", "3"]);
    assert_eq!(w.file("y.txt"), None);
}

#[test]
fn the_fork_ends_before_the_rewound_turn_began() {
    let Some(codex) = installed_agent("codex", "codex") else {
        return;
    };
    let w = World::new(codex);
    let (_, c) = rewind_a_conversation(&w);
    let path = c["path"].as_str().expect("the fork's path");
    let text = std::fs::read_to_string(path).expect("the fork");
    let events: Vec<String> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|e| match e["type"].as_str() {
            Some("event_msg") => e["payload"]["type"].as_str().unwrap_or("").to_string(),
            other => other.unwrap_or("").to_string(),
        })
        .collect();
    let started = events.iter().filter(|e| *e == "task_started").count();
    let complete = events.iter().filter(|e| *e == "task_complete").count();
    assert_eq!(
        (started, complete),
        (1, 1),
        "the fork holds exactly the first turn, begun and ended: {events:?}"
    );
}

#[test]
fn a_failing_tool_call_closes_its_tool_window() {
    let Some(codex) = installed_agent("codex", "codex") else {
        return;
    };
    let w = World::new(codex);
    // Another agent's session has a turn open in the same folder.
    w.ctl_ok(&["turn-start", "--session", "other", "--label", "other agent"]);
    w.server
        .push(Step::Tools(vec![shell("echo partial > p.txt; exit 3")]));
    w.server.push(Step::Text("That failed.".into()));
    // After the failed call (and its hooks), while Codex waits for its
    // model, the other session runs a tool that writes o.txt.
    let tool = |what: &str| {
        let mut c = w.ctl_cmd(&w.proj, &[what, "--session", "other"]);
        move || {
            let out = run(&mut c);
            assert!(out.status.success(), "{out:?}");
        }
    };
    let (mut start, mut end) = (tool("tool-start"), tool("tool-end"));
    let o = w.proj.join("o.txt");
    w.server.before_step(1, move || {
        start();
        std::fs::write(&o, "other\n").expect("write o.txt");
        end();
    });
    w.exec(&[], "run the failing command");

    let codex_turn = w
        .turns()
        .into_iter()
        .find(|t| t["agent"] == "codex")
        .expect("Codex's turn");
    assert_eq!(codex_turn["status"], "closed", "{codex_turn}");
    let id = codex_turn["id"].as_i64().expect("an id");
    assert_eq!(
        w.changes(id),
        pairs(&[("p.txt", "added")]),
        "o.txt was written by the other session's tool, after Codex's failed"
    );
}

/// Codex 0.171 fires no `Stop` when a turn ends on an API error: only
/// `SessionEnd` (when `exec` exits), which ckpt does not hook for Codex.
#[test]
fn an_api_error_ends_the_turn() {
    let Some(codex) = installed_agent("codex", "codex") else {
        return;
    };
    let w = World::new(codex);
    w.server
        .push(Step::Tools(vec![patch("*** Add File: x.txt\n+x\n")]));
    // 400: not retried.
    w.server.push(Step::Error {
        status: 400,
        body:
            r#"{"error":{"type":"invalid_request_error","message":"scripted failure","code":null}}"#
                .into(),
    });
    let out = run(&mut w.codex_cmd(&[
        "exec",
        "--dangerously-bypass-approvals-and-sandbox",
        "write x",
    ]));
    assert!(!out.status.success(), "{out:?}");
    assert!(out.stderr.contains("scripted failure"), "{out:?}");
    let turns = w.turns();
    assert_eq!(turns.len(), 1, "{turns:#?}");
    assert_eq!(turns[0]["status"], "closed", "{turns:#?}");
    assert_eq!(w.changes(1), pairs(&[("x.txt", "added")]));
}

/// Codex 0.171 answers SIGINT during a tool call with its `Interrupt` hook
/// (`session_id`, `turn_id`, `transcript_path`, `cwd`), then `SessionEnd`:
/// no `PostToolUse`, no `Stop`; ckpt hooks neither.
#[test]
fn an_interrupted_turn_is_closed() {
    let Some(codex) = installed_agent("codex", "codex") else {
        return;
    };
    let w = World::new(codex);
    let started = w.env.path().join("started");
    w.server.push(Step::Tools(vec![shell(&format!(
        "echo partial > p.txt; touch {}; sleep 60",
        started.display()
    ))]));
    let mut child = w
        .codex_cmd(&[
            "exec",
            "--dangerously-bypass-approvals-and-sandbox",
            "run the long job",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn codex");
    wait_for("the tool call to run", Duration::from_secs(60), || {
        started.exists()
    });
    // The user presses Ctrl-C.
    // SAFETY: signalling our own child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    wait_timeout(&mut child, Duration::from_secs(30)).expect("codex exits on SIGINT");

    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while w.turns()[0]["status"] != "closed" {
        assert!(
            std::time::Instant::now() < deadline,
            "the interrupted turn is still open: {:#?}",
            w.turns()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(w.changes(1), pairs(&[("p.txt", "added")]));
}
