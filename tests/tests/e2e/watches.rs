//! One inotify watch per *captured* directory: excluded trees (`.git`,
//! `node_modules`, tagged build directories, `.ckptignore` matches) cost no
//! watch, and capture still follows new, renamed and removed directories.
//! With one recursive watch per project (`CKPT_WATCHER=notify`, FSEvents'
//! shape) every directory of the tree is watched and the router drops what
//! is excluded: the same tests check that shape's count and its capture.

use std::path::Path;
use std::time::Duration;

use ckpt_e2e::*;

/// The inotify watches the process holds, summed over its inotify
/// descriptors (`inotify wd:` lines of `/proc/<pid>/fdinfo/<fd>`).
fn inotify_watches(pid: i32) -> usize {
    let mut total = 0;
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).expect("list the daemon's fds");
    for fd in fds.flatten() {
        let Ok(target) = std::fs::read_link(fd.path()) else {
            continue;
        };
        if !target.to_string_lossy().contains("inotify") {
            continue;
        }
        let info = format!("/proc/{pid}/fdinfo/{}", fd.file_name().to_string_lossy());
        let Ok(text) = std::fs::read_to_string(info) else {
            continue;
        };
        total += text
            .lines()
            .filter(|l| l.starts_with("inotify wd:"))
            .count();
    }
    total
}

/// The event masks of the process's inotify watches (`mask:` of each
/// `inotify wd:` line in `/proc/<pid>/fdinfo/<fd>`).
fn inotify_masks(pid: i32) -> Vec<u32> {
    let mut masks = Vec::new();
    for fd in std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .flatten()
    {
        if !std::fs::read_link(fd.path()).is_ok_and(|t| t.to_string_lossy().contains("inotify")) {
            continue;
        }
        let info = format!("/proc/{pid}/fdinfo/{}", fd.file_name().to_string_lossy());
        for line in std::fs::read_to_string(info).unwrap_or_default().lines() {
            if !line.starts_with("inotify wd:") {
                continue;
            }
            let hex = line
                .split_whitespace()
                .find_map(|f| f.strip_prefix("mask:"))
                .expect("a mask field");
            masks.push(u32::from_str_radix(hex, 16).unwrap());
        }
    }
    masks
}

/// The daemon's own watch: its barrier cookie directory.
const OWN_WATCHES: usize = 1;

/// Waits until the daemon holds watches for `captured` directories of
/// `proj` (0: none), or with the recursive shape for every directory of it;
/// panics with the count seen.
fn expect_watches(pid: i32, proj: &Path, captured: usize, what: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let n = if captured > 0 && recursive_watcher() {
            dirs_below(proj)
        } else {
            captured
        };
        let seen = inotify_watches(pid).saturating_sub(OWN_WATCHES);
        if seen == n {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: the daemon holds {seen} inotify watches, expected {n}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn dirs_below(root: &Path) -> usize {
    let mut n = 1;
    for e in std::fs::read_dir(root).unwrap().flatten() {
        if e.file_type().unwrap().is_dir() {
            n += dirs_below(&e.path());
        }
    }
    n
}

fn entry_paths(ended: &serde_json::Value) -> Vec<String> {
    ended["turn"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap().to_string())
        .collect()
}

/// One turn whose changes are made by `script`: the barrier before
/// turn-end must be the cookie (the watches saw everything, no scan was
/// needed). Returns the turn's ended reply.
fn turn_seen_by_watches(env: &Env, proj: &Path, script: &str) -> serde_json::Value {
    env.ctl_ok(proj, &["turn-start"]);
    sh(proj, script);
    let sync = env.ctl_json(proj, &["sync"]);
    assert_eq!(sync["method"], "cookie", "{sync:#}");
    env.ctl_json(proj, &["turn-end"])
}

/// A repo with excluded trees around five captured directories (root, src,
/// src/deep, src/deep/x, docs).
fn project_with_excluded_trees(env: &Env) -> std::path::PathBuf {
    let proj = env.git_repo(
        "p",
        &[
            ("src/a.rs", b"a\n"),
            ("src/deep/x/y.rs", b"y\n"),
            ("docs/readme", b"r\n"),
            (".ckptignore", b"scratch/\n"),
        ],
    );
    sh(
        &proj,
        "mkdir -p node_modules/a/b/c node_modules/d/e && echo m > node_modules/a/b/c/m.js \
         && mkdir -p .git/objects/xx && echo o > .git/objects/xx/o \
         && mkdir -p target/debug/deps target/release/build \
         && printf 'Signature: 8a477f597d28d172789f06886806bc55\\n' > target/CACHEDIR.TAG \
         && mkdir -p scratch/one/two && echo s > scratch/one/two/s \
         && mkdir -p src/node_modules/q",
    );
    proj
}

#[test]
fn only_captured_directories_are_watched() {
    let env = Env::new();
    let d = env.start_daemon();
    let proj = project_with_excluded_trees(&env);
    let all = dirs_below(&proj);
    env.ctl_ok(&proj, &["watch"]);
    expect_watches(d.pid(), &proj, 5, "after watch");
    assert!(all > 20, "the tree has {all} directories in all");

    // New directories get watches, removed and renamed ones lose them.
    env.ctl_ok(&proj, &["turn-start"]);
    sh(&proj, "mkdir -p a/b/c && echo x > a/b/c/f");
    env.ctl_ok(&proj, &["sync"]);
    expect_watches(d.pid(), &proj, 8, "after mkdir -p a/b/c");
    sh(&proj, "mv a z");
    env.ctl_ok(&proj, &["sync"]);
    expect_watches(d.pid(), &proj, 8, "after renaming a to z");
    sh(&proj, "rm -rf z/b");
    env.ctl_ok(&proj, &["sync"]);
    expect_watches(d.pid(), &proj, 6, "after removing z/b");
    sh(
        &proj,
        "mkdir -p node_modules/new/deeper .git/refs/x scratch/more",
    );
    env.ctl_ok(&proj, &["sync"]);
    expect_watches(d.pid(), &proj, 6, "after making excluded directories");
    env.ctl_ok(&proj, &["turn-end"]);

    env.ctl_ok(&proj, &["unwatch"]);
    expect_watches(d.pid(), &proj, 0, "after unwatch");
}

#[test]
fn new_nested_tree_is_captured_and_then_watched() {
    let env = Env::new();
    let d = env.start_daemon();
    let proj = project_with_excluded_trees(&env);
    env.ctl_ok(&proj, &["watch"]);
    let before = snapshot_work(&proj);

    env.ctl_ok(&proj, &["turn-start"]);
    sh(&proj, "mkdir -p a/b/c && echo x > a/b/c/f");
    let ended = env.ctl_json(&proj, &["turn-end"]);
    let paths = entry_paths(&ended);
    for p in ["a", "a/b", "a/b/c", "a/b/c/f"] {
        assert!(paths.iter().any(|e| e == p), "{p} not captured: {paths:?}");
    }
    expect_watches(d.pid(), &proj, 8, "the new tree is watched");

    // Later turns see edits in the new tree through its own watches.
    for i in 2..=3 {
        let ended = turn_seen_by_watches(
            &env,
            &proj,
            &format!("echo {i} >> a/b/c/f && echo {i} > a/b/g{i}"),
        );
        let paths = entry_paths(&ended);
        assert_eq!(
            paths,
            ["a/b/c/f".to_string(), format!("a/b/g{i}")],
            "turn {i}"
        );
    }
    env.ctl_ok(&proj, &["rewind", "1"]);
    assert_same_tree("new tree rewound", &before, &snapshot_work(&proj));
}

#[test]
fn renamed_directory_is_captured_under_its_new_name() {
    let env = Env::new();
    let d = env.start_daemon();
    let proj = env.git_repo(
        "p",
        &[
            ("src/x", b"x0\n"),
            ("src/sub/z", b"z0\n"),
            ("keep.txt", b"k\n"),
        ],
    );
    env.ctl_ok(&proj, &["watch"]);
    expect_watches(d.pid(), &proj, 3, "root, src, src/sub");
    let before = snapshot_work(&proj);

    env.ctl_ok(&proj, &["turn-start"]);
    sh(&proj, "mv src lib && echo x1 >> lib/x");
    let ended = env.ctl_json(&proj, &["turn-end"]);
    let paths = entry_paths(&ended);
    for p in [
        "src",
        "src/x",
        "src/sub",
        "src/sub/z",
        "lib",
        "lib/x",
        "lib/sub/z",
    ] {
        assert!(paths.iter().any(|e| e == p), "{p} not captured: {paths:?}");
    }
    expect_watches(d.pid(), &proj, 3, "root, lib, lib/sub");

    // The renamed tree's watches report its new paths.
    for i in 2..=3 {
        let ended = turn_seen_by_watches(
            &env,
            &proj,
            &format!("echo x{i} >> lib/x && echo z{i} >> lib/sub/z"),
        );
        assert_eq!(entry_paths(&ended), ["lib/sub/z", "lib/x"], "turn {i}");
    }
    assert_eq!(
        std::fs::read(proj.join("lib/x")).unwrap(),
        b"x0\nx1\nx2\nx3\n"
    );

    env.ctl_ok(&proj, &["rewind", "1"]);
    assert_same_tree("rename rewound", &before, &snapshot_work(&proj));
    // And the restored src is watched again.
    expect_watches(d.pid(), &proj, 3, "root, src, src/sub after the rewind");
    env.ctl_ok(&proj, &["turn-start"]);
    sh(&proj, "echo again >> src/sub/z");
    env.ctl_json(&proj, &["sync"]);
    let ended = env.ctl_json(&proj, &["turn-end"]);
    assert_eq!(entry_paths(&ended), ["src/sub/z"]);
}

#[test]
fn writes_into_node_modules_are_ignored_without_degrading() {
    let env = Env::new();
    let d = env.start_daemon();
    let proj = project_with_excluded_trees(&env);
    env.ctl_ok(&proj, &["watch"]);
    let ended = turn_seen_by_watches(
        &env,
        &proj,
        "for i in $(seq 1 200); do mkdir -p node_modules/p$i/lib && echo $i > node_modules/p$i/lib/i.js; done \
         && echo changed > node_modules/a/b/c/m.js && mkdir -p target/debug/more && echo t > target/debug/more/t \
         && echo real > src/a.rs",
    );
    assert!(ended["degraded"].is_null(), "{ended:#}");
    assert_eq!(entry_paths(&ended), ["src/a.rs"]);
    let status = env.ctl_json(&proj, &["status"]);
    assert_eq!(status["projects"][0]["health"], "ok", "{status:#}");
    expect_watches(d.pid(), &proj, 5, "no watch for the excluded trees");
}

#[test]
fn tagging_a_watched_directory_drops_its_watches() {
    let env = Env::new();
    let d = env.start_daemon();
    let proj = env.git_repo("p", &[("a.txt", b"a\n")]);
    env.ctl_ok(&proj, &["watch"]);
    env.ctl_ok(&proj, &["turn-start"]);
    sh(&proj, "mkdir -p out/x/y");
    env.ctl_ok(&proj, &["sync"]);
    expect_watches(d.pid(), &proj, 4, "root, out, out/x, out/x/y");
    sh(
        &proj,
        "printf 'Signature: 8a477f597d28d172789f06886806bc55\\n' > out/CACHEDIR.TAG",
    );
    env.ctl_ok(&proj, &["sync"]);
    expect_watches(d.pid(), &proj, 1, "the tagged tree lost its watches");
    env.ctl_ok(&proj, &["turn-end"]);
}

/// Captured directories of a tree (root included), as the daemon sees them
/// here: everything but `.git`.
fn captured_dirs(root: &Path) -> usize {
    let mut n = 1;
    for e in std::fs::read_dir(root).unwrap().flatten() {
        if e.file_type().unwrap().is_dir() && e.file_name() != ".git" {
            n += captured_dirs(&e.path());
        }
    }
    n
}

#[test]
fn renames_and_rebuilds_in_quick_succession_leave_every_directory_watched() {
    let env = Env::new();
    let d = env.start_daemon();
    let proj = env.git_repo("p", &[("t/a/b/f", b"f\n"), ("keep", b"k\n")]);
    env.ctl_ok(&proj, &["watch"]);
    let before = snapshot_work(&proj);
    env.ctl_ok(&proj, &["turn-start"]);
    sh(
        &proj,
        "for i in $(seq 1 40); do \
           mv t t$i && mkdir -p t/a/b && mv t$i t/a/b/old$i && echo $i > t/a/b/old$i/a/b/f \
           && mv t/a/b/old$i u && rm -rf u/a && mkdir -p u/n$i/m && echo $i > u/n$i/m/g \
           && mv u t/a/b/u$i; \
         done",
    );
    env.ctl_ok(&proj, &["sync"]);
    expect_watches(d.pid(), &proj, captured_dirs(&proj), "after the churn");
    env.ctl_ok(&proj, &["turn-end"]);

    // Every directory reports edits under its current name.
    let ended = turn_seen_by_watches(
        &env,
        &proj,
        "echo edit >> t/a/b/f && echo edit >> t/a/b/u40/n40/m/g",
    );
    assert_eq!(entry_paths(&ended), ["t/a/b/f", "t/a/b/u40/n40/m/g"]);
    env.ctl_ok(&proj, &["rewind", "1"]);
    assert_same_tree("churn rewound", &before, &snapshot_work(&proj));
    expect_watches(d.pid(), &proj, captured_dirs(&proj), "after the rewind");
}

/// Reads in a watched tree (a build, `grep -r`, the daemon's own hashing)
/// must not reach the daemon: no watch asks for open, read or
/// close-without-write events. Close-after-write is kept, and a write
/// that shows only as that (an mmap write) is still captured.
#[test]
fn watches_ask_for_changes_only() {
    const IN_ACCESS: u32 = 0x1;
    const IN_CLOSE_WRITE: u32 = 0x8;
    const IN_CLOSE_NOWRITE: u32 = 0x10;
    const IN_OPEN: u32 = 0x20;
    let env = Env::new();
    let d = env.start_daemon();
    let proj = project_with_excluded_trees(&env);
    env.ctl_ok(&proj, &["watch"]);
    expect_watches(d.pid(), &proj, 5, "after watch");
    let masks = inotify_masks(d.pid());
    assert_eq!(masks.len(), inotify_watches(d.pid()));
    for m in masks {
        assert_eq!(
            m & (IN_ACCESS | IN_OPEN | IN_CLOSE_NOWRITE),
            0,
            "mask {m:#x}"
        );
        assert_ne!(m & IN_CLOSE_WRITE, 0, "mask {m:#x}");
    }

    env.ctl_ok(&proj, &["turn-start"]);
    // Python's mmap writes through the mapping: no IN_MODIFY, only the
    // close-after-write.
    sh(
        &proj,
        "python3 -c \"import mmap; f=open('src/a.rs','r+b'); m=mmap.mmap(f.fileno(),0); m[0:1]=b'M'; m.flush(); m.close(); f.close()\"",
    );
    let ended = env.ctl_json(&proj, &["turn-end"]);
    assert_eq!(entry_paths(&ended), vec!["src/a.rs".to_string()]);
    assert_eq!(std::fs::read(proj.join("src/a.rs")).unwrap(), b"M\n");
}

/// `watch` and `status` count "not captured" the same way: paths present
/// whose content the store does not hold (here a fifo). A folder the scan
/// cannot read (here one nested past PATH_MAX: root reads any mode) is
/// listed apart, not counted as one of them.
#[test]
fn watch_and_status_count_the_same_paths_not_captured() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("a.txt", b"a\n")]);
    sh(
        &proj,
        // Two chains of 11 folders of 200 characters, one moved into the
        // other: no path given to mkdir or mv is over PATH_MAX.
        "mkfifo pipe && d=$(printf 'd%.0s' $(seq 200)) && p=a && q=b && \
         for i in $(seq 11); do p=$p/$d; q=$q/$d; done && \
         mkdir -p $p $q && echo x > $p/deep.txt && mv a $q/",
    );
    let text = env.ctl_ok(&proj, &["watch"]);
    assert!(text.contains("\n1 not captured:\n  pipe  ("), "{text}");
    assert!(
        text.contains("1 could not be read (nothing below is captured):"),
        "{text}"
    );
    let status = env.ctl_json(&proj, &["status"]);
    assert_eq!(status["projects"][0]["skipped"], 1, "{status}");
    let line = env.ctl_ok(&proj, &["status"]);
    assert!(line.contains("  1 not captured"), "{line}");
}

/// `status` while a long operation holds the project (here a paused
/// rewind) answers busy with the counts the watch left, not with zeros.
#[test]
fn status_while_the_project_is_busy_keeps_the_counts_of_the_watch() {
    let env = Env::new();
    let marker = env.path().join("paused");
    let d = env.start_daemon_with(&[
        ("CKPT_TEST_PAUSE_REWIND_AFTER", "1"),
        ("CKPT_TEST_PAUSE_MARKER", marker.to_str().unwrap()),
    ]);
    let proj = env.git_repo("p", &[("a.txt", b"a\n")]);
    sh(&proj, "mkfifo pipe");
    env.ctl_ok(&proj, &["watch"]);
    env.ctl_ok(&proj, &["turn-start"]);
    sh(&proj, "echo b > a.txt");
    env.ctl_ok(&proj, &["turn-end"]);
    let mut rewind = env.rewind_until_paused(&proj, "1", &marker);
    let status = env.ctl_json(&proj, &["status"]);
    let p = &status["projects"][0];
    assert_eq!(p["busy"], true, "{status}");
    assert_eq!(p["skipped"], 1, "{status}");
    assert_eq!(p["entries"], 2, "{status}");
    d.kill();
    wait_timeout(&mut rewind, Duration::from_secs(30)).expect("ckptctl returns");
}

/// Waits until `status` reports the project at `root` with `health`.
fn wait_health(env: &Env, root: &Path, health: &str) {
    wait_for(
        &format!("{} to be {health}", root.display()),
        Duration::from_secs(30),
        || {
            let st = env.ctl_json(env.path(), &["status"]);
            st["projects"].as_array().unwrap().iter().any(|p| {
                p["root"] == root.to_str().unwrap() && p["health"].as_str() == Some(health)
            })
        },
    );
}

/// A plain (non-git) project with a few files, watched.
fn watched_plain_project(env: &Env) -> std::path::PathBuf {
    let proj = env.dir("plain");
    std::fs::create_dir_all(proj.join("src")).unwrap();
    std::fs::write(proj.join("src/a.rs"), "fn a() {}\n").unwrap();
    std::fs::write(proj.join("README"), "read me\n").unwrap();
    env.ctl_ok(&proj, &["watch"]);
    proj.canonicalize().unwrap()
}

#[test]
fn a_deleted_root_made_again_is_watched_again_by_watch_with_a_rescan() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = watched_plain_project(&env);
    std::fs::remove_dir_all(&proj).unwrap();
    std::fs::create_dir_all(proj.join("lib")).unwrap();
    std::fs::write(proj.join("lib/new.rs"), "new\n").unwrap();

    // `watch` attaches it again (unless the daemon noticed first: then it
    // is already watched, and fine).
    let w = env.ctl_json(&proj, &["watch"]);
    assert!(w["degraded"].is_null(), "{w:#}");
    if w["already"] == false {
        assert_eq!(
            w["scan"]["entries"], 2,
            "the rescan: lib, lib/new.rs: {w:#}"
        );
    }
    // The rescan captured what is there now: editing it in a turn records
    // its content before the edit.
    env.ctl_ok(&proj, &["turn-start"]);
    sh(
        &proj,
        "echo changed > lib/new.rs && mkdir lib/sub && echo s > lib/sub/s",
    );
    let ended = env.ctl_json(&proj, &["turn-end"]);
    assert_eq!(
        entry_paths(&ended),
        vec!["lib/new.rs", "lib/sub", "lib/sub/s"],
        "the new tree's directories are watched: {ended:#}"
    );
    env.ctl_ok(&proj, &["rewind", "1"]);
    assert_eq!(std::fs::read(proj.join("lib/new.rs")).unwrap(), b"new\n");
    assert!(!proj.join("lib/sub").exists());
}

#[test]
fn a_deleted_root_made_again_comes_back_on_any_request_or_by_itself() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = watched_plain_project(&env);
    // Any request naming the project re-checks its root.
    std::fs::remove_dir_all(&proj).unwrap();
    wait_health(&env, &proj, "unavailable");
    std::fs::create_dir(&proj).unwrap();
    std::fs::write(proj.join("f"), "f\n").unwrap();
    env.ctl_ok(&proj, &["turn-start"]);
    sh(&proj, "echo g > f");
    let ended = env.ctl_json(&proj, &["turn-end"]);
    assert_eq!(entry_paths(&ended), vec!["f"]);

    // With no request at all, the daemon notices the root is back.
    std::fs::remove_dir_all(&proj).unwrap();
    wait_health(&env, &proj, "unavailable");
    std::fs::create_dir(&proj).unwrap();
    wait_health(&env, &proj, "ok");
    env.ctl_ok(&proj, &["turn-start"]);
    sh(&proj, "echo h > h");
    let ended = env.ctl_json(&proj, &["turn-end"]);
    assert_eq!(entry_paths(&ended), vec!["h"]);
}

#[test]
fn rewinding_the_turn_that_deleted_the_root_makes_the_tree_again() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = watched_plain_project(&env);
    let before = snapshot(&proj);
    env.ctl_ok(&proj, &["turn-start"]);
    std::fs::remove_dir_all(&proj).unwrap();
    let out = env.ctl(env.path(), &["-C", proj.to_str().unwrap(), "turn-end"]);
    assert!(!out.status.success(), "{out:?}");

    // A dry run changes nothing, not even the root.
    let out = env.ctl(
        env.path(),
        &["-C", proj.to_str().unwrap(), "rewind", "1", "--dry-run"],
    );
    assert!(!out.status.success(), "{out:?}");
    assert!(out.stderr.contains("without --dry-run"), "{}", out.stderr);
    assert!(!proj.exists());

    env.ctl_ok(env.path(), &["-C", proj.to_str().unwrap(), "rewind", "1"]);
    assert_same_tree("the deleted tree, rewound", &before, &snapshot(&proj));
    let st = env.ctl_json(&proj, &["status"]);
    assert!(
        st["projects"][0]["degraded"].is_null(),
        "the project is fine again: {st:#}"
    );
}

/// `status` names the watcher in use: the per-directory inotify loop by
/// default, one recursive notify watch per project with
/// `CKPT_WATCHER=notify` (and that shape captures a turn with its cookie
/// barrier); a watcher the daemon does not know stops it at start-up.
#[test]
fn status_names_the_watcher_ckpt_watcher_chooses() {
    let env = Env::new();
    let proj = env.git_repo("p", &[("src/a.rs", b"a\n")]);
    let inherited = if recursive_watcher() {
        "notify-recursive"
    } else {
        "inotify"
    };
    let mut settings = vec![(None, inherited), (Some("notify"), "notify-recursive")];
    if cfg!(target_os = "linux") {
        settings.push((Some("inotify"), "inotify"));
    }
    for (i, (setting, name)) in settings.into_iter().enumerate() {
        let env_vars: Vec<(&str, &str)> =
            setting.map(|s| ("CKPT_WATCHER", s)).into_iter().collect();
        let d = env.start_daemon_with(&env_vars);
        let status = env.ctl_json(env.path(), &["status"]);
        assert_eq!(status["daemon"]["watcher"], name, "{setting:?}: {status:#}");
        let text = env.ctl_ok(env.path(), &["status"]);
        // inotify says how many watches it holds: "watcher: inotify, 1 watch".
        let shown = |l: &str| {
            l.strip_prefix("watcher: ")
                .is_some_and(|w| w == name || w.starts_with(&format!("{name}, ")))
        };
        assert!(text.lines().any(shown), "{text}");

        env.ctl_ok(&proj, &["watch"]);
        let ended = turn_seen_by_watches(
            &env,
            &proj,
            &format!("mkdir -p new{i}/deep && echo n > new{i}/deep/f && echo {i} >> src/a.rs"),
        );
        let paths = entry_paths(&ended);
        let new = format!("new{i}");
        for p in [
            &new,
            &format!("{new}/deep"),
            &format!("{new}/deep/f"),
            "src/a.rs",
        ] {
            assert!(paths.iter().any(|e| e == p), "{name}: {p}: {paths:?}");
        }
        env.ctl_ok(&proj, &["unwatch"]);
        assert!(d.terminate().success());
    }

    let mut child = env.spawn_daemon(&[("CKPT_WATCHER", "fsevent")]);
    let status = wait_timeout(&mut child, Duration::from_secs(30)).expect("ckptd exits");
    assert!(!status.success());
    let log = std::fs::read_to_string(env.log_path()).unwrap();
    assert!(log.contains("CKPT_WATCHER=fsevent"), "{log}");
}
