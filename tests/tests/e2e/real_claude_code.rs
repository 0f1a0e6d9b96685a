//! The real Claude Code (the version `scripts/agents/install.sh` pins),
//! with `ckptctl hooks install` in a temp HOME, driven by a scripted model
//! on 127.0.0.1 (`ANTHROPIC_BASE_URL`): what a user does with it, checked
//! on ckpt's recorded turns and on the files. Each test skips itself when
//! the agent is not installed (fails under `CKPT_REAL_AGENTS=require`).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use ckpt_e2e::agent_world::{pairs, AgentWorld};
use ckpt_e2e::model::anthropic::Anthropic;
use ckpt_e2e::model::{installed_agent, ModelServer, Recorded, Step, ToolCall};
use ckpt_e2e::*;
use serde_json::{json, Value};

/// Tools the tests let Claude Code run without asking (`-p` cannot ask).
const ALLOWED: &str = "Read,Edit,Write,Bash,mcp__ckpt";

/// One user's machine: ckptd, a HOME where ckpt's hooks are installed,
/// a watched git project, the model server Claude Code talks to.
/// The files every test's project starts with.
const FILES: &[(&str, &[u8])] = &[
    ("a.txt", b"one\ntwo\n"),
    ("b.txt", b"x1\n"),
    ("d.txt", b"gone soon\n"),
];

struct World(AgentWorld);

impl std::ops::Deref for World {
    type Target = AgentWorld;
    fn deref(&self) -> &AgentWorld {
        &self.0
    }
}

impl World {
    fn new(claude: PathBuf) -> World {
        World::with_config_dir(claude, None)
    }

    /// With `CLAUDE_CONFIG_DIR` (for ckptctl and Claude Code alike) set to
    /// `config_dir` under HOME.
    fn with_config_dir(claude: PathBuf, config_dir: Option<&str>) -> World {
        let server = ModelServer::start(Anthropic::boxed());
        let mut w = AgentWorld::new(claude, server, FILES, false);
        let config_dir = config_dir.map(|d| w.home.join(d).into());
        w.isolate_var("CLAUDE_CONFIG_DIR", config_dir);
        w.ctl_ok(&["watch"]);
        let out = w.ctl_ok(&["hooks", "install", "claude-code"]);
        assert!(out.stdout.contains("claude-code"), "{out:?}");
        World(w)
    }

    /// `claude ARGS…` in the project, as a user's shell would start it:
    /// every URL on 127.0.0.1.
    fn claude_cmd(&self, args: &[&str]) -> Command {
        let mut cmd = self.agent_cmd(args);
        cmd.env("LANG", "C.UTF-8")
            .env("TMPDIR", self.env.dir("tmp"))
            .env("ANTHROPIC_BASE_URL", self.server.url())
            .env("ANTHROPIC_API_KEY", "sk-ant-ckpt-test")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("DISABLE_TELEMETRY", "1")
            .env("DISABLE_AUTOUPDATER", "1")
            .env("DISABLE_ERROR_REPORTING", "1")
            // A script that ran out answers 500: fail at once, no backoff.
            .env("CLAUDE_CODE_MAX_RETRIES", "0");
        cmd
    }

    /// `claude -p PROMPT EXTRA… --output-format json`, which must succeed;
    /// returns its result document.
    fn prompt(&self, prompt: &str, extra: &[&str]) -> Value {
        let mut args = vec!["-p", prompt, "--output-format", "json"];
        args.extend_from_slice(&["--allowedTools", ALLOWED]);
        args.extend_from_slice(extra);
        let out = run(&mut self.claude_cmd(&args));
        assert!(
            out.status.success(),
            "claude {args:?}: {out:?}\nrequests: {:#?}",
            self.server.requests().len()
        );
        let doc: Value = serde_json::from_str(out.stdout.trim())
            .unwrap_or_else(|e| panic!("claude's result is not JSON ({e}): {out:?}"));
        assert_eq!(doc["is_error"], false, "{doc}");
        assert_eq!(
            self.server.remaining(),
            0,
            "the script was not used up: {doc}"
        );
        doc
    }
}

fn abs(w: &World, rel: &str) -> String {
    w.proj.join(rel).display().to_string()
}

/// The `text` of every `tool_result` block in a request, by tool-use id.
fn tool_results(req: &Recorded) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for m in req.json["messages"].as_array().into_iter().flatten() {
        for block in m["content"].as_array().into_iter().flatten() {
            if block["type"] != "tool_result" {
                continue;
            }
            let text = match &block["content"] {
                Value::String(s) => s.clone(),
                Value::Array(parts) => parts
                    .iter()
                    .filter_map(|p| p["text"].as_str())
                    .collect::<Vec<_>>()
                    .join(""),
                other => other.to_string(),
            };
            out.push((block["tool_use_id"].as_str().unwrap_or("").into(), text));
        }
    }
    out
}

/// The user's prompts in a request, in order: text blocks of user
/// messages that are neither tool results nor the context Claude Code adds
/// (`<system-reminder>`, `<command-…>`).
fn prompts(req: &Recorded) -> Vec<String> {
    let mut out = Vec::new();
    for m in req.json["messages"].as_array().into_iter().flatten() {
        if m["role"] != "user" {
            continue;
        }
        let blocks = match &m["content"] {
            Value::String(s) => vec![json!({"type": "text", "text": s})],
            Value::Array(b) => b.clone(),
            _ => continue,
        };
        for b in blocks {
            let Some(text) = b["text"].as_str().filter(|_| b["type"] == "text") else {
                continue;
            };
            if !text.trim_start().starts_with('<') {
                out.push(text.to_string());
            }
        }
    }
    out
}

/// The `tool_use` blocks the model's earlier messages hold in a request:
/// (name, input).
fn tool_uses(req: &Recorded) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for m in req.json["messages"].as_array().into_iter().flatten() {
        for b in m["content"].as_array().into_iter().flatten() {
            if b["type"] == "tool_use" {
                out.push((b["name"].as_str().unwrap_or("").into(), b["input"].clone()));
            }
        }
    }
    out
}

#[test]
fn edits_by_its_tools_and_its_shell_are_one_turn_that_rewinds_and_redoes_exactly() {
    let Some(claude) = installed_agent("claude-code", "claude") else {
        return;
    };
    let w = World::new(claude);
    let before = snapshot(&w.proj);
    // Claude Code refuses to Edit a file it has not Read in the session.
    w.server.push(Step::Tools(vec![ToolCall::new(
        "Read",
        json!({"file_path": abs(&w, "a.txt")}),
    )]));
    w.server.push(Step::Tools(vec![
        ToolCall::new(
            "Edit",
            json!({"file_path": abs(&w, "a.txt"), "old_string": "two", "new_string": "TWO"}),
        ),
        ToolCall::new(
            "Write",
            json!({"file_path": abs(&w, "src/c.txt"), "content": "new file\n"}),
        ),
    ]));
    w.server.push(Step::Tools(vec![ToolCall::new(
        "Bash",
        json!({"command": "sed -i s/x1/y1/ b.txt && rm d.txt", "description": "edit b, remove d"}),
    )]));
    w.server.push(Step::Text("Done.".into()));
    let result = w.prompt("tidy up the files", &[]);
    let session = result["session_id"].as_str().expect("a session id");

    assert_eq!(w.file("a.txt").as_deref(), Some("one\nTWO\n"));
    assert_eq!(w.file("b.txt").as_deref(), Some("y1\n"));
    assert_eq!(w.file("src/c.txt").as_deref(), Some("new file\n"));
    assert_eq!(w.file("d.txt"), None);
    let after = snapshot(&w.proj);

    let turns = w.turns();
    assert_eq!(turns.len(), 1, "{turns:#?}");
    let t = &turns[0];
    assert_eq!(t["status"], "closed", "{t}");
    assert_eq!(t["agent"], "claude-code", "{t}");
    assert_eq!(t["label"], "tidy up the files", "{t}");
    assert_eq!(t["session"], session, "{t}");
    let transcript = PathBuf::from(t["transcript"].as_str().expect("a transcript"));
    assert!(
        transcript.starts_with(w.home.join(".claude/projects"))
            && transcript.ends_with(format!("{session}.jsonl"))
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

/// Two prompts in one session (`write one`, then `write two` resumed),
/// then `rewind 2 --conversation`: returns the original session and the
/// rewind's `conversation` document.
fn rewind_a_conversation(w: &World) -> (String, Value) {
    w.server.push(Step::Tools(vec![ToolCall::new(
        "Write",
        json!({"file_path": abs(w, "one.txt"), "content": "1\n"}),
    )]));
    w.server.push(Step::Text("Wrote one.".into()));
    let first = w.prompt("write one", &[]);
    let session = first["session_id"]
        .as_str()
        .expect("a session id")
        .to_string();
    w.server.push(Step::Tools(vec![ToolCall::new(
        "Write",
        json!({"file_path": abs(w, "two.txt"), "content": "2\n"}),
    )]));
    w.server.push(Step::Text("Wrote two.".into()));
    let second = w.prompt("write two", &["--resume", &session]);
    assert_eq!(second["session_id"], session.as_str());
    let turns = w.turns();
    assert_eq!(turns.len(), 2, "{turns:#?}");
    assert!(
        turns.iter().all(|t| t["session"] == session.as_str()),
        "{turns:#?}"
    );

    let doc = w.ctl_json(&["rewind", "2", "--conversation"]);
    let c = doc["conversation"].clone();
    assert_eq!(c["agent"], "claude-code", "{doc}");
    assert_eq!(c["original_session"], session.as_str(), "{doc}");
    let fork = c["forked_session"]
        .as_str()
        .unwrap_or_else(|| panic!("not forked: {doc}"));
    assert_ne!(fork, session);
    assert!(
        c["resume_command"]
            .as_str()
            .is_some_and(|r| r.contains(fork)),
        "{doc}"
    );
    assert_eq!(w.file("one.txt").as_deref(), Some("1\n"));
    assert_eq!(w.file("two.txt"), None);
    (session, c)
}

#[test]
fn a_rewound_conversation_resumes_with_exactly_the_earlier_turns() {
    let Some(claude) = installed_agent("claude-code", "claude") else {
        return;
    };
    let w = World::new(claude);
    let (_, c) = rewind_a_conversation(&w);
    let fork = c["forked_session"].as_str().expect("forked");

    // The user resumes the fork with Claude Code's own command.
    let asked = w.server.step_requests().len();
    w.server.push(Step::Text("Where were we?".into()));
    let third = w.prompt("what did you write?", &["--resume", fork]);
    assert_eq!(third["session_id"], fork, "{third}");
    let sent = &w.server.step_requests()[asked];
    assert_eq!(
        prompts(sent),
        vec!["write one".to_string(), "what did you write?".to_string()],
        "the resumed request's prompts"
    );
    let uses = tool_uses(sent);
    assert_eq!(
        uses,
        vec![(
            "Write".to_string(),
            json!({"file_path": abs(&w, "one.txt"), "content": "1\n"})
        )],
        "the resumed request's tool calls"
    );
    let turns = w.turns();
    assert_eq!(turns.len(), 3, "{turns:#?}");
    assert_eq!(turns[1]["status"], "rewound", "{turns:#?}");
    assert_eq!(turns[2]["session"], fork, "{turns:#?}");
    assert_eq!(turns[2]["status"], "closed", "{turns:#?}");
}

#[test]
fn ckpt_mcp_tools_are_listed_and_called_by_the_agent() {
    let Some(claude) = installed_agent("claude-code", "claude") else {
        return;
    };
    let w = World::new(claude);
    w.server.push(Step::Tools(vec![ToolCall::new(
        "Write",
        json!({"file_path": abs(&w, "x.txt"), "content": "x\n"}),
    )]));
    w.server.push(Step::Text("Wrote x.".into()));
    w.prompt("write x", &[]);

    w.server.push(Step::Tools(vec![ToolCall::new(
        "mcp__ckpt__list_turns",
        json!({}),
    )]));
    w.server.push(Step::Tools(vec![ToolCall::new(
        "mcp__ckpt__show_turn",
        json!({"turn": 1}),
    )]));
    w.server.push(Step::Text("Turn 1 wrote x.txt.".into()));
    let asked = w.server.step_requests().len();
    w.prompt("what did you do earlier?", &[]);
    let sent = &w.server.step_requests()[asked..];

    let mut offered: Vec<&str> = sent[0].json["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .filter(|n| n.starts_with("mcp__ckpt__"))
        .collect();
    offered.sort();
    for tool in [
        "diff_turn",
        "list_turns",
        "redo",
        "rewind",
        "show_turn",
        "status",
    ] {
        assert!(
            offered.contains(&format!("mcp__ckpt__{tool}").as_str()),
            "{tool} not offered: {offered:?}"
        );
    }

    let results = tool_results(&sent[1]);
    let (_, listed) = results.last().expect("list_turns' result");
    let listed: Value = serde_json::from_str(listed)
        .unwrap_or_else(|e| panic!("list_turns answered no JSON ({e}): {listed}"));
    let labels: Vec<(&Value, &Value)> = listed["turns"]
        .as_array()
        .unwrap_or_else(|| panic!("no turns: {listed}"))
        .iter()
        .map(|t| (&t["label"], &t["status"]))
        .collect();
    assert_eq!(
        labels,
        vec![
            (&json!("what did you do earlier?"), &json!("open")),
            (&json!("write x"), &json!("closed")),
        ],
        "{listed}"
    );
    let results = tool_results(&sent[2]);
    let (_, shown) = results.last().expect("show_turn's result");
    assert!(shown.contains("x.txt"), "{shown}");
}

#[test]
fn a_confirmed_mcp_rewind_from_inside_a_turn_keeps_that_turn() {
    let Some(claude) = installed_agent("claude-code", "claude") else {
        return;
    };
    let w = World::new(claude);
    w.server.push(Step::Tools(vec![ToolCall::new(
        "Write",
        json!({"file_path": abs(&w, "x.txt"), "content": "x\n"}),
    )]));
    w.server.push(Step::Text("Wrote x.".into()));
    let first = w.prompt("write x", &[]);
    let session = first["session_id"].as_str().expect("a session id");

    w.server.push(Step::Tools(vec![ToolCall::new(
        "mcp__ckpt__rewind",
        json!({"turn": 1, "confirm": true}),
    )]));
    w.server.push(Step::Tools(vec![ToolCall::new(
        "Write",
        json!({"file_path": abs(&w, "y.txt"), "content": "y\n"}),
    )]));
    w.server.push(Step::Text("Undid x, wrote y.".into()));
    let asked = w.server.step_requests().len();
    w.prompt("undo that and write y instead", &["--resume", session]);
    let results = tool_results(&w.server.step_requests()[asked + 1]);
    let (_, answer) = results.last().expect("rewind's result");
    assert!(answer.contains("x.txt"), "{answer}");

    assert_eq!(w.file("x.txt"), None, "turn 1 rewound");
    assert_eq!(w.file("y.txt").as_deref(), Some("y\n"));
    assert_eq!(w.turn(1)["status"], "rewound");
    // The calling turn was rewound with it (turns 1 to 2), and the rest of
    // the prompt went on in turn 3 of the same session, which the Stop
    // hook closed.
    assert_eq!(w.turn(2)["status"], "rewound");
    let t3 = w.turn(3);
    assert_eq!(
        t3["status"], "closed",
        "the continued turn ends as usual: {t3}"
    );
    assert_eq!(t3["session"], session, "{t3}");
    assert_eq!(
        w.changes(3),
        vec![("y.txt".to_string(), "added".to_string())],
        "what the agent did after the rewind is its turn's"
    );
    // And can be undone like any turn.
    w.ctl_ok(&["rewind", "3"]);
    assert_eq!(w.file("y.txt"), None);
}

#[test]
fn a_failing_tool_call_closes_its_tool_window() {
    let Some(claude) = installed_agent("claude-code", "claude") else {
        return;
    };
    let w = World::new(claude);
    // Another agent's session has a turn open in the same folder.
    w.ctl_ok(&["turn-start", "--session", "other", "--label", "other agent"]);
    w.server.push(Step::Tools(vec![ToolCall::new(
        "Bash",
        json!({"command": "echo partial > p.txt; exit 3", "description": "fails"}),
    )]));
    w.server.push(Step::Text("That failed.".into()));
    // After the failed call (and its hooks), while Claude Code waits for
    // its model, the other session runs a tool that writes o.txt.
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
    let result = w.prompt("run the failing command", &[]);
    assert_eq!(result["result"], "That failed.");

    let claude_turn = w
        .turns()
        .into_iter()
        .find(|t| t["agent"] == "claude-code")
        .expect("Claude Code's turn");
    assert_eq!(claude_turn["status"], "closed", "{claude_turn}");
    let id = claude_turn["id"].as_i64().expect("an id");
    assert_eq!(
        w.changes(id),
        pairs(&[("p.txt", "added")]),
        "o.txt was written by the other session's tool, after Claude Code's failed"
    );
    let shown = w.ctl_json(&["show", "1"]);
    let o = shown["turn"]["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .find(|e| e["path"] == "o.txt")
        .unwrap_or_else(|| panic!("the other turn lacks o.txt: {shown}"))
        .clone();
    assert_eq!(o["shared"], false, "{shown}");
}

/// Starts `claude ARGS…` without waiting for it.
fn spawn_claude(w: &World, args: &[&str]) -> Child {
    w.claude_cmd(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn claude")
}

#[test]
#[ignore = "flaky under load: in about one run of three on 2 busy cores, Claude Code 2.1.197 exits on SIGINT before any PostToolUseFailure or SessionEnd hook starts (the last hook call is tool-start); the turn then closes at the session's next prompt"]
fn an_interrupted_turn_is_closed() {
    let Some(claude) = installed_agent("claude-code", "claude") else {
        return;
    };
    let w = World::new(claude);
    let started = w.env.path().join("started");
    w.server.push(Step::Tools(vec![ToolCall::new(
        "Bash",
        json!({"command": format!("echo partial > p.txt; touch {}; sleep 60", started.display()),
               "description": "a long job"}),
    )]));
    let mut child = spawn_claude(&w, &["-p", "run the long job", "--allowedTools", ALLOWED]);
    wait_for("the tool call to run", Duration::from_secs(30), || {
        started.exists()
    });
    // The user presses Ctrl-C.
    // SAFETY: signalling our own child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    wait_timeout(&mut child, Duration::from_secs(30)).expect("claude exits on SIGINT");

    w.wait_status(1, "closed");
    assert_eq!(w.changes(1), pairs(&[("p.txt", "added")]));
    // The user's own edit afterwards is nobody's turn.
    std::fs::write(w.proj.join("a.txt"), "mine\n").expect("user edit");
    w.ctl_ok(&["sync"]);
    assert_eq!(w.changes(1), pairs(&[("p.txt", "added")]));
}

#[test]
fn an_api_error_ends_the_turn() {
    let Some(claude) = installed_agent("claude-code", "claude") else {
        return;
    };
    let w = World::new(claude);
    w.server.push(Step::Tools(vec![ToolCall::new(
        "Write",
        json!({"file_path": abs(&w, "x.txt"), "content": "x\n"}),
    )]));
    // 400: not retried.
    w.server.push(Step::Error {
        status: 400,
        body: r#"{"type":"error","error":{"type":"invalid_request_error","message":"scripted failure"}}"#.into(),
    });
    let out = run(&mut w.claude_cmd(&["-p", "write x", "--allowedTools", ALLOWED]));
    assert!(!out.status.success(), "{out:?}");
    assert!(out.stdout.contains("scripted failure"), "{out:?}");
    w.wait_status(1, "closed");
    assert_eq!(w.changes(1), pairs(&[("x.txt", "added")]));
}

#[test]
fn hooks_installed_with_claude_config_dir_set_mark_the_turn() {
    let Some(claude) = installed_agent("claude-code", "claude") else {
        return;
    };
    let w = World::with_config_dir(claude, Some(".config/claude"));
    w.server.push(Step::Tools(vec![ToolCall::new(
        "Write",
        json!({"file_path": abs(&w, "x.txt"), "content": "x\n"}),
    )]));
    w.server.push(Step::Text("Wrote x.".into()));
    let result = w.prompt("write x", &[]);
    let turns = w.turns();
    assert_eq!(turns.len(), 1, "no turn: Claude Code ran no ckpt hook");
    assert_eq!(turns[0]["session"], result["session_id"], "{turns:#?}");
    assert_eq!(w.changes(1), pairs(&[("x.txt", "added")]));
}

#[test]
fn the_fork_holds_nothing_of_the_rewound_prompt() {
    let Some(claude) = installed_agent("claude-code", "claude") else {
        return;
    };
    let w = World::new(claude);
    let (_, c) = rewind_a_conversation(&w);
    let path = c["path"].as_str().expect("the fork's path");
    let text = std::fs::read_to_string(path).expect("the fork");
    assert!(text.contains("write one"), "{text}");
    let kept: Vec<&str> = text.lines().filter(|l| l.contains("write two")).collect();
    assert!(
        kept.is_empty(),
        "the fork keeps the rewound prompt: {kept:#?}"
    );
}

#[test]
fn hooks_stay_installed_after_claude_code_rewrites_its_config() {
    let Some(claude) = installed_agent("claude-code", "claude") else {
        return;
    };
    let w = World::new(claude);
    w.server.push(Step::Text("Hello.".into()));
    w.prompt("hello", &[]);
    let config = w.home.join(".claude.json");
    let rewritten = std::fs::read(&config).expect("~/.claude.json");

    let doc = w.ctl_json(&["hooks", "status"]);
    let row = doc["agents"]
        .as_array()
        .expect("agents")
        .iter()
        .find(|r| r["agent"] == "claude-code")
        .unwrap_or_else(|| panic!("no claude-code: {doc}"))
        .clone();
    assert_eq!(row["user"], "yes", "{row}");
    w.ctl_ok(&["hooks", "install", "claude-code"]);
    assert!(
        std::fs::read(&config).expect("~/.claude.json") == rewritten,
        "a second install rewrote ~/.claude.json"
    );
}
