//! Degrade loudly: when capture cannot be trusted for a project, `status`,
//! `projects` and every reply about it say so and why, barriers fall back to
//! full scans, and the daemon stays up for everyone else.

use ckpt_e2e::*;

#[test]
fn watch_limit_degrades_loudly_and_scans_still_capture_everything() {
    let env = Env::new();
    let _d = env.start_daemon_with(&[("CKPT_TEST_FAKE_WATCH_LIMIT", "1")]);
    let proj = env.git_repo("p", &[("a.txt", b"a\n"), ("b.txt", b"b\n")]);

    let out = env.ctl(&proj, &["--json", "watch"]);
    assert!(out.status.success(), "{out:?}");
    let watched = out.json();
    let reason = watched["degraded"]
        .as_str()
        .expect("watch reply says degraded");
    assert!(reason.contains("fs.inotify.max_user_watches"), "{reason}");
    assert!(
        out.stderr.contains("degraded"),
        "warned on stderr: {}",
        out.stderr
    );

    let before = snapshot_work(&proj);
    let started = env.ctl(&proj, &["--json", "turn-start"]);
    assert!(started.status.success());
    assert!(started.json()["degraded"]
        .as_str()
        .unwrap()
        .contains("max_user_watches"));
    assert!(started.stderr.contains("degraded"), "{}", started.stderr);

    sh(
        &proj,
        "echo A > a.txt && rm b.txt && mkdir -p n/m && echo c > n/m/c.txt",
    );
    let sync = env.ctl_json(&proj, &["sync"]);
    assert_eq!(sync["method"], "scan", "without a watch the barrier scans");
    let ended = env.ctl_json(&proj, &["turn-end"]);
    assert!(ended["degraded"].is_string());
    let n = ended["turn"]["entries"].as_array().unwrap().len();
    assert_eq!(n, 5, "a.txt, b.txt, n, n/m, n/m/c.txt: {ended:#}");

    for args in [&["status"][..], &["projects"]] {
        let doc = env.ctl_json(&proj, args);
        let p = &doc["projects"][0];
        assert_eq!(p["health"], "degraded", "{args:?}: {doc:#}");
        assert!(p["degraded"].as_str().unwrap().contains("max_user_watches"));
    }
    let human = env.ctl_ok(&proj, &["projects"]);
    assert!(
        human.contains("DEGRADED") && human.contains("max_user_watches"),
        "{human}"
    );

    let out = env.ctl(&proj, &["rewind", "1"]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        out.stderr.contains("degraded"),
        "every reply warns: {}",
        out.stderr
    );
    assert_same_tree("rewound while degraded", &before, &snapshot_work(&proj));
}

/// `rewind --last` reads the log, then rewinds: two degraded replies, one
/// warning, on stderr only (stdout holds the JSON document alone).
#[test]
fn a_command_that_asks_twice_warns_once_and_only_on_stderr() {
    let env = Env::new();
    let _d = env.start_daemon_with(&[("CKPT_TEST_FAKE_WATCH_LIMIT", "1")]);
    let proj = env.git_repo("p", &[("a.txt", b"a\n")]);
    env.ctl_ok(&proj, &["watch"]);
    env.ctl_ok(&proj, &["turn-start"]);
    sh(&proj, "echo A > a.txt");
    env.ctl_ok(&proj, &["turn-end"]);

    let out = env.ctl(&proj, &["--json", "rewind", "--last", "--dry-run"]);
    assert!(out.status.success(), "{out:?}");
    let warnings = out.stderr.matches("ckptctl: warning: capture for").count();
    assert_eq!(warnings, 1, "{}", out.stderr);
    assert!(out.stderr.contains("is degraded: "), "{}", out.stderr);
    let doc = out.json();
    assert!(doc["degraded"]
        .as_str()
        .unwrap()
        .contains("max_user_watches"));
    assert!(!out.stdout.contains("warning"), "{}", out.stdout);
}

#[test]
fn a_project_whose_root_is_deleted_does_not_take_the_daemon_down() {
    let env = Env::new();
    let _d = env.start_daemon();
    let doomed = env.git_repo("doomed", &[("x", b"x")]);
    let fine = env.git_repo("fine", &[("y", b"y")]);
    env.ctl_ok(&doomed, &["watch"]);
    env.ctl_ok(&fine, &["watch"]);
    env.ctl_ok(&doomed, &["turn-start"]);
    let doomed_root = doomed.canonicalize().unwrap();
    std::fs::remove_dir_all(&doomed).unwrap();

    // The other project carries on; its barrier still works.
    env.ctl_ok(&fine, &["turn-start"]);
    sh(&fine, "echo Y > y");
    let ended = env.ctl_json(&fine, &["turn-end"]);
    assert_eq!(ended["turn"]["entries"][0]["path"], "y");

    wait_for(
        "the deleted root to be reported",
        std::time::Duration::from_secs(30),
        || {
            let st = env.ctl_json(&fine, &["status"]);
            st["projects"].as_array().unwrap().iter().any(|p| {
                p["root"] == doomed_root.to_str().unwrap()
                    && p["health"] != "ok"
                    && p["degraded"]
                        .as_str()
                        .is_some_and(|r| r.contains("removed") || r.contains("no longer exists"))
            })
        },
    );
    env.ctl_ok(&fine, &["status"]);
}

#[test]
fn a_project_whose_root_vanished_while_stopped_is_reported_at_start_up() {
    let env = Env::new();
    let d = env.start_daemon();
    let doomed = env.git_repo("doomed", &[("x", b"x")]);
    let fine = env.git_repo("fine", &[("y", b"y")]);
    env.ctl_ok(&doomed, &["watch"]);
    env.ctl_ok(&fine, &["watch"]);
    assert!(d.terminate().success());
    let doomed_root = doomed.canonicalize().unwrap();
    std::fs::remove_dir_all(&doomed).unwrap();

    let _d = env.start_daemon();
    env.ctl_ok(&fine, &["sync"]);
    let st = env.ctl_json(&fine, &["status"]);
    let p = st["projects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["root"] == doomed_root.to_str().unwrap())
        .expect("the vanished project is still listed")
        .clone();
    assert_eq!(p["health"], "unavailable", "{st:#}");
    assert!(p["degraded"].as_str().unwrap().contains("no longer exists"));
    let human = env.ctl_ok(&fine, &["status"]);
    assert!(human.contains("UNAVAILABLE"), "{human}");
    // Recreating the directory and unwatching it cleans up.
    std::fs::create_dir_all(&doomed).unwrap();
    env.ctl_ok(&doomed, &["unwatch", "--drop-data"]);
    let st = env.ctl_json(&fine, &["projects"]);
    assert_eq!(st["projects"].as_array().unwrap().len(), 1);
}

#[test]
fn refuses_to_watch_the_data_dir_or_around_a_watched_project() {
    let env = Env::new();
    let _d = env.start_daemon();
    let out = env.ctl(env.path(), &["watch", env.path().to_str().unwrap()]);
    assert_eq!(out.code(), 1, "{out:?}");
    assert!(out.stderr.contains("data directory"), "{}", out.stderr);

    let file = env.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let out = env.ctl(env.path(), &["watch", file.to_str().unwrap()]);
    assert_eq!(out.code(), 1, "{out:?}");
    assert!(out.stderr.contains("is not a directory"), "{}", out.stderr);

    let outer = env.dir("outer");
    let inner = env.git_repo("outer/inner", &[("f", b"f")]);
    env.ctl_ok(&inner, &["watch"]);
    let out = env.ctl(&outer, &["watch", "."]);
    assert_eq!(out.code(), 1, "{out:?}");
    assert!(
        out.stderr.contains("contains the watched project"),
        "{}",
        out.stderr
    );
    // Watching inside a watched project is just that project.
    std::fs::create_dir_all(inner.join("sub")).unwrap();
    let w = env.ctl_json(&inner.join("sub"), &["watch", "."]);
    assert_eq!(w["already"], true);
    assert_eq!(
        w["project"],
        inner.canonicalize().unwrap().to_str().unwrap()
    );
}
