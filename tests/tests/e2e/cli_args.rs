//! The command line's contract: `-C` where it names a project and nowhere
//! else, `run --json` as one document, `turn-end --session`, and help that
//! claims only what is tested.

use ckpt_e2e::*;

fn s(p: &std::path::Path) -> &str {
    p.to_str().expect("a UTF-8 temp path")
}

/// `watch -C DIR` and `unwatch -C DIR` were refused with "unexpected
/// argument '-C'": their own `dir` argument shadowed the global one.
#[test]
fn watch_and_unwatch_take_dash_c() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("f", b"1\n")]);
    let elsewhere = env.dir("elsewhere");
    let root = proj.canonicalize().unwrap();

    let w = env.ctl_json(&elsewhere, &["watch", "-C", s(&proj)]);
    assert_eq!(w["project"], s(&root), "{w}");
    assert_eq!(w["already"], false, "{w}");
    let again = env.ctl_json(&elsewhere, &["-C", s(&proj), "watch"]);
    assert_eq!(again["already"], true, "{again}");

    // -C below the top level still names the git repository's project.
    std::fs::create_dir(proj.join("sub")).unwrap();
    let below = env.ctl_json(&elsewhere, &["watch", "-C", s(&proj.join("sub"))]);
    assert_eq!(below["project"], s(&root), "{below}");

    let u = env.ctl_json(&elsewhere, &["unwatch", "-C", s(&proj)]);
    assert_eq!(u["project"], s(&root), "{u}");
    let projects = env.ctl_json(&elsewhere, &["projects"]);
    assert_eq!(projects["projects"].as_array().unwrap().len(), 0);
}

/// Every command that acts on a project takes `-C` from anywhere, before
/// or after the subcommand's name.
#[test]
fn every_project_command_takes_dash_c() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("f", b"1\n")]);
    let before = snapshot_work(&proj);
    let elsewhere = env.dir("elsewhere");
    let c = s(&proj);
    let t = env.ctl_json(&elsewhere, &["turn-start", "-C", c]);
    assert_eq!(t["turn"], 1, "{t}");
    sh(&proj, "echo 2 > f");
    env.ctl_ok(&elsewhere, &["sync", "-C", c]);
    let e = env.ctl_json(&elsewhere, &["-C", c, "turn-end"]);
    assert_eq!(e["turn"]["info"]["counts"]["modified"], 1, "{e}");
    assert_eq!(
        env.ctl_json(&elsewhere, &["log", "-C", c])["turns"][0]["id"],
        1
    );
    let show = env.ctl_json(&elsewhere, &["show", "1", "-C", c]);
    assert_eq!(show["turn"]["entries"][0]["path"], "f", "{show}");
    let diff = env.ctl_ok(&elsewhere, &["diff", "-C", c, "1"]);
    assert!(diff.contains("+2"), "{diff}");
    let r = env.ctl_json(&elsewhere, &["rewind", "-C", c, "1"]);
    assert_eq!(r["outcome"], "applied", "{r}");
    assert_same_tree("rewound with -C", &before, &snapshot_work(&proj));
    env.ctl_ok(&elsewhere, &["redo", "-C", c]);
    assert_eq!(std::fs::read(proj.join("f")).unwrap(), b"2\n");
    assert_eq!(env.ctl_json(&elsewhere, &["fsck", "-C", c])["ok"], true);
    let out = env.ctl(
        &elsewhere,
        &["run", "-C", c, "--", "sh", "-c", "echo 3 > f"],
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        std::fs::read(proj.join("f")).unwrap(),
        b"3\n",
        "ran in -C's dir"
    );
    assert_eq!(
        env.ctl_json(&proj, &["log"])["turns"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

/// A directory given twice (`-C A` and a positional B) is refused, not
/// resolved by a rule the user has to guess.
#[test]
fn watch_refuses_dash_c_and_a_directory_together() {
    let env = Env::new();
    let a = env.dir("a");
    let b = env.dir("b");
    for cmd in ["watch", "unwatch"] {
        let out = env.ctl(env.path(), &[cmd, "-C", s(&a), s(&b)]);
        assert_eq!(out.code(), 2, "{cmd}: {out:?}");
        assert!(out.stderr.contains("-C"), "{cmd}: {}", out.stderr);
    }
}

/// `projects`, `status` and `service` act on no project: `-C` there is a
/// usage error (exit 2), where it used to be ignored.
#[test]
fn dash_c_is_refused_where_no_project_is_meant() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.dir("p");
    let config = env.path().join("config");
    for args in [
        &["projects"][..],
        &["status"],
        &["service", "install", "--no-start"],
        &["service", "uninstall"],
    ] {
        for at_front in [false, true] {
            let mut full: Vec<&str> = Vec::new();
            if at_front {
                full.extend(["-C", s(&proj)]);
                full.extend(args);
            } else {
                full.extend(args);
                full.extend(["-C", s(&proj)]);
            }
            let out = run(env
                .ctl_cmd(env.path(), &full)
                .env("HOME", env.path())
                .env("XDG_CONFIG_HOME", &config));
            assert_eq!(out.code(), 2, "{full:?}: {out:?}");
            assert!(
                out.stderr.contains("-C") && out.stderr.contains(args[0]),
                "{full:?}: {}",
                out.stderr
            );
            assert_eq!(out.stdout, "", "{full:?}");
        }
    }
    assert!(!config.exists(), "no service file was written");
    // Without -C they still work.
    env.ctl_ok(env.path(), &["status"]);
    env.ctl_ok(env.path(), &["projects"]);
}

/// `run --json` printed the command's output before the JSON document;
/// the command's stdout now goes to stderr.
#[test]
fn run_json_prints_one_document_and_the_commands_stdout_on_stderr() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("f", b"1\n")]);
    env.ctl_ok(&proj, &["watch"]);
    let out = env.ctl(
        &proj,
        &[
            "--json",
            "run",
            "--",
            "sh",
            "-c",
            "echo 2 > f && echo out && echo err >&2 && exit 7",
        ],
    );
    assert_eq!(out.code(), 7, "exit status of the command: {out:?}");
    let doc = out.json();
    assert_eq!(doc["exit_code"], 7, "{doc}");
    assert_eq!(doc["turn"]["info"]["counts"]["modified"], 1, "{doc}");
    assert_eq!(out.stderr, "out\nerr\n", "the command's output, in order");
}

/// `run --from-hook` was accepted and did nothing; a hook marks turns with
/// `turn-start`/`turn-end --from-hook`, so `run` refuses the flag.
#[test]
fn run_refuses_from_hook() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("f", b"1\n")]);
    env.ctl_ok(&proj, &["watch"]);
    let out = env.ctl(
        &proj,
        &["run", "--from-hook", "--", "sh", "-c", "echo 2 > f"],
    );
    assert_eq!(out.code(), 2, "{out:?}");
    assert!(out.stderr.contains("--from-hook"), "{}", out.stderr);
    assert_eq!(
        std::fs::read(proj.join("f")).unwrap(),
        b"1\n",
        "nothing ran"
    );
    let log = env.ctl_json(&proj, &["log"]);
    assert_eq!(log["turns"].as_array().unwrap().len(), 0, "{log}");
}

/// `turn-end --session B` leaves a turn that session A opened open, and
/// says so; A's own turn-end, or one without a session when it is the only
/// open turn, closes it.
#[test]
fn turn_end_leaves_another_sessions_turn_open() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("f", b"1\n")]);
    env.ctl_ok(&proj, &["turn-start", "--session", "A"]);
    sh(&proj, "echo 2 > f");

    let other = env.ctl_json(&proj, &["turn-end", "--session", "B"]);
    assert_eq!(other["left_open"], true, "{other}");
    assert_eq!(other["turn"]["info"]["id"], 1, "{other}");
    assert_eq!(other["turn"]["info"]["status"], "open", "{other}");
    assert_eq!(other["turn"]["info"]["session"], "A", "{other}");
    let text = env.ctl_ok(&proj, &["turn-end", "--session", "B"]);
    assert!(
        text.contains("turn 1 left open") && text.contains("session A"),
        "{text}"
    );
    assert_eq!(env.ctl_json(&proj, &["log"])["turns"][0]["status"], "open");

    let own = env.ctl_json(&proj, &["turn-end", "--session", "A"]);
    assert_eq!(own["left_open"], false, "{own}");
    assert_eq!(own["turn"]["info"]["status"], "closed", "{own}");
    assert_eq!(own["turn"]["info"]["counts"]["modified"], 1, "{own}");

    // No session given: closes whoever opened it, as before.
    env.ctl_ok(&proj, &["turn-start", "--session", "A"]);
    let any = env.ctl_json(&proj, &["turn-end"]);
    assert_eq!(any["left_open"], false, "{any}");
    assert_eq!(any["turn"]["info"]["status"], "closed", "{any}");
    // A turn opened without a session belongs to the default session:
    // session B's turn-end leaves it open too.
    env.ctl_ok(&proj, &["turn-start"]);
    let anon = env.ctl_json(&proj, &["turn-end", "--session", "B"]);
    assert_eq!(anon["left_open"], true, "{anon}");
    assert_eq!(anon["turn"]["info"]["status"], "open", "{anon}");
}

/// Claude Code's Stop hook names its session: a second session's Stop
/// does not close the first session's turn.
#[test]
fn turn_end_from_hook_takes_the_session_from_the_payload() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("f", b"1\n")]);
    let cwd = proj.canonicalize().unwrap();
    let hook = |args: &[&str], payload: serde_json::Value| {
        let out = run_with_input(
            &mut env.ctl_cmd(env.path(), args),
            Some(payload.to_string().as_bytes()),
        );
        assert!(out.status.success(), "{args:?}: {out:?}");
        assert_eq!(out.stdout, "", "nothing may reach the agent's context");
    };
    hook(
        &["turn-start", "--from-hook"],
        serde_json::json!({"session_id": "s1", "cwd": cwd, "prompt": "p1",
                           "hook_event_name": "UserPromptSubmit"}),
    );
    sh(&proj, "echo 2 > f");
    hook(
        &["turn-end", "--from-hook"],
        serde_json::json!({"session_id": "s2", "cwd": cwd, "hook_event_name": "Stop"}),
    );
    assert_eq!(env.ctl_json(&proj, &["log"])["turns"][0]["status"], "open");
    hook(
        &["turn-end", "--from-hook"],
        serde_json::json!({"session_id": "s1", "cwd": cwd, "hook_event_name": "Stop"}),
    );
    let t = &env.ctl_json(&proj, &["log"])["turns"][0];
    assert_eq!(t["status"], "closed", "{t}");
    assert_eq!(t["counts"]["modified"], 1, "{t}");
}

/// `--from-hook=AGENT` names every agent whose hooks `hooks install`
/// writes (each tested end to end in `hooks.rs`); bare `--from-hook` is
/// Claude Code's.
#[test]
fn from_hook_help_lists_the_agents_it_accepts() {
    let env = Env::new();
    for cmd in ["turn-start", "turn-end"] {
        let out = env.ctl(env.path(), &[cmd, "--help"]);
        assert!(out.status.success(), "{out:?}");
        let values: Vec<&str> = out
            .stdout
            .lines()
            .skip_while(|l| !l.trim_start().starts_with("--from-hook"))
            .skip_while(|l| l.trim() != "Possible values:")
            .skip(1)
            .map_while(|l| l.trim().strip_prefix("- "))
            .map(|v| v.split(':').next().unwrap_or(v))
            .collect();
        assert_eq!(
            values,
            [
                "claude-code",
                "codex",
                "gemini",
                "cursor",
                "copilot",
                "cline",
                "kiro",
                "opencode",
                "zed"
            ],
            "{cmd}: {}",
            out.stdout
        );
    }
}

/// tool-start and tool-end offer `--from-hook` only for the agents whose
/// installed hooks include tool hooks, and refuse the others.
#[test]
fn tool_hook_help_offers_only_agents_with_tool_hooks() {
    let env = Env::new();
    for cmd in ["tool-start", "tool-end"] {
        let out = env.ctl(env.path(), &[cmd, "--help"]);
        assert!(out.status.success(), "{out:?}");
        // The option's help, up to the next option (clap may put its
        // values on a line of their own).
        let help: String = out
            .stdout
            .lines()
            .skip_while(|l| !l.trim_start().starts_with("--from-hook"))
            .take_while({
                let mut first = true;
                move |l| std::mem::take(&mut first) || !l.trim_start().starts_with('-')
            })
            .collect::<Vec<_>>()
            .join(" ");
        let values: Vec<&str> = help
            .split_once("[possible values: ")
            .and_then(|(_, v)| v.split_once(']'))
            .map(|(v, _)| v.split(", ").collect())
            .unwrap_or_default();
        assert_eq!(
            values,
            ["claude-code", "codex", "gemini"],
            "{cmd}: {}",
            out.stdout
        );
        let out = env.ctl(env.path(), &[cmd, "--from-hook=cursor"]);
        assert_eq!(out.code(), 2, "{out:?}");
        assert!(out.stderr.contains("invalid value 'cursor'"), "{out:?}");
    }
}

/// `workcopy export --out` help says what it does with the directory:
/// created if missing, else it must be empty (not both "existing" and
/// "created").
#[test]
fn workcopy_export_out_help_says_created_if_missing_else_empty() {
    let env = Env::new();
    let out = env.ctl(env.path(), &["workcopy", "export", "--help"]);
    assert!(out.status.success(), "{out:?}");
    let text = out.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        text.contains("created if missing, else it must be empty"),
        "{text}"
    );
    assert!(!text.contains("existing empty"), "{text}");
}
