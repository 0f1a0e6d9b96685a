//! `pin`, `unpin`, `gc [--dry-run]` and the retention line of `status`
//! through the real binaries, with the policy from the project's settings.

use std::path::{Path, PathBuf};

use ckpt_e2e::*;

/// A watched project keeping one turn, of any age, and three turns each
/// writing a new 64 KiB version of `f.bin`.
fn three_turns(env: &Env) -> PathBuf {
    let proj = env.git_repo("app", &[("a.txt", b"a\n")]);
    project_config(&proj, "[retention]\nturns = 1\ndays = 0\n");
    env.ctl_ok(&proj, &["watch"]);
    for v in 1..=3 {
        env.ctl_ok(&proj, &["turn-start"]);
        std::fs::write(proj.join("f.bin"), noise(64 << 10, v)).unwrap();
        env.ctl_ok(&proj, &["turn-end"]);
    }
    proj
}

fn turn_ids(env: &Env, proj: &Path) -> Vec<i64> {
    let mut ids: Vec<i64> = env.ctl_json(proj, &["log"])["turns"]
        .as_array()
        .expect("log lists turns")
        .iter()
        .map(|t| t["id"].as_i64().unwrap())
        .collect();
    ids.sort();
    ids
}

#[test]
fn gc_dry_run_says_what_gc_then_does_and_changes_nothing() {
    let env = Env::new();
    let _d = env.start_daemon_with(&[("CKPT_TEST_GC_GRACE_SECS", "0")]);
    let proj = three_turns(&env);
    let dry = env.ctl_json(&proj, &["gc", "--dry-run"]);
    assert_eq!(
        (dry["turns_dropped"].as_u64(), dry["through"].as_i64()),
        (Some(2), Some(2)),
        "{dry}"
    );
    let before = env.ctl_json(&proj, &["status"])["projects"][0]["store_bytes"]
        .as_u64()
        .unwrap();
    assert_eq!(turn_ids(&env, &proj), [1, 2, 3], "a dry run drops nothing");
    let text = env.ctl_ok(&proj, &["gc", "--dry-run"]);
    assert!(
        text.starts_with("would drop 2 turns (up to turn 2); would free "),
        "{text}"
    );

    let real = env.ctl_json(&proj, &["gc"]);
    for k in [
        "turns_dropped",
        "bytes_freed",
        "blobs_removed",
        "store_bytes",
    ] {
        assert_eq!(real[k], dry[k], "{k}: {real} against {dry}");
    }
    assert_eq!(turn_ids(&env, &proj), [3]);
    // The bytes said are the bytes the store gave back.
    let after = real["store_bytes"].as_u64().unwrap();
    assert_eq!(
        before - after,
        real["bytes_freed"].as_u64().unwrap(),
        "{real}"
    );
    let text = env.ctl_ok(&proj, &["gc"]);
    assert!(text.starts_with("dropped no turns; freed 0 B"), "{text}");
}

#[test]
fn a_pinned_turn_outlives_retention_until_unpinned() {
    let env = Env::new();
    let _d = env.start_daemon_with(&[("CKPT_TEST_GC_GRACE_SECS", "0")]);
    let proj = three_turns(&env);
    let pinned = env.ctl_json(&proj, &["pin", "2"]);
    assert_eq!(pinned["retention"]["pinned"], serde_json::json!([2]));
    let status = env.ctl_ok(&proj, &["status"]);
    assert!(
        status.contains(
            "retention: keep 1 turns, 0 days, no budget; pinned 2; next: turns up to 1 are past it"
        ) && status.contains("kept from turn 2 on (pinned)"),
        "{status}"
    );
    let r = env.ctl_json(&proj, &["gc"]);
    assert_eq!(r["turns_dropped"], 1, "{r}");
    assert_eq!(turn_ids(&env, &proj), [2, 3]);
    // The pinned turn still rewinds.
    env.ctl_ok(&proj, &["rewind", "2"]);
    assert!(
        !proj.join("f.bin").exists()
            || std::fs::read(proj.join("f.bin")).unwrap() == noise(64 << 10, 1)
    );
    env.ctl_ok(&proj, &["redo"]);

    env.ctl_ok(&proj, &["unpin", "2"]);
    let r = env.ctl_json(&proj, &["gc"]);
    assert_eq!(r["through"], 2, "{r}");
    assert_eq!(turn_ids(&env, &proj), [3]);

    let out = env.ctl(&proj, &["pin", "99"]);
    assert_eq!(out.code(), 1, "{out:?}");
}

#[test]
fn empty_turns_do_not_push_a_turn_out_of_retention() {
    let env = Env::new();
    let _d = env.start_daemon_with(&[("CKPT_TEST_GC_GRACE_SECS", "0")]);
    let proj = three_turns(&env);
    for _ in 0..3 {
        env.ctl_ok(&proj, &["turn-start"]);
        env.ctl_ok(&proj, &["turn-end"]);
    }
    let r = env.ctl_json(&proj, &["gc"]);
    assert_eq!(r["through"], 2, "turn 3 changed something and stays: {r}");
    assert_eq!(turn_ids(&env, &proj), [3, 4, 5, 6]);
}

#[test]
fn a_store_over_its_budget_drops_its_oldest_turns() {
    let env = Env::new();
    let _d = env.start_daemon_with(&[("CKPT_TEST_GC_GRACE_SECS", "0")]);
    let proj = three_turns(&env);
    // Four versions of 1 MiB each: over a 3 MiB budget.
    for v in 10..14 {
        env.ctl_ok(&proj, &["turn-start"]);
        std::fs::write(proj.join("f.bin"), noise(1 << 20, v)).unwrap();
        env.ctl_ok(&proj, &["turn-end"]);
    }
    // Turn 6 pinned: the budget drops turns 1 to 5, oldest first, and
    // says the store is still over it (turns 6 and 7 hold three versions).
    env.ctl_ok(&proj, &["pin", "6"]);
    project_config(&proj, "[retention]\nturns = 100\n[store]\nbudget_mib = 3\n");
    let r = env.ctl_json(&proj, &["gc"]);
    assert_eq!(turn_ids(&env, &proj), [6, 7], "{r}");
    assert_eq!(r["over_budget"], true, "{r}");
    let text = env.ctl_ok(&proj, &["gc", "--dry-run"]);
    assert!(text.contains("still over the store budget"), "{text}");
}
