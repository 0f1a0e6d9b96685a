//! The real OpenCode (1.18.33, `scripts/agents/install.sh`) with ckpt's
//! plugin, driven by a scripted Chat Completions API on 127.0.0.1
//! (`model::chat`): each test has its own HOME (and XDG dirs), daemon and
//! project, runs `ckptctl hooks install opencode` there and then `opencode
//! run …` in the project, and checks what ckpt recorded and what the files
//! hold.
//!
//! Offline: the config's only provider is the test's server
//! (`@ai-sdk/openai-compatible`, bundled in OpenCode), models.dev is never
//! fetched (`OPENCODE_DISABLE_MODELS_FETCH`, and `OPENCODE_MODELS_URL` points
//! here anyway), no auto-update, share, LSP download or default plugins, and
//! the npm registry OpenCode's background plugin install asks is the test's
//! server (`npm_config_registry`), which answers 404. `snapshot: false`
//! turns off OpenCode's own git snapshots of the project, which a test
//! does not need.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use ckpt_e2e::agent_world::{interrupt_once_started, AgentWorld};
use ckpt_e2e::model::chat::{self, Chat};
use ckpt_e2e::model::{installed_agent, ModelServer, Step, ToolCall};
use ckpt_e2e::*;
use serde_json::{json, Value};

/// A project, a daemon, a HOME with ckpt's plugin in OpenCode's config dir,
/// and the scripted model.
struct World(AgentWorld);

impl std::ops::Deref for World {
    type Target = AgentWorld;
    fn deref(&self) -> &AgentWorld {
        &self.0
    }
}

impl World {
    fn new(opencode: PathBuf, files: &[(&str, &[u8])]) -> World {
        let server = ModelServer::start(Box::new(Chat::default()));
        let mut w = AgentWorld::new(opencode, server, files, true);
        for (key, dir) in [
            ("XDG_CONFIG_HOME", ".config"),
            ("XDG_DATA_HOME", ".local/share"),
            ("XDG_CACHE_HOME", ".cache"),
            ("XDG_STATE_HOME", ".local/state"),
        ] {
            w.isolate_var(key, Some(w.home.join(dir).into()));
        }
        let config = w.home.join(".config/opencode");
        std::fs::create_dir_all(&config).expect("create the config dir");
        let settings = json!({
            "$schema": "https://opencode.ai/config.json",
            "autoupdate": false,
            "share": "disabled",
            "permission": "allow",
            "snapshot": false,
            "model": "scripted/model",
            "small_model": "scripted/model",
            "provider": {"scripted": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Scripted",
                "options": {"baseURL": format!("{}/v1", w.server.url()), "apiKey": "test-key"},
                "models": {"model": {"name": "Scripted", "tool_call": true,
                                     "limit": {"context": 100000, "output": 4096}}},
            }},
        });
        std::fs::write(
            config.join("opencode.json"),
            serde_json::to_string_pretty(&settings).expect("config"),
        )
        .expect("write opencode.json");
        let out = w.ctl(w.env.path(), &["hooks", "install", "opencode"]);
        assert!(out.status.success(), "hooks install: {out:?}");
        assert!(config.join("plugins/ckpt.js").is_file(), "{out:?}");
        w.ctl_ok(&["watch"]);
        World(w)
    }

    /// Runs `opencode run --format json PROMPT`.
    fn opencode(&self, prompt: &str) -> Out {
        run(&mut self.opencode_cmd(prompt))
    }

    /// `opencode run --format json PROMPT` in the project; the plugin
    /// inherits the socket.
    fn opencode_cmd(&self, prompt: &str) -> Command {
        let mut cmd = self.agent_cmd(&["run", "--format", "json", prompt]);
        cmd.env("TERM", "dumb")
            .env("OPENCODE_DISABLE_AUTOUPDATE", "1")
            .env("OPENCODE_DISABLE_MODELS_FETCH", "1")
            .env("OPENCODE_MODELS_URL", self.server.url())
            .env("OPENCODE_DISABLE_SHARE", "1")
            .env("OPENCODE_DISABLE_LSP_DOWNLOAD", "1")
            .env("OPENCODE_DISABLE_DEFAULT_PLUGINS", "1")
            .env("OPENCODE_DISABLE_CLAUDE_CODE", "1")
            .env("OPENCODE_DISABLE_EXTERNAL_SKILLS", "1")
            .env("npm_config_registry", format!("{}/", self.server.url()));
        cmd
    }

    /// `opencode run PROMPT`, which must succeed; returns the session id of
    /// its events.
    fn prompt(&self, prompt: &str) -> String {
        let out = self.opencode(prompt);
        assert!(
            out.status.success(),
            "opencode run: {out:?}\nrequests: {:#?}",
            self.server.requests()
        );
        session_of(&out)
    }
}

/// The `sessionID` of `opencode run --format json`'s events.
fn session_of(out: &Out) -> String {
    out.stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|e| e["sessionID"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("no sessionID in the events: {out:?}"))
}

fn shell(command: &str) -> ToolCall {
    ToolCall::new(
        "bash",
        json!({"command": command, "description": "edit files"}),
    )
}

/// What a user sees: one prompt whose model writes a file and edits one
/// with OpenCode's own tools, then edits and removes files through its
/// shell, is one turn of exactly those paths under OpenCode's session;
/// rewind and redo are byte-exact.
#[test]
fn a_prompt_edited_by_its_tools_and_shell_is_one_turn_rewound_and_redone_exactly() {
    let Some(opencode) = installed_agent("opencode", "opencode") else {
        return;
    };
    let w = World::new(
        opencode,
        &[
            ("a.txt", b"alpha\n"),
            ("b.txt", b"bravo\n"),
            ("c.txt", b"charlie\n"),
            ("keep.txt", b"keep\n"),
        ],
    );
    w.server.push(Step::Tools(vec![
        ToolCall::new(
            "write",
            json!({"filePath": w.path("new.txt"), "content": "new\n"}),
        ),
        ToolCall::new(
            "edit",
            json!({"filePath": w.path("a.txt"), "oldString": "alpha", "newString": "ALPHA"}),
        ),
    ]));
    w.server.push(Step::Tools(vec![shell(
        "sed -i s/bravo/BRAVO/ b.txt && rm c.txt",
    )]));
    w.server.push(Step::Text("Done.".into()));
    let before = snapshot_work(&w.proj);

    let session = w.prompt("tidy the files");
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
    assert_eq!(t["agent"], "opencode", "{t}");
    // `opencode run` quotes a message argument that holds spaces, and
    // sends the model (and the plugin) the quoted text.
    let sent = chat::user_texts(&w.server.step_requests()[0]);
    assert_eq!(sent, ["\"tidy the files\""]);
    assert_eq!(t["label"], sent[0].as_str(), "{t}");
    assert_eq!(t["session"], session.as_str(), "{t}");
    assert_eq!(
        w.paths(t["id"].as_i64().unwrap()),
        ["a.txt", "b.txt", "c.txt", "new.txt"]
    );

    let after = snapshot_work(&w.proj);
    let git = snapshot_git(&w.proj);
    w.ctl_ok(&["rewind", "1"]);
    assert_same_tree("after rewind 1", &before, &snapshot_work(&w.proj));
    w.ctl_ok(&["redo"]);
    assert_same_tree("after redo", &after, &snapshot_work(&w.proj));
    assert_same_tree("the project's .git", &git, &snapshot_git(&w.proj));
}

/// ckpt's MCP server is offered to the model as OpenCode's `ckpt_*` tools,
/// and a `list_turns` call from inside the turn answers with that open turn.
#[test]
fn the_model_lists_and_calls_ckpts_mcp_tools() {
    let Some(opencode) = installed_agent("opencode", "opencode") else {
        return;
    };
    let w = World::new(opencode, &[("a.txt", b"a\n")]);
    w.server.push(Step::Tools(vec![ToolCall::new(
        "ckpt_list_turns",
        json!({}),
    )]));
    w.server.push(Step::Text("Listed.".into()));
    w.prompt("what did you do so far");
    let steps = w.server.step_requests();
    assert_eq!(steps.len(), 2, "{:#?}", w.server.requests());
    let tools = chat::tool_names(&steps[0]);
    for t in ["list_turns", "show_turn", "diff_turn", "rewind"] {
        assert!(tools.contains(&format!("ckpt_{t}")), "{t}: {tools:?}");
    }
    let results = chat::tool_results(&steps[1]);
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(
        results[0].contains("what did you do so far"),
        "the open turn, listed: {}",
        results[0]
    );
}

/// A tool call that fails (reading a file that does not exist) does not
/// stop the turn: the model's next call runs in it, and it ends.
#[test]
fn a_failing_tool_call_leaves_the_turn_whole() {
    let Some(opencode) = installed_agent("opencode", "opencode") else {
        return;
    };
    let w = World::new(opencode, &[("a.txt", b"a\n")]);
    w.server.push(Step::Tools(vec![ToolCall::new(
        "read",
        json!({"filePath": w.path("missing.txt")}),
    )]));
    w.server
        .push(Step::Tools(vec![shell("echo made > made.txt")]));
    w.server.push(Step::Text("Made it.".into()));
    let session = w.prompt("read missing.txt, then make a file");
    let steps = w.server.step_requests();
    assert_eq!(steps.len(), 3);
    let results = chat::tool_results(&steps[1]);
    assert!(
        results.len() == 1 && results[0].starts_with("File not found"),
        "the read failed: {results:?}"
    );
    let turns = w.turns();
    assert_eq!(turns.len(), 1, "{turns:?}");
    assert_eq!(turns[0]["session"], session.as_str());
    assert_eq!(
        turns[0]["status"],
        "closed",
        "{:?}\n{}",
        turns[0],
        w.hook_status()
    );
    assert_eq!(w.paths(1), ["made.txt"]);
}

/// Ctrl-C while a tool call runs (SIGINT to OpenCode's process group, as a
/// terminal sends it): OpenCode exits, and its turn ends with what the call
/// did so far; a change the user makes afterwards is in no turn.
#[test]
#[ignore = "not in issue 28 yet: an interrupted opencode run emits no session.idle to ckpt's plugin, and the plugin ends a turn on nothing else"]
fn an_interrupted_turn_ends() {
    let Some(opencode) = installed_agent("opencode", "opencode") else {
        return;
    };
    let w = World::new(opencode, &[("a.txt", b"a\n")]);
    w.server.push(Step::Tools(vec![shell(
        "echo started > started.txt; sleep 60",
    )]));
    let mut cmd = w.opencode_cmd("start something long");
    interrupt_once_started(
        &mut cmd,
        &w.proj.join("started.txt"),
        Duration::from_secs(120),
    );
    std::fs::write(w.proj.join("user.txt"), "the user's\n").expect("write user.txt");
    w.ctl_ok(&["sync"]);
    w.assert_one_closed_turn();
    assert_eq!(w.paths(1), ["started.txt"]);
}

/// The API answers a step with an error: OpenCode gives up on the prompt,
/// and its turn ends with it (or every later change, the user's own,
/// lands in it).
#[test]
fn an_api_error_still_ends_the_turn() {
    let Some(opencode) = installed_agent("opencode", "opencode") else {
        return;
    };
    let w = World::new(opencode, &[("a.txt", b"a\n")]);
    w.server
        .push(Step::Tools(vec![shell("echo made > made.txt")]));
    w.server.push(Step::Error {
        status: 400,
        body: json!({"error": {"message": "scripted failure", "type": "invalid_request_error"}})
            .to_string(),
    });
    let out = w.opencode("make a file");
    assert!(
        out.stdout.contains("scripted failure") || out.stderr.contains("scripted failure"),
        "the error reaches the user: {out:?}"
    );
    assert_eq!(w.server.remaining(), 0);
    w.assert_one_closed_turn();
    assert_eq!(w.paths(1), ["made.txt"]);
}
