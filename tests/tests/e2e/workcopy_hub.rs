//! Agent Hub's contract for work copies (seed 003): the preview computes
//! the git tree the apply gives and issues a one-time token that apply
//! needs; the copy's HEAD stays at the base; a copy's result has limits;
//! a push is a state of its own, checked against a local bare remote; the
//! export's report carries the checks' logs.

use std::path::{Path, PathBuf};

use ckpt_e2e::*;
use serde_json::Value;

fn s(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 temp path")
}

fn git_text(dir: &Path, args: &[&str]) -> String {
    git(dir, args).stdout.trim().to_string()
}

/// A repository (branch main, the user's identity set) and the copy `w`
/// of its HEAD, which changes a file, adds one and deletes one.
fn setup(env: &Env) -> (PathBuf, PathBuf) {
    let proj = env.git_repo(
        "p",
        &[
            ("a.txt", b"one\ntwo\n"),
            ("gone.txt", b"bye\n"),
            ("dir/b.bin", &binary(3, 2000)),
        ],
    );
    git(&proj, &["config", "user.name", "The User"]);
    git(&proj, &["config", "user.email", "user@example.com"]);
    env.ctl_ok(&proj, &["watch"]);
    let wc = env.ctl_json(&proj, &["workcopy", "create", "--name", "w"]);
    let copy = PathBuf::from(wc["copy"].as_str().unwrap());
    sh(
        &copy,
        "printf 'one\\nTWO\\n' > a.txt && rm gone.txt && mkdir -p new && echo n > new/n.txt && chmod +x a.txt",
    );
    (proj, copy)
}

fn state_file(env: &Env) -> Value {
    serde_json::from_slice(&std::fs::read(env.data.join("workcopies/w.json")).unwrap()).unwrap()
}

fn write_state(env: &Env, v: &Value) {
    std::fs::write(
        env.data.join("workcopies/w.json"),
        serde_json::to_vec(v).unwrap(),
    )
    .unwrap();
}

/// The tree of `dir`'s files as git would record them, computed by the
/// test in a throwaway index (not ckpt's code).
fn tree_of_files(dir: &Path) -> String {
    let index = dir.parent().unwrap().join("test-index");
    let run = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_INDEX_FILE", &index)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    run(&["read-tree", "HEAD"]);
    run(&["add", "-A"]);
    let t = run(&["write-tree"]);
    std::fs::remove_file(&index).unwrap();
    t
}

#[test]
fn preview_shows_the_tree_the_apply_gives_and_apply_shows_the_original_has_it() {
    let env = Env::new();
    let _d = env.start_daemon();
    let (proj, copy) = setup(&env);
    let git_before = snapshot_git(&proj);
    let copy_index = std::fs::read(copy.join(".git/index")).unwrap();
    let work_before = snapshot_work(&proj);

    let p = env.ctl_json(&proj, &["workcopy", "preview", "w"]);
    let tree = p["tree"].as_str().expect("a tree id").to_string();
    assert_eq!(tree.len(), 40, "{p}");
    // The copy's own files, as git records them: the same tree.
    assert_eq!(tree, tree_of_files(&copy));
    // Nothing of the original's, nor the copy's index, was touched.
    assert_same_tree("the original's .git", &git_before, &snapshot_git(&proj));
    assert_same_tree("the original", &work_before, &snapshot_work(&proj));
    assert_eq!(std::fs::read(copy.join(".git/index")).unwrap(), copy_index);
    let text = env.ctl_ok(&proj, &["workcopy", "preview", "w"]);
    assert!(
        text.contains(&format!("git tree after the apply: {tree}")),
        "{text}"
    );

    let out = env.ctl_json(&proj, &["workcopy", "apply", "w"]);
    assert_eq!(out["tree"]["expected"], tree.as_str(), "{out}");
    assert_eq!(out["tree"]["found"], tree.as_str(), "{out}");
    assert_eq!(out["tree"]["matches"], true, "{out}");
    assert_eq!(out["previewed"], true, "{out}");
    assert_eq!(tree_of_files(&proj), tree);
}

/// Previews and applies the copy `w` of `proj` (made, then changed by
/// `script` in it); checks the tree the preview shows is the one the
/// apply reports and the original then holds, with the original's `.git`
/// untouched throughout. Returns that tree.
fn preview_and_apply(env: &Env, proj: &Path, base: &str, script: &str) -> String {
    env.ctl_ok(proj, &["watch"]);
    let wc = env.ctl_json(proj, &["workcopy", "create", "--base", base, "--name", "w"]);
    let copy = PathBuf::from(wc["copy"].as_str().unwrap());
    sh(&copy, script);
    let git_before = snapshot_git(proj);
    let p = env.ctl_json(proj, &["workcopy", "preview", "w"]);
    let tree = p["tree"].as_str().expect("a tree id").to_string();
    let out = env.ctl_json(proj, &["workcopy", "apply", "w"]);
    assert_eq!(out["tree"]["expected"], tree.as_str(), "{out}");
    assert_eq!(out["tree"]["found"], tree.as_str(), "{out}");
    assert_eq!(out["tree"]["matches"], true, "{out}");
    assert_same_tree("the original's .git", &git_before, &snapshot_git(proj));
    tree
}

#[test]
fn a_file_replaced_by_a_directory_has_its_tree() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("README", b"readme\n"), ("a.txt", b"a\n")]);
    let tree = preview_and_apply(
        &env,
        &proj,
        "HEAD",
        "rm README && mkdir README && echo data > README/data",
    );
    assert_eq!(tree, tree_of_files(&proj));
    assert_eq!(std::fs::read(proj.join("README/data")).unwrap(), b"data\n");
}

#[test]
fn a_directory_replaced_by_a_file_has_its_tree() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo(
        "p",
        &[
            ("docs/a.md", b"a\n"),
            ("docs/sub/b.md", b"b\n"),
            ("x", b"x\n"),
        ],
    );
    let tree = preview_and_apply(&env, &proj, "HEAD", "rm -r docs && echo now a file > docs");
    assert_eq!(tree, tree_of_files(&proj));
    assert_eq!(std::fs::read(proj.join("docs")).unwrap(), b"now a file\n");
}

/// Soak seeds 9184763450458383329 and 15216840453779333329: the base
/// commit has a file (README) where the original's tree has a directory,
/// and the copy deletes a file in it. Staging the base's README/x dropped
/// the commit's README from the expected tree, removing README/x after the
/// apply kept it: the trees differed with nothing else writing. Both sides
/// now stage the same entries over the commit, which keeps its README.
#[test]
fn a_deletion_below_a_committed_file_the_tree_holds_as_a_directory_has_its_tree() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("README", b"readme\n"), ("a.txt", b"a\n")]);
    sh(&proj, "rm README && mkdir README && echo x > README/x");
    let tree = preview_and_apply(&env, &proj, "current", "rm README/x");
    // Only README/x changed, and the commit has none: the commit's tree.
    assert_eq!(tree, git_text(&proj, &["rev-parse", "HEAD^{tree}"]));
    assert!(!proj.join("README/x").exists());
}

/// An apply the daemon refuses wrote nothing: the preview's token is
/// still good for the apply once the obstacle is gone.
#[test]
fn an_apply_the_daemon_refuses_leaves_the_token_valid() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("d/x", b"x\n"), ("a.txt", b"a\n")]);
    env.ctl_ok(&proj, &["watch"]);
    let wc = env.ctl_json(&proj, &["workcopy", "create", "--name", "w"]);
    let copy = PathBuf::from(wc["copy"].as_str().unwrap());
    sh(&copy, "rm -r d && echo b > a.txt");
    let token = env.ctl_json(&proj, &["workcopy", "preview", "w"])["token"]
        .as_str()
        .unwrap()
        .to_string();
    // The user's own file in the directory the copy deletes: the daemon's
    // plan finds it, the preview's paths do not.
    sh(&proj, "echo mine > d/mine");
    let before = snapshot_work(&proj);
    let out = env.ctl(&proj, &["workcopy", "apply", "w", "--token", &token]);
    assert_eq!(out.code(), 3, "{out:?}");
    assert!(out.stderr.contains("apply refused"), "{out:?}");
    assert_same_tree("after a refused apply", &before, &snapshot_work(&proj));
    let st = env.ctl(&proj, &["workcopy", "status", "w"]);
    assert!(st.stdout.contains("last preview's token: valid"), "{st:?}");
    sh(&proj, "rm d/mine");
    let out = env.ctl_json(&proj, &["workcopy", "apply", "w", "--token", &token]);
    assert_eq!(out["applied"], true, "{out}");
    assert!(!proj.join("d").exists());
}

#[test]
fn apply_needs_the_previews_token_and_refuses_what_changed_since() {
    let env = Env::new();
    let _d = env.start_daemon();
    let (proj, copy) = setup(&env);
    let refused = |args: &[&str], says: &str| {
        let before = snapshot_work(&proj);
        let out = env.ctl(&proj, args);
        assert_eq!(out.code(), 1, "{out:?}");
        assert!(out.stderr.contains(says), "{says}: {out:?}");
        assert!(out.stderr.contains("preview"), "{out:?}");
        assert_same_tree("after a refused apply", &before, &snapshot_work(&proj));
    };
    refused(&["workcopy", "apply", "w"], "has not been previewed");

    let token = env.ctl_json(&proj, &["workcopy", "preview", "w"])["token"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(token.len(), 32);
    refused(
        &["workcopy", "apply", "w", "--token", "0123"],
        "token 0123 is not the last preview's",
    );
    // The copy changes after the preview.
    sh(&copy, "echo more >> a.txt");
    refused(&["workcopy", "apply", "w"], "differ from the preview");
    env.ctl_ok(&proj, &["workcopy", "preview", "w"]);
    // The original's branch changes.
    git(&proj, &["checkout", "-q", "-b", "other"]);
    refused(
        &["workcopy", "apply", "w"],
        "branch changed since the preview (main then, other now)",
    );
    git(&proj, &["checkout", "-q", "main"]);
    // Its remote changes.
    let bare = env.path().join("remote.git");
    git(
        env.path(),
        &["init", "-q", "--bare", "-b", "main", s(&bare)],
    );
    git(&proj, &["remote", "add", "origin", s(&bare)]);
    refused(
        &["workcopy", "apply", "w"],
        "remote changed since the preview",
    );
    // The token expires after 10 minutes.
    let token = env.ctl_json(&proj, &["workcopy", "preview", "w"])["token"]
        .as_str()
        .unwrap()
        .to_string();
    let mut st = state_file(&env);
    let issued = st["preview"]["issued"].as_u64().unwrap();
    st["preview"]["issued"] = (issued - 601).into();
    write_state(&env, &st);
    refused(
        &["workcopy", "apply", "w", "--token", &token],
        "expired (10 minutes old",
    );

    let token = env.ctl_json(&proj, &["workcopy", "preview", "w"])["token"]
        .as_str()
        .unwrap()
        .to_string();
    let out = env.ctl_json(&proj, &["workcopy", "apply", "w", "--token", &token]);
    let turn = out["turn"].as_i64().unwrap().to_string();
    // Used once: after the apply is rewound, applying again needs a new preview.
    env.ctl_ok(&proj, &["rewind", &turn]);
    refused(
        &["workcopy", "apply", "w", "--token", &token],
        "used by an apply already",
    );
    // Scripts may skip it, and are told.
    let out = env.ctl(&proj, &["workcopy", "apply", "w", "--no-preview"]);
    assert_eq!(out.code(), 0, "{out:?}");
    assert!(
        out.stdout
            .contains("applied without a preview (--no-preview)"),
        "{out:?}"
    );
    assert_eq!(
        std::fs::read(proj.join("a.txt")).unwrap(),
        b"one\nTWO\nmore\n"
    );
}

#[test]
fn a_copy_whose_head_moved_is_refused_until_it_is_back_at_the_base() {
    let env = Env::new();
    let _d = env.start_daemon();
    let (proj, copy) = setup(&env);
    let base = git_text(&proj, &["rev-parse", "HEAD"]);
    // The agent commits in the copy.
    git(&copy, &["add", "-A"]);
    git(&copy, &["commit", "-q", "-m", "agent"]);
    let out_dir = env.path().join("export");
    for args in [
        vec!["workcopy", "preview", "w"],
        vec!["workcopy", "apply", "w", "--no-preview"],
        vec!["workcopy", "export", "w", "--out", s(&out_dir)],
    ] {
        let out = env.ctl(&proj, &args);
        assert_eq!(out.code(), 1, "{args:?}: {out:?}");
        assert!(
            out.stderr.contains(&format!(
                "the copy's HEAD moved from the base {} to",
                &base[..12]
            )),
            "{out:?}"
        );
        assert!(
            out.stderr.contains("1 commit(s) made on top of it"),
            "{out:?}"
        );
        assert!(
            out.stderr.contains(&format!("reset --soft {base}")),
            "{out:?}"
        );
    }
    assert!(!out_dir.exists());
    let st = env.ctl_ok(&proj, &["workcopy", "status", "w"]);
    assert!(st.contains("the copy's HEAD moved"), "{st}");
    // Reset back, keeping the files: accepted again.
    git(&copy, &["reset", "-q", "--soft", &base]);
    env.ctl_ok(&proj, &["workcopy", "preview", "w"]);
    // A reset to somewhere else is named too.
    git(&copy, &["commit", "-q", "-m", "again"]);
    let ahead = git_text(&copy, &["rev-parse", "HEAD"]);
    git(&copy, &["checkout", "-q", "--orphan", "lost"]);
    let out = env.ctl(&proj, &["workcopy", "preview", "w"]);
    assert!(out.stderr.contains("HEAD names no commit"), "{out:?}");
    git(&copy, &["checkout", "-q", "--detach", &ahead]);
    git(&copy, &["reset", "-q", "--soft", &base]);
    env.ctl_ok(&proj, &["workcopy", "preview", "w"]);
}

#[test]
fn a_copy_over_the_size_limit_is_reported_and_refused() {
    let env = Env::new();
    let _d = env.start_daemon();
    let (proj, copy) = setup(&env);
    // Sparse: no disk used, and never read (the limit is checked by lstat).
    let f = std::fs::File::create(copy.join("huge.bin")).unwrap();
    f.set_len(257 * 1024 * 1024).unwrap();
    let out_dir = env.path().join("export");
    for args in [
        vec!["workcopy", "preview", "w"],
        vec!["workcopy", "apply", "w", "--no-preview"],
        vec!["workcopy", "export", "w", "--out", s(&out_dir)],
    ] {
        let out = env.ctl(&proj, &args);
        assert_eq!(out.code(), 1, "{args:?}: {out:?}");
        assert!(
            out.stderr.contains("over the limit of 256.0 MiB"),
            "{out:?}"
        );
        assert!(out.stderr.contains("refused"), "{out:?}");
    }
    let st = env.ctl_json(&proj, &["workcopy", "status", "w"]);
    assert_eq!(st["limits"]["max_bytes"], 256 * 1024 * 1024, "{st}");
    assert!(
        st["usage"]["bytes"].as_u64().unwrap() > 256 * 1024 * 1024,
        "{st}"
    );
    assert!(
        st["over_limits"]
            .as_str()
            .unwrap()
            .contains("over the limit"),
        "{st}"
    );
    std::fs::remove_file(copy.join("huge.bin")).unwrap();
    let st = env.ctl_json(&proj, &["workcopy", "status", "w"]);
    assert_eq!(st["usage"]["files"], 3, "{st}");
    env.ctl_ok(&proj, &["workcopy", "preview", "w"]);
}

#[test]
fn a_copy_over_the_file_count_limit_is_refused() {
    let env = Env::new();
    let _d = env.start_daemon();
    let (proj, copy) = setup(&env);
    sh(&copy, "mkdir many && cd many && seq 1 10001 | xargs touch");
    let out = env.ctl(&proj, &["workcopy", "preview", "w"]);
    assert_eq!(out.code(), 1, "{out:?}");
    assert!(
        out.stderr.contains("10004 files, over the limit of 10000"),
        "{out:?}"
    );
}

/// The limits and the run timeout are the original's settings
/// (`workcopy.max_files`, `workcopy.run_timeout_secs`), not constants.
#[test]
fn the_original_projects_config_sets_the_limits_and_the_run_timeout() {
    let env = Env::new();
    let _d = env.start_daemon();
    let (proj, copy) = setup(&env);
    project_config(&proj, "[workcopy]\nmax_files = 4\nrun_timeout_secs = 1\n");
    sh(&copy, "touch one two");
    let out = env.ctl(&proj, &["workcopy", "preview", "w"]);
    assert_eq!(out.code(), 1, "{out:?}");
    assert!(out.stderr.contains("over the limit of 4"), "{out:?}");
    let st = env.ctl_json(&proj, &["workcopy", "status", "w"]);
    assert_eq!(st["limits"]["max_files"], 4, "{st}");
    sh(&copy, "rm one two");
    let t0 = std::time::Instant::now();
    let out = env.ctl(&proj, &["workcopy", "run", "w", "--", "sleep", "30"]);
    assert_ne!(out.code(), 0, "{out:?}");
    assert!(t0.elapsed() < std::time::Duration::from_secs(20), "{out:?}");
    assert_eq!(state_file(&env)["runs"][0]["timeout_secs"], 1);
}

#[test]
fn run_kills_after_five_minutes_by_default_and_the_export_report_holds_its_log() {
    let env = Env::new();
    let _d = env.start_daemon();
    let (proj, _copy) = setup(&env);
    env.ctl_ok(
        &proj,
        &[
            "workcopy",
            "run",
            "w",
            "--",
            "sh",
            "-c",
            "echo hello-from-check; echo oops >&2",
        ],
    );
    env.ctl_ok(
        &proj,
        &["workcopy", "run", "w", "--timeout", "0", "--", "true"],
    );
    let st = state_file(&env);
    assert_eq!(st["runs"][0]["timeout_secs"], 300, "{st}");
    assert_eq!(st["runs"][1]["timeout_secs"], Value::Null, "{st}");
    let out = env.path().join("export");
    env.ctl_ok(&proj, &["workcopy", "export", "w", "--out", s(&out)]);
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        report.contains("### Run 1: `sh -c echo hello-from-check; echo oops >&2` (exit 0)"),
        "{report}"
    );
    assert!(
        report.contains("```text\nhello-from-check\noops\n```"),
        "{report}"
    );
}

/// A bare remote holding the original's main; `origin` in the original.
fn with_remote(env: &Env, proj: &Path) -> PathBuf {
    let bare = env.path().join("remote.git");
    git(
        env.path(),
        &["init", "-q", "--bare", "-b", "main", s(&bare)],
    );
    git(proj, &["remote", "add", "origin", s(&bare)]);
    git(proj, &["push", "-q", "origin", "main"]);
    bare
}

/// Preview, apply and commit `w`: the commit.
fn committed(env: &Env, proj: &Path) -> String {
    env.ctl_ok(proj, &["workcopy", "preview", "w"]);
    env.ctl_ok(proj, &["workcopy", "apply", "w"]);
    let c = env.ctl_json(proj, &["workcopy", "commit", "w", "-m", "agent work"]);
    c["commit"]["commit"].as_str().unwrap().to_string()
}

#[test]
fn push_sends_the_commit_to_the_remote_and_records_it() {
    let env = Env::new();
    let _d = env.start_daemon();
    let (proj, _copy) = setup(&env);
    let bare = with_remote(&env, &proj);
    let out = env.ctl(&proj, &["workcopy", "push", "w"]);
    assert_eq!(out.code(), 1, "{out:?}");
    assert!(out.stderr.contains("not committed yet"), "{out:?}");
    let commit = committed(&env, &proj);
    let text = env.ctl_ok(&proj, &["workcopy", "push", "w"]);
    assert!(
        text.starts_with(&format!("pushed work copy 'w' as {commit} to origin main")),
        "{text}"
    );
    assert_eq!(git_text(&bare, &["rev-parse", "refs/heads/main"]), commit);
    let st = state_file(&env);
    assert_eq!(st["state"], "pushed", "{st}");
    assert_eq!(st["push"]["remote"], "origin", "{st}");
    let again = env.ctl(&proj, &["workcopy", "push", "w"]);
    assert!(again.stderr.contains("already pushed"), "{again:?}");
    // Another branch, named.
    let st_before = state_file(&env);
    let mut st = st_before.clone();
    st["state"] = "committed".into();
    st.as_object_mut().unwrap().remove("push");
    write_state(&env, &st);
    env.ctl_ok(
        &proj,
        &[
            "workcopy", "push", "w", "--branch", "agent/w", "--remote", "origin",
        ],
    );
    assert_eq!(
        git_text(&bare, &["rev-parse", "refs/heads/agent/w"]),
        commit
    );
}

#[test]
fn push_refuses_a_remote_that_moved_ahead_and_never_forces() {
    let env = Env::new();
    let _d = env.start_daemon();
    let (proj, _copy) = setup(&env);
    let bare = with_remote(&env, &proj);
    // Someone else pushes first.
    let other = env.path().join("other");
    git(env.path(), &["clone", "-q", s(&bare), s(&other)]);
    sh(&other, "echo theirs > theirs.txt && git add theirs.txt && git commit -q -m theirs && git push -q origin main");
    let theirs = git_text(&bare, &["rev-parse", "refs/heads/main"]);
    committed(&env, &proj);
    let out = env.ctl(&proj, &["workcopy", "push", "w"]);
    assert_eq!(out.code(), 1, "{out:?}");
    assert!(
        out.stderr
            .contains("the remote moved ahead: origin main is at"),
        "{out:?}"
    );
    assert!(out.stderr.contains("never forced"), "{out:?}");
    assert_eq!(git_text(&bare, &["rev-parse", "refs/heads/main"]), theirs);
    assert_eq!(state_file(&env)["state"], "committed");
}

#[test]
fn push_refuses_a_remote_url_with_credentials_and_never_prints_it() {
    let env = Env::new();
    let _d = env.start_daemon();
    let (proj, _copy) = setup(&env);
    with_remote(&env, &proj);
    committed(&env, &proj);
    git(
        &proj,
        &[
            "remote",
            "add",
            "cred",
            "https://user:s3cr3t@example.invalid/r.git",
        ],
    );
    let out = env.ctl(&proj, &["workcopy", "push", "w", "--remote", "cred"]);
    assert_eq!(out.code(), 1, "{out:?}");
    assert!(
        out.stderr.contains("remote 'cred' holds credentials"),
        "{out:?}"
    );
    assert!(
        !out.stderr.contains("s3cr3t") && !out.stdout.contains("s3cr3t"),
        "{out:?}"
    );
    // A push URL with them is refused as well.
    git(
        &proj,
        &[
            "remote",
            "set-url",
            "--push",
            "origin",
            "https://tok3n@example.invalid/r.git",
        ],
    );
    let out = env.ctl(&proj, &["--json", "workcopy", "push", "w"]);
    assert_eq!(out.code(), 1, "{out:?}");
    assert!(
        !out.stderr.contains("tok3n") && !out.stdout.contains("tok3n"),
        "{out:?}"
    );
    assert_eq!(state_file(&env)["state"], "committed");
}

#[test]
fn a_crash_while_pushing_is_settled_from_the_remotes_ref() {
    let env = Env::new();
    let _d = env.start_daemon();
    let (proj, _copy) = setup(&env);
    let bare = with_remote(&env, &proj);
    let before = git_text(&bare, &["rev-parse", "refs/heads/main"]);
    let commit = committed(&env, &proj);
    let mut st = state_file(&env);
    st["state"] = "pushing".into();
    st["push"] = serde_json::json!({
        "remote": "origin", "branch": "main", "commit": commit, "before": before
    });
    // The push never happened: back to committed.
    write_state(&env, &st);
    let now = env.ctl_json(&proj, &["workcopy", "status", "w"]);
    assert_eq!(now["workcopy"]["state"], "committed", "{now}");
    // It happened, and the crash came before the state said so.
    write_state(&env, &st);
    git(
        &proj,
        &["push", "-q", "origin", &format!("{commit}:refs/heads/main")],
    );
    let now = env.ctl_json(&proj, &["workcopy", "status", "w"]);
    assert_eq!(now["workcopy"]["state"], "pushed", "{now}");
}

/// gc keeps a finished apply's turn (and every later one) while its work
/// copy is kept, so the apply stays undoable and `workcopy status` can
/// show it; `workcopy remove` lets it go.
#[test]
fn gc_keeps_a_work_copys_apply_until_the_copy_is_removed() {
    let env = Env::new();
    let _d = env.start_daemon_with(&[("CKPT_TEST_GC_GRACE_SECS", "0")]);
    let proj = env.git_repo("p", &[("a.txt", b"a\n")]);
    project_config(&proj, "[retention]\nturns = 1\ndays = 0\n");
    env.ctl_ok(&proj, &["watch"]);
    let turn = |v: &str| {
        env.ctl_ok(&proj, &["turn-start"]);
        std::fs::write(proj.join("f.txt"), v).unwrap();
        env.ctl_ok(&proj, &["turn-end"]);
    };
    turn("1");
    let wc = env.ctl_json(
        &proj,
        &["workcopy", "create", "--base", "current", "--name", "w"],
    );
    let copy = PathBuf::from(wc["copy"].as_str().unwrap());
    sh(&copy, "echo from the copy > a.txt");
    let applied = env.ctl_json(&proj, &["workcopy", "apply", "w", "--no-preview"]);
    let t = applied["turn"].as_i64().unwrap();
    turn("2");
    turn("3");
    let status = env.ctl_ok(&proj, &["status"]);
    assert!(
        status.contains(&format!("kept from turn {t} on (a work copy's apply)")),
        "{status}"
    );
    // The turn before the apply goes: dropped by this gc, or already by
    // the worker's own retention (its first round may come after the apply).
    let r = env.ctl_json(&proj, &["gc"]);
    assert!(r["through"].is_null() || r["through"] == t - 1, "{r}");
    let ids: Vec<i64> = env.ctl_json(&proj, &["log"])["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["id"].as_i64().unwrap())
        .collect();
    assert!(ids.contains(&t) && !ids.contains(&(t - 1)), "{ids:?}");
    let st = env.ctl_ok(&proj, &["workcopy", "status", "w"]);
    assert!(st.contains(&format!("applied as turn {t}")), "{st}");
    // Still undoable.
    env.ctl_ok(&proj, &["rewind", &t.to_string(), "--force"]);
    assert_eq!(std::fs::read(proj.join("a.txt")).unwrap(), b"a\n");
    env.ctl_ok(&proj, &["redo"]);

    env.ctl_ok(&proj, &["workcopy", "remove", "w"]);
    let r = env.ctl_json(&proj, &["gc"]);
    assert!(r["through"].as_i64().unwrap() >= t, "{r}");
    let ids: Vec<i64> = env.ctl_json(&proj, &["log"])["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["id"].as_i64().unwrap())
        .collect();
    assert!(!ids.contains(&t), "{ids:?}");
}
