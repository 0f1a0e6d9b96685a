//! Safety rule 1: nothing under `.git` is ever read or written. Every file
//! there (content, mode, modification time) is identical after watch,
//! turns, rewind and redo, whatever state the repository is in.

use std::path::Path;

use ckpt_e2e::*;

/// Watch, one agent turn, rewind, redo; `.git` compared at every step.
fn exercise(env: &Env, proj: &Path) {
    let git0 = snapshot_git(proj);
    assert!(!git0.is_empty());
    env.ctl_ok(proj, &["watch"]);
    assert_same_tree(".git after watch", &git0, &snapshot_git(proj));
    let before = snapshot_work(proj);
    env.ctl_ok(proj, &["turn-start"]);
    sh(
        proj,
        "echo agent >> tracked.txt && echo fresh > fresh.txt && rm -f gone.txt && mkdir -p d && echo x > d/x",
    );
    env.ctl_ok(proj, &["turn-end"]);
    let after = snapshot_work(proj);
    assert_same_tree(".git after a turn", &git0, &snapshot_git(proj));
    env.ctl_ok(proj, &["rewind", "1"]);
    assert_same_tree("work tree after rewind", &before, &snapshot_work(proj));
    assert_same_tree(".git after rewind", &git0, &snapshot_git(proj));
    env.ctl_ok(proj, &["redo"]);
    assert_same_tree("work tree after redo", &after, &snapshot_work(proj));
    assert_same_tree(".git after redo", &git0, &snapshot_git(proj));
    env.ctl_ok(proj, &["unwatch"]);
    assert_same_tree(".git after unwatch", &git0, &snapshot_git(proj));
}

fn base(env: &Env) -> std::path::PathBuf {
    env.git_repo(
        "repo",
        &[
            ("tracked.txt", b"tracked\n"),
            ("gone.txt", b"gone\n"),
            ("keep.txt", b"keep\n"),
        ],
    )
}

#[test]
fn normal_repo() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = base(&env);
    exercise(&env, &proj);
}

#[test]
fn repo_with_staged_changes() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = base(&env);
    sh(
        &proj,
        "echo staged >> keep.txt && echo new > staged-new.txt",
    );
    git(&proj, &["add", "keep.txt", "staged-new.txt"]);
    exercise(&env, &proj);
}

#[test]
fn repo_with_detached_head() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = base(&env);
    sh(&proj, "echo second >> keep.txt");
    git(&proj, &["commit", "-qam", "second"]);
    git(&proj, &["checkout", "-q", "--detach", "HEAD~1"]);
    exercise(&env, &proj);
}

#[test]
fn repo_in_the_middle_of_a_merge() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = base(&env);
    git(&proj, &["checkout", "-q", "-b", "other"]);
    sh(&proj, "echo theirs > keep.txt");
    git(&proj, &["commit", "-qam", "theirs"]);
    git(&proj, &["checkout", "-q", "main"]);
    sh(&proj, "echo ours > keep.txt");
    git(&proj, &["commit", "-qam", "ours"]);
    let merge = run(std::process::Command::new("git")
        .args([
            "-c",
            "user.name=T",
            "-c",
            "user.email=t@e",
            "merge",
            "other",
        ])
        .current_dir(&proj));
    assert!(!merge.status.success(), "the merge must stop on a conflict");
    assert!(proj.join(".git/MERGE_HEAD").exists());
    assert!(std::fs::read_to_string(proj.join("keep.txt"))
        .unwrap()
        .contains("<<<<<<<"));
    exercise(&env, &proj);
    assert!(proj.join(".git/MERGE_HEAD").exists(), "still mid-merge");
}

#[test]
fn repo_with_a_submodule_like_nested_git() {
    // A nested repository's .git is just as untouchable.
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = base(&env);
    let nested = proj.join("vendor/lib");
    std::fs::create_dir_all(&nested).unwrap();
    git(&nested, &["init", "-q", "."]);
    std::fs::write(nested.join("lib.c"), "int lib;\n").unwrap();
    git(&nested, &["add", "-A"]);
    git(&nested, &["commit", "-qm", "lib"]);
    let nested_git = snapshot_git(&nested);
    exercise(&env, &proj);
    assert_same_tree("nested .git", &nested_git, &snapshot_git(&nested));
}
