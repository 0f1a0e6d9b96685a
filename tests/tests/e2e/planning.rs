//! The planner's handling of parents and redo's rollback target, through the
//! real binaries: a rewind restores what it can and reports the rest, a redo
//! puts the tree back exactly or changes nothing, and a failed apply leaves
//! exactly the tree it found. One test per defect a model-based run found.

use std::path::{Path, PathBuf};

use ckpt_e2e::*;

/// A watched plain folder (with a `.git` whose bytes are checked too).
fn project(env: &Env, setup: &str) -> PathBuf {
    let proj = env.git_repo("p", &[("README", b"r\n")]);
    sh(&proj, setup);
    env.ctl_ok(&proj, &["watch"]);
    proj
}

fn turn(env: &Env, proj: &Path, script: &str) {
    env.ctl_ok(proj, &["turn-start"]);
    sh(proj, script);
    env.ctl_ok(proj, &["turn-end"]);
}

fn paths(list: &serde_json::Value) -> Vec<String> {
    let mut out: Vec<String> = list
        .as_array()
        .expect("a list")
        .iter()
        .map(|e| e["path"].as_str().expect("a path").to_string())
        .collect();
    out.sort();
    out
}

/// A forced redo that cannot delete a directory (it now holds a later
/// file) is refused before anything changes: the forced path keeps its
/// newer content (rewind-redo-1).
#[test]
fn forced_redo_that_cannot_empty_a_directory_changes_nothing() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = project(&env, "mkdir D && echo a > D/a && echo keep > keep.txt");
    turn(&env, &proj, "rm -rf D");
    env.ctl_ok(&proj, &["rewind", "1"]);
    turn(&env, &proj, "echo v2 > D/a && echo n > D/new");
    let before = snapshot(&proj);
    for args in [&["redo"][..], &["redo", "--force"]] {
        let out = env.ctl(&proj, &[args, &["--json"]].concat());
        assert_eq!(out.code(), 3, "{args:?}: {}", out.stderr);
        assert_eq!(paths(&out.json()["blocked"]), ["D"], "{args:?}");
        assert_same_tree(&format!("{args:?}"), &before, &snapshot(&proj));
    }
    // Once the later turn is rewound, the first rewind is no longer the last:
    // the redo now undoes the rewind of turn 2, exactly.
    env.ctl_ok(&proj, &["rewind", "2"]);
    env.ctl_ok(&proj, &["redo"]);
    assert_same_tree("redo of the later rewind", &before, &snapshot(&proj));
}

/// A forced redo that would have to write through a directory the agent
/// replaced by a symlink is refused up front; the user's file stays
/// (rewind-redo-2).
#[test]
fn forced_redo_through_a_symlinked_parent_keeps_the_users_file() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = project(&env, "mkdir D && echo a > D/f && echo user-data > U");
    let outside = env.dir("elsewhere");
    turn(&env, &proj, "echo b > D/f && mv U V");
    env.ctl_ok(&proj, &["rewind", "1"]);
    let link = format!("rm -rf D && ln -s {} D", outside.display());
    turn(&env, &proj, &link);
    let before = snapshot(&proj);
    let out = env.ctl(&proj, &["redo", "--force", "--json"]);
    assert_eq!(out.code(), 3, "{}", out.stderr);
    assert_eq!(paths(&out.json()["blocked"]), ["D/f"]);
    assert_same_tree("refused redo", &before, &snapshot(&proj));
    assert_eq!(std::fs::read(proj.join("U")).unwrap(), b"user-data\n");
    assert!(list(&outside).is_empty(), "wrote through the symlink");
}

/// A directory the rewind would delete holds a file no rewound turn
/// created: a conflict, listed once, and the dry run says so
/// (rewind-redo-3); `--force` keeps the directory and the user's file.
#[test]
fn rewind_of_a_directory_holding_someone_elses_file_is_a_conflict() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = project(&env, "echo keep > keep.txt");
    turn(
        &env,
        &proj,
        "mkdir -p D/E && echo a > D/a && echo e > D/E/e",
    );
    sh(&proj, "echo u > D/E/u");
    turn(&env, &proj, "echo more >> D/E/u");
    let before = snapshot(&proj);
    let dry = env.ctl(&proj, &["--json", "rewind", "1", "--dry-run"]);
    assert_eq!(
        dry.code(),
        3,
        "a dry run exits as the real run would: {dry:?}"
    );
    let dry = dry.json();
    assert_eq!(paths(&dry["conflicts"]), ["D/E/u"], "{dry:#}");
    let out = env.ctl(&proj, &["rewind", "1", "--json"]);
    assert_eq!(out.code(), 3, "{}", out.stderr);
    assert_eq!(paths(&out.json()["conflicts"]), ["D/E/u"]);
    assert_same_tree("refused rewind", &before, &snapshot(&proj));

    // Nothing is overwritten: the directories stay for the user's file.
    let text = env.ctl_ok(&proj, &["rewind", "1", "--force"]);
    assert!(!text.contains("overwritten"), "{text}");
    assert_eq!(list(&proj.join("D")), ["E", "E/u"]);
    assert_eq!(std::fs::read(proj.join("D/E/u")).unwrap(), b"u\n");
    env.ctl_ok(&proj, &["redo"]);
    assert_same_tree("redo of the forced rewind", &before, &snapshot(&proj));
}

/// The agent deleted a user's file inside a directory an earlier rewound
/// turn made: the rewind brings the file back and keeps the directory
/// (rewind-redo-4).
#[test]
fn rewind_restores_a_users_file_inside_a_directory_a_rewound_turn_made() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = project(&env, "echo keep > keep.txt");
    turn(&env, &proj, "mkdir D && echo a > D/a");
    sh(&proj, "echo 'my own notes' > D/u");
    turn(&env, &proj, "rm D/u");
    let after = snapshot(&proj);
    let r = env.ctl_json(&proj, &["rewind", "1"]);
    assert_eq!(r["outcome"], "applied", "{r:#}");
    assert_eq!(paths(&r["skipped"]), ["D"], "{r:#}");
    assert_eq!(list(&proj.join("D")), ["u"]);
    assert_eq!(std::fs::read(proj.join("D/u")).unwrap(), b"my own notes\n");
    env.ctl_ok(&proj, &["redo"]);
    assert_same_tree("redo", &after, &snapshot(&proj));
}

/// Paths one and two missing levels below what is now a file are reported
/// skipped, with no directory planned under the file, and the rest of the
/// rewind is done (rewind-redo-5).
#[test]
fn rewind_skips_paths_below_a_parent_that_became_a_file() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = project(
        &env,
        "mkdir -p a/lib b && echo u > a/lib/util.txt && echo v > b/one.txt",
    );
    turn(
        &env,
        &proj,
        "echo c > a/lib/util.txt && echo c > b/one.txt && echo new > new.txt",
    );
    sh(&proj, "rm -rf a b && echo file > a && echo file > b");
    let dry = env.ctl_json(&proj, &["rewind", "1", "--dry-run"]);
    assert_eq!(paths(&dry["actions"]), ["new.txt"], "{dry:#}");
    for args in [&["rewind", "1"][..], &["redo"], &["rewind", "1", "--force"]] {
        let r = env.ctl_json(&proj, args);
        assert_eq!(r["outcome"], "applied", "{args:?}: {r:#}");
    }
    assert!(!proj.join("new.txt").exists());
    assert_eq!(std::fs::read(proj.join("a")).unwrap(), b"file\n");
    assert_eq!(std::fs::read(proj.join("b")).unwrap(), b"file\n");
}

/// A failed redo leaves no directory it made on the way: here it is
/// refused up front, since a directory it must replace holds a later file
/// (rewind-redo-6).
#[test]
fn redo_that_cannot_replace_a_directory_leaves_no_directory_behind() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = project(&env, "mkdir docs src");
    turn(
        &env,
        &proj,
        "echo n > docs/new.txt && rmdir src && echo f > src",
    );
    env.ctl_ok(&proj, &["rewind", "1"]);
    turn(&env, &proj, "rm -r docs && echo later > src/later");
    let before = snapshot(&proj);
    let out = env.ctl(&proj, &["redo", "--json"]);
    assert_eq!(out.code(), 3, "{}", out.stderr);
    assert_eq!(paths(&out.json()["blocked"]), ["src"]);
    assert_same_tree("refused redo", &before, &snapshot(&proj));
}

/// A directory a rewound turn deleted cannot come back under what is now a
/// file: it and the files below it are skipped together (rewind-redo-7).
#[test]
fn rewind_skips_a_deleted_directory_and_its_files_under_a_file() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = project(&env, "mkdir -p src/lib && echo d > src/lib/data.bin");
    turn(&env, &proj, "rm -r src/lib && echo new > new.txt");
    sh(&proj, "rm -r src && echo 'a file now' > src");
    let r = env.ctl_json(&proj, &["rewind", "1"]);
    assert_eq!(r["outcome"], "applied", "{r:#}");
    assert_eq!(paths(&r["actions"]), ["new.txt"]);
    assert_eq!(paths(&r["skipped"]), ["src/lib", "src/lib/data.bin"]);
    assert!(!proj.join("new.txt").exists());
    assert_eq!(std::fs::read(proj.join("src")).unwrap(), b"a file now\n");
}
