//! `ckptctl workcopy`: independent copies made from a recorded base,
//! watched as projects of their own, previewed against the original without
//! writing anything, checks run in them, and their refusals.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ckpt_e2e::*;

fn s(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 temp path")
}

/// Creates a work copy named `name` of `proj`; returns its copy's root.
fn create(env: &Env, proj: &Path, name: &str, base: &str) -> PathBuf {
    let wc = env.ctl_json(
        proj,
        &["workcopy", "create", "--base", base, "--name", name],
    );
    assert_eq!(wc["state"], "ready", "{wc}");
    assert_eq!(wc["name"], name, "{wc}");
    PathBuf::from(wc["copy"].as_str().expect("copy path"))
}

/// Work copy `w`'s state file.
fn state_file(env: &Env) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(env.data.join("workcopies/w.json")).unwrap()).unwrap()
}

/// Waits until the process whose pid `pid_file` holds is gone (or a zombie).
fn wait_gone(pid_file: &Path) {
    let pid = std::fs::read_to_string(pid_file).unwrap();
    let stat = PathBuf::from(format!("/proc/{}/stat", pid.trim()));
    wait_for("the sleep to go", Duration::from_secs(5), || {
        std::fs::read_to_string(&stat).map_or(true, |s| s.contains(") Z "))
    });
}

/// `workcopy preview [NAME]`, as a user runs it before an apply: the
/// token it must issue.
fn preview(env: &Env, dir: &Path, name: Option<&str>) -> String {
    let mut args = vec!["workcopy", "preview"];
    args.extend(name);
    let p = env.ctl_json(dir, &args);
    p["token"].as_str().expect("a preview's token").to_string()
}

fn git_text(dir: &Path, args: &[&str]) -> String {
    git(dir, args).stdout.trim().to_string()
}

/// (device, inode) of every path below `root`.
fn inodes(root: &Path) -> HashSet<(u64, u64)> {
    let mut out = HashSet::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            let md = p.symlink_metadata().unwrap();
            out.insert((md.dev(), md.ino()));
            if md.is_dir() {
                stack.push(p);
            }
        }
    }
    out
}

fn watched_roots(env: &Env, dir: &Path) -> Vec<String> {
    env.ctl_json(dir, &["projects"])["projects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["root"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn create_head_clones_without_shared_objects_links_or_remote() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("a", b"1\n"), ("dir/b", b"b\n")]);
    let head = git_text(&proj, &["rev-parse", "HEAD"]);
    let copy = create(&env, &proj, "w", "HEAD");

    assert_eq!(std::fs::read(copy.join("a")).unwrap(), b"1\n");
    assert_eq!(std::fs::read(copy.join("dir/b")).unwrap(), b"b\n");
    assert!(!copy.join(".git/objects/info/alternates").exists());
    let shared: Vec<_> = inodes(&proj)
        .intersection(&inodes(&copy))
        .cloned()
        .collect();
    assert!(
        shared.is_empty(),
        "hard links shared with the original: {shared:?}"
    );
    assert_eq!(git_text(&copy, &["remote"]), "");
    assert_eq!(git_text(&copy, &["rev-parse", "HEAD"]), head);
    let symbolic = run(std::process::Command::new("git")
        .args(["symbolic-ref", "-q", "HEAD"])
        .current_dir(&copy));
    assert_ne!(symbolic.code(), 0, "HEAD is not detached: {symbolic:?}");
    assert_eq!(git_text(&copy, &["status", "--porcelain"]), "");
    assert_eq!(git_text(&copy, &["rev-parse", "refs/ckpt/base"]), head);

    let list = env.ctl_json(&proj, &["workcopy", "list"]);
    let w = &list["workcopies"][0];
    assert_eq!(w["base"], "head", "{list}");
    assert_eq!(w["base_commit"], head.as_str(), "{list}");
    assert_eq!(w["original"], s(&proj.canonicalize().unwrap()), "{list}");
    assert_eq!(w["base_fingerprint"].as_str().unwrap().len(), 64, "{list}");
    assert!(watched_roots(&env, &proj).contains(&s(&copy).to_string()));
    // The copy is a project of its own: a turn there is recorded there.
    env.ctl_ok(&copy, &["turn-start"]);
    sh(&copy, "echo 2 > a");
    let end = env.ctl_json(&copy, &["turn-end"]);
    assert_eq!(end["turn"]["info"]["counts"]["modified"], 1, "{end}");
}

#[test]
fn create_head_refuses_uncommitted_changes_and_names_base_current() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("a", b"1\n")]);
    for (dirty, listed) in [
        ("echo 2 > a", "\n   M a\n"),
        (
            "git checkout -q a && echo u > untracked",
            "\n  ?? untracked\n",
        ),
    ] {
        sh(&proj, dirty);
        let out = env.ctl(&proj, &["workcopy", "create", "--name", "w"]);
        assert_eq!(out.code(), 1, "{out:?}");
        assert!(out.stderr.contains("silently lose"), "{out:?}");
        // git's two status columns, aligned on every line.
        assert!(out.stderr.contains(listed), "{out:?}");
        assert!(out.stderr.contains("--base current"), "{out:?}");
        let list = env.ctl_json(&proj, &["workcopy", "list"]);
        assert_eq!(list["workcopies"].as_array().unwrap().len(), 0, "{list}");
        assert!(!env.data.join("workcopies/w").exists());
    }
    // Ignored files are not uncommitted changes.
    sh(&proj, "rm untracked && echo .env > .gitignore && git add .gitignore && git commit -qm i && echo k > .env");
    create(&env, &proj, "w", "HEAD");
}

#[test]
fn create_current_copies_untracked_and_ignored_files_ckpt_captures() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("a", b"1\n"), (".gitignore", b".env\n*.log\n")]);
    sh(
        &proj,
        "echo 2 > a && echo u > untracked && echo secret > .env && echo l > build.log \
         && mkdir -p node_modules/m scratch && echo x > node_modules/m/i.js && echo s > scratch/s \
         && echo /scratch/ > .ckptignore && chmod 750 untracked",
    );
    let head = git_text(&proj, &["rev-parse", "HEAD"]);
    let copy = create(&env, &proj, "w", "current");
    for (path, bytes) in [
        ("a", "2\n"),
        ("untracked", "u\n"),
        (".env", "secret\n"),
        ("build.log", "l\n"),
    ] {
        assert_eq!(
            std::fs::read_to_string(copy.join(path)).unwrap(),
            bytes,
            "{path}"
        );
    }
    assert_eq!(
        copy.join("untracked").metadata().unwrap().mode() & 0o777,
        0o750
    );
    assert!(
        !copy.join("node_modules").exists(),
        "excluded by ckpt, not copied"
    );
    assert!(!copy.join("scratch").exists(), ".ckptignored, not copied");
    // Its own .git: an independent clone at HEAD, so git sees the
    // original's uncommitted changes as changes.
    assert!(!copy.join(".git/objects/info/alternates").exists());
    assert!(inodes(&proj).is_disjoint(&inodes(&copy)));
    assert_eq!(git_text(&copy, &["remote"]), "");
    assert_eq!(git_text(&copy, &["rev-parse", "HEAD"]), head);
    let st = git(&copy, &["status", "--porcelain"]).stdout;
    assert!(st.contains(" M a") && st.contains("?? untracked"), "{st}");
    // A clean copy: nothing differs from the base.
    let status = env.ctl_json(&proj, &["workcopy", "status", "w"]);
    assert_eq!(status["changed"], 0, "{status}");
}

#[test]
fn create_current_leaves_out_files_over_the_cap_and_carries_info_exclude() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo(
        "p",
        &[(
            "a", b"1
",
        )],
    );
    sh(
        &proj,
        "echo .env >> .git/info/exclude && echo secret > .env          && head -c 17000000 /dev/zero > big.bin && echo small > small.bin",
    );
    let out = env.ctl(
        &proj,
        &["workcopy", "create", "--base", "current", "--name", "w"],
    );
    assert!(out.status.success(), "{out:?}");
    assert!(
        out.stdout
            .contains("not copied, as ckpt does not capture them:\n  big.bin  (16.2 MiB is over ckpt's 16.0 MiB size cap)"),
        "{out:?}"
    );
    let st = state_file(&env);
    assert_eq!(st["left_out"][0][0], "big.bin", "{st}");
    let copy = PathBuf::from(st["copy"].as_str().unwrap());
    assert!(!copy.join("big.bin").exists());
    assert_eq!(std::fs::read(copy.join("small.bin")).unwrap(), b"small\n");
    assert_eq!(std::fs::read(copy.join(".env")).unwrap(), b"secret\n");
    // git in the copy ignores .env as the original's git does.
    let status = git(&copy, &["status", "--porcelain"]).stdout;
    assert!(!status.contains(".env"), "{status}");
    assert!(status.contains("?? small.bin"), "{status}");
}

#[test]
fn create_refuses_submodules_and_symlinks_that_leave_the_tree() {
    let env = Env::new();
    let _d = env.start_daemon();

    let proj = env.git_repo("sub", &[("a", b"1\n")]);
    let head = git_text(&proj, &["rev-parse", "HEAD"]);
    git(
        &proj,
        &[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("160000,{head},vendor/lib"),
        ],
    );
    git(&proj, &["commit", "-qm", "gitlink"]);
    for base in ["HEAD", "current"] {
        let out = env.ctl(&proj, &["workcopy", "create", "--base", base]);
        assert_eq!(out.code(), 1, "{out:?}");
        assert!(out.stderr.contains("submodule (vendor/lib)"), "{out:?}");
    }

    let proj = env.git_repo("links", &[("dir/b", b"b\n")]);
    sh(
        &proj,
        "ln -s ../dir/b dir/ok && ln -s ../../etc dir/out && git add -A && git commit -qm l",
    );
    let out = env.ctl(&proj, &["workcopy", "create", "--name", "l1"]);
    assert_eq!(out.code(), 1, "{out:?}");
    assert!(
        out.stderr.contains("dir/out -> ../../etc leaves the tree"),
        "{out:?}"
    );
    sh(
        &proj,
        "rm dir/out && git commit -qam rm && ln -s /etc/passwd abs",
    );
    let out = env.ctl(
        &proj,
        &["workcopy", "create", "--base", "current", "--name", "l2"],
    );
    assert_eq!(out.code(), 1, "{out:?}");
    assert!(
        out.stderr.contains("abs -> /etc/passwd leaves the tree"),
        "{out:?}"
    );
    assert!(
        !env.data.join("workcopies/l2").exists(),
        "a refused copy leaves nothing"
    );
    let list = env.ctl_json(&proj, &["workcopy", "list"]);
    assert_eq!(list["workcopies"].as_array().unwrap().len(), 0, "{list}");
    assert_eq!(watched_roots(&env, &proj).len(), 0);
    // A link that stays inside is copied.
    sh(&proj, "rm abs");
    let copy = create(&env, &proj, "ok", "HEAD");
    assert_eq!(
        std::fs::read_link(copy.join("dir/ok")).unwrap(),
        Path::new("../dir/b")
    );
}

#[test]
fn an_edit_in_the_copy_shows_in_status_diff_and_preview() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("a", b"1\n"), ("dir/b", b"b\n"), ("c", b"c\n")]);
    let copy = create(&env, &proj, "w", "HEAD");
    sh(&copy, "echo 2 > a && rm dir/b && echo n > new");

    let status = env.ctl_json(&copy, &["workcopy", "status"]);
    assert_eq!(status["changed"], 3, "{status}");
    assert_eq!(status["original_matches_base"], true, "{status}");

    let diff = env.ctl_ok(&copy, &["workcopy", "diff", "w"]);
    assert!(
        diff.contains("--- a/a\n+++ b/a\n@@ -1 +1 @@\n-1\n+2\n"),
        "{diff}"
    );
    assert!(diff.contains("--- a/dir/b\n+++ /dev/null\n"), "{diff}");
    assert!(
        diff.contains("--- /dev/null\n+++ b/new\n@@ -0,0 +1 @@\n+n\n"),
        "{diff}"
    );
    assert!(!diff.contains("b/c"), "{diff}");

    let p = env.ctl_json(&proj, &["workcopy", "preview", "w"]);
    let changes: Vec<(String, String, String)> = p["preview"]["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["path"].as_str().unwrap().into(),
                c["change"].as_str().unwrap().into(),
                c["original"].as_str().unwrap().into(),
            )
        })
        .collect();
    let t = |p: &str, c: &str| (p.to_string(), c.to_string(), "as_base".to_string());
    assert_eq!(
        changes,
        [t("a", "modified"), t("dir/b", "deleted"), t("new", "added")]
    );
    assert_eq!(p["preview"]["conflicts"], 0, "{p}");
    assert_eq!(
        p["preview"]["head_moved_to"],
        serde_json::Value::Null,
        "{p}"
    );

    // A commit in the original that leaves those paths alone: reported,
    // no conflict. The agent dropping every branch and the reflog in the
    // copy does not lose the base that diff reads.
    sh(&proj, "echo c2 > c && git commit -qam c2");
    git(&copy, &["commit", "-qam", "agent", "--no-verify"]);
    git(&copy, &["checkout", "-q", "--orphan", "other"]);
    git(&copy, &["branch", "-D", "main"]);
    git(&copy, &["reflog", "expire", "--expire=now", "--all"]);
    git(&copy, &["gc", "-q", "--prune=now"]);
    // The copy's HEAD no longer names the base: refused until it does.
    let out = env.ctl(&proj, &["workcopy", "preview", "w"]);
    assert_eq!(out.code(), 1, "{out:?}");
    assert!(out.stderr.contains("HEAD names no commit"), "{out:?}");
    let base = git_text(&copy, &["rev-parse", "refs/ckpt/base"]);
    git(&copy, &["reset", "-q", "--soft", &base]);
    let p = env.ctl_json(&proj, &["workcopy", "preview", "w"]);
    assert_eq!(p["preview"]["conflicts"], 0, "{p}");
    assert_eq!(
        p["preview"]["head_moved_to"],
        git_text(&proj, &["rev-parse", "HEAD"]).as_str(),
        "{p}"
    );
    let diff2 = env.ctl_ok(&copy, &["workcopy", "diff", "w"]);
    assert_eq!(diff, diff2);
}

#[test]
fn preview_finds_a_conflict_exits_3_and_writes_nothing() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("a", b"1\n"), ("b", b"b\n")]);
    let copy = create(&env, &proj, "w", "current");
    sh(&copy, "echo copy > a && echo copy > b");
    sh(&proj, "echo user > a");
    // The copy's files: its git objects get the blobs of the preview's
    // tree (computed in the copy's repository, in a temporary index).
    let before = (
        snapshot(&proj),
        snapshot_work(&copy),
        snapshot(&env.data.join("workcopies")),
    );
    let out = env.ctl(&proj, &["--json", "workcopy", "preview"]);
    assert_eq!(out.code(), 3, "{out:?}");
    let p = out.json();
    assert_eq!(p["preview"]["conflicts"], 1, "{p}");
    assert_eq!(p["preview"]["changes"][0]["path"], "a", "{p}");
    assert_eq!(p["preview"]["changes"][0]["original"], "conflict", "{p}");
    assert_eq!(p["preview"]["changes"][1]["original"], "as_base", "{p}");
    let text = env.ctl(&proj, &["workcopy", "preview"]);
    assert_eq!(text.code(), 3, "{text:?}");
    assert!(text.stdout.contains("CONFLICT"), "{text:?}");
    let after = (
        snapshot(&proj),
        snapshot_work(&copy),
        snapshot(&env.data.join("workcopies")),
    );
    assert_same_tree("original", &before.0, &after.0);
    assert_same_tree("copy", &before.1, &after.1);
    assert_same_tree("work copy state", &before.2, &after.2);
    let status = env.ctl_json(&proj, &["workcopy", "status"]);
    assert_eq!(status["original_matches_base"], false, "{status}");
}

#[test]
fn run_records_exit_status_and_log_with_stdin_closed() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("a", b"1\n")]);
    let copy = create(&env, &proj, "w", "HEAD");
    let out = env.ctl(
        &proj,
        &[
            "workcopy",
            "run",
            "w",
            "--",
            "sh",
            "-c",
            "cat; pwd; echo err >&2; exit 7",
        ],
    );
    assert_eq!(out.code(), 7, "{out:?}");
    assert!(out.stdout.contains("exit 7"), "{out:?}");
    let state = state_file(&env);
    let r = &state["runs"][0];
    assert_eq!(r["exit_code"], 7, "{state}");
    assert_eq!(r["command"][0], "sh", "{state}");
    let log = std::fs::read_to_string(r["log"].as_str().unwrap()).unwrap();
    assert_eq!(log, format!("{}\nerr\n", s(&copy)));
    assert!(out.stdout.contains(r["log"].as_str().unwrap()), "{out:?}");
    let ok = env.ctl_json(&proj, &["workcopy", "run", "w", "--", "true"]);
    assert_eq!(ok["exit_code"], 0, "{ok}");
}

#[test]
fn run_timeout_kills_the_whole_process_group_quickly() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("a", b"1\n")]);
    let copy = create(&env, &proj, "w", "HEAD");
    let t0 = Instant::now();
    let out = env.ctl(
        &proj,
        &[
            "workcopy",
            "run",
            "--timeout",
            "1",
            "--",
            "sh",
            "-c",
            "sleep 100 & echo $! > pid; wait",
        ],
    );
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    assert_eq!(out.code(), 124, "{out:?}");
    assert!(out.stdout.contains("timed out"), "{out:?}");
    wait_gone(&copy.join("pid"));
    let state = state_file(&env);
    assert_eq!(state["runs"][0]["timed_out"], true, "{state}");
}

#[test]
fn remove_refuses_unapplied_changes_unless_forced() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("a", b"1\n")]);
    let clean = create(&env, &proj, "clean", "HEAD");
    let copy = create(&env, &proj, "w", "HEAD");
    sh(&copy, "echo 2 > a");
    let out = env.ctl(&proj, &["workcopy", "remove", "w"]);
    assert_eq!(out.code(), 1, "{out:?}");
    assert!(
        out.stderr.contains("1 changed paths not applied"),
        "{out:?}"
    );
    assert!(copy.join("a").exists());

    env.ctl_ok(&proj, &["workcopy", "remove", "clean"]);
    env.ctl_ok(&proj, &["workcopy", "remove", "w", "--force"]);
    for gone in [&clean, &copy] {
        assert!(!gone.exists(), "{}", gone.display());
    }
    assert!(!env.data.join("workcopies/w.json").exists());
    assert!(!env.data.join("workcopies/w").exists());
    assert_eq!(watched_roots(&env, &proj).len(), 0);
    let list = env.ctl_json(&proj, &["workcopy", "list"]);
    assert_eq!(list["workcopies"].as_array().unwrap().len(), 0, "{list}");
    let text = env.ctl_ok(&proj, &["workcopy", "list"]);
    assert!(text.contains("no work copies"), "{text}");
}

#[test]
fn after_apply_status_says_the_original_holds_the_copy_and_a_rewound_apply_needs_force_to_remove() {
    let env = Env::new();
    let _d = env.start_daemon();
    let (proj, copy) = applied_setup(&env);
    preview(&env, &proj, None);
    let applied = env.ctl_json(&proj, &["workcopy", "apply"]);
    let turn = applied["turn"].as_i64().unwrap().to_string();
    let st = state(&env, &proj);
    assert_eq!(st["original_matches_base"], false, "{st}");
    assert_eq!(st["original_as_copy"], st["changed"], "{st}");
    let text = env.ctl_ok(&proj, &["workcopy", "status"]);
    assert!(!text.contains("still matches the base"), "{text}");
    assert!(text.contains("already holds the copy's version"), "{text}");
    // A second apply names the turn that undoes the first.
    let again = env.ctl(&proj, &["workcopy", "apply"]);
    assert!(
        again.stderr.contains(&format!("`ckptctl rewind {turn}`")),
        "{again:?}"
    );

    // An applied copy goes without --force: its changes are in the original.
    // Once that apply is rewound they are only in the copy again.
    env.ctl_ok(&proj, &["rewind", &turn]);
    let out = env.ctl(&proj, &["workcopy", "remove", "w"]);
    assert_eq!(out.code(), 1, "{out:?}");
    assert!(out.stderr.contains("not applied"), "{out:?}");
    assert!(copy.exists());
    env.ctl_ok(&proj, &["redo"]);
    env.ctl_ok(&proj, &["workcopy", "remove", "w"]);
    assert!(!copy.exists());
}

#[test]
fn ctrl_c_kills_the_check_group_and_is_recorded() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("a", b"1\n")]);
    let copy = create(&env, &proj, "w", "HEAD");
    let mut child = env
        .ctl_cmd(
            &proj,
            &[
                "workcopy",
                "run",
                "--",
                "sh",
                "-c",
                "sleep 100 & echo $! > pid; wait",
            ],
        )
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid_file = copy.join("pid");
    wait_for("the check to start", Duration::from_secs(10), || {
        std::fs::read_to_string(&pid_file).is_ok_and(|p| p.ends_with('\n'))
    });
    let t0 = Instant::now();
    // SAFETY: a signal to the child this test spawned.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = wait_timeout(&mut child, Duration::from_secs(10)).expect("ckptctl ends");
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    assert_eq!(status.code(), Some(130), "{status:?}");
    wait_gone(&pid_file);
    let state = state_file(&env);
    assert_eq!(state["runs"][0]["interrupted"], true, "{state}");
}

#[test]
fn diff_of_a_current_copy_shows_symlink_targets_and_kept_base_contents() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.dir("plain");
    sh(&proj, "printf 'x\\ny\\n' > f && ln -s f l && echo gone > g");
    let copy = create(&env, &proj, "w", "current");
    assert!(
        !copy.join(".git").exists(),
        "no git in the original, none in the copy"
    );
    sh(&copy, "printf 'x\\nz\\n' > f && ln -sfn g l && rm g");
    // The original changing does not change the base the diff compares to.
    sh(&proj, "echo other > f");
    let diff = env.ctl_ok(&proj, &["workcopy", "diff"]);
    assert!(
        diff.contains("--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n x\n-y\n+z\n"),
        "{diff}"
    );
    assert!(
        diff.contains("--- a/l\n+++ b/l\n@@ -1 +1 @@\n-f\n\\ No newline at end of file\n+g\n"),
        "{diff}"
    );
    assert!(
        diff.contains("--- a/g\n+++ /dev/null\n@@ -1 +0,0 @@\n-gone\n"),
        "{diff}"
    );
    let out = env.ctl(&proj, &["workcopy", "preview"]);
    assert_eq!(out.code(), 3, "f changed in the original: {out:?}");
}

#[test]
fn symlink_loops_inside_the_tree_are_copied_previewed_and_applied() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.dir("loops");
    env.ctl_ok(&proj, &["watch"]);
    // A link to itself, two links to each other, and one through the pair:
    // the kernel follows none of them (ELOOP), so none reaches out.
    sh(
        &proj,
        "echo 1 > f && ln -s .hidden .hidden && ln -s b a && ln -s a b && ln -s a/x c",
    );
    let copy = create(&env, &proj, "w", "current");
    for (link, to) in [(".hidden", ".hidden"), ("a", "b"), ("b", "a"), ("c", "a/x")] {
        assert_eq!(std::fs::read_link(copy.join(link)).unwrap(), Path::new(to));
    }
    sh(&copy, "ln -s d d && ln -sfn c a && echo 2 > f");
    let p = env.ctl_json(&proj, &["workcopy", "preview"]);
    assert_eq!(p["preview"]["leaving_symlinks"], 0, "{p}");
    preview(&env, &proj, None);
    env.ctl_ok(&proj, &["workcopy", "apply"]);
    assert_eq!(std::fs::read_link(proj.join("d")).unwrap(), Path::new("d"));
    assert_eq!(std::fs::read_link(proj.join("a")).unwrap(), Path::new("c"));
    assert_eq!(std::fs::read(proj.join("f")).unwrap(), b"2\n");
}

#[test]
fn create_path_puts_the_copy_there_and_refuses_overlaps() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("a", b"1\n")]);
    for (inside, why) in [
        (proj.join("sub"), "the original"),
        (env.data.join("wc"), "data directory"),
    ] {
        let out = env.ctl(&proj, &["workcopy", "create", "--path", s(&inside)]);
        assert_eq!(out.code(), 1, "{out:?}");
        assert!(
            out.stderr.contains(why) && out.stderr.contains("overlap"),
            "{out:?}"
        );
        assert!(!inside.exists(), "{}", inside.display());
    }
    let there = env.path().join("elsewhere/copy");
    let wc = env.ctl_json(&proj, &["workcopy", "create", "--path", s(&there)]);
    assert_eq!(wc["copy"], s(&there.canonicalize().unwrap()), "{wc}");
    assert_eq!(wc["name"], "p-1", "the default name: {wc}");
    assert_eq!(std::fs::read(there.join("a")).unwrap(), b"1\n");
    let out = env.ctl(&proj, &["workcopy", "create", "--path", s(&there)]);
    assert!(out.stderr.contains("is not empty"), "{out:?}");
    // Named by the directory holding it.
    let status = env.ctl_json(&there, &["workcopy", "status"]);
    assert_eq!(status["workcopy"]["name"], "p-1", "{status}");
}

/// A repository whose tree has text, a binary, a script, a directory and
/// a file that becomes a symlink; the copy `w` (base HEAD) changes each.
fn applied_setup(env: &Env) -> (PathBuf, PathBuf) {
    let proj = env.git_repo(
        "p",
        &[
            ("a.txt", b"one\ntwo\n"),
            ("old.bin", &binary(5, 3000)),
            ("run.sh", b"#!/bin/sh\necho hi\n"),
            ("dir/b.txt", b"b\n"),
            ("link_me", b"soon a link\n"),
            ("keep.txt", b"kept\n"),
        ],
    );
    git(&proj, &["config", "user.name", "The User"]);
    git(&proj, &["config", "user.email", "user@example.com"]);
    env.ctl_ok(&proj, &["watch"]);
    let copy = create(env, &proj, "w", "HEAD");
    std::fs::write(copy.join("old.bin"), binary(9, 2000)).unwrap();
    sh(
        &copy,
        "printf 'one\\nTWO\\n' > a.txt && chmod +x run.sh && rm -r dir \
         && mkdir -p new/deep && echo f > new/deep/f.txt && rm link_me && ln -s keep.txt link_me \
         && : > empty.txt",
    );
    (proj, copy)
}

fn state(env: &Env, dir: &Path) -> serde_json::Value {
    env.ctl_json(dir, &["workcopy", "status", "w"])
}

#[test]
fn apply_is_one_turn_that_rewind_undoes_and_redo_redoes() {
    let env = Env::new();
    let _d = env.start_daemon();
    let (proj, copy) = applied_setup(&env);
    let before = snapshot_work(&proj);
    let git_before = snapshot_git(&proj);
    let head = git_text(&proj, &["rev-parse", "HEAD"]);

    preview(&env, &proj, Some("w"));
    let out = env.ctl_json(&proj, &["workcopy", "apply", "w"]);
    assert_eq!(out["applied"], true, "{out}");
    let turn = out["turn"].as_i64().expect("a turn");
    assert_same_tree(
        "original after apply",
        &snapshot_work(&copy),
        &snapshot_work(&proj),
    );
    assert_same_tree("the original's .git", &git_before, &snapshot_git(&proj));
    assert_eq!(git_text(&proj, &["rev-parse", "HEAD"]), head);
    let st = state(&env, &proj);
    assert_eq!(st["workcopy"]["state"], "applied", "{st}");
    assert_eq!(st["workcopy"]["apply"]["turn"], turn, "{st}");
    assert_eq!(st["apply_rewound"], false, "{st}");

    let show = env.ctl_json(&proj, &["show", &turn.to_string()]);
    assert_eq!(show["turn"]["info"]["label"], "workcopy apply w", "{show}");
    assert_eq!(show["turn"]["info"]["agent"], "workcopy", "{show}");
    let mut paths: Vec<&str> = show["turn"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    paths.sort();
    assert_eq!(
        paths,
        [
            "a.txt",
            "dir",
            "dir/b.txt",
            "empty.txt",
            "link_me",
            "new",
            "new/deep",
            "new/deep/f.txt",
            "old.bin",
            "run.sh"
        ],
        "{show}"
    );
    // Applying twice is refused while the apply stands.
    let again = env.ctl(&proj, &["workcopy", "apply", "w"]);
    assert_eq!(again.code(), 1, "{again:?}");
    assert!(again.stderr.contains("already applied"), "{again:?}");

    env.ctl_ok(&proj, &["rewind", &turn.to_string()]);
    assert_same_tree("original after rewind", &before, &snapshot_work(&proj));
    assert_eq!(state(&env, &proj)["apply_rewound"], true);
    env.ctl_ok(&proj, &["redo"]);
    assert_same_tree(
        "original after redo",
        &snapshot_work(&copy),
        &snapshot_work(&proj),
    );
    assert_eq!(state(&env, &proj)["apply_rewound"], false);
    assert_same_tree("the original's .git", &git_before, &snapshot_git(&proj));
}

#[test]
fn commit_stages_exactly_the_applied_paths_with_the_users_hooks() {
    let env = Env::new();
    let _d = env.start_daemon();
    let (proj, _copy) = applied_setup(&env);
    let head = git_text(&proj, &["rev-parse", "HEAD"]);
    let hook_ran = env.path().join("hook-ran");
    let hook = proj.join(".git/hooks/pre-commit");
    std::fs::write(&hook, format!("#!/bin/sh\ntouch '{}'\n", s(&hook_ran))).unwrap();
    sh(&proj, "chmod +x .git/hooks/pre-commit");
    preview(&env, &proj, Some("w"));
    env.ctl_ok(&proj, &["workcopy", "apply", "w"]);
    // The user's own staged change, not the work copy's: stays staged.
    sh(
        &proj,
        "echo mine > keep.txt && git add keep.txt && echo untracked > scratch.txt",
    );

    let out = env.ctl_json(&proj, &["workcopy", "commit", "w", "-m", "agent work"]);
    let commit = out["commit"]["commit"]
        .as_str()
        .expect("a commit")
        .to_string();
    assert!(hook_ran.exists(), "the user's pre-commit hook did not run");
    assert_eq!(git_text(&proj, &["rev-parse", "HEAD"]), commit);
    assert_eq!(git_text(&proj, &["rev-parse", "HEAD^"]), head);
    assert_eq!(
        git_text(&proj, &["log", "-1", "--format=%s%n%an"]),
        "agent work\nThe User"
    );
    let changed = git_text(&proj, &["show", "--format=", "--name-status", "HEAD"]);
    assert_eq!(
        changed,
        "M\ta.txt\nD\tdir/b.txt\nA\tempty.txt\nT\tlink_me\nA\tnew/deep/f.txt\nM\told.bin\nM\trun.sh",
        "{changed}"
    );
    assert_eq!(git_text(&proj, &["show", "HEAD:link_me"]), "keep.txt");
    assert_eq!(
        git_text(&proj, &["diff", "--cached", "--name-only"]),
        "keep.txt"
    );
    assert_eq!(
        git_text(&proj, &["ls-files", "-s", "run.sh"])
            .split(' ')
            .next(),
        Some("100755")
    );
    let st = state(&env, &proj);
    assert_eq!(st["workcopy"]["state"], "committed", "{st}");
    let again = env.ctl(&proj, &["workcopy", "commit", "w"]);
    assert!(again.stderr.contains("already committed"), "{again:?}");
}

#[test]
fn a_commit_the_users_hook_refuses_leaves_their_index_as_it_was() {
    let env = Env::new();
    let _d = env.start_daemon();
    let (proj, _copy) = applied_setup(&env);
    preview(&env, &proj, Some("w"));
    env.ctl_ok(&proj, &["workcopy", "apply", "w"]);
    // The user stages one applied path themselves, and a file of their own.
    sh(
        &proj,
        "git add a.txt && echo mine > keep.txt && git add keep.txt",
    );
    let hook = proj.join(".git/hooks/pre-commit");
    std::fs::write(
        &hook,
        "#!/bin/sh
echo 'lint failed' >&2
exit 1
",
    )
    .unwrap();
    sh(&proj, "chmod +x .git/hooks/pre-commit");
    let staged = git_text(&proj, &["ls-files", "-s"]);
    let status = git_text(&proj, &["status", "--porcelain"]);
    let head = git_text(&proj, &["rev-parse", "HEAD"]);

    let out = env.ctl(&proj, &["workcopy", "commit", "w", "-m", "agent work"]);
    assert_eq!(out.code(), 1, "{out:?}");
    assert!(out.stderr.contains("lint failed"), "{out:?}");
    assert!(out.stderr.contains("the index is as it was"), "{out:?}");
    assert_eq!(git_text(&proj, &["rev-parse", "HEAD"]), head);
    assert_eq!(git_text(&proj, &["ls-files", "-s"]), staged);
    assert_eq!(git_text(&proj, &["status", "--porcelain"]), status);
    assert_eq!(state(&env, &proj)["workcopy"]["state"], "applied");
}

#[test]
fn commit_refuses_when_head_or_an_applied_path_moved() {
    let env = Env::new();
    let _d = env.start_daemon();
    let (proj, _copy) = applied_setup(&env);
    preview(&env, &proj, Some("w"));
    env.ctl_ok(&proj, &["workcopy", "apply", "w"]);

    sh(&proj, "echo user > a.txt");
    let out = env.ctl(&proj, &["workcopy", "commit", "w"]);
    assert_eq!(out.code(), 1, "{out:?}");
    assert!(
        out.stderr.contains("changed since the apply (a.txt)"),
        "{out:?}"
    );
    sh(&proj, "printf 'one\\nTWO\\n' > a.txt");

    let head = git_text(&proj, &["rev-parse", "HEAD"]);
    git(
        &proj,
        &["commit", "-q", "--allow-empty", "-m", "someone else"],
    );
    let out = env.ctl(&proj, &["workcopy", "commit", "w"]);
    assert_eq!(out.code(), 1, "{out:?}");
    assert!(out.stderr.contains("HEAD moved since the apply"), "{out:?}");
    assert!(out.stderr.contains(&head), "{out:?}");
    assert_eq!(state(&env, &proj)["workcopy"]["state"], "applied");
    assert_eq!(
        git_text(&proj, &["log", "-1", "--format=%s"]),
        "someone else"
    );
}

#[test]
fn apply_refuses_a_conflict_and_writes_nothing() {
    let env = Env::new();
    let _d = env.start_daemon();
    let (proj, _copy) = applied_setup(&env);
    // Previewed while the original is as at the base; edited after.
    preview(&env, &proj, Some("w"));
    sh(&proj, "echo user > a.txt");
    let before = snapshot_work(&proj);
    let turns = env.ctl_json(&proj, &["log"])["turns"]
        .as_array()
        .unwrap()
        .len();

    let out = env.ctl(&proj, &["workcopy", "apply", "w"]);
    assert_eq!(out.code(), 3, "{out:?}");
    assert!(out.stderr.contains("conflict: a.txt"), "{out:?}");
    assert_same_tree("original", &before, &snapshot_work(&proj));
    assert_eq!(state(&env, &proj)["workcopy"]["state"], "ready");
    let log = env.ctl_json(&proj, &["log"]);
    assert_eq!(log["turns"].as_array().unwrap().len(), turns, "{log}");
}

#[test]
fn a_crash_between_applying_and_applied_is_settled_by_status() {
    let env = Env::new();
    let marker = env.path().join("paused");
    let d = env.start_daemon_with(&[
        ("CKPT_TEST_PAUSE_REWIND_AFTER", "4"),
        ("CKPT_TEST_PAUSE_MARKER", s(&marker)),
    ]);
    let (proj, copy) = applied_setup(&env);
    let before = snapshot_work(&proj);
    preview(&env, &proj, Some("w"));
    let mut apply = env
        .ctl_cmd(&proj, &["workcopy", "apply", "w"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for("the apply to pause", Duration::from_secs(60), || {
        marker.exists()
    });
    let mid = snapshot_work(&proj);
    assert_ne!(
        mid, before,
        "paused before any write: the test would prove nothing"
    );
    assert_ne!(mid, snapshot_work(&copy), "paused after every write");
    d.kill();
    let status = wait_timeout(&mut apply, Duration::from_secs(30)).expect("ckptctl returns");
    assert_eq!(status.code(), Some(1));
    let file = state_file(&env);
    assert_eq!(file["state"], "applying", "{file}");

    // Without the daemon, nothing can be told: the state stays.
    let out = env.ctl(&proj, &["workcopy", "status", "w"]);
    assert_eq!(out.code(), 1, "{out:?}");
    assert!(out.stderr.contains("daemon must be running"), "{out:?}");

    let _d = env.start_daemon();
    let st = state(&env, &proj);
    assert_eq!(st["workcopy"]["state"], "applied", "{st}");
    let turn = st["workcopy"]["apply"]["turn"]
        .as_i64()
        .expect("the turn found");
    assert_same_tree(
        "original after recovery",
        &snapshot_work(&copy),
        &snapshot_work(&proj),
    );
    env.ctl_ok(&proj, &["rewind", &turn.to_string()]);
    assert_same_tree("original after rewind", &before, &snapshot_work(&proj));
}

#[test]
fn an_exported_work_copy_patch_applies_to_the_base_and_fingerprints_match() {
    let env = Env::new();
    let _d = env.start_daemon();
    let (proj, copy) = applied_setup(&env);
    env.ctl_ok(&copy, &["workcopy", "run", "w", "--", "true"]);
    let out = env.path().join("frozen");
    let doc = env.ctl_json(&proj, &["workcopy", "export", "w", "--out", s(&out)]);
    let m = &doc["manifest"];
    let paths: Vec<String> = m["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["path"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(m["base_fingerprint"], fingerprint(&proj, &paths), "{m}");
    assert_eq!(m["result_fingerprint"], fingerprint(&copy, &paths), "{m}");
    let patch = std::fs::read(out.join("changes.patch")).unwrap();
    assert_eq!(m["patch_sha256"], sha256_hex(&patch), "{m}");
    assert_eq!(
        m["zip_sha256"],
        sha256_hex(&std::fs::read(out.join("files.zip")).unwrap())
    );
    assert_eq!(m["original_matches_base"], true, "{m}");
    assert_eq!(m["runs"][0]["exit_code"], 0, "{m}");
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("| `true` | exit 0 |"), "{report}");
    assert!(report.contains("| `old.bin` | modified |"), "{report}");

    let fresh = env.path().join("fresh");
    run(std::process::Command::new("git")
        .arg("clone")
        .arg("-q")
        .arg(&proj)
        .arg(&fresh));
    git(&fresh, &["apply", "--check", s(&out.join("changes.patch"))]);
    git(&fresh, &["apply", s(&out.join("changes.patch"))]);
    assert_same_tree(
        "base + patch",
        &snapshot_work(&copy),
        &snapshot_work(&fresh),
    );

    let again = env.ctl(&proj, &["workcopy", "export", "w", "--out", s(&out)]);
    assert!(again.stderr.contains("not empty"), "{again:?}");
    let inside = env.ctl(
        &proj,
        &["workcopy", "export", "w", "--out", s(&copy.join("x"))],
    );
    assert!(inside.stderr.contains("is inside"), "{inside:?}");
    assert!(!copy.join("x").exists());
}

#[test]
fn a_current_copy_applies_ignored_files_but_commits_only_what_git_tracks() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("a", b"1\n"), (".gitignore", b".env\n")]);
    git(&proj, &["config", "user.name", "The User"]);
    git(&proj, &["config", "user.email", "user@example.com"]);
    sh(&proj, "echo secret > .env && echo u > untracked");
    env.ctl_ok(&proj, &["watch"]);
    let copy = create(&env, &proj, "w", "current");
    sh(&copy, "echo 2 > a && echo rotated > .env && rm untracked");

    preview(&env, &proj, None);
    let out = env.ctl_json(&proj, &["workcopy", "apply"]);
    assert_eq!(out["applied"], true, "{out}");
    let turn = out["turn"].as_i64().unwrap();
    assert_eq!(
        std::fs::read_to_string(proj.join(".env")).unwrap(),
        "rotated\n"
    );
    assert!(!proj.join("untracked").exists());

    let out = env.ctl_json(&proj, &["workcopy", "commit"]);
    let c = &out["commit"];
    assert_eq!(c["paths"], serde_json::json!(["a"]), "{out}");
    assert_eq!(
        c["left_out"],
        serde_json::json!([
            [".env", "ignored by git"],
            ["untracked", "deleted, and git never tracked it"]
        ]),
        "{out}"
    );
    assert_eq!(
        git_text(&proj, &["show", "--format=%s", "--name-only", "HEAD"]),
        format!("Apply work copy w (ckpt turn {turn})\n\na")
    );
}

/// `committing` left by a crash is judged from the original's HEAD: our
/// commit on the recorded parent settles to `committed`; an unmoved HEAD
/// goes back to `applied`.
#[test]
fn a_crash_while_committing_is_settled_from_head() {
    let env = Env::new();
    let _d = env.start_daemon();
    let (proj, _copy) = applied_setup(&env);
    preview(&env, &proj, Some("w"));
    env.ctl_ok(&proj, &["workcopy", "apply", "w"]);
    let state_file = env.data.join("workcopies/w.json");
    let parent = git_text(&proj, &["rev-parse", "HEAD"]);
    let mut st: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&state_file).unwrap()).unwrap();
    st["state"] = "committing".into();
    st["commit"] = serde_json::json!({
        "message": "agent work", "parent": parent, "paths": ["a.txt"], "left_out": [], "commit": null
    });
    let write = |v: &serde_json::Value| {
        std::fs::write(&state_file, serde_json::to_vec(v).unwrap()).unwrap()
    };
    write(&st);
    // The commit never happened: back to applied.
    assert_eq!(state(&env, &proj)["workcopy"]["state"], "applied");

    // It happened, and the crash came before the state said so.
    write(&st);
    git(&proj, &["commit", "-q", "-m", "agent work", "--", "a.txt"]);
    let head = git_text(&proj, &["rev-parse", "HEAD"]);
    let now = state(&env, &proj);
    assert_eq!(now["workcopy"]["state"], "committed", "{now}");
    assert_eq!(now["workcopy"]["commit"]["commit"], head.as_str(), "{now}");

    // HEAD moved to someone else's commit: said, and left for the user.
    write(&st);
    git(&proj, &["commit", "-q", "--allow-empty", "-m", "other"]);
    let out = env.ctl(&proj, &["workcopy", "status", "w"]);
    assert_eq!(out.code(), 1, "{out:?}");
    assert!(out.stderr.contains("which is not that commit"), "{out:?}");
}

#[test]
fn preview_flags_and_apply_refuses_symlinks_that_leave_the_tree() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("a", b"1\n"), ("sub/x", b"x\n")]);
    env.ctl_ok(&proj, &["watch"]);
    let copy = create(&env, &proj, "w", "HEAD");
    // An absolute target, one that climbs out, and a chain whose links each
    // stay inside by name but leave together; plus one honest link.
    sh(
        &copy,
        "ln -s /etc/hostname evil && ln -s ../../../../etc sub/evil-dir \
         && ln -s .. sub/up && ln -s up/.. sub/chain && ln -s x sub/fine && echo 2 > a",
    );
    let before = snapshot(&proj);
    let out = env.ctl(&proj, &["--json", "workcopy", "preview"]);
    assert_eq!(out.code(), 3, "{out:?}");
    let p = out.json();
    assert_eq!(p["preview"]["leaving_symlinks"], 3, "{p}");
    let leaving: Vec<&str> = p["preview"]["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c.get("leaves_tree").is_some())
        .map(|c| c["path"].as_str().unwrap())
        .collect();
    assert_eq!(leaving, ["evil", "sub/chain", "sub/evil-dir"], "{p}");
    let text = env.ctl(&proj, &["workcopy", "preview"]);
    assert_eq!(text.code(), 3, "{text:?}");
    assert!(
        text.stdout
            .contains("evil  REFUSED: symlink to /etc/hostname leaves the tree"),
        "{text:?}"
    );

    let out = env.ctl(&proj, &["workcopy", "apply", "--no-preview"]);
    assert_eq!(out.code(), 3, "{out:?}");
    assert!(
        out.stderr.contains("refused: evil -> /etc/hostname"),
        "{out:?}"
    );
    assert!(out.stderr.contains("nothing was written"), "{out:?}");
    assert_same_tree("original", &before, &snapshot(&proj));
    assert_eq!(state_file(&env)["state"], "ready");
    assert!(std::fs::symlink_metadata(proj.join("evil")).is_err());

    // Without them, the apply goes through.
    sh(&copy, "rm evil sub/evil-dir sub/chain sub/up");
    preview(&env, &proj, None);
    env.ctl_ok(&proj, &["workcopy", "apply"]);
    assert_eq!(
        std::fs::read_link(proj.join("sub/fine")).unwrap(),
        Path::new("x")
    );
    assert_eq!(std::fs::read(proj.join("a")).unwrap(), b"2\n");
}

#[test]
fn apply_to_an_original_that_is_not_watched_watches_it_and_is_rewindable() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("a", b"1\n")]);
    let copy = create(&env, &proj, "w", "HEAD");
    assert!(!watched_roots(&env, &proj).contains(&s(&proj).to_string()));
    sh(&copy, "echo 2 > a && echo new > b");
    let before = snapshot(&proj);
    preview(&env, &proj, None);
    let applied = env.ctl_json(&proj, &["workcopy", "apply"]);
    assert_eq!(applied["applied"], true, "{applied}");
    assert_eq!(state(&env, &proj)["workcopy"]["state"], "applied");
    assert!(watched_roots(&env, &proj).contains(&s(&proj).to_string()));
    assert_eq!(std::fs::read(proj.join("b")).unwrap(), b"new\n");
    let turn = applied["turn"].as_i64().unwrap().to_string();
    env.ctl_ok(&proj, &["rewind", &turn]);
    assert_same_tree("original after rewind", &before, &snapshot(&proj));
}

/// An apply is the user's turn, made in a session of its own: `rewind
/// --last` (no session named) undoes it when it is the user's newest, and
/// `log` shows it as an apply.
#[test]
fn rewind_last_undoes_a_work_copy_apply_when_it_is_the_newest() {
    let env = Env::new();
    let _d = env.start_daemon();
    let (proj, _copy) = applied_setup(&env);
    // An older turn of the user's (no session).
    env.ctl_ok(&proj, &["turn-start", "--label", "mine"]);
    sh(&proj, "echo mine > mine.txt");
    env.ctl_ok(&proj, &["turn-end"]);
    let before = snapshot_work(&proj);
    preview(&env, &proj, Some("w"));
    let turn = env.ctl_json(&proj, &["workcopy", "apply", "w"])["turn"]
        .as_i64()
        .expect("a turn");

    let log = env.ctl_ok(&proj, &["log"]);
    let line = log
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{turn} ")))
        .unwrap();
    assert!(
        line.contains(" apply ") && line.contains("workcopy apply w"),
        "{log}"
    );

    let r = env.ctl_json(&proj, &["rewind", "--last"]);
    assert_eq!(r["turn"], turn, "{r}");
    assert_eq!(r["turns"], serde_json::json!([turn]), "{r}");
    assert_same_tree("the apply undone", &before, &snapshot_work(&proj));
    // Then the user's own turn before it.
    let r = env.ctl_json(&proj, &["rewind", "--last"]);
    assert_eq!(r["turn"], turn - 1, "{r}");
    assert!(!proj.join("mine.txt").exists());
}
