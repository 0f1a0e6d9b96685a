//! Settings through the real binaries: the user's and the project's files,
//! `CKPT_<KEY>` variables and their order; a changed file taken without a
//! restart; a bad file named (file, line, key) in `status` while the last
//! good settings stay; `config set`/`unset` keeping the user's comments;
//! `config --edit` with `EDITOR` a script.

use std::path::{Path, PathBuf};
use std::time::Duration;

use ckpt_e2e::*;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A watched project `app` with one file.
fn watched(env: &Env) -> PathBuf {
    let proj = env.git_repo("app", &[("a.txt", b"a\n")]);
    env.ctl_ok(&proj, &["watch"]);
    proj
}

/// The project's line of `status --json`.
fn project_status(env: &Env, proj: &Path) -> serde_json::Value {
    let s = env.ctl_json(proj, &["status"]);
    s["projects"][0].clone()
}

/// The retention policy's turn count; `status` leaves the policy out while
/// the project is busy (a restarted daemon's start-up scan), so it waits.
fn keep_turns(env: &Env, proj: &Path) -> u64 {
    let mut turns = None;
    wait_for("the project to be free", Duration::from_secs(30), || {
        turns = project_status(env, proj)["retention"]["policy"]["keep_turns"].as_u64();
        turns.is_some()
    });
    turns.unwrap()
}

fn setting<'a>(doc: &'a serde_json::Value, key: &str) -> &'a serde_json::Value {
    doc["settings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["key"] == key)
        .unwrap_or_else(|| panic!("{key} in {doc}"))
}

#[test]
fn config_shows_every_value_with_its_source() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = watched(&env);
    write(
        &env.user_config(),
        "[retention]\nturns = 50\n[capture]\nexcludes = [\"*.log\"]\n",
    );
    write(
        &proj.join(".ckpt/config.toml"),
        "[retention]\ndays = 3\n[capture]\nexcludes = [\"tmp/\"]\n",
    );
    let out = run(env
        .ctl_cmd(&proj, &["--json", "config"])
        .env("CKPT_BARRIER_TIMEOUT_MS", "500"));
    assert_eq!(out.code(), 0, "{out:?}");
    let doc = out.json();
    let turns = setting(&doc, "retention.turns");
    assert_eq!(
        (turns["value"].as_u64(), turns["sources"][0].as_str()),
        (Some(50), Some("user file"))
    );
    let days = setting(&doc, "retention.days");
    assert_eq!(
        (days["value"].as_u64(), days["sources"][0].as_str()),
        (Some(3), Some("project file"))
    );
    let barrier = setting(&doc, "barrier.timeout_ms");
    assert_eq!(
        (barrier["value"].as_u64(), barrier["sources"][0].as_str()),
        (Some(500), Some("env"))
    );
    let excludes = setting(&doc, "capture.excludes");
    assert_eq!(excludes["value"], serde_json::json!(["*.log", "tmp/"]));
    assert_eq!(
        excludes["sources"],
        serde_json::json!(["user file", "project file"])
    );
    assert_eq!(
        setting(&doc, "workcopy.max_mib")["sources"],
        serde_json::json!(["default"])
    );

    // Every key, one line each, with where it comes from.
    let text = env.ctl_ok(&proj, &["config"]);
    for k in ckpt_settings::KEYS {
        assert!(
            text.lines().any(|l| l.starts_with(k.name)),
            "{} in:\n{text}",
            k.name
        );
    }
    assert!(
        text.contains("retention.days") && text.contains("= 3  # project file"),
        "{text}"
    );
    assert_eq!(
        env.ctl_ok(&proj, &["config", "get", "retention.turns"]),
        "50\n"
    );
}

#[test]
fn the_daemon_takes_a_changed_file_without_a_restart_and_env_wins() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = watched(&env);
    assert_eq!(keep_turns(&env, &proj), 100, "the default");
    write(&env.user_config(), "retention.turns = 5\n");
    assert_eq!(keep_turns(&env, &proj), 5, "the user's file, read again");
    write(&proj.join(".ckpt/config.toml"), "[retention]\nturns = 3\n");
    assert_eq!(keep_turns(&env, &proj), 3, "the project's file wins");
    std::fs::remove_file(proj.join(".ckpt/config.toml")).unwrap();
    assert_eq!(keep_turns(&env, &proj), 5);
    drop(_d);

    let _d = env.start_daemon_with(&[("CKPT_RETENTION_TURNS", "2")]);
    assert_eq!(keep_turns(&env, &proj), 2, "the daemon's environment wins");
}

#[test]
fn a_bad_file_keeps_the_last_good_settings_and_status_names_file_line_and_key() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = watched(&env);
    let file = proj.join(".ckpt/config.toml");
    write(&file, "[retention]\nturns = 5\n");
    assert_eq!(keep_turns(&env, &proj), 5);
    write(&file, "# kept\n[retention]\nturns = \"many\"\n");
    let p = project_status(&env, &proj);
    let err = p["config_error"]
        .as_str()
        .expect("status says the file is bad");
    let canonical = file.canonicalize().unwrap();
    assert!(
        err.starts_with(&format!("{}:3: retention.turns: ", canonical.display())),
        "{err}"
    );
    assert_eq!(keep_turns(&env, &proj), 5, "the last good settings stay");
    let text = env.ctl_ok(&proj, &["status"]);
    assert!(
        text.contains("config error: ") && text.contains(":3: retention.turns"),
        "{text}"
    );

    // The user's file: said for the daemon too.
    write(&env.user_config(), "[retention]\nturnz = 1\n");
    let s = env.ctl_json(&proj, &["status"]);
    let daemon_err = s["daemon"]["config_error"]
        .as_str()
        .expect("daemon config_error");
    assert!(
        daemon_err.contains(":2: retention.turnz: unknown key"),
        "{daemon_err}"
    );
    // `config` says so too, and fails.
    let out = env.ctl(&proj, &["config"]);
    assert_eq!(out.code(), 1, "{out:?}");
    assert!(out.stderr.contains("retention.turnz"), "{out:?}");

    write(&file, "[retention]\nturns = 4\n");
    std::fs::remove_file(env.user_config()).unwrap();
    let p = project_status(&env, &proj);
    assert!(p["config_error"].is_null(), "{p}");
    assert_eq!(keep_turns(&env, &proj), 4);
}

#[test]
fn set_and_unset_keep_the_users_comments() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = watched(&env);
    let mine = "# my settings\n[retention]\n# a week is enough\ndays = 7 # short\n";
    write(&env.user_config(), mine);
    env.ctl_ok(&proj, &["config", "set", "retention.turns", "300"]);
    let text = std::fs::read_to_string(env.user_config()).unwrap();
    assert!(
        text.starts_with(mine),
        "the file as it was, then the key:\n{text}"
    );
    assert!(text.contains("turns = 300"), "{text}");
    assert_eq!(
        env.ctl_ok(&proj, &["config", "get", "retention.turns"]),
        "300\n"
    );
    assert_eq!(keep_turns(&env, &proj), 300, "the daemon took it");

    env.ctl_ok(
        &proj,
        &["config", "set", "capture.excludes", "*.log, build/"],
    );
    assert_eq!(
        env.ctl_ok(&proj, &["config", "get", "capture.excludes"]),
        "[\"*.log\", \"build/\"]\n"
    );

    env.ctl_ok(&proj, &["config", "unset", "retention.turns"]);
    let text = std::fs::read_to_string(env.user_config()).unwrap();
    assert!(text.starts_with(mine) && !text.contains("turns"), "{text}");

    // Nothing the daemon would refuse is written.
    for bad in [
        ["retention.turns", "-1"],
        ["capture.max_file_mib", "0"],
        ["retention.turnz", "1"],
    ] {
        let out = env.ctl(&proj, &["config", "set", bad[0], bad[1]]);
        assert_eq!(out.code(), 1, "{bad:?}: {out:?}");
        assert!(out.stderr.contains(bad[0]), "{out:?}");
    }
    assert_eq!(std::fs::read_to_string(env.user_config()).unwrap(), text);
}

#[test]
fn set_project_caps_file_size_for_that_project_and_show_says_the_cap() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = watched(&env);
    env.ctl_ok(
        &proj,
        &["config", "set", "--project", "capture.max_file_mib", "1"],
    );
    assert_eq!(
        std::fs::read_to_string(proj.join(".ckpt/config.toml")).unwrap(),
        "[capture]\nmax_file_mib = 1\n"
    );
    env.ctl_ok(&proj, &["turn-start"]);
    std::fs::write(proj.join("big.bin"), vec![7u8; 2 << 20]).unwrap();
    std::fs::write(proj.join("small.bin"), vec![7u8; 1000]).unwrap();
    env.ctl_ok(&proj, &["turn-end"]);
    let show = env.ctl_ok(&proj, &["show", "1"]);
    let big = show
        .lines()
        .find(|l| l.contains("big.bin"))
        .expect("big.bin listed");
    assert!(big.contains("larger than the 1 MiB cap"), "{show}");
    assert!(
        !show
            .lines()
            .any(|l| l.contains("small.bin") && l.contains("cap")),
        "{show}"
    );
}

#[test]
fn excludes_from_the_settings_are_not_captured() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = watched(&env);
    write(&env.user_config(), "[capture]\nexcludes = [\"*.log\"]\n");
    env.ctl_ok(
        &proj,
        &["config", "set", "--project", "capture.excludes", "out/"],
    );
    env.ctl_ok(&proj, &["turn-start"]);
    sh(
        &proj,
        "echo x > run.log && mkdir out && echo y > out/o && echo z > kept.txt",
    );
    env.ctl_ok(&proj, &["turn-end"]);
    let paths: Vec<String> = env.ctl_json(&proj, &["show", "1"])["turn"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(paths, ["kept.txt"]);
}

#[test]
fn edit_runs_the_editor_then_checks_the_file() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = watched(&env);
    let script = env.path().join("editor.sh");
    write(
        &script,
        "#!/bin/sh\nprintf '[retention]\\nturns = 9\\n' >> \"$1\"\n",
    );
    sh(env.path(), "chmod +x editor.sh");
    let out = run(env
        .ctl_cmd(&proj, &["config", "--edit"])
        .env_remove("VISUAL")
        .env("EDITOR", &script));
    assert_eq!(out.code(), 0, "{out:?}");
    let text = std::fs::read_to_string(env.user_config()).unwrap();
    assert!(
        text.contains("# [retention]\n") && text.contains("\n# turns = 100\n"),
        "a new file starts as the commented template:\n{text}"
    );
    assert_eq!(
        env.ctl_ok(&proj, &["config", "get", "retention.turns"]),
        "9\n"
    );

    write(&script, "#!/bin/sh\nprintf 'days = \"x\"\\n' >> \"$1\"\n");
    let out = run(env
        .ctl_cmd(&proj, &["config", "--edit", "--project"])
        .env("VISUAL", &script));
    assert_eq!(out.code(), 1, "{out:?}");
    assert!(
        out.stderr.contains(".ckpt/config.toml:") && out.stderr.contains(": days: unknown key"),
        "{out:?}"
    );
}
