//! The real Gemini CLI (0.61.0, `scripts/agents/install.sh`) with ckpt's
//! hooks, driven by a scripted Gemini API on 127.0.0.1 (`model::gemini`):
//! each test has its own HOME, daemon and project, runs `ckptctl hooks
//! install gemini` there and then `gemini -p … --yolo` in the project, and
//! checks what ckpt recorded and what the files hold.
//!
//! Offline: `GOOGLE_GEMINI_BASE_URL` points the API at the test's server
//! (auth type `gemini-api-key` in the settings), and the settings turn off
//! auto-update, its notification, usage statistics and telemetry.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use ckpt_e2e::agent_world::{interrupt_once_started, AgentWorld};
use ckpt_e2e::model::gemini::{self, Gemini};
use ckpt_e2e::model::{installed_agent, ModelServer, Step, ToolCall};
use ckpt_e2e::*;
use serde_json::{json, Value};

/// A project, a daemon, a HOME with ckpt's hooks in Gemini CLI's settings,
/// and the scripted model.
struct World(AgentWorld);

impl std::ops::Deref for World {
    type Target = AgentWorld;
    fn deref(&self) -> &AgentWorld {
        &self.0
    }
}

impl World {
    fn new(gemini: PathBuf, files: &[(&str, &[u8])]) -> World {
        let server = ModelServer::start(Box::new(Gemini::default()));
        // The project is canonical: Gemini CLI resolves paths so.
        let mut w = AgentWorld::new(gemini, server, files, true);
        w.isolate_var("XDG_CONFIG_HOME", Some(w.home.join(".config").into()));
        w.isolate_var("GEMINI_CLI_HOME", None);
        std::fs::create_dir_all(w.home.join(".gemini")).expect("create ~/.gemini");
        let settings = json!({
            "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
            "privacy": {"usageStatisticsEnabled": false},
            "telemetry": {"enabled": false},
            "security": {"auth": {"selectedType": "gemini-api-key"}},
        });
        std::fs::write(
            w.home.join(".gemini/settings.json"),
            serde_json::to_string_pretty(&settings).expect("settings"),
        )
        .expect("write settings");
        let out = w.ctl(w.env.path(), &["hooks", "install", "gemini"]);
        assert!(out.status.success(), "hooks install: {out:?}");
        w.ctl_ok(&["watch"]);
        World(w)
    }

    /// Runs `gemini ARGS… --yolo -o json`.
    fn gemini(&self, args: &[&str]) -> Out {
        let mut cmd = self.gemini_cmd(args);
        run(cmd.args(["--output-format", "json"]))
    }

    /// `gemini ARGS… --yolo` in the project; ckpt's hooks inherit the socket.
    fn gemini_cmd(&self, args: &[&str]) -> Command {
        let mut cmd = self.agent_cmd(args);
        cmd.arg("--yolo")
            .env("TERM", "dumb")
            .env("GEMINI_API_KEY", "test-key")
            .env("GOOGLE_GEMINI_BASE_URL", self.server.url())
            .env("GEMINI_CLI_TRUST_WORKSPACE", "true");
        cmd
    }

    /// `gemini -p PROMPT` (after `extra`), which must succeed; returns the
    /// session id it reports.
    fn prompt(&self, extra: &[&str], prompt: &str) -> String {
        let mut args = extra.to_vec();
        args.extend(["-p", prompt]);
        let out = self.gemini(&args);
        assert!(
            out.status.success(),
            "gemini {args:?}: {out:?}\nrequests: {:#?}",
            self.server.requests()
        );
        let doc: Value = serde_json::from_str(&out.stdout)
            .unwrap_or_else(|e| panic!("gemini -o json printed no document ({e}): {out:?}"));
        doc["session_id"]
            .as_str()
            .unwrap_or_else(|| panic!("no session_id: {doc}"))
            .to_string()
    }

    /// (path, shared) of a turn's entries.
    fn shared(&self, turn: i64) -> Vec<(String, bool)> {
        self.entries(turn)
            .iter()
            .map(|e| {
                (
                    e["path"].as_str().expect("path").to_string(),
                    e["shared"].as_bool().expect("shared"),
                )
            })
            .collect()
    }
}

/// A request's `contents` with a part repeated within one content kept
/// once.
fn dedup_parts(contents: &Value) -> Vec<Value> {
    let mut out: Vec<Value> = contents.as_array().expect("contents").clone();
    for c in &mut out {
        if let Some(parts) = c["parts"].as_array_mut() {
            let mut seen: Vec<Value> = Vec::new();
            parts.retain(|p| {
                let new = !seen.contains(p);
                seen.push(p.clone());
                new
            });
        }
    }
    out
}

fn write_file(w: &World, rel: &str, content: &str) -> ToolCall {
    ToolCall::new(
        "write_file",
        json!({"file_path": w.path(rel), "content": content}),
    )
}

fn shell(command: &str) -> ToolCall {
    ToolCall::new(
        "run_shell_command",
        json!({"command": command, "description": "edit files"}),
    )
}

/// What a user sees: one prompt whose model writes a file and edits one
/// with Gemini CLI's own tools, then edits and removes files through its
/// shell, is one turn of exactly those paths, under the session and
/// transcript Gemini CLI reports; rewind and redo are byte-exact.
#[test]
fn a_prompt_edited_by_its_tools_and_shell_is_one_turn_rewound_and_redone_exactly() {
    let Some(gemini) = installed_agent("gemini", "gemini") else {
        return;
    };
    let w = World::new(
        gemini,
        &[
            ("a.txt", b"alpha\n"),
            ("b.txt", b"bravo\n"),
            ("c.txt", b"charlie\n"),
            ("keep.txt", b"keep\n"),
        ],
    );
    w.server.push(Step::Tools(vec![
        write_file(&w, "new.txt", "new\n"),
        ToolCall::new(
            "replace",
            json!({"file_path": w.path("a.txt"), "instruction": "capitalize alpha",
                   "old_string": "alpha", "new_string": "ALPHA"}),
        ),
    ]));
    w.server.push(Step::Tools(vec![shell(
        "sed -i s/bravo/BRAVO/ b.txt && rm c.txt",
    )]));
    w.server.push(Step::Text("Done.".into()));
    let before = snapshot_work(&w.proj);

    let session = w.prompt(&[], "tidy the files");
    assert_eq!(w.server.remaining(), 0, "every step taken");
    assert_eq!(w.server.step_requests().len(), 3);
    assert_eq!(std::fs::read(w.proj.join("a.txt")).unwrap(), b"ALPHA\n");
    assert_eq!(std::fs::read(w.proj.join("b.txt")).unwrap(), b"BRAVO\n");
    assert_eq!(std::fs::read(w.proj.join("new.txt")).unwrap(), b"new\n");
    assert!(!w.proj.join("c.txt").exists());

    let turns = w.turns();
    assert_eq!(turns.len(), 1, "{turns:?}\n{}", w.hook_status());
    let t = &turns[0];
    assert_eq!(t["status"], "closed", "{t}\n{}", w.hook_status());
    assert_eq!(t["agent"], "gemini", "{t}");
    assert_eq!(t["label"], "tidy the files", "{t}");
    assert_eq!(t["session"], session.as_str(), "{t}");
    let transcript = PathBuf::from(t["transcript"].as_str().expect("a transcript"));
    assert!(
        transcript.starts_with(w.home.join(".gemini/tmp")) && transcript.is_file(),
        "{t}"
    );
    let name = transcript.file_name().unwrap().to_str().unwrap();
    assert!(
        name.starts_with("session-") && name.ends_with(&format!("-{}.jsonl", &session[..8])),
        "{name}"
    );
    assert_eq!(
        w.shared(t["id"].as_i64().unwrap()),
        [
            ("a.txt".to_string(), false),
            ("b.txt".to_string(), false),
            ("c.txt".to_string(), false),
            ("new.txt".to_string(), false)
        ]
    );

    let after = snapshot_work(&w.proj);
    let git = snapshot_git(&w.proj);
    w.ctl_ok(&["rewind", "1"]);
    assert_same_tree("after rewind 1", &before, &snapshot_work(&w.proj));
    w.ctl_ok(&["redo"]);
    assert_same_tree("after redo", &after, &snapshot_work(&w.proj));
    assert_same_tree("the project's .git", &git, &snapshot_git(&w.proj));
}

/// `rewind 2 --conversation` forks Gemini CLI's session before the second
/// prompt; `gemini --resume FORK` accepts the fork and sends the model
/// exactly the first turn and the new prompt; its turn is the fork's.
#[test]
fn a_rewound_conversation_resumes_with_exactly_the_earlier_turns() {
    let Some(gemini) = installed_agent("gemini", "gemini") else {
        return;
    };
    let w = World::new(gemini, &[("a.txt", b"a\n")]);
    w.server
        .push(Step::Tools(vec![write_file(&w, "one.txt", "one\n")]));
    w.server.push(Step::Text("One added.".into()));
    let session = w.prompt(&[], "add one");
    w.server
        .push(Step::Tools(vec![write_file(&w, "two.txt", "two\n")]));
    w.server.push(Step::Text("Two added.".into()));
    assert_eq!(w.prompt(&["--resume", &session], "add two"), session);
    let turns = w.turns();
    assert_eq!(turns.len(), 2, "{turns:?}");
    for t in &turns {
        assert_eq!(t["session"], session.as_str(), "{t}");
        assert_eq!(t["status"], "closed", "{t}");
    }
    assert_eq!(w.paths(2), ["two.txt"]);

    let doc = w.ctl_json(&["rewind", "2", "--conversation"]);
    let c = &doc["conversation"];
    assert_eq!(c["agent"], "gemini", "{doc}");
    assert_eq!(c["original_session"], session.as_str(), "{doc}");
    let forked = c["forked_session"]
        .as_str()
        .unwrap_or_else(|| panic!("no fork: {doc}"))
        .to_string();
    assert_eq!(c["resume_command"], format!("gemini --resume {forked}"));
    assert!(!w.proj.join("two.txt").exists());
    assert!(w.proj.join("one.txt").exists());

    let sent_before = w.server.step_requests().len();
    w.server.push(Step::Text("Three.".into()));
    assert_eq!(w.prompt(&["--resume", &forked], "add three"), forked);
    let steps = w.server.step_requests();
    assert_eq!(steps.len(), sent_before + 1);
    let req = &steps[sent_before];
    let prompts: Vec<&str> = gemini::texts(req, "user")
        .iter()
        .filter_map(|t| {
            ["add one", "add two", "add three"]
                .into_iter()
                .find(|p| t.ends_with(p))
        })
        .collect();
    assert_eq!(
        prompts,
        ["add one", "add three"],
        "{:#}",
        req.json["contents"]
    );
    assert_eq!(
        gemini::texts(req, "model"),
        ["One added."],
        "{:#}",
        req.json["contents"]
    );
    // Everything before the new prompt is what the second prompt was sent
    // with before it (Gemini CLI's own resume, tool call and result
    // included), and nothing of the rewound turn. Gemini CLI's resume sends
    // a resumed turn's tool result once or twice (both seen, from the same
    // session file), so identical parts of one content count once.
    let earlier = dedup_parts(&steps[2].json["contents"]);
    let sent = dedup_parts(&req.json["contents"]);
    let n = earlier.len();
    assert_eq!(sent.len(), n, "{:#}", req.json["contents"]);
    assert_eq!(sent[..n - 1], earlier[..n - 1]);
    assert_eq!(
        sent[n - 1],
        json!({"role": "user", "parts": [{"text": "add three"}]})
    );

    let turns = w.turns();
    let t = turns.last().expect("a third turn");
    assert_eq!(t["label"], "add three", "{turns:?}");
    assert_eq!(t["session"], forked.as_str(), "{t}");
}

/// ckpt's MCP server is offered to the model as Gemini CLI's
/// `mcp_ckpt_*` tools, and a `list_turns` call from inside the turn
/// answers with that open turn.
#[test]
fn the_model_lists_and_calls_ckpts_mcp_tools() {
    let Some(gemini) = installed_agent("gemini", "gemini") else {
        return;
    };
    let w = World::new(gemini, &[("a.txt", b"a\n")]);
    w.server.push(Step::Tools(vec![ToolCall::new(
        "mcp_ckpt_list_turns",
        json!({}),
    )]));
    w.server.push(Step::Text("Listed.".into()));
    w.prompt(&[], "what did you do so far");
    let steps = w.server.step_requests();
    assert_eq!(steps.len(), 2);
    let tools = gemini::tool_names(&steps[0]);
    for t in ["list_turns", "show_turn", "diff_turn", "rewind"] {
        assert!(tools.contains(&format!("mcp_ckpt_{t}")), "{t}: {tools:?}");
    }
    let results = gemini::function_responses(&steps[1]);
    assert_eq!(results.len(), 1, "{results:?}");
    let (name, response) = &results[0];
    assert!(name.contains("list_turns"), "{name}");
    let text = response.to_string();
    assert!(
        text.contains("what did you do so far") && !text.contains("\"error\""),
        "the open turn, listed: {text}"
    );
}

/// The model undoes an earlier turn with ckpt's MCP `rewind` (confirmed)
/// from inside a later prompt of the same session, then goes on: the
/// earlier turn is undone, and what the model does after the call is the
/// calling turn's, which ends normally and can be rewound itself.
#[test]
fn a_confirmed_mcp_rewind_from_inside_a_turn_keeps_that_turn() {
    let Some(gemini) = installed_agent("gemini", "gemini") else {
        return;
    };
    let w = World::new(gemini, &[("a.txt", b"a\n")]);
    w.server
        .push(Step::Tools(vec![write_file(&w, "one.txt", "one\n")]));
    w.server.push(Step::Text("One added.".into()));
    let session = w.prompt(&[], "add one");
    w.server.push(Step::Tools(vec![ToolCall::new(
        "mcp_ckpt_rewind",
        json!({"turn": 1, "confirm": true}),
    )]));
    w.server
        .push(Step::Tools(vec![write_file(&w, "two.txt", "two\n")]));
    w.server.push(Step::Text("Undone, and two added.".into()));
    w.prompt(&["--resume", &session], "undo that, then add two");
    let steps = w.server.step_requests();
    let results = gemini::function_responses(&steps[3]);
    let rewind = results
        .iter()
        .find(|(name, _)| name.contains("rewind"))
        .unwrap_or_else(|| panic!("the rewind's result: {results:?}"));
    assert!(!rewind.1.to_string().contains("\"error\""), "{rewind:?}");
    assert!(!w.proj.join("one.txt").exists(), "turn 1 undone");
    assert!(w.proj.join("two.txt").exists());

    let turns = w.turns();
    let last = turns.last().expect("turns");
    assert_eq!(last["label"], "undo that, then add two", "{turns:?}");
    assert_eq!(last["status"], "closed", "{turns:?}\n{}", w.hook_status());
    let id = last["id"].as_i64().unwrap();
    assert_eq!(w.paths(id), ["two.txt"], "{turns:?}");
    let status: Value = serde_json::from_str(&w.hook_status()).expect("hooks status");
    let mine = status["agents"]
        .as_array()
        .and_then(|a| a.iter().find(|a| a["agent"] == "gemini"))
        .expect("gemini in hooks status");
    assert_eq!(mine["last_error"], Value::Null, "{mine}");
    w.ctl_ok(&["rewind", &id.to_string()]);
    assert!(!w.proj.join("two.txt").exists());
}

/// A tool call that fails (a file that does not exist) still ends its
/// tool window: a change made while the model answers after it, with
/// another session's turn open, is shared by both turns, not given to
/// Gemini CLI's session alone; and the turn ends.
#[test]
fn a_failing_tool_call_closes_its_tool_window() {
    let Some(gemini) = installed_agent("gemini", "gemini") else {
        return;
    };
    let w = World::new(gemini, &[("a.txt", b"a\n")]);
    let other = w.ctl_json(&["turn-start", "--session", "other", "--label", "other"])["turn"]
        .as_i64()
        .expect("a turn id");
    w.server.push(Step::Tools(vec![ToolCall::new(
        "read_file",
        json!({"file_path": w.path("missing.txt")}),
    )]));
    w.server.push(Step::Text("It is not there.".into()));
    // While the model answers the failed call: what ckpt last heard from
    // Gemini CLI's hooks (the failed call's AfterTool), then a change.
    let user_file = w.proj.join("user.txt");
    let mut status = w.env.ctl_cmd(w.env.path(), &["--json", "hooks", "status"]);
    w.isolate(&mut status);
    let heard = std::sync::Arc::new(std::sync::Mutex::new(Value::Null));
    let heard_in = std::sync::Arc::clone(&heard);
    let mut status = Some(status);
    w.server.before_step(1, move || {
        if let Some(mut cmd) = status.take() {
            *heard_in.lock().unwrap() = run(&mut cmd).json();
        }
        std::fs::write(&user_file, "the user's\n").expect("write user.txt");
    });
    let session = w.prompt(&[], "read missing.txt");
    let heard = heard.lock().unwrap().clone();
    let gemini_calls = heard["agents"]
        .as_array()
        .and_then(|a| a.iter().find(|a| a["agent"] == "gemini"))
        .unwrap_or_else(|| panic!("gemini in hooks status: {heard}"));
    assert_eq!(
        gemini_calls["last_ok"]["event"], "tool-end",
        "the failed call's AfterTool ran: {gemini_calls}"
    );
    let steps = w.server.step_requests();
    let results = gemini::function_responses(&steps[1]);
    assert!(
        results.len() == 1 && results[0].1.to_string().contains("rror"),
        "the call failed: {results:?}"
    );
    w.ctl_ok(&["turn-end", "--session", "other"]);

    let turns = w.turns();
    let mine = turns
        .iter()
        .find(|t| t["session"] == session.as_str())
        .unwrap_or_else(|| panic!("no turn of {session}: {turns:?}"));
    assert_eq!(mine["status"], "closed", "{mine}\n{}", w.hook_status());
    let id = mine["id"].as_i64().unwrap();
    assert_eq!(w.shared(id), [("user.txt".to_string(), true)]);
    assert_eq!(
        w.shared(other),
        [("user.txt".to_string(), true)],
        "{}",
        w.hook_status()
    );
}

/// Ctrl-C while a tool call runs (SIGINT to Gemini CLI's process group, as
/// a terminal sends it): Gemini CLI exits, and its turn ends with what the
/// call did so far; a change the user makes afterwards is in no turn.
#[test]
fn an_interrupted_turn_ends() {
    let Some(gemini) = installed_agent("gemini", "gemini") else {
        return;
    };
    let w = World::new(gemini, &[("a.txt", b"a\n")]);
    w.server.push(Step::Tools(vec![shell(
        "echo started > started.txt; sleep 60",
    )]));
    let mut cmd = w.gemini_cmd(&["-p", "start something long"]);
    interrupt_once_started(
        &mut cmd,
        &w.proj.join("started.txt"),
        Duration::from_secs(90),
    );
    std::fs::write(w.proj.join("user.txt"), "the user's\n").expect("write user.txt");
    w.ctl_ok(&["sync"]);
    w.assert_one_closed_turn();
    assert_eq!(w.paths(1), ["started.txt"]);
}

/// The API answers a step with an error: Gemini CLI gives up on the
/// prompt, and its turn must end with it (or every later change, the
/// user's own, lands in it).
#[test]
fn an_api_error_still_ends_the_turn() {
    let Some(gemini) = installed_agent("gemini", "gemini") else {
        return;
    };
    let w = World::new(gemini, &[("a.txt", b"a\n")]);
    w.server
        .push(Step::Tools(vec![shell("echo made > made.txt")]));
    w.server.push(Step::Error {
        status: 400,
        body: json!({"error": {"code": 400, "message": "scripted failure",
                                "status": "INVALID_ARGUMENT"}})
        .to_string(),
    });
    // As a user runs it: text output. (With `-o json` Gemini CLI exits at
    // once on an API error, and no hook runs at all, not even SessionEnd.)
    let out = run(&mut w.gemini_cmd(&["-p", "make a file"]));
    assert!(
        !out.status.success() && out.stderr.contains("scripted failure"),
        "the error reaches the user: {out:?}"
    );
    assert_eq!(w.server.remaining(), 0);
    w.assert_one_closed_turn();
    assert_eq!(w.paths(1), ["made.txt"]);
}
