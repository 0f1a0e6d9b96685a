//! What the watcher must not miss: bursts in new directories, the usual
//! editor and tool dances, odd names; and what it must ignore: our own
//! cookies and writes.

use ckpt_e2e::*;

#[test]
fn burst_of_new_nested_directories_is_captured() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("README", b"r\n")]);
    env.ctl_ok(&proj, &["watch"]);
    let before = snapshot_work(&proj);
    env.ctl_ok(&proj, &["turn-start"]);
    sh(&proj, "mkdir -p a/b/c && echo x > a/b/c/f");
    sh(
        &proj,
        "for i in $(seq 1 100); do mkdir -p n$i/b/c/d && echo $i > n$i/b/c/d/f && echo $i > n$i/top; done",
    );
    let ended = env.ctl_json(&proj, &["turn-end"]);
    let paths: Vec<&str> = ended["turn"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    for p in ["a", "a/b", "a/b/c", "a/b/c/f"] {
        assert!(paths.contains(&p), "{p} not captured: {paths:?}");
    }
    for i in 1..=100 {
        let f = format!("n{i}/b/c/d/f");
        assert!(paths.contains(&f.as_str()), "{f} not captured");
    }
    env.ctl_ok(&proj, &["rewind", "1"]);
    assert_same_tree("burst rewound", &before, &snapshot_work(&proj));
}

#[test]
fn editor_and_tool_dances_are_captured_and_rewound() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo(
        "p",
        &[
            ("main.c", b"int main() { return 0; }\n"),
            ("conf.ini", b"[a]\nx=1\n"),
            ("data/list.txt", b"one\ntwo\n"),
            ("mv-me.txt", b"moving\n"),
        ],
    );
    env.ctl_ok(&proj, &["watch"]);
    let before = snapshot_work(&proj);
    env.ctl_ok(&proj, &["turn-start", "--label", "editors"]);
    sh(
        &proj,
        r#"
        # vim's backup dance: copy to f~, rename the new file over, drop the backup
        cp main.c main.c~ && printf 'int main() { return 1; }\n' > .main.c.new && mv .main.c.new main.c && rm main.c~
        # write-then-rename atomic save
        printf '[a]\nx=2\n' > conf.ini.tmp.123 && mv conf.ini.tmp.123 conf.ini
        sed -i 's/two/TWO/' data/list.txt
        mv mv-me.txt data/moved.txt
        cp data/list.txt data/copy.txt
        ln -s data/copy.txt link-to-copy
        printf '\0\1\2binary' > blob.bin
        "#,
    );
    let after = snapshot_work(&proj);
    let ended = env.ctl_json(&proj, &["turn-end"]);
    let entries = ended["turn"]["entries"].as_array().unwrap();
    let paths: Vec<&str> = entries
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    for p in [
        "main.c",
        "conf.ini",
        "data/list.txt",
        "mv-me.txt",
        "data/moved.txt",
        "data/copy.txt",
        "link-to-copy",
        "blob.bin",
    ] {
        assert!(paths.contains(&p), "{p} not in {paths:?}");
    }
    for gone in ["main.c~", ".main.c.new", "conf.ini.tmp.123"] {
        assert!(
            !paths.contains(&gone),
            "transient {gone} should not be a change: {paths:?}"
        );
    }
    let diff = env.ctl_ok(&proj, &["diff", "1"]);
    assert!(
        diff.contains("-int main() { return 0; }") && diff.contains("+int main() { return 1; }"),
        "{diff}"
    );
    assert!(
        diff.contains("Binary files /dev/null and b/blob.bin differ") && !diff.contains("bin\u{1}"),
        "binary named, not dumped: {diff}"
    );

    env.ctl_ok(&proj, &["rewind", "1"]);
    assert_same_tree("dances rewound", &before, &snapshot_work(&proj));
    env.ctl_ok(&proj, &["redo"]);
    assert_same_tree("dances redone", &after, &snapshot_work(&proj));
}

#[test]
fn non_utf8_names_survive_the_round_trip() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.dir("p");
    std::fs::write(proj.join("plain"), "p").unwrap();
    env.ctl_ok(&proj, &["watch"]);
    let before = snapshot_work(&proj);
    env.ctl_ok(&proj, &["turn-start"]);
    sh(
        &proj,
        "printf 'x' > \"$(printf 'caf\\351')\" && echo gone > plain",
    );
    let ended = env.ctl_json(&proj, &["turn-end"]);
    let entries = ended["turn"]["entries"].as_array().unwrap();
    // A non-UTF-8 name travels as raw bytes.
    assert!(
        entries
            .iter()
            .any(|e| e["path"] == serde_json::json!([99, 97, 102, 0xe9])),
        "{entries:#?}"
    );
    env.ctl_ok(&proj, &["rewind", "1"]);
    assert_same_tree("non-utf8 rewound", &before, &snapshot_work(&proj));
}

#[test]
fn turn_start_watches_an_unwatched_project_and_cookies_leave_no_trace() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("src/lib.rs", b"pub fn f() {}\n")]);
    let before = snapshot_work(&proj);
    // From a subdirectory: the git top-level becomes the project.
    let started = env.ctl_json(&proj.join("src"), &["turn-start", "--label", "auto"]);
    assert_eq!(started["turn"], 1);
    assert_eq!(started["watched_now"], true);
    assert_eq!(
        started["project"],
        proj.canonicalize().unwrap().to_str().unwrap()
    );
    sh(&proj, "echo 'pub fn g() {}' >> src/lib.rs");
    for _ in 0..5 {
        env.ctl_ok(&proj, &["sync"]);
    }
    let ended = env.ctl_json(&proj, &["turn-end"]);
    let entries = ended["turn"]["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "{entries:#?}");
    assert_eq!(entries[0]["path"], "src/lib.rs");
    // No cookie is left behind, and none was ever captured.
    assert!(
        list(&proj).iter().all(|p| !p.contains(".ckpt-")),
        "{:?}",
        list(&proj)
    );
    // Cookies live beside the socket (a tmpfs runtime dir), in a private
    // directory left empty, and not in the data directory.
    let mut cookies = env.socket.clone().into_os_string();
    cookies.push(".cookies");
    let cookies = std::path::PathBuf::from(cookies);
    let meta = std::fs::symlink_metadata(&cookies).unwrap();
    assert!(meta.is_dir());
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o777,
        0o700
    );
    assert_eq!(std::fs::read_dir(&cookies).unwrap().count(), 0);
    assert!(!env.data.join("cookies").exists());
    env.ctl_ok(&proj, &["rewind", "1"]);
    assert_same_tree("auto-watched rewound", &before, &snapshot_work(&proj));
    // Between turns, changes belong to no turn.
    sh(&proj, "echo between > between.txt");
    env.ctl_ok(&proj, &["turn-start"]);
    let ended = env.ctl_json(&proj, &["turn-end"]);
    assert_eq!(ended["turn"]["entries"].as_array().unwrap().len(), 0);
    // A turn-start while a turn is open closes it first, and says so.
    let third = env.ctl_json(&proj, &["turn-start"]);
    assert!(third.get("closed_turn").is_none(), "{third}");
    let out = env.ctl(&proj, &["turn-start"]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        out.stderr
            .contains(&format!("closed turn {}", third["turn"])),
        "{}",
        out.stderr
    );
}

#[test]
fn run_wraps_a_command_as_one_turn() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("f", b"1\n")]);
    env.ctl_ok(&proj, &["watch"]);
    let before = snapshot_work(&proj);
    let out = env.ctl(
        &proj,
        &["run", "--", "sh", "-c", "echo 2 > f && echo out && exit 7"],
    );
    assert_eq!(out.code(), 7, "exit status of the command: {out:?}");
    assert_eq!(out.stdout, "out\n", "the command's stdout is untouched");
    let log = env.ctl_json(&proj, &["log"]);
    let t = &log["turns"][0];
    assert_eq!(t["status"], "closed");
    assert_eq!(t["label"], "sh -c echo 2 > f && echo out && exit 7");
    assert_eq!(t["counts"]["modified"], 1);
    env.ctl_ok(&proj, &["rewind", "1"]);
    assert_same_tree("run rewound", &before, &snapshot_work(&proj));
}

#[test]
fn projects_status_and_unwatch() {
    let env = Env::new();
    let d = env.start_daemon();
    let a = env.git_repo("a", &[("x", b"x")]);
    let b = env.dir("b");
    std::fs::write(b.join("y"), "y").unwrap();
    env.ctl_ok(&a, &["watch"]);
    env.ctl_ok(&b, &["watch"]);
    let again = env.ctl_json(&b, &["watch"]);
    assert_eq!(again["already"], true);
    env.ctl_ok(&a, &["turn-start"]);

    let st = env.ctl_json(&a, &["status"]);
    assert_eq!(st["daemon"]["pid"].as_i64().unwrap() as i32, d.pid());
    let projects = st["projects"].as_array().unwrap();
    assert_eq!(projects.len(), 2);
    let pa = projects
        .iter()
        .find(|p| p["root"].as_str().unwrap().ends_with("/a"))
        .unwrap();
    assert_eq!(pa["health"], "ok");
    assert_eq!(pa["open_turn"], 1);
    assert!(pa["entries"].as_u64().unwrap() >= 1);
    assert!(pa["store_bytes"].as_u64().unwrap() > 0);
    let human = env.ctl_ok(&a, &["projects"]);
    assert!(
        human.contains("/a  ok") && human.contains("turn 1 open"),
        "{human}"
    );

    // Unwatch keeping data: the history comes back with the next watch.
    env.ctl_ok(&a, &["unwatch"]);
    let out = env.ctl(&a, &["log"]);
    assert_eq!(out.code(), 1, "{out:?}");
    env.ctl_ok(&a, &["watch"]);
    let log = env.ctl_json(&a, &["log"]);
    assert_eq!(log["turns"].as_array().unwrap().len(), 1, "history kept");
    // Unwatch dropping data: a fresh start.
    let id = env.ctl_json(&b, &["watch"])["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(env.data.join("projects").join(&id).exists());
    env.ctl_ok(&b, &["unwatch", "--drop-data"]);
    assert!(
        !env.data.join("projects").join(&id).exists(),
        "store deleted"
    );
    let projects = env.ctl_json(&a, &["projects"]);
    assert_eq!(projects["projects"].as_array().unwrap().len(), 1);
}

#[test]
fn claude_code_hooks_mark_turns_from_their_stdin_json() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("f", b"1\n")]);
    let before = snapshot_work(&proj);
    let canonical = proj.canonicalize().unwrap();
    // Hooks run from wherever the agent runs them; the JSON names the cwd.
    let prompt = serde_json::json!({
        "session_id": "sess-42",
        "transcript_path": "/dev/null",
        "cwd": canonical,
        "hook_event_name": "UserPromptSubmit",
        "prompt": "make f say 2",
    });
    let out = run_with_input(
        &mut env.ctl_cmd(
            env.path(),
            &["turn-start", "--from-hook", "--agent", "claude-code"],
        ),
        Some(prompt.to_string().as_bytes()),
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(out.stdout, "", "nothing may reach the agent's context");
    sh(&proj, "echo 2 > f");
    let stop =
        serde_json::json!({"session_id": "sess-42", "cwd": canonical, "hook_event_name": "Stop"});
    let out = run_with_input(
        &mut env.ctl_cmd(env.path(), &["turn-end", "--from-hook"]),
        Some(stop.to_string().as_bytes()),
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(out.stdout, "");
    let log = env.ctl_json(&proj, &["log"]);
    let t = &log["turns"][0];
    assert_eq!(t["label"], "make f say 2");
    assert_eq!(t["session"], "sess-42");
    assert_eq!(t["agent"], "claude-code");
    assert_eq!(t["counts"]["modified"], 1);
    env.ctl_ok(&proj, &["rewind", "1"]);
    assert_same_tree("hook turn rewound", &before, &snapshot_work(&proj));
}

/// Turn boundaries write nothing into the project (the barrier's cookie
/// lives in the daemon's data directory): tools watching the project, a
/// dev server or `cargo watch`, see no change, and its mtime stays.
#[test]
fn turn_boundaries_leave_the_project_untouched() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("a.txt", b"a\n")]);
    env.ctl_ok(&proj, &["watch"]);
    let mtime = || std::fs::metadata(&proj).unwrap().modified().unwrap();
    let before = mtime();
    for _ in 0..3 {
        env.ctl_ok(&proj, &["turn-start"]);
        env.ctl_ok(&proj, &["sync"]);
        env.ctl_ok(&proj, &["turn-end"]);
    }
    assert_eq!(mtime(), before);
    // And the barrier still sees a change made just before it.
    env.ctl_ok(&proj, &["turn-start"]);
    sh(&proj, "echo b > a.txt");
    let ended = env.ctl_json(&proj, &["turn-end"]);
    assert_eq!(ended["turn"]["entries"][0]["path"], "a.txt");
}

/// The paths a `turn-end --json` reply recorded.
fn ended_paths(doc: &serde_json::Value) -> Vec<String> {
    doc["turn"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap().to_string())
        .collect()
}

/// Two names for one file inside the project: a write through one changes
/// both, though inotify reports only the name written to. The turn records
/// both and the rewind restores both, whether the link was there when the
/// project was watched or made since (and written through its new name).
#[test]
fn a_write_through_one_hard_link_is_recorded_and_rewound_under_every_name() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("a", b"one\n")]);
    sh(&proj, "ln a b");
    env.ctl_ok(&proj, &["watch"]);
    env.ctl_ok(&proj, &["turn-start"]);
    sh(&proj, "echo two >> a");
    let ended = env.ctl_json(&proj, &["turn-end"]);
    assert_eq!(ended_paths(&ended), ["a", "b"], "{ended}");
    env.ctl_ok(&proj, &["rewind", "1"]);
    for name in ["a", "b"] {
        assert_eq!(std::fs::read(proj.join(name)).unwrap(), b"one\n", "{name}");
    }

    sh(&proj, "echo c > c && mkdir d && ln c d/c2");
    env.ctl_ok(&proj, &["turn-start"]);
    sh(&proj, "echo more >> d/c2");
    let ended = env.ctl_json(&proj, &["turn-end"]);
    assert_eq!(ended_paths(&ended), ["c", "d/c2"], "{ended}");
    env.ctl_ok(&proj, &["rewind", "2"]);
    for name in ["c", "d/c2"] {
        assert_eq!(std::fs::read(proj.join(name)).unwrap(), b"c\n", "{name}");
    }
}

/// With a queue of 4 paths (`CKPT_TEST_PENDING_MAX`), the events past it
/// only name their directories, and every entry of those is checked: a
/// turn's edits, moves and new directories, and the rewind's own writes
/// (made while it holds the project, so they queue up), are captured as
/// exactly as with a roomy queue.
#[test]
fn a_full_queue_checks_every_entry_of_the_directories_past_it() {
    let env = Env::new();
    let d = env.start_daemon_with(&[("CKPT_TEST_PENDING_MAX", "4")]);
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    for i in 0..40 {
        files.push((format!("src/m{i}.rs"), format!("one {i}\n").into_bytes()));
        files.push((format!("r{i}.txt"), format!("root {i}\n").into_bytes()));
    }
    files.push(("lib/keep".into(), b"k\n".to_vec()));
    let files: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(p, b)| (p.as_str(), b.as_slice()))
        .collect();
    let proj = env.git_repo("p", &files);
    env.ctl_ok(&proj, &["watch"]);
    let before = snapshot_work(&proj);
    env.ctl_ok(&proj, &["turn-start"]);
    sh(
        &proj,
        r#"
        sed -i 's/one/two/' src/*.rs
        for i in $(seq 0 9); do echo new $i > r$i.tmp && mv r$i.tmp r$i.txt; done
        rm src/m0.rs r39.txt
        mv src/m1.rs lib/m1.rs
        mkdir -p gen/a && for i in $(seq 1 30); do echo $i > gen/a/f$i; done
        echo hi > top.txt
        "#,
    );
    let after = snapshot_work(&proj);
    let differs = |a: &Tree, b: &Tree| -> Vec<String> {
        let keys: std::collections::BTreeSet<&Vec<u8>> = a.keys().chain(b.keys()).collect();
        keys.into_iter()
            .filter(|k| a.get(*k) != b.get(*k))
            .map(|k| String::from_utf8_lossy(k).into_owned())
            .collect()
    };
    let ended = env.ctl_json(&proj, &["turn-end"]);
    assert_eq!(ended_paths(&ended), differs(&before, &after));

    env.ctl_ok(&proj, &["rewind", "1"]);
    assert_same_tree("rewound", &before, &snapshot_work(&proj));
    // What the rewind wrote is no one's change.
    env.ctl_ok(&proj, &["turn-start"]);
    let idle = env.ctl_json(&proj, &["turn-end"]);
    assert_eq!(ended_paths(&idle), Vec::<String>::new());
    env.ctl_ok(&proj, &["redo"]);
    assert_same_tree("redone", &after, &snapshot_work(&proj));
    assert!(
        d.log_text().contains("the queue was full"),
        "the queue never filled:\n{}",
        d.log_text()
    );
}
