//! The daemon going away: stopped mid-turn while the agent keeps working,
//! killed in the middle of a rewind. Nothing is lost and the tree is never
//! left half-restored.

use std::time::Duration;

use ckpt_e2e::*;

fn repo(env: &Env) -> std::path::PathBuf {
    let p = env.git_repo(
        "app",
        &[
            ("one.txt", b"one\n"),
            ("two.txt", b"two\n"),
            ("three.txt", b"three\n"),
            ("src/four.rs", b"// four\n"),
            (".gitignore", b".env\n"),
        ],
    );
    std::fs::write(p.join(".env"), "TOKEN=abc\n").unwrap();
    p
}

#[test]
fn changes_made_while_the_daemon_is_stopped_mid_turn_are_captured_and_rewound() {
    let env = Env::new();
    let d = env.start_daemon();
    let proj = repo(&env);
    env.ctl_ok(&proj, &["watch"]);
    let before = snapshot_work(&proj);
    let git_before = snapshot_git(&proj);
    env.ctl_ok(&proj, &["turn-start", "--label", "survives a restart"]);
    sh(&proj, "echo 'one, edited while watched' > one.txt");

    assert!(d.terminate().success());
    // The agent keeps going while nobody watches.
    sh(
        &proj,
        "sed -i 's/two/TWO/' two.txt && rm three.txt && mkdir -p new/dir && echo n > new/dir/file && \
         sed -i 's/abc/xyz/' .env && echo 'one, again' >> one.txt",
    );
    let after = snapshot_work(&proj);

    let _d = env.start_daemon();
    let ended = env.ctl_json(&proj, &["turn-end"]);
    assert_eq!(
        ended["turn"]["info"]["id"], 1,
        "the turn stayed open across the restart"
    );
    let paths: Vec<&str> = ended["turn"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    for p in [
        "one.txt",
        "two.txt",
        "three.txt",
        "new",
        "new/dir",
        "new/dir/file",
        ".env",
    ] {
        assert!(paths.contains(&p), "{p} missing from {paths:?}");
    }
    env.ctl_ok(&proj, &["rewind", "1"]);
    assert_same_tree("rewound after restart", &before, &snapshot_work(&proj));
    env.ctl_ok(&proj, &["redo"]);
    assert_same_tree("redone after restart", &after, &snapshot_work(&proj));
    assert_same_tree(".git", &git_before, &snapshot_git(&proj));
}

#[test]
fn sigkill_in_the_middle_of_a_rewind_leaves_one_of_the_two_states() {
    let env = Env::new();
    let marker = env.path().join("paused");
    let marker_s = marker.to_str().unwrap().to_string();
    let d = env.start_daemon_with(&[
        ("CKPT_TEST_PAUSE_REWIND_AFTER", "3"),
        ("CKPT_TEST_PAUSE_MARKER", &marker_s),
    ]);
    let proj = repo(&env);
    env.ctl_ok(&proj, &["watch"]);
    let before = snapshot_work(&proj);
    let git_before = snapshot_git(&proj);
    env.ctl_ok(&proj, &["turn-start"]);
    sh(
        &proj,
        "echo 1 > one.txt && echo 2 > two.txt && rm three.txt && echo 4 >> src/four.rs && \
         echo five > five.txt && mkdir six && echo 6 > six/six.txt",
    );
    env.ctl_ok(&proj, &["turn-end"]);
    let after = snapshot_work(&proj);

    let mut rewind = env.rewind_until_paused(&proj, "1", &marker);
    let mid = snapshot_work(&proj);
    assert_ne!(
        mid, before,
        "paused before any change: the test would prove nothing"
    );
    assert_ne!(
        mid, after,
        "paused after every change: the test would prove nothing"
    );
    d.kill();
    let status = wait_timeout(&mut rewind, Duration::from_secs(30)).expect("ckptctl returns");
    assert_eq!(
        status.code(),
        Some(1),
        "the interrupted rewind reports an error"
    );

    // Restarted without the pause: recovery finishes (or rolls back) the
    // journaled rewind before anything else.
    let _d = env.start_daemon();
    env.ctl_ok(&proj, &["sync"]);
    let now = snapshot_work(&proj);
    assert!(
        now == before || now == after,
        "after recovery the tree must be exactly one of the two states; found {:?}",
        list(&proj)
    );
    if now == before {
        env.ctl_ok(&proj, &["redo"]);
        assert_same_tree("redo after recovery", &after, &snapshot_work(&proj));
        env.ctl_ok(&proj, &["rewind", "1"]);
        assert_same_tree("rewind after recovery", &before, &snapshot_work(&proj));
    } else {
        env.ctl_ok(&proj, &["rewind", "1"]);
        assert_same_tree("rewind after rollback", &before, &snapshot_work(&proj));
        env.ctl_ok(&proj, &["redo"]);
        assert_same_tree("redo after rollback", &after, &snapshot_work(&proj));
    }
    assert_same_tree(".git", &git_before, &snapshot_git(&proj));
}

#[test]
fn projects_are_reopened_at_start_up() {
    let env = Env::new();
    let d = env.start_daemon();
    let proj = repo(&env);
    env.ctl_ok(&proj, &["watch"]);
    env.ctl_ok(&proj, &["turn-start", "--label", "before restart"]);
    assert!(d.terminate().success());
    let _d = env.start_daemon();
    env.ctl_ok(&proj, &["sync"]);
    let st = env.ctl_json(&proj, &["status"]);
    let p = &st["projects"][0];
    assert_eq!(p["health"], "ok", "{st:#}");
    assert_eq!(p["open_turn"], 1);
    // And the watcher is live again: a change is seen by the cookie barrier.
    sh(&proj, "echo changed > one.txt");
    let sync = env.ctl_json(&proj, &["sync"]);
    assert_eq!(sync["method"], "cookie");
    let ended = env.ctl_json(&proj, &["turn-end"]);
    assert_eq!(ended["turn"]["entries"][0]["path"], "one.txt");
}

/// A rewind cut short by a killed daemon is finished at the next start-up,
/// and the first `status` after it says so (once), not only ckptd.log.
#[test]
fn status_says_once_that_startup_finished_an_interrupted_rewind() {
    let env = Env::new();
    let marker = env.path().join("paused");
    let marker_s = marker.to_str().unwrap().to_string();
    let d = env.start_daemon_with(&[
        ("CKPT_TEST_PAUSE_REWIND_AFTER", "2"),
        ("CKPT_TEST_PAUSE_MARKER", &marker_s),
    ]);
    let proj = repo(&env);
    env.ctl_ok(&proj, &["watch"]);
    env.ctl_ok(&proj, &["turn-start"]);
    sh(
        &proj,
        "echo 1 > one.txt && echo 2 > two.txt && echo five > five.txt",
    );
    env.ctl_ok(&proj, &["turn-end"]);
    let before_restart = env.ctl_ok(&proj, &["status"]);
    assert!(!before_restart.contains("recovered:"), "{before_restart}");
    let mut rewind = env.rewind_until_paused(&proj, "1", &marker);
    d.kill();
    wait_timeout(&mut rewind, Duration::from_secs(30)).expect("ckptctl returns");

    let _d = env.start_daemon();
    env.ctl_ok(&proj, &["sync"]);
    let text = env.ctl_ok(&proj, &["status"]);
    assert!(
        text.contains("recovered: the daemon's start-up finished an interrupted rewind"),
        "{text}"
    );
    let again = env.ctl_json(&proj, &["status"]);
    assert_eq!(
        again["projects"][0]["recovered"],
        serde_json::Value::Null,
        "once: {again}"
    );
}

/// A root deleted in a turn and gone when the daemon starts: the store
/// cannot be opened then, but a rewind of that turn makes the root again
/// and brings the tree back.
#[test]
fn a_root_deleted_while_stopped_comes_back_with_a_rewind_after_restart() {
    let env = Env::new();
    let d = env.start_daemon();
    let proj = env.dir("plain");
    std::fs::create_dir_all(proj.join("src")).unwrap();
    std::fs::write(proj.join("src/a.rs"), "fn a() {}\n").unwrap();
    std::fs::write(proj.join("README"), "read me\n").unwrap();
    let proj = proj.canonicalize().unwrap();
    env.ctl_ok(&proj, &["watch"]);
    let before = snapshot(&proj);
    env.ctl_ok(&proj, &["turn-start"]);
    std::fs::remove_dir_all(&proj).unwrap();
    assert!(d.terminate().success());

    let _d = env.start_daemon();
    let at = ["-C", proj.to_str().unwrap()];
    let out = env.ctl(env.path(), &[&at[..], &["log"]].concat());
    assert!(!out.status.success(), "{out:?}");
    env.ctl_ok(env.path(), &[&at[..], &["rewind", "1"]].concat());
    assert_same_tree(
        "the deleted tree after a restart",
        &before,
        &snapshot(&proj),
    );
    env.ctl_ok(&proj, &["turn-start"]);
    sh(&proj, "echo b > README");
    env.ctl_ok(&proj, &["turn-end"]);
}
