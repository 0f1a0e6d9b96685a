//! `ckptctl hooks install|uninstall|status` and the hooks it installs, end
//! to end: each agent's hook command is read back from the config file
//! install wrote and run the way the agent runs it (`sh -c`, or the script
//! itself), with that agent's documented payload on stdin. Every ckptctl
//! here sees a temp HOME, XDG_CONFIG_HOME and a PATH holding only `sh`, so
//! nothing reads or writes the real home and detection sees only what a
//! test creates.

use std::path::{Path, PathBuf};
use std::process::Command;

use ckpt_e2e::*;
use serde_json::{json, Value};

/// An [`Env`] with its own home for the agents' configs.
struct World {
    env: Env,
    home: PathBuf,
    xdg: PathBuf,
    /// The whole PATH: a dir with `sh` only.
    bin: PathBuf,
}

/// How an agent runs a hook.
enum Hook {
    /// A command line, run with `sh -c` (from the agent's own dir, not the
    /// project's: the payload names the project).
    Sh(String),
    /// An executable file (Cline's hook scripts).
    Exec(PathBuf),
    /// A program and its arguments, no shell, in the project (OpenCode's
    /// plugin spawns ckptctl so).
    Argv(Vec<String>, PathBuf),
}

impl World {
    fn new() -> World {
        let env = Env::new();
        let home = env.dir("home");
        let xdg = env.dir("xdg");
        let bin = env.dir("bin");
        std::os::unix::fs::symlink("/bin/sh", bin.join("sh")).expect("link sh");
        World {
            env,
            home,
            xdg,
            bin,
        }
    }

    fn isolate<'c>(&self, cmd: &'c mut Command) -> &'c mut Command {
        cmd.env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", &self.xdg)
            .env("PATH", &self.bin)
            .env_remove("CODEX_HOME")
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("COPILOT_HOME")
            .env_remove("GEMINI_CLI_HOME")
            .env_remove("SHELL")
    }

    fn ctl(&self, dir: &Path, args: &[&str]) -> Out {
        run(self.isolate(&mut self.env.ctl_cmd(dir, args)))
    }

    fn ctl_ok(&self, dir: &Path, args: &[&str]) -> String {
        let out = self.ctl(dir, args);
        assert!(out.status.success(), "ckptctl {args:?} failed: {out:?}");
        out.stdout
    }

    fn ctl_json(&self, dir: &Path, args: &[&str]) -> Value {
        let mut full = vec!["--json"];
        full.extend_from_slice(args);
        let out = self.ctl(dir, &full);
        assert!(out.status.success(), "ckptctl {full:?} failed: {out:?}");
        out.json()
    }

    /// `hooks install ARGS…` at user level, from a dir that is no project.
    fn install(&self, args: &[&str]) -> String {
        let mut full = vec!["hooks", "install"];
        full.extend_from_slice(args);
        self.ctl_ok(self.env.path(), &full)
    }

    fn uninstall(&self, args: &[&str]) -> String {
        let mut full = vec!["hooks", "uninstall"];
        full.extend_from_slice(args);
        self.ctl_ok(self.env.path(), &full)
    }

    /// Runs a hook as the agent would, with `payload` on stdin and ckpt's
    /// socket and data dir in the environment it inherits.
    fn call(&self, hook: &Hook, payload: &Value) -> Out {
        self.call_raw(hook, payload.to_string().as_bytes())
    }

    fn call_raw(&self, hook: &Hook, input: &[u8]) -> Out {
        let mut cmd = match hook {
            Hook::Sh(line) => {
                let mut c = Command::new("/bin/sh");
                c.arg("-c").arg(line).current_dir(self.env.path());
                c
            }
            Hook::Exec(script) => {
                let mut c = Command::new(script);
                c.current_dir(self.env.path());
                c
            }
            Hook::Argv(argv, cwd) => {
                let mut c = Command::new(&argv[0]);
                c.args(&argv[1..]).current_dir(cwd);
                c
            }
        };
        cmd.env("CKPT_SOCKET", &self.env.socket)
            .env("CKPT_DATA_DIR", &self.env.data)
            .env("CKPT_NO_AUTOSTART", "1");
        self.isolate(&mut cmd);
        run_with_input(&mut cmd, Some(input))
    }

    /// One turn through the agent's hooks: start, an edit of `a.txt` by
    /// the shell, end. Each call exits 0 and prints `answer` only. Returns
    /// the closed turn from `log`.
    #[allow(clippy::too_many_arguments)]
    fn turn(
        &self,
        proj: &Path,
        agent: &str,
        start: &Hook,
        start_payload: Value,
        end: &Hook,
        end_payload: Value,
        answer: &str,
    ) -> Value {
        for (what, hook, payload) in [("start", start, &start_payload), ("end", end, &end_payload)]
        {
            if what == "end" {
                sh(proj, "echo changed > a.txt");
            }
            let out = self.call(hook, payload);
            assert!(out.status.success(), "{agent} turn-{what}: {out:?}");
            assert_eq!(out.stdout, answer, "{agent} turn-{what}: {out:?}");
            assert_eq!(out.stderr, "", "{agent} turn-{what}: {out:?}");
        }
        let log = self.ctl_json(proj, &["log"]);
        let turns = log["turns"].as_array().expect("turns");
        assert_eq!(turns.len(), 1, "{log}");
        let t = turns[0].clone();
        assert_eq!(t["status"], "closed", "{t}");
        assert_eq!(t["agent"], agent, "{t}");
        assert_eq!(t["counts"]["modified"], 1, "{t}");
        let shown = self.ctl_json(proj, &["show", "1"]);
        assert_eq!(shown["turn"]["info"], t, "show and log agree");
        t
    }
}

fn ckptctl() -> PathBuf {
    bin("ckptctl").canonicalize().expect("ckptctl's real path")
}

fn json_file(path: &Path) -> Value {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}\n{text}", path.display()))
}

/// The command at `pointer` in a config, checked to run this ckptctl.
fn command_at(config: &Value, pointer: &str, event: &str, agent: &str) -> Hook {
    let line = config
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("no command at {pointer}: {config}"));
    assert_eq!(
        line,
        format!("{} {event} --from-hook={agent}", ckptctl().display()),
        "{pointer}"
    );
    Hook::Sh(line.to_string())
}

/// The agent's tool hooks, read back from its config, run as it runs them
/// on a tool payload: exit 0, nothing printed, and the daemon counts the
/// session's tool call (tool-start says one runs, tool-end none).
fn tool_hooks_run(w: &World, cfg: &Value, events: [&str; 2], agent: &str, payload: Value) {
    for (event, what) in events.iter().zip(["tool-start", "tool-end"]) {
        let hook = command_at(
            cfg,
            &format!("/hooks/{event}/0/hooks/0/command"),
            what,
            agent,
        );
        let out = w.call(&hook, &payload);
        assert!(out.status.success(), "{agent} {what}: {out:?}");
        assert_eq!(out.stdout, "", "{agent} {what}: {out:?}");
        assert_eq!(out.stderr, "", "{agent} {what}: {out:?}");
    }
    let status = w.ctl_json(w.env.path(), &["hooks", "status"]);
    assert!(status.to_string().contains("tool-end"), "{status}");
}

fn s(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 temp path")
}

/// A project with `a.txt`, watched already or not (the hook's turn-start
/// watches it then).
fn project(w: &World, watched: bool) -> (PathBuf, PathBuf) {
    let proj = w.env.git_repo("app", &[("a.txt", b"1\n")]);
    if watched {
        w.ctl_ok(&proj, &["watch"]);
    }
    let cwd = proj.canonicalize().expect("canonical project");
    (proj, cwd)
}

#[test]
fn claude_code_hooks_from_its_settings_mark_a_turn() {
    let w = World::new();
    let _d = w.env.start_daemon();
    let (proj, cwd) = project(&w, false);
    w.install(&["claude-code"]);
    let cfg = json_file(&w.home.join(".claude/settings.json"));
    let start = command_at(
        &cfg,
        "/hooks/UserPromptSubmit/0/hooks/0/command",
        "turn-start",
        "claude-code",
    );
    let end = command_at(
        &cfg,
        "/hooks/Stop/0/hooks/0/command",
        "turn-end",
        "claude-code",
    );
    command_at(
        &cfg,
        "/hooks/StopFailure/0/hooks/0/command",
        "turn-end",
        "claude-code",
    );
    let transcript = w.env.path().join("claude.jsonl");
    let t = w.turn(
        &proj,
        "claude-code",
        &start,
        json!({"session_id": "abc123", "transcript_path": transcript, "cwd": cwd,
               "permission_mode": "default", "hook_event_name": "UserPromptSubmit",
               "prompt": "Write a function to calculate the factorial of a number"}),
        &end,
        json!({"session_id": "abc123", "transcript_path": transcript, "cwd": cwd,
               "permission_mode": "default", "hook_event_name": "Stop",
               "stop_hook_active": true, "last_assistant_message": "Done.",
               "background_tasks": [], "session_crons": []}),
        "",
    );
    assert_eq!(
        t["label"],
        "Write a function to calculate the factorial of a number"
    );
    assert_eq!(t["session"], "abc123");
    assert_eq!(t["transcript"], s(&transcript));
    tool_hooks_run(
        &w,
        &cfg,
        ["PreToolUse", "PostToolUse"],
        "claude-code",
        json!({"session_id": "abc123", "transcript_path": transcript, "cwd": cwd,
               "hook_event_name": "PreToolUse", "tool_name": "Write",
               "tool_input": {"file_path": "a.txt", "content": "x"}}),
    );
}

#[test]
fn codex_hooks_from_its_hooks_json_mark_a_turn() {
    let w = World::new();
    let _d = w.env.start_daemon();
    let (proj, cwd) = project(&w, true);
    w.install(&["codex"]);
    let cfg = json_file(&w.home.join(".codex/hooks.json"));
    let start = command_at(
        &cfg,
        "/hooks/UserPromptSubmit/0/hooks/0/command",
        "turn-start",
        "codex",
    );
    let end = command_at(&cfg, "/hooks/Stop/0/hooks/0/command", "turn-end", "codex");
    let transcript = w.env.path().join("rollout-1.jsonl");
    let t = w.turn(
        &proj,
        "codex",
        &start,
        json!({"session_id": "0199a0b2", "turn_id": "t1", "transcript_path": transcript,
               "cwd": cwd, "hook_event_name": "UserPromptSubmit", "model": "gpt-5",
               "permission_mode": "default", "prompt": "fix the tests"}),
        &end,
        json!({"session_id": "0199a0b2", "turn_id": "t1", "transcript_path": null,
               "cwd": cwd, "hook_event_name": "Stop", "model": "gpt-5",
               "permission_mode": "default", "stop_hook_active": false,
               "last_assistant_message": null}),
        "",
    );
    assert_eq!(t["label"], "fix the tests");
    assert_eq!(t["session"], "0199a0b2");
    assert_eq!(t["transcript"], s(&transcript));
    tool_hooks_run(
        &w,
        &cfg,
        ["PreToolUse", "PostToolUse"],
        "codex",
        json!({"session_id": "0199a0b2", "turn_id": "t2", "transcript_path": null,
               "cwd": cwd, "hook_event_name": "PreToolUse", "model": "gpt-5",
               "permission_mode": "default", "tool_name": "shell",
               "tool_input": {"command": "echo x > a.txt"}, "tool_use_id": "call-1"}),
    );
}

#[test]
fn gemini_hooks_from_its_settings_mark_a_turn() {
    let w = World::new();
    let _d = w.env.start_daemon();
    let (proj, cwd) = project(&w, false);
    w.install(&["gemini"]);
    let cfg = json_file(&w.home.join(".gemini/settings.json"));
    let start = command_at(
        &cfg,
        "/hooks/BeforeAgent/0/hooks/0/command",
        "turn-start",
        "gemini",
    );
    let end = command_at(
        &cfg,
        "/hooks/AfterAgent/0/hooks/0/command",
        "turn-end",
        "gemini",
    );
    let transcript = w.env.path().join("chats/s.json");
    let t = w.turn(
        &proj,
        "gemini",
        &start,
        json!({"session_id": "s-1", "transcript_path": transcript, "cwd": cwd,
               "hook_event_name": "BeforeAgent", "timestamp": "2026-12-01T10:00:00Z",
               "prompt": "add a test"}),
        &end,
        json!({"session_id": "s-1", "transcript_path": transcript, "cwd": cwd,
               "hook_event_name": "AfterAgent", "timestamp": "2026-12-01T10:01:00Z",
               "prompt": "add a test", "prompt_response": "Added.",
               "stop_hook_active": false}),
        "",
    );
    assert_eq!(t["label"], "add a test");
    assert_eq!(t["session"], "s-1");
    assert_eq!(t["transcript"], s(&transcript));
    tool_hooks_run(
        &w,
        &cfg,
        ["BeforeTool", "AfterTool"],
        "gemini",
        json!({"session_id": "s-1", "transcript_path": transcript, "cwd": cwd,
               "hook_event_name": "BeforeTool", "timestamp": "2026-12-01T10:00:30Z",
               "tool_name": "write_file", "tool_input": {"file_path": "a.txt"}}),
    );
}

#[test]
fn cursor_hooks_from_its_hooks_json_mark_a_turn_in_the_first_workspace_root() {
    let w = World::new();
    let _d = w.env.start_daemon();
    let (proj, cwd) = project(&w, true);
    let other = w.env.git_repo("lib", &[("b.txt", b"b\n")]);
    w.install(&["cursor"]);
    let cfg = json_file(&w.home.join(".cursor/hooks.json"));
    assert_eq!(cfg["version"], 1, "{cfg}");
    let start = command_at(
        &cfg,
        "/hooks/beforeSubmitPrompt/0/command",
        "turn-start",
        "cursor",
    );
    let end = command_at(&cfg, "/hooks/stop/0/command", "turn-end", "cursor");
    let transcript = w.env.path().join("cursor.txt");
    let t = w.turn(
        &proj,
        "cursor",
        &start,
        json!({"conversation_id": "c-9", "generation_id": "g-1", "model": "gpt-5",
               "hook_event_name": "beforeSubmitPrompt", "cursor_version": "1.7.2",
               "workspace_roots": [cwd, other], "user_email": null,
               "transcript_path": transcript, "prompt": "rename Foo", "attachments": []}),
        &end,
        json!({"conversation_id": "c-9", "generation_id": "g-1", "hook_event_name": "stop",
               "workspace_roots": [cwd, other], "status": "completed", "loop_count": 0}),
        "",
    );
    assert_eq!(t["label"], "rename Foo");
    assert_eq!(t["session"], "c-9");
    assert_eq!(t["transcript"], s(&transcript));
    // The second root is not the turn's: not even watched.
    let lib = w.ctl(&other, &["log"]);
    assert!(
        lib.stderr.contains("not inside a watched project"),
        "{lib:?}"
    );
}

#[test]
fn copilot_hooks_from_its_own_hook_file_mark_a_turn() {
    let w = World::new();
    let _d = w.env.start_daemon();
    let (proj, cwd) = project(&w, false);
    w.install(&["copilot"]);
    let cfg = json_file(&w.home.join(".copilot/hooks/ckpt.json"));
    assert_eq!(cfg["version"], 1, "{cfg}");
    let start = command_at(
        &cfg,
        "/hooks/userPromptSubmitted/0/bash",
        "turn-start",
        "copilot",
    );
    let end = command_at(&cfg, "/hooks/agentStop/0/bash", "turn-end", "copilot");
    let t = w.turn(
        &proj,
        "copilot",
        &start,
        json!({"sessionId": "4f1e", "timestamp": 1764580000000u64, "cwd": cwd,
               "prompt": "bump the version"}),
        &end,
        json!({"sessionId": "4f1e", "timestamp": 1764580009000u64, "cwd": cwd,
               "transcriptPath": w.env.path().join("events.jsonl"),
               "stopReason": "end_turn"}),
        "",
    );
    assert_eq!(t["label"], "bump the version");
    assert_eq!(t["session"], "4f1e");
    // Copilot names its transcript at agentStop only: turn-end keeps it.
    assert_eq!(
        t["transcript"],
        s(&w.env.path().join("events.jsonl")),
        "{t}"
    );
}

#[test]
fn cline_hook_scripts_mark_a_turn_and_answer_cancel_false() {
    let w = World::new();
    let _d = w.env.start_daemon();
    let (proj, cwd) = project(&w, true);
    w.install(&["cline"]);
    let dir = w.home.join("Documents/Cline/Hooks");
    for (name, event) in [
        ("UserPromptSubmit", "turn-start"),
        ("TaskComplete", "turn-end"),
    ] {
        let text = std::fs::read_to_string(dir.join(name)).expect("hook script");
        let line = format!("{} {event} --from-hook=cline", ckptctl().display());
        assert!(text.lines().any(|l| l == line), "{name}: {text}");
    }
    let t = w.turn(
        &proj,
        "cline",
        &Hook::Exec(dir.join("UserPromptSubmit")),
        json!({"clineVersion": "3.40.0", "hookName": "UserPromptSubmit",
               "timestamp": "1764580000000", "taskId": "1764579990001",
               "workspaceRoots": [cwd], "userId": "u1",
               "userPromptSubmit": {"prompt": "add logging", "attachments": []}}),
        &Hook::Exec(dir.join("TaskComplete")),
        json!({"clineVersion": "3.40.0", "hookName": "TaskComplete",
               "timestamp": "1764580100000", "taskId": "1764579990001",
               "workspaceRoots": [cwd], "userId": "u1",
               "taskComplete": {"taskMetadata": {"taskId": "1764579990001", "ulid": ""}}}),
        "{\"cancel\": false}\n",
    );
    assert_eq!(t["label"], "add logging");
    assert_eq!(t["session"], "1764579990001");
}

#[test]
fn kiro_hooks_from_its_agent_file_mark_a_turn() {
    let w = World::new();
    let _d = w.env.start_daemon();
    let (proj, cwd) = project(&w, false);
    w.install(&["kiro"]);
    let cfg = json_file(&w.home.join(".kiro/agents/ckpt.json"));
    assert_eq!(cfg["name"], "ckpt", "{cfg}");
    let start = command_at(
        &cfg,
        "/hooks/userPromptSubmit/0/command",
        "turn-start",
        "kiro",
    );
    let end = command_at(&cfg, "/hooks/stop/0/command", "turn-end", "kiro");
    let t = w.turn(
        &proj,
        "kiro",
        &start,
        json!({"hook_event_name": "userPromptSubmit", "cwd": cwd,
               "prompt": "user's input prompt"}),
        &end,
        json!({"hook_event_name": "stop", "cwd": cwd}),
        "",
    );
    assert_eq!(t["label"], "user's input prompt");
    assert_eq!(t["session"], Value::Null, "Kiro sends no session");
}

#[test]
fn opencode_plugin_runs_this_ckptctl_with_the_payload_it_builds() {
    let w = World::new();
    let _d = w.env.start_daemon();
    let (proj, cwd) = project(&w, true);
    w.install(&["opencode"]);
    let plugin = std::fs::read_to_string(w.xdg.join("opencode/plugins/ckpt.js")).expect("plugin");
    let exe = ckptctl();
    assert!(
        plugin.contains(&format!("const CKPTCTL = {}", json!(s(&exe)))),
        "{plugin}"
    );
    assert!(
        plugin.contains(r#"["turn-start", "--from-hook=opencode"]"#),
        "{plugin}"
    );
    assert!(
        plugin.contains(r#"["turn-end", "--from-hook=opencode"]"#),
        "{plugin}"
    );
    let argv = |event: &str| {
        Hook::Argv(
            vec![
                s(&exe).to_string(),
                event.to_string(),
                "--from-hook=opencode".to_string(),
            ],
            cwd.clone(),
        )
    };
    let t = w.turn(
        &proj,
        "opencode",
        &argv("turn-start"),
        json!({"session_id": "ses_1", "prompt": "tidy up", "cwd": cwd}),
        &argv("turn-end"),
        json!({"session_id": "ses_1", "cwd": cwd}),
        "",
    );
    assert_eq!(t["label"], "tidy up");
    assert_eq!(t["session"], "ses_1");
}

/// A user's config before install, and what of it must survive.
struct Original {
    path: PathBuf,
    text: &'static str,
    /// Bytes of the original that install must keep verbatim.
    kept: &'static [&'static str],
}

const CLAUDE_SETTINGS: &str = r#"{
  "model": "opus",
  "hooks": {
    "UserPromptSubmit": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "echo mine"
          }
        ]
      }
    ],
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          {
            "type": "command",
            "command": "lint.sh"
          }
        ]
      }
    ]
  }
}
"#;

const GEMINI_SETTINGS: &str = r#"// my gemini settings
{
  /* the look */
  "theme": "Dracula",
  "hooks": {
    "BeforeAgent": [
      {
        // mine
        "hooks": [
          {
            "name": "mine",
            "type": "command",
            "command": "echo before"
          }
        ]
      }
    ]
  },
  "mcpServers": {
    "other": {
      "command": "other-mcp"
    }
  }
}
"#;

const CODEX_CONFIG: &str = r#"model = "o3"

# my servers
[mcp_servers.other]
command = "other"
args = ["x"]
"#;

const CURSOR_HOOKS: &str = r#"{
  "version": 1,
  "hooks": {
    "stop": [
      {
        "command": "./audit.sh"
      }
    ]
  }
}
"#;

const ZED_SETTINGS: &str = r#"// Zed settings
{
  "theme": "One Dark", // trailing comment
  /* servers */
  "context_servers": {
    "other": {
      "source": "custom",
      "command": "other"
    }
  }
}
"#;

const OPENCODE_CONFIG: &str = r#"{
  "$schema": "https://opencode.ai/config.json",
  // keep this
  "theme": "opencode"
}
"#;

const KIRO_AGENT: &str = r#"{
  "name": "dev",
  "tools": ["read", "write"],
  "hooks": {
    "agentSpawn": [
      {
        "command": "git status"
      }
    ]
  }
}
"#;

fn originals(w: &World) -> Vec<Original> {
    vec![
        Original {
            path: w.home.join(".claude/settings.json"),
            text: CLAUDE_SETTINGS,
            kept: &[
                "\"model\": \"opus\"",
                "\"command\": \"echo mine\"",
                "\"matcher\": \"Bash\"",
                "\"command\": \"lint.sh\"",
            ],
        },
        Original {
            path: w.home.join(".gemini/settings.json"),
            text: GEMINI_SETTINGS,
            kept: &[
                "// my gemini settings\n",
                "/* the look */",
                "// mine\n",
                "\"command\": \"echo before\"",
                "\"command\": \"other-mcp\"",
            ],
        },
        Original {
            path: w.home.join(".codex/config.toml"),
            text: CODEX_CONFIG,
            kept: &[
                "model = \"o3\"\n",
                "# my servers\n",
                "[mcp_servers.other]\n",
            ],
        },
        Original {
            path: w.home.join(".cursor/hooks.json"),
            text: CURSOR_HOOKS,
            kept: &["\"command\": \"./audit.sh\""],
        },
        Original {
            path: w.xdg.join("zed/settings.json"),
            text: ZED_SETTINGS,
            kept: &[
                "// Zed settings\n",
                "\"theme\": \"One Dark\", // trailing comment\n",
                "/* servers */",
                "\"command\": \"other\"",
            ],
        },
        Original {
            path: w.xdg.join("opencode/opencode.json"),
            text: OPENCODE_CONFIG,
            kept: &[
                "\"$schema\": \"https://opencode.ai/config.json\"",
                "// keep this\n",
            ],
        },
        Original {
            path: w.home.join(".kiro/agents/dev.json"),
            text: KIRO_AGENT,
            kept: &["\"name\": \"dev\"", "\"command\": \"git status\""],
        },
    ]
}

/// What install adds to each original (other agents' hooks stay beside
/// it).
fn added(path: &Path) -> &'static [&'static str] {
    let name = path.to_string_lossy();
    if name.ends_with(".claude/settings.json") {
        &[
            "turn-start --from-hook=claude-code",
            "turn-end --from-hook=claude-code",
        ]
    } else if name.ends_with(".gemini/settings.json") {
        &["turn-start --from-hook=gemini", "\"ckpt\""]
    } else if name.ends_with("config.toml") {
        &["[mcp_servers.ckpt]"]
    } else if name.ends_with(".cursor/hooks.json") {
        &[
            "turn-start --from-hook=cursor",
            "turn-end --from-hook=cursor",
        ]
    } else if name.ends_with("zed/settings.json") || name.ends_with("opencode.json") {
        &["\"ckpt\""]
    } else {
        &["turn-start --from-hook=kiro"]
    }
}

const ALL: [&str; 9] = [
    "claude-code",
    "codex",
    "gemini",
    "cursor",
    "copilot",
    "cline",
    "kiro",
    "opencode",
    "zed",
];

#[test]
fn install_keeps_the_users_config_and_uninstall_restores_it_byte_for_byte() {
    let w = World::new();
    let originals = originals(&w);
    for o in &originals {
        std::fs::create_dir_all(o.path.parent().unwrap()).unwrap();
        std::fs::write(&o.path, o.text).unwrap();
    }
    let before_home = snapshot(&w.home);
    let before_xdg = snapshot(&w.xdg);

    w.install(&ALL);
    for o in &originals {
        let now = std::fs::read_to_string(&o.path).unwrap();
        for kept in o.kept {
            assert!(
                now.contains(kept),
                "{}: lost {kept:?}:\n{now}",
                o.path.display()
            );
        }
        for add in added(&o.path) {
            assert!(
                now.contains(add),
                "{}: no {add:?}:\n{now}",
                o.path.display()
            );
        }
        let backup = o.path.with_file_name(format!(
            "{}.ckpt-backup",
            o.path.file_name().unwrap().to_string_lossy()
        ));
        assert_eq!(
            std::fs::read_to_string(&backup).ok().as_deref(),
            Some(o.text),
            "{} has no backup of the original",
            o.path.display()
        );
    }
    // The user's Claude hook and ours, side by side.
    let claude = json_file(&w.home.join(".claude/settings.json"));
    let prompt = claude["hooks"]["UserPromptSubmit"].as_array().unwrap();
    assert_eq!(prompt.len(), 2, "{claude}");
    assert_eq!(prompt[0]["hooks"][0]["command"], "echo mine");
    // Kiro's own agent file is written only when the user has none.
    assert!(!w.home.join(".kiro/agents/ckpt.json").exists());

    let after_home = snapshot(&w.home);
    let after_xdg = snapshot(&w.xdg);
    w.install(&ALL);
    assert_same_tree(
        "home after a second install",
        &after_home,
        &snapshot(&w.home),
    );
    assert_same_tree("xdg after a second install", &after_xdg, &snapshot(&w.xdg));

    w.uninstall(&ALL);
    for o in &originals {
        assert_eq!(
            std::fs::read_to_string(&o.path).unwrap(),
            o.text,
            "{} after uninstall",
            o.path.display()
        );
    }
    // What install created is gone, and so are the backups: each went
    // back in place. (Folders made at user level stay: an agent's config
    // dir is how it is detected.)
    let files_of = |t: &Tree| -> Vec<String> {
        t.iter()
            .filter(|(_, (n, _))| !matches!(n, Node::Dir { .. }))
            .map(|(k, _)| String::from_utf8_lossy(k).into_owned())
            .collect()
    };
    assert_eq!(
        files_of(&snapshot(&w.home)),
        files_of(&before_home),
        "files under HOME after uninstall"
    );
    assert_eq!(
        files_of(&snapshot(&w.xdg)),
        files_of(&before_xdg),
        "files under XDG_CONFIG_HOME after uninstall"
    );
}

fn backup_of(path: &Path) -> PathBuf {
    path.with_file_name(format!(
        "{}.ckpt-backup",
        path.file_name().unwrap().to_string_lossy()
    ))
}

/// A one-line settings file comes back as the same bytes (not
/// pretty-printed, no final newline added), and its backup goes; a second
/// install (nothing new) keeps the original in the backup, not the hooked
/// file.
#[test]
fn uninstall_gives_back_a_one_line_config_byte_for_byte_and_removes_its_backup() {
    let w = World::new();
    let settings = w.home.join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    let original = r#"{"model":"opus","hooks":{"Stop":[{"hooks":[{"type":"command","command":"say done"}]}]}}"#;
    std::fs::write(&settings, original).unwrap();
    let before = snapshot(&w.home);

    w.install(&["claude-code"]);
    assert_ne!(std::fs::read_to_string(&settings).unwrap(), original);
    // Claude Code's own `.claude.json` would have been rewritten by now:
    // the reinstall finds ckpt's entries in place.
    w.install(&["claude-code"]);
    assert_eq!(
        std::fs::read_to_string(backup_of(&settings)).unwrap(),
        original,
        "the backup holds the file as the user had it"
    );
    let out = w.uninstall(&["claude-code"]);
    assert_eq!(
        std::fs::read_to_string(&settings).unwrap(),
        original,
        "{out}"
    );
    assert!(!backup_of(&settings).exists(), "{out}");
    assert_same_tree("home after uninstall", &before, &snapshot(&w.home));
}

/// A settings file the user edited after install keeps those edits:
/// uninstall takes out only ckpt's entries, keeps the backup of the
/// original and says where it is.
#[test]
fn uninstall_keeps_the_users_edits_made_since_install_and_the_backup() {
    let w = World::new();
    let settings = w.home.join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    let original = "{\"model\":\"opus\"}";
    std::fs::write(&settings, original).unwrap();
    w.install(&["claude-code"]);
    let hooked = std::fs::read_to_string(&settings).unwrap();
    let edited = hooked.replacen("\"opus\"", "\"sonnet\"", 1);
    assert_ne!(edited, hooked, "{hooked}");
    std::fs::write(&settings, &edited).unwrap();

    let out = w.uninstall(&["claude-code"]);
    let now = json_file(&settings);
    assert_eq!(now, json!({"model": "sonnet"}), "{out}");
    assert_eq!(
        std::fs::read_to_string(backup_of(&settings)).unwrap(),
        original
    );
    assert!(
        out.contains("changed since install") && out.contains(s(&backup_of(&settings))),
        "{out}"
    );
}

/// `--project` uninstall leaves the project as it was: the files and the
/// folders (`.claude/`, `.gemini/`) install created are gone.
#[test]
fn project_uninstall_removes_the_folders_install_created() {
    let w = World::new();
    let proj = w.env.git_repo("app", &[("a.txt", b"a\n")]);
    let before = snapshot_work(&proj);
    w.ctl_ok(
        &proj,
        &["hooks", "install", "claude-code", "gemini", "--project"],
    );
    assert!(proj.join(".claude/settings.json").is_file());
    assert!(proj.join(".gemini/settings.json").is_file());
    w.ctl_ok(&proj, &["hooks", "uninstall", "--project"]);
    assert_same_tree("project after uninstall", &before, &snapshot_work(&proj));
}

/// A user-level uninstall in a project whose hooks are installed at
/// project level says where they are and how to remove them.
#[test]
fn user_uninstall_says_where_project_hooks_are_and_how_to_remove_them() {
    let w = World::new();
    let proj = w.env.git_repo("app", &[("a.txt", b"a\n")]);
    w.ctl_ok(&proj, &["hooks", "install", "claude-code", "--project"]);
    let out = w.ctl_ok(&proj, &["hooks", "uninstall"]);
    let root = proj.canonicalize().unwrap();
    assert!(
        out.contains(s(&root))
            && out.contains("claude-code")
            && out.contains("ckptctl hooks uninstall --project"),
        "{out}"
    );
    assert!(proj.join(".claude/settings.json").is_file(), "untouched");
    // Nothing there: nothing said.
    w.ctl_ok(&proj, &["hooks", "uninstall", "--project"]);
    let out = w.ctl_ok(&proj, &["hooks", "uninstall"]);
    assert!(!out.contains("--project"), "{out}");
}

#[test]
fn uninstall_removes_the_files_install_created() {
    let w = World::new();
    w.install(&ALL);
    assert!(w.home.join(".claude.json").is_file());
    assert!(w.home.join("Documents/Cline/Hooks/TaskComplete").is_file());
    assert!(w.xdg.join("opencode/plugins/ckpt.js").is_file());
    w.uninstall(&[]);
    // A removed file held only ckpt's entries: no backup of it is left.
    let left: Vec<String> = [&w.home, &w.xdg]
        .iter()
        .flat_map(|root| {
            snapshot(root)
                .into_iter()
                .filter(|(_, (n, _))| !matches!(n, Node::Dir { .. }))
                .map(|(k, _)| String::from_utf8_lossy(&k).into_owned())
        })
        .collect();
    assert!(left.is_empty(), "left after uninstall: {left:?}");
    assert!(!w.home.join(".claude.json").exists());
}

#[test]
fn a_config_that_cannot_be_parsed_stops_the_whole_install() {
    let w = World::new();
    let settings = w.home.join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(&settings, "{\"hooks\": ").unwrap();
    let before = snapshot(&w.home);
    let out = w.ctl(w.env.path(), &["hooks", "install", "claude-code", "gemini"]);
    assert_ne!(out.code(), 0, "{out:?}");
    assert!(out.stderr.contains(s(&settings)), "{}", out.stderr);
    assert!(out.stderr.contains("left unchanged"), "{}", out.stderr);
    assert_same_tree("home after a refused install", &before, &snapshot(&w.home));
    assert!(list(&w.xdg).is_empty());
}

#[test]
fn dry_run_writes_nothing_and_shows_the_diff() {
    let w = World::new();
    let out = w.ctl_ok(
        w.env.path(),
        &["hooks", "install", "claude-code", "--dry-run"],
    );
    let settings = w.home.join(".claude/settings.json");
    assert!(out.contains(s(&settings)), "{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with('+') && l.contains("turn-start --from-hook=claude-code")),
        "{out}"
    );
    assert!(list(&w.home).is_empty(), "{:?}", list(&w.home));
    let doc = w.ctl_json(w.env.path(), &["hooks", "install", "gemini", "--dry-run"]);
    assert_eq!(doc["dry_run"], true, "{doc}");
    assert_eq!(doc["files"][0]["change"], "created", "{doc}");
    assert!(list(&w.home).is_empty(), "{:?}", list(&w.home));
}

#[test]
fn project_install_writes_under_the_git_top_level_and_status_says_where() {
    let w = World::new();
    let proj = w.env.git_repo("app", &[("sub/a.txt", b"a\n")]);
    let sub = proj.join("sub");
    w.ctl_ok(&sub, &["hooks", "install", "claude-code", "--project"]);
    assert!(proj.join(".claude/settings.json").is_file());
    assert!(proj.join(".mcp.json").is_file());
    assert!(!sub.join(".claude").exists());
    assert!(list(&w.home).is_empty(), "{:?}", list(&w.home));

    let row = |doc: &Value, agent: &str| -> Value {
        doc["agents"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["agent"] == agent)
            .unwrap_or_else(|| panic!("no {agent}: {doc}"))
            .clone()
    };
    let doc = w.ctl_json(&sub, &["hooks", "status"]);
    let root = proj.canonicalize().unwrap();
    assert_eq!(doc["project"], s(&root), "{doc}");
    let claude = row(&doc, "claude-code");
    assert_eq!(claude["project"], "yes", "{claude}");
    assert_eq!(claude["user"], "no", "{claude}");
    assert_eq!(
        claude["detected"],
        Value::Null,
        "nothing under HOME: {claude}"
    );
    assert_eq!(row(&doc, "gemini")["project"], "no");

    w.install(&["claude-code"]);
    let doc = w.ctl_json(&sub, &["hooks", "status"]);
    let claude = row(&doc, "claude-code");
    assert_eq!(claude["user"], "yes", "{claude}");
    assert_eq!(claude["project"], "yes", "{claude}");
    assert_eq!(
        claude["detected"],
        s(&w.home.join(".claude")),
        "its config dir now exists: {claude}"
    );
}

#[test]
fn install_without_agents_installs_only_the_detected_ones() {
    let w = World::new();
    let out = w.ctl(w.env.path(), &["hooks", "install"]);
    assert_ne!(out.code(), 0, "nothing to detect: {out:?}");
    assert!(out.stderr.contains("found no agent"), "{}", out.stderr);

    std::fs::create_dir(w.home.join(".gemini")).unwrap();
    let doc = w.ctl_json(w.env.path(), &["hooks", "status"]);
    for r in doc["agents"].as_array().unwrap() {
        assert_eq!(
            r["detected"].is_null(),
            r["agent"] != "gemini",
            "only gemini has a config dir: {r}"
        );
    }
    let out = w.install(&[]);
    let found: Vec<&str> = out
        .lines()
        .skip_while(|l| *l != "found:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .collect();
    assert_eq!(found.len(), 1, "{out}");
    assert!(found[0].trim_start().starts_with("gemini "), "{out}");
    assert_eq!(list(&w.home), [".gemini", ".gemini/settings.json"]);
    assert!(list(&w.xdg).is_empty(), "{:?}", list(&w.xdg));
}

/// Hook failures never break the agent: exit 0, nothing on stdout, one
/// line on stderr; `hooks status` and `status` show the failure until a
/// call succeeds.
#[test]
fn failing_hooks_exit_0_and_show_in_status_until_one_succeeds() {
    let w = World::new();
    let _d = w.env.start_daemon();
    let (proj, cwd) = project(&w, true);
    let unwatched = w.env.git_repo("elsewhere", &[("x", b"x\n")]);
    w.install(&["gemini", "kiro"]);
    let gemini = json_file(&w.home.join(".gemini/settings.json"));
    let gemini_start = command_at(
        &gemini,
        "/hooks/BeforeAgent/0/hooks/0/command",
        "turn-start",
        "gemini",
    );
    let kiro = json_file(&w.home.join(".kiro/agents/ckpt.json"));
    let kiro_start = command_at(
        &kiro,
        "/hooks/userPromptSubmit/0/command",
        "turn-start",
        "kiro",
    );
    let kiro_end = command_at(&kiro, "/hooks/stop/0/command", "turn-end", "kiro");

    let quiet_failure = |hook: &Hook, input: &[u8]| {
        let out = w.call_raw(hook, input);
        assert!(out.status.success(), "{out:?}");
        assert_eq!(out.stdout, "", "{out:?}");
        assert_eq!(out.stderr.lines().count(), 1, "{out:?}");
        assert!(out.stderr.ends_with('\n'), "{out:?}");
        out.stderr
    };
    let row = |agent: &str| -> Value {
        let doc = w.ctl_json(&proj, &["hooks", "status"]);
        doc["agents"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["agent"] == agent)
            .unwrap()
            .clone()
    };

    // (a) Not JSON.
    let err = quiet_failure(&gemini_start, b"{\"session_id\": ");
    assert!(err.contains("gemini hook (turn-start)"), "{err}");
    let g = row("gemini");
    assert_eq!(g["failing"], true, "{g}");
    assert!(
        g["last_error"]["error"]
            .as_str()
            .is_some_and(|e| e.contains("not JSON")),
        "{g}"
    );
    assert_eq!(g["last_error"]["event"], "turn-start", "{g}");

    // (b) turn-end where no project is watched.
    let payload = json!({"hook_event_name": "stop", "cwd": unwatched.canonicalize().unwrap()});
    quiet_failure(&kiro_end, payload.to_string().as_bytes());
    let k = row("kiro");
    assert_eq!(k["failing"], true, "{k}");
    assert_eq!(k["last_error"]["event"], "turn-end", "{k}");
    assert!(k["last_error"]["error"].is_string(), "{k}");

    let text = w.ctl_ok(&proj, &["status"]);
    for agent in ["gemini", "kiro"] {
        assert!(
            text.lines()
                .any(|l| l.starts_with(&format!("hook {agent}: FAILED "))),
            "{agent}: {text}"
        );
    }
    let status = w.ctl_json(&proj, &["status"]);
    let failing: Vec<&str> = status["failing_hooks"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["agent"].as_str())
        .collect();
    assert_eq!(failing, ["gemini", "kiro"], "{status}");
    let hooks_text = w.ctl_ok(&proj, &["hooks", "status"]);
    assert!(
        hooks_text
            .lines()
            .any(|l| l.starts_with("kiro ") && l.contains("FAILED")),
        "{hooks_text}"
    );

    // A later call that works clears it.
    w.turn(
        &proj,
        "kiro",
        &kiro_start,
        json!({"hook_event_name": "userPromptSubmit", "cwd": cwd, "prompt": "p"}),
        &kiro_end,
        json!({"hook_event_name": "stop", "cwd": cwd}),
        "",
    );
    let k = row("kiro");
    assert_eq!(k["failing"], false, "{k}");
    assert!(
        k["last_error"].is_object(),
        "the error is still on record: {k}"
    );
    assert_eq!(k["last_ok"]["event"], "turn-end", "{k}");
    assert_eq!(
        row("gemini")["failing"],
        true,
        "gemini's own call still failed"
    );
    let text = w.ctl_ok(&proj, &["status"]);
    assert!(!text.contains("hook kiro:"), "{text}");
    assert!(text.contains("hook gemini: FAILED"), "{text}");
}

/// `ckptctl hooks` runs `ckpt-hooks` from next to itself; without it, the
/// error says which file is missing.
#[test]
fn hooks_without_ckpt_hooks_next_to_ckptctl_says_so() {
    let env = Env::new();
    let lonely = env.dir("lonely");
    let ctl = lonely.join("ckptctl");
    std::fs::copy(bin("ckptctl"), &ctl).expect("copy ckptctl alone");
    let out = run(std::process::Command::new(&ctl)
        .args(["hooks", "status"])
        .current_dir(env.path()));
    assert_eq!(out.code(), 1, "{}", out.stderr);
    let expected = format!(
        "the hooks installer {} is missing",
        lonely.join("ckpt-hooks").display()
    );
    assert!(out.stderr.contains(&expected), "{}", out.stderr);
}

/// The hook of `event` in an agent's config, checked to run `args` of this
/// ckptctl.
fn hook_of(cfg: &Value, event: &str, args: &str, agent: &str) -> Hook {
    command_at(
        cfg,
        &format!("/hooks/{event}/0/hooks/0/command"),
        args,
        agent,
    )
}

/// (path, shared) of a turn's entries, sorted.
fn entries(w: &World, proj: &Path, turn: &Value) -> Vec<(String, bool)> {
    let show = w.ctl_json(proj, &["show", &turn.to_string()]);
    let mut v: Vec<(String, bool)> = show["turn"]["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| {
            let path = e["path"].as_str().expect("path").to_string();
            (path, e["shared"].as_bool().expect("shared"))
        })
        .collect();
    v.sort();
    v
}

/// The one turn of `session` in `log`.
fn turn_of(w: &World, proj: &Path, session: &str) -> Value {
    let log = w.ctl_json(proj, &["log", "--session", session]);
    let turns = log["turns"].as_array().expect("turns");
    assert_eq!(turns.len(), 1, "{log}");
    turns[0].clone()
}

/// Runs a hook that must succeed quietly.
fn quiet(w: &World, hook: &Hook, payload: &Value) {
    let out = w.call(hook, payload);
    assert!(out.status.success(), "{payload}: {out:?}");
    assert_eq!(out.stdout, "", "{payload}: {out:?}");
    assert_eq!(out.stderr, "", "{payload}: {out:?}");
}

fn agent_row(w: &World, dir: &Path, agent: &str) -> Value {
    let doc = w.ctl_json(dir, &["hooks", "status"]);
    doc["agents"]
        .as_array()
        .expect("agents")
        .iter()
        .find(|r| r["agent"] == agent)
        .cloned()
        .unwrap_or_else(|| panic!("no {agent} in {doc}"))
}

/// A failing tool call fires Claude Code's `PostToolUseFailure` instead of
/// `PostToolUse`: it closes the tool window, so another session's later
/// change is not put in this session's turn alone.
#[test]
fn claude_code_failed_tool_call_closes_its_tool_window() {
    let w = World::new();
    let _d = w.env.start_daemon();
    let (proj, cwd) = project(&w, true);
    w.install(&["claude-code"]);
    let cfg = json_file(&w.home.join(".claude/settings.json"));
    let start = hook_of(&cfg, "UserPromptSubmit", "turn-start", "claude-code");
    let pre = hook_of(&cfg, "PreToolUse", "tool-start", "claude-code");
    let failed = hook_of(&cfg, "PostToolUseFailure", "tool-end", "claude-code");
    let base = json!({"session_id": "A", "transcript_path": w.env.path().join("a.jsonl"),
                      "cwd": cwd, "permission_mode": "default"});
    let with = |extra: Value| {
        let mut p = base.clone();
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        p
    };
    quiet(
        &w,
        &start,
        &with(json!({"hook_event_name": "UserPromptSubmit", "prompt": "p"})),
    );
    w.ctl_ok(&proj, &["turn-start", "--session", "B"]);
    let tool = json!({"tool_name": "Bash", "tool_input": {"command": "false"},
                      "tool_use_id": "toolu_1"});
    quiet(
        &w,
        &pre,
        &with(json!({"hook_event_name": "PreToolUse"})).merge(&tool),
    );
    // The payload the 2.1.197 CLI sends (`rYt` in its bundle).
    quiet(
        &w,
        &failed,
        &with(
            json!({"hook_event_name": "PostToolUseFailure", "error": "Exit code 1",
                     "is_interrupt": false, "duration_ms": 12}),
        )
        .merge(&tool),
    );
    // No tool runs now: B's `sed -i` belongs to both open turns.
    sh(&proj, "echo b > b.txt");
    w.ctl_ok(&proj, &["turn-end", "--session", "A"]);
    w.ctl_ok(&proj, &["turn-end", "--session", "B"]);
    let b = turn_of(&w, &proj, "B");
    assert_eq!(
        entries(&w, &proj, &b["id"]),
        [("b.txt".to_string(), true)],
        "{b}"
    );
}

/// `Value` objects merged (the tool fields of a payload).
trait Merge {
    fn merge(self, other: &Value) -> Value;
}

impl Merge for Value {
    fn merge(mut self, other: &Value) -> Value {
        let add = other.as_object().expect("an object").clone();
        self.as_object_mut().expect("an object").extend(add);
        self
    }
}

/// An interrupted turn fires only the session's end (Claude Code's and
/// Gemini CLI's `SessionEnd`, Codex's `SessionEnd` and `Interrupt`): it
/// closes the session's turn and its tool window; with no turn open it is
/// no failure.
#[test]
fn session_end_hooks_close_the_open_turn_and_are_no_failure_without_one() {
    let w = World::new();
    let _d = w.env.start_daemon();
    let (proj, cwd) = project(&w, true);
    w.install(&["claude-code", "codex", "gemini"]);
    let claude = json_file(&w.home.join(".claude/settings.json"));
    let codex = json_file(&w.home.join(".codex/hooks.json"));
    let gemini = json_file(&w.home.join(".gemini/settings.json"));
    let end = "turn-end --if-open";
    let cases = [
        (
            "claude-code",
            hook_of(&claude, "SessionEnd", end, "claude-code"),
            hook_of(&claude, "PreToolUse", "tool-start", "claude-code"),
            json!({"session_id": "S1", "transcript_path": "/t/s1.jsonl", "cwd": cwd,
                   "hook_event_name": "SessionEnd", "reason": "other"}),
        ),
        (
            "codex",
            hook_of(&codex, "SessionEnd", end, "codex"),
            hook_of(&codex, "PreToolUse", "tool-start", "codex"),
            json!({"session_id": "S2", "transcript_path": null, "cwd": cwd,
                   "hook_event_name": "SessionEnd", "reason": "other"}),
        ),
        (
            "codex",
            hook_of(&codex, "Interrupt", end, "codex"),
            hook_of(&codex, "PreToolUse", "tool-start", "codex"),
            json!({"session_id": "S3", "transcript_path": null, "cwd": cwd,
                   "hook_event_name": "Interrupt", "model": "gpt-5",
                   "permission_mode": "default", "turn_id": "t1"}),
        ),
        (
            "gemini",
            hook_of(&gemini, "SessionEnd", end, "gemini"),
            hook_of(&gemini, "BeforeTool", "tool-start", "gemini"),
            json!({"session_id": "S4", "transcript_path": "", "cwd": cwd,
                   "hook_event_name": "SessionEnd", "timestamp": "2026-12-01T10:00:00Z",
                   "reason": "exit"}),
        ),
    ];
    for (i, (agent, session_end, tool_start, payload)) in cases.iter().enumerate() {
        let session = payload["session_id"].as_str().unwrap();
        let file = format!("f{i}.txt");
        w.ctl_ok(&proj, &["turn-start", "--session", session]);
        w.ctl_ok(&proj, &["turn-start", "--session", "other"]);
        // The tool call the interrupt cut short.
        quiet(
            &w,
            tool_start,
            &payload.clone().merge(&json!({"tool_name": "x"})),
        );
        sh(&proj, &format!("echo x > {file}"));
        quiet(&w, session_end, payload);
        let t = turn_of(&w, &proj, session);
        assert_eq!(t["status"], "closed", "{agent}: {t}");
        assert_eq!(
            entries(&w, &proj, &t["id"]),
            [(file.clone(), false)],
            "{agent}"
        );
        // The window went with the turn: the user's edit now is the other
        // session's (the only turn open), not lost to a closed turn.
        sh(&proj, &format!("echo y > after{i}.txt"));
        w.ctl_ok(&proj, &["turn-end", "--session", "other"]);
        let log = w.ctl_json(&proj, &["log", "--session", "other"]);
        let other = &log["turns"][0];
        assert!(
            entries(&w, &proj, &other["id"]).contains(&(format!("after{i}.txt"), false)),
            "{agent}: {other}"
        );

        // Again, with nothing open: not a failure anywhere.
        quiet(&w, session_end, payload);
        let row = agent_row(&w, &proj, agent);
        assert_eq!(row["failing"], false, "{agent}: {row}");
        assert_eq!(row["last_ok"]["event"], "session-end", "{agent}: {row}");
    }
    let text = w.ctl_ok(&proj, &["status"]);
    assert!(!text.contains("FAILED"), "{text}");
    let text = w.ctl_ok(&proj, &["hooks", "status"]);
    assert!(!text.contains("FAILED"), "{text}");
    // In a folder never watched there is no turn to close either.
    let elsewhere = w.env.git_repo("elsewhere", &[("x", b"x\n")]);
    let cwd = elsewhere.canonicalize().unwrap();
    quiet(
        &w,
        &cases[0].1,
        &cases[0].3.clone().merge(&json!({"cwd": cwd})),
    );
    assert_eq!(agent_row(&w, &proj, "claude-code")["failing"], false);
}

/// With `CLAUDE_CONFIG_DIR` set, Claude Code reads `settings.json` and
/// `.claude.json` there and nowhere else: install, status and uninstall
/// go there too.
#[test]
fn claude_config_dir_is_where_install_status_and_uninstall_go() {
    let w = World::new();
    let dir = w.env.dir("claude-config");
    let ctl = |args: &[&str]| {
        let mut cmd = w.env.ctl_cmd(w.env.path(), args);
        w.isolate(&mut cmd).env("CLAUDE_CONFIG_DIR", &dir);
        let out = run(&mut cmd);
        assert!(out.status.success(), "{args:?}: {out:?}");
        out.stdout
    };
    // Found by its config dir alone.
    let found = ctl(&["hooks", "install"]);
    assert!(found.contains("claude-code"), "{found}");
    let settings = json_file(&dir.join("settings.json"));
    hook_of(&settings, "Stop", "turn-end", "claude-code");
    let global = json_file(&dir.join(".claude.json"));
    assert_eq!(
        global["mcpServers"]["ckpt"]["args"],
        json!(["mcp"]),
        "{global}"
    );
    assert!(!w.home.join(".claude").exists());
    assert!(!w.home.join(".claude.json").exists());
    let status: Value = serde_json::from_str(&ctl(&["--json", "hooks", "status"])).unwrap();
    let row = status["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["agent"] == "claude-code")
        .unwrap()
        .clone();
    assert_eq!(row["user"], "yes", "{row}");
    assert_eq!(agent_row(&w, w.env.path(), "claude-code")["user"], "no");
    ctl(&["hooks", "uninstall", "claude-code"]);
    assert!(!dir.join("settings.json").exists());
    assert!(!dir.join(".claude.json").exists());
}

/// Claude Code rewrites `~/.claude.json` without a final newline and
/// Gemini CLI its `settings.json` in its own layout: ckpt's entries are
/// still there, so status says installed and a second install writes
/// nothing.
#[test]
fn configs_the_agent_rewrote_stay_installed_and_are_not_rewritten() {
    let w = World::new();
    w.install(&["claude-code", "gemini"]);
    let claude = w.home.join(".claude.json");
    let gemini = w.home.join(".gemini/settings.json");
    let compact = serde_json::to_string(&json_file(&claude)).unwrap();
    std::fs::write(&claude, &compact).unwrap();
    let pretty = serde_json::to_string_pretty(&json_file(&gemini)).unwrap();
    std::fs::write(&gemini, &pretty).unwrap();
    for agent in ["claude-code", "gemini"] {
        let row = agent_row(&w, w.env.path(), agent);
        assert_eq!(row["user"], "yes", "{row}");
    }
    let again = w.install(&["claude-code", "gemini"]);
    assert!(!again.contains("updated"), "{again}");
    assert_eq!(std::fs::read_to_string(&claude).unwrap(), compact);
    assert_eq!(std::fs::read_to_string(&gemini).unwrap(), pretty);
}

/// `claude -p` exits ~30 ms after starting a `StopFailure` hook, and a
/// supervisor may then kill the agent's whole process group: the hook's
/// turn-end leaves that group first thing and still closes the turn.
#[test]
fn a_turn_end_survives_its_agents_process_group_being_killed() {
    use std::io::Write;
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;

    let w = World::new();
    let _d = w.env.start_daemon();
    let (proj, cwd) = project(&w, true);
    w.install(&["claude-code"]);
    let cfg = json_file(&w.home.join(".claude/settings.json"));
    let Hook::Sh(line) = hook_of(&cfg, "StopFailure", "turn-end", "claude-code") else {
        unreachable!()
    };
    w.ctl_ok(&proj, &["turn-start", "--session", "S"]);
    sh(&proj, "echo x > x.txt");

    // The agent leads its own process group and starts the hook with
    // `sh -c`, as Claude Code does; the hook waits for its payload.
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c")
        .arg("/bin/sh -c \"$HOOK\"; :")
        .env("HOOK", &line)
        .env("CKPT_SOCKET", &w.env.socket)
        .env("CKPT_DATA_DIR", &w.env.data)
        .env("CKPT_NO_AUTOSTART", "1")
        .current_dir(w.env.path())
        .stdin(Stdio::piped())
        .process_group(0);
    w.isolate(&mut cmd);
    let mut agent = cmd.spawn().expect("start the agent");
    let group = agent.id() as i32;
    let mut stdin = agent.stdin.take().expect("stdin");
    let mut hook = None;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::time::Instant::now() < deadline {
        hook = descendants(group as u32)
            .into_iter()
            .find(|&p| stat(p).is_some_and(|(comm, pgrp)| comm == "ckptctl" && pgrp == p));
        if hook.is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    // SAFETY: kill has no memory preconditions; the group is the agent's.
    unsafe { libc::kill(-group, libc::SIGKILL) };
    let _ = agent.wait();
    assert!(
        hook.is_some(),
        "the hook never left the agent's process group"
    );
    let payload = json!({"session_id": "S", "transcript_path": "/t/s.jsonl", "cwd": cwd,
                         "hook_event_name": "StopFailure", "error": "rate_limit"});
    stdin
        .write_all(payload.to_string().as_bytes())
        .expect("the hook is alive");
    drop(stdin);
    wait_for(
        "the turn closed",
        std::time::Duration::from_secs(20),
        || turn_of(&w, &proj, "S")["status"] == "closed",
    );
    let t = turn_of(&w, &proj, "S");
    assert_eq!(entries(&w, &proj, &t["id"]), [("x.txt".to_string(), false)]);
    assert_eq!(agent_row(&w, &proj, "claude-code")["failing"], false);
}

/// Every process below `pid` (from /proc).
fn descendants(pid: u32) -> Vec<u32> {
    let mut all: Vec<(u32, u32)> = Vec::new();
    for e in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Some(p) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(text) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        let Some(rest) = text.rsplit_once(") ").map(|(_, r)| r) else {
            continue;
        };
        let ppid = rest.split(' ').nth(1).and_then(|s| s.parse().ok());
        if let Some(ppid) = ppid {
            all.push((p, ppid));
        }
    }
    let mut out = vec![pid];
    let mut i = 0;
    while i < out.len() {
        let parent = out[i];
        out.extend(all.iter().filter(|(_, pp)| *pp == parent).map(|(p, _)| *p));
        i += 1;
    }
    out
}

/// A process's command name and process group.
fn stat(pid: u32) -> Option<(String, u32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (head, rest) = text.rsplit_once(") ")?;
    let comm = head.split_once(" (")?.1.to_string();
    let pgrp = rest.split(' ').nth(2)?.parse().ok()?;
    Some((comm, pgrp))
}

/// A sub-agent (Claude Code's Agent tool) sends its tool hooks with its
/// parent's `session_id` and an `agent_id` of its own: its changes belong
/// to the parent session's turn, alone while its tools run, as the
/// parent's own tool calls do.
#[test]
fn a_sub_agents_changes_belong_to_its_parent_sessions_turn() {
    let w = World::new();
    let _d = w.env.start_daemon();
    let (proj, cwd) = project(&w, true);
    w.install(&["claude-code"]);
    let cfg = json_file(&w.home.join(".claude/settings.json"));
    let start = hook_of(&cfg, "UserPromptSubmit", "turn-start", "claude-code");
    let stop = hook_of(&cfg, "Stop", "turn-end", "claude-code");
    let pre = hook_of(&cfg, "PreToolUse", "tool-start", "claude-code");
    let post = hook_of(&cfg, "PostToolUse", "tool-end", "claude-code");
    let parent = json!({"session_id": "P", "transcript_path": "/t/p.jsonl", "cwd": cwd,
                        "permission_mode": "default"});
    // The common fields of a sub-agent's hooks (`xd` in the 2.1.197 bundle).
    let sub = parent
        .clone()
        .merge(&json!({"agent_id": "a5f0c3", "agent_type": "general-purpose"}));
    let agent_tool = json!({"tool_name": "Agent", "tool_use_id": "toolu_A",
        "tool_input": {"description": "edit", "prompt": "write c", "subagent_type": "general-purpose"}});
    let write = json!({"tool_name": "Write", "tool_use_id": "toolu_W",
                       "tool_input": {"file_path": "c.txt", "content": "c"}});

    quiet(
        &w,
        &start,
        &parent
            .clone()
            .merge(&json!({"hook_event_name": "UserPromptSubmit", "prompt": "p"})),
    );
    w.ctl_ok(&proj, &["turn-start", "--session", "Q"]);
    let event = |name: &str| json!({ "hook_event_name": name });
    quiet(
        &w,
        &pre,
        &parent
            .clone()
            .merge(&event("PreToolUse"))
            .merge(&agent_tool),
    );
    quiet(
        &w,
        &pre,
        &sub.clone().merge(&event("PreToolUse")).merge(&write),
    );
    sh(&proj, "echo c > c.txt");
    quiet(
        &w,
        &post,
        &sub.clone().merge(&event("PostToolUse")).merge(&write),
    );
    // Between the sub-agent's tool calls, the Agent tool still runs.
    sh(&proj, "echo d > d.txt");
    quiet(
        &w,
        &post,
        &parent
            .clone()
            .merge(&event("PostToolUse"))
            .merge(&agent_tool),
    );
    sh(&proj, "echo e > e.txt");
    quiet(&w, &stop, &parent.clone().merge(&event("Stop")));
    w.ctl_ok(&proj, &["turn-end", "--session", "Q"]);

    let p = turn_of(&w, &proj, "P");
    assert_eq!(
        entries(&w, &proj, &p["id"]),
        [
            ("c.txt".to_string(), false),
            ("d.txt".to_string(), false),
            ("e.txt".to_string(), true)
        ],
        "{p}"
    );
    let q = turn_of(&w, &proj, "Q");
    assert_eq!(entries(&w, &proj, &q["id"]), [("e.txt".to_string(), true)]);
}

/// What Codex gives a stdio MCP server: only these of its own variables,
/// plus those the server's `env_vars` names (openai/codex
/// `codex-rs/rmcp-client/src/utils.rs`, `DEFAULT_ENV_VARS`).
const CODEX_MCP_ENV: [&str; 10] = [
    "HOME", "LOGNAME", "PATH", "SHELL", "USER", "LANG", "LC_ALL", "TERM", "TMPDIR", "TZ",
];

/// Codex starts `ckptctl mcp` with a stripped environment: the entry
/// install writes passes what ckpt needs through `env_vars`, so the server
/// reaches the user's daemon (and no second one is started).
#[test]
fn codex_mcp_server_in_codexs_stripped_environment_reaches_the_daemon() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;

    let w = World::new();
    let d = w.env.start_daemon();
    let (proj, _) = project(&w, true);
    w.install(&["codex"]);
    let config: toml_edit::DocumentMut = std::fs::read_to_string(w.home.join(".codex/config.toml"))
        .unwrap()
        .parse()
        .unwrap();
    let server = &config["mcp_servers"]["ckpt"];
    let names: Vec<String> = server["env_vars"]
        .as_array()
        .unwrap_or_else(|| panic!("no env_vars in {config}"))
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    for needed in [
        "CKPT_SOCKET",
        "CKPT_DATA_DIR",
        "XDG_RUNTIME_DIR",
        "XDG_DATA_HOME",
    ] {
        assert!(names.iter().any(|n| n == needed), "{needed}: {names:?}");
    }
    // The environment Codex itself runs in: the user's, with ckpt's socket.
    let tmp = w.env.dir("tmp");
    let user_env: Vec<(&str, std::ffi::OsString)> = vec![
        ("HOME", w.home.clone().into()),
        ("PATH", w.bin.clone().into()),
        ("TMPDIR", tmp.clone().into()),
        ("CKPT_SOCKET", w.env.socket.clone().into()),
        ("CKPT_DATA_DIR", w.env.data.clone().into()),
        ("UNRELATED", "x".into()),
    ];
    let mut cmd = Command::new(server["command"].as_str().unwrap());
    cmd.args(
        server["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap()),
    )
    .env_clear()
    .current_dir(&proj)
    .stdin(Stdio::piped())
    .stdout(Stdio::piped());
    for (k, v) in &user_env {
        if CODEX_MCP_ENV.contains(k) || names.iter().any(|n| n == k) {
            cmd.env(k, v);
        }
    }
    let mut child = cmd.spawn().expect("start the MCP server");
    let mut stdin = child.stdin.take().unwrap();
    for msg in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "codex-mcp-client", "version": "0.171.0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": "status", "arguments": {}}}),
    ] {
        writeln!(stdin, "{msg}").unwrap();
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let reply = loop {
        let line = rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("a reply to the status call");
        let msg: Value = serde_json::from_str(&line).unwrap();
        if msg["id"] == 2 {
            break msg;
        }
    };
    drop(stdin);
    let _ = wait_timeout(&mut child, std::time::Duration::from_secs(30));
    assert_ne!(reply["result"]["isError"], true, "{reply}");
    let text = reply["result"]["content"][0]["text"].as_str().unwrap();
    let status: Value = serde_json::from_str(text).unwrap();
    assert_eq!(status["daemon"]["pid"], d.pid(), "{status}");
    assert!(
        std::fs::read_dir(&tmp).unwrap().next().is_none(),
        "nothing left in TMPDIR"
    );
}

/// Codex runs a hook only once the user trusted it in `/hooks`, by a hash
/// of its command: `hooks status` says when ckpt's are not trusted, and
/// after a moved ckptctl changed them, that trust is needed again.
#[test]
fn codex_hooks_status_says_until_codex_trusts_them_and_again_after_a_move() {
    let w = World::new();
    w.install(&["codex"]);
    let hooks_file = w.home.join(".codex/hooks.json");
    let pending = |w: &World| agent_row(w, w.env.path(), "codex")["pending"]["user"].clone();
    assert_eq!(
        pending(&w),
        "installed, not trusted yet — open `/hooks` in Codex"
    );
    let text = w.ctl_ok(w.env.path(), &["hooks", "status"]);
    assert!(
        text.contains("codex (user): installed, not trusted yet — open `/hooks` in Codex"),
        "{text}"
    );

    trust_in_codex(&hooks_file, &hooks_file, &w.home.join(".codex/config.toml"));
    assert_eq!(pending(&w), Value::Null);
    let text = w.ctl_ok(w.env.path(), &["hooks", "status"]);
    assert!(!text.contains("codex (user)"), "{text}");

    // The same binaries elsewhere: the hooks now run another command.
    let moved = w.env.dir("moved");
    for name in ["ckptctl", "ckpt-hooks"] {
        std::fs::copy(bin(name), moved.join(name)).unwrap();
    }
    let moved_ctl = |args: &[&str]| {
        let mut cmd = Command::new(moved.join("ckptctl"));
        cmd.args(args)
            .current_dir(w.env.path())
            .env("CKPT_DATA_DIR", &w.env.data);
        let out = run(w.isolate(&mut cmd));
        assert!(out.status.success(), "{out:?}");
        out.stdout
    };
    let installed = moved_ctl(&["hooks", "install", "codex"]);
    assert!(installed.contains("trust it again"), "{installed}");
    // Status as the moved ckptctl sees it: its hooks are the installed ones.
    let doc: Value = serde_json::from_str(&moved_ctl(&["--json", "hooks", "status"])).unwrap();
    let row = doc["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["agent"] == "codex")
        .unwrap()
        .clone();
    assert_eq!(row["user"], "yes", "{row}");
    assert!(
        row["pending"]["user"]
            .as_str()
            .is_some_and(|p| p.contains("changed since you trusted it")),
        "{row}"
    );
}

/// What Codex's `/hooks` writes to `config` when the user trusts each hook
/// in `hooks_file`, keyed by `key_path` (the path Codex loaded it by).
fn trust_in_codex(hooks_file: &Path, key_path: &Path, config: &Path) {
    let hooks = json_file(hooks_file);
    let mut state = String::new();
    for (event, groups) in hooks["hooks"].as_object().unwrap() {
        let snake: String = event
            .chars()
            .enumerate()
            .flat_map(|(i, c)| {
                let sep = (i > 0 && c.is_ascii_uppercase()).then_some('_');
                sep.into_iter().chain([c.to_ascii_lowercase()])
            })
            .collect();
        let h = &groups[0]["hooks"][0];
        let identity = format!(
            r#"{{"event_name":"{snake}","hooks":[{{"async":false,"command":{},"timeout":{},"type":"command"}}]}}"#,
            h["command"], h["timeout"]
        );
        state += &format!(
            "[hooks.state.\"{}:{snake}:0:0\"]\ntrusted_hash = \"sha256:{}\"\n\n",
            key_path.display(),
            sha256_hex(identity.as_bytes())
        );
    }
    let text = std::fs::read_to_string(config).unwrap();
    std::fs::write(config, format!("{text}\n{state}")).unwrap();
}

/// Codex may key its trust by the real path of `CODEX_HOME`: a home
/// reached through a symlink still counts as trusted.
#[test]
fn codex_trust_keyed_by_the_real_path_counts() {
    let w = World::new();
    let link = w.env.path().join("home-link");
    std::os::unix::fs::symlink(&w.home, &link).unwrap();
    let ctl = |args: &[&str]| {
        let mut cmd = w.env.ctl_cmd(w.env.path(), args);
        w.isolate(&mut cmd).env("HOME", &link);
        let out = run(&mut cmd);
        assert!(out.status.success(), "{args:?}: {out:?}");
        out.stdout
    };
    ctl(&["hooks", "install", "codex"]);
    let real = w.home.canonicalize().unwrap().join(".codex/hooks.json");
    trust_in_codex(&real, &real, &real.with_file_name("config.toml"));
    let doc: Value = serde_json::from_str(&ctl(&["--json", "hooks", "status"])).unwrap();
    let row = doc["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["agent"] == "codex")
        .unwrap()
        .clone();
    assert_eq!(row["user"], "yes", "{row}");
    assert_eq!(row["pending"]["user"], Value::Null, "{row}");
}

/// A turn whose end never reached the daemon (a `StopFailure` hook killed
/// with its agent) is closed by its session's next prompt, and only its
/// session's turn is.
#[test]
fn a_turn_whose_end_was_lost_closes_at_its_sessions_next_prompt() {
    let w = World::new();
    let _d = w.env.start_daemon();
    let (proj, cwd) = project(&w, true);
    w.install(&["claude-code"]);
    let cfg = json_file(&w.home.join(".claude/settings.json"));
    let start = hook_of(&cfg, "UserPromptSubmit", "turn-start", "claude-code");
    let prompt = |text: &str| {
        json!({"session_id": "S", "transcript_path": "/t/s.jsonl", "cwd": cwd,
               "hook_event_name": "UserPromptSubmit", "prompt": text})
    };
    quiet(&w, &start, &prompt("first"));
    w.ctl_ok(&proj, &["turn-start", "--session", "T"]);
    sh(&proj, "echo x > x.txt");
    quiet(&w, &start, &prompt("second"));
    let log = w.ctl_json(&proj, &["log", "--session", "S"]);
    let turns = log["turns"].as_array().expect("turns");
    assert_eq!(turns.len(), 2, "{log}");
    let (second, first) = (&turns[0], &turns[1]);
    assert_eq!(first["label"], "first", "{log}");
    assert_eq!(first["status"], "closed", "{log}");
    assert_eq!(
        entries(&w, &proj, &first["id"]),
        [("x.txt".to_string(), true)]
    );
    assert_eq!(second["status"], "open", "{log}");
    assert_eq!(turn_of(&w, &proj, "T")["status"], "open");
}

/// A Stop hook (turn-end) that finds no turn open — the turn was already
/// closed, or the prompt opened none — is a no-op, shown as ok in `hooks
/// status` and `status`; a turn-end that really fails is still FAILED.
#[test]
fn a_stop_hook_with_no_open_turn_is_ok_not_failed() {
    let w = World::new();
    let _d = w.env.start_daemon();
    let (proj, cwd) = project(&w, true);
    w.install(&["claude-code"]);
    let claude = json_file(&w.home.join(".claude/settings.json"));
    let stop = command_at(
        &claude,
        "/hooks/Stop/0/hooks/0/command",
        "turn-end",
        "claude-code",
    );
    let payload = json!({"session_id": "S1", "transcript_path": "/t/s1.jsonl", "cwd": cwd,
                         "hook_event_name": "Stop", "stop_hook_active": false});
    let out = w.call(&stop, &payload);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(out.stderr, "", "a no-op says nothing to the agent: {out:?}");
    let row = agent_row(&w, &proj, "claude-code");
    assert_eq!(row["failing"], false, "{row}");
    assert_eq!(row["last_error"], Value::Null, "{row}");
    assert_eq!(row["last_ok"]["event"], "turn-end", "{row}");
    assert_eq!(
        row["last_ok"]["note"], "no turn open, nothing to close",
        "{row}"
    );
    let text = w.ctl_ok(&proj, &["hooks", "status"]);
    assert!(!text.contains("FAILED"), "{text}");
    assert!(
        text.contains("(ok: no turn open, nothing to close)"),
        "{text}"
    );
    assert!(!w.ctl_ok(&proj, &["status"]).contains("FAILED"));

    // A folder never watched: a real failure, still shown as one.
    let elsewhere = w.env.git_repo("elsewhere", &[("x", b"x\n")]);
    let cwd = elsewhere.canonicalize().unwrap();
    let out = w.call(&stop, &payload.clone().merge(&json!({"cwd": cwd})));
    assert!(out.status.success(), "{out:?}");
    assert!(!out.stderr.is_empty(), "{out:?}");
    assert_eq!(agent_row(&w, &proj, "claude-code")["failing"], true);
    let text = w.ctl_ok(&proj, &["hooks", "status"]);
    assert!(text.contains("FAILED"), "{text}");
}

/// `hooks status` warns when the ckptctl the installed hooks run is gone,
/// or is not the ckptctl on PATH (an old build the hooks still run).
#[test]
fn hooks_status_warns_when_the_hooks_ckptctl_is_gone_or_not_the_one_on_path() {
    let w = World::new();
    w.install(&["claude-code"]);
    let settings = w.home.join(".claude/settings.json");
    let row = agent_row(&w, w.env.path(), "claude-code");
    assert_eq!(row["ckptctl_warning"]["user"], Value::Null, "{row}");
    let text = w.ctl_ok(w.env.path(), &["hooks", "status"]);
    assert!(!text.contains("warning:"), "{text}");

    // Another ckptctl first on PATH.
    let other = w.env.dir("other-bin");
    std::fs::copy(bin("ckptctl"), other.join("ckptctl")).unwrap();
    std::os::unix::fs::symlink(other.join("ckptctl"), w.bin.join("ckptctl")).unwrap();
    let text = w.ctl_ok(w.env.path(), &["hooks", "status"]);
    let expected = format!(
        "warning: claude-code (user): its hooks run {}, but the ckptctl on PATH is {}",
        ckptctl().display(),
        other.join("ckptctl").canonicalize().unwrap().display()
    );
    assert!(text.contains(&expected), "{text}");
    assert!(text.contains("ckptctl hooks install claude-code"), "{text}");

    // The hooks' ckptctl gone (moved or rebuilt elsewhere).
    std::fs::remove_file(w.bin.join("ckptctl")).unwrap();
    let gone = w.env.path().join("gone/bin/ckptctl");
    let moved = std::fs::read_to_string(&settings)
        .unwrap()
        .replace(s(&ckptctl()), s(&gone));
    std::fs::write(&settings, moved).unwrap();
    let row = agent_row(&w, w.env.path(), "claude-code");
    let warning = row["ckptctl_warning"]["user"].as_str().unwrap_or_default();
    assert!(
        warning.contains(&format!(
            "its hooks run {}, which no longer exists",
            gone.display()
        )),
        "{row}"
    );
}
