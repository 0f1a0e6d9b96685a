//! A full disk: the daemon's data dir, or the project itself, on a small
//! tmpfs that the test fills. The daemon stays up, says why capture is
//! degraded (ENOSPC) in `status` and in the failing reply, loses no
//! pre-image, refuses a rewind it cannot carry out before touching the tree,
//! and once space is back captures everything made meanwhile.
//!
//! Mounting needs root (or CAP_SYS_ADMIN); without it each test says so and
//! returns early.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use ckpt_e2e::*;

/// A tmpfs mounted for one test; unmounted when dropped, also when the
/// test fails.
struct Tmpfs(PathBuf);

impl Tmpfs {
    /// Mounts a tmpfs of `size` (as `mount -o size=` takes it) on `dir`, or
    /// says why it cannot and returns `None`.
    fn mount(dir: &Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(dir).expect("create mount point");
        let out = run(Command::new("mount")
            .args(["-t", "tmpfs", "-o"])
            .arg(format!("size={size},mode=0700"))
            .arg("tmpfs")
            .arg(dir));
        if !out.status.success() {
            eprintln!(
                "skipped: cannot mount a tmpfs on {} (needs root): {}",
                dir.display(),
                out.stderr.trim()
            );
            return None;
        }
        Some(Tmpfs(dir.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        // Lazy, so a process still holding a file in it cannot keep it mounted.
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// Writes `path` until its filesystem has no byte left (ENOSPC).
fn fill(path: &Path) {
    let mut f = std::fs::File::create(path).expect("create filler");
    let mut chunk = 1 << 20;
    let buf = vec![0x5au8; chunk];
    while chunk > 0 {
        match f.write(&buf[..chunk]) {
            Ok(0) => chunk /= 2,
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => chunk /= 2,
            Err(e) => panic!("filling {}: {e}", path.display()),
        }
    }
    let _ = f.sync_all();
}

/// `n` bytes that do not compress, different for each `seed`.
fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// The project's line in `status --json`, once its worker is not holding
/// it: `status` never waits for a busy project (it reports `busy` and what
/// it saw last), and a failed capture's worker may still be at work.
fn project_status(env: &Env, proj: &Path) -> serde_json::Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let st = env.ctl_json(proj, &["status"]);
        let p = st["projects"][0].clone();
        if p["busy"] != true || std::time::Instant::now() > deadline {
            return p;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Runs `ckptctl --json args`, expecting exit 1; returns the error message.
fn ctl_err(env: &Env, proj: &Path, args: &[&str]) -> String {
    let mut full = vec!["--json"];
    full.extend_from_slice(args);
    let out = env.ctl(proj, &full);
    assert_eq!(
        out.code(),
        1,
        "ckptctl {args:?} should fail: {out:?}\n{}",
        tail(&env.log_path())
    );
    let message = out.json()["error"]["message"]
        .as_str()
        .expect("an error message")
        .to_string();
    eprintln!("ckptctl {args:?}: {message}");
    message
}

fn names_enospc(text: &str) -> bool {
    text.contains("ENOSPC")
}

fn entry_paths(turn_end: &serde_json::Value) -> Vec<String> {
    turn_end["turn"]["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| e["path"].as_str().expect("path").to_string())
        .collect()
}

#[test]
fn a_full_data_disk_degrades_loudly_loses_nothing_and_recovers() {
    let env = Env::new();
    let Some(_mnt) = Tmpfs::mount(&env.data, "12m") else {
        return;
    };
    let d = env.start_daemon();
    let proj = env.git_repo("app", &[("a.txt", b"a0\n"), ("b.txt", b"b0\n")]);
    std::fs::write(proj.join("big.bin"), noise(256 << 10, 1)).unwrap();
    env.ctl_ok(&proj, &["watch"]);
    let before_1 = snapshot_work(&proj);
    env.ctl_ok(&proj, &["turn-start"]);
    std::fs::write(proj.join("big.bin"), noise(256 << 10, 2)).unwrap();
    sh(&proj, "echo a1 > a.txt");
    env.ctl_ok(&proj, &["turn-end"]);
    let before_2 = snapshot_work(&proj);

    env.ctl_ok(&proj, &["turn-start"]);
    let filler = env.data.join("filler");
    fill(&filler);
    // The agent writes content the store has never seen.
    // More than a space reserve holds.
    std::fs::write(proj.join("big.bin"), noise(3 << 20, 3)).unwrap();
    std::fs::write(proj.join("new.bin"), noise(300 << 10, 4)).unwrap();
    sh(&proj, "echo a2 > a.txt && rm b.txt");

    let message = ctl_err(&env, &proj, &["turn-end"]);
    assert!(names_enospc(&message), "turn-end names ENOSPC: {message}");
    let p = project_status(&env, &proj);
    assert_eq!(p["health"], "degraded", "{p:#}");
    let reason = p["degraded"].as_str().unwrap_or_default();
    assert!(names_enospc(reason), "status names ENOSPC: {p:#}");
    assert_eq!(p["open_turn"], 2, "the turn stays open: {p:#}");
    // A rewind cannot pass its barrier either: refused, tree untouched.
    let full = snapshot_work(&proj);
    let message = ctl_err(&env, &proj, &["rewind", "1"]);
    assert!(names_enospc(&message), "{message}");
    assert_same_tree("refused rewind", &full, &snapshot_work(&proj));

    // Space comes back; more work meanwhile.
    std::fs::remove_file(&filler).unwrap();
    sh(&proj, "echo late > late.txt");
    let ended = env.ctl_json(&proj, &["turn-end"]);
    assert_eq!(ended["turn"]["info"]["id"], 2);
    assert_eq!(
        entry_paths(&ended),
        ["a.txt", "b.txt", "big.bin", "late.txt", "new.bin"],
        "{ended:#}"
    );
    assert!(ended["degraded"].is_null(), "recovered: {ended:#}");
    let p = project_status(&env, &proj);
    assert_eq!(p["health"], "ok", "{p:#}");
    let after_2 = snapshot_work(&proj);

    env.ctl_ok(&proj, &["rewind", "2"]);
    assert_same_tree("rewound turn 2", &before_2, &snapshot_work(&proj));
    env.ctl_ok(&proj, &["rewind", "1"]);
    assert_same_tree("rewound turn 1", &before_1, &snapshot_work(&proj));
    env.ctl_ok(&proj, &["redo"]);
    assert_same_tree("redo of rewind 1", &before_2, &snapshot_work(&proj));
    env.ctl_ok(&proj, &["redo"]);
    assert_same_tree("redo of rewind 2", &after_2, &snapshot_work(&proj));
    assert!(d.terminate().success(), "the daemon shuts down cleanly");
}

#[test]
fn a_rewind_on_a_full_data_disk_refuses_untouched_then_applies_once_space_is_back() {
    let env = Env::new();
    let Some(_mnt) = Tmpfs::mount(&env.data, "12m") else {
        return;
    };
    let d = env.start_daemon();
    let proj = env.git_repo("app", &[("a.txt", b"a0\n")]);
    let files: Vec<String> = (0..40).map(|i| format!("f{i}.txt")).collect();
    for (i, f) in files.iter().enumerate() {
        std::fs::write(proj.join(f), noise(8 << 10, i as u64)).unwrap();
    }
    env.ctl_ok(&proj, &["watch"]);
    let before = snapshot_work(&proj);
    env.ctl_ok(&proj, &["turn-start"]);
    for (i, f) in files.iter().enumerate() {
        std::fs::write(proj.join(f), noise(8 << 10, 100 + i as u64)).unwrap();
    }
    sh(&proj, "echo a1 > a.txt && mkdir d && echo x > d/x");
    env.ctl_ok(&proj, &["turn-end"]);
    let after = snapshot_work(&proj);

    let filler = env.data.join("filler");
    fill(&filler);
    let out = env.ctl(&proj, &["--json", "rewind", "1"]);
    let now = snapshot_work(&proj);
    eprintln!("rewind on the full data disk: {}", out.stdout.trim());
    if out.status.success() {
        // It needed no space: then it must be whole.
        assert_same_tree("rewound on a full disk", &before, &now);
        env.ctl_ok(&proj, &["redo"]);
    } else {
        let message = out.json()["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(names_enospc(&message), "{message}");
        assert_same_tree("refused rewind leaves the tree", &after, &now);
    }
    hello(&env.socket).expect("the daemon is up");

    std::fs::remove_file(&filler).unwrap();
    let r = env.ctl_json(&proj, &["rewind", "1"]);
    assert_eq!(r["outcome"], "applied", "{r:#}");
    assert_same_tree("rewound once space is back", &before, &snapshot_work(&proj));
    env.ctl_ok(&proj, &["redo"]);
    assert_same_tree("redone", &after, &snapshot_work(&proj));
    assert!(d.terminate().success());
}

#[test]
fn a_rewind_on_a_full_project_disk_fails_and_leaves_the_tree_as_it_was() {
    let env = Env::new();
    let proj = env.path().join("app");
    let Some(_mnt) = Tmpfs::mount(&proj, "4m") else {
        return;
    };
    let d = env.start_daemon();
    std::fs::write(proj.join(".ckptignore"), "/filler\n").unwrap();
    std::fs::write(proj.join("a.txt"), "a0\n").unwrap();
    std::fs::write(proj.join("big.bin"), noise(1 << 20, 1)).unwrap();
    std::fs::write(proj.join("mid.bin"), noise(200 << 10, 2)).unwrap();
    env.ctl_ok(&proj, &["watch"]);
    let before = snapshot_work(&proj);
    env.ctl_ok(&proj, &["turn-start"]);
    sh(&proj, "echo a1 > a.txt && rm big.bin && echo n > new.txt");
    std::fs::write(proj.join("mid.bin"), noise(200 << 10, 3)).unwrap();
    env.ctl_ok(&proj, &["turn-end"]);

    let filler = proj.join("filler");
    fill(&filler);
    let after = snapshot_work(&proj);
    let message = ctl_err(&env, &proj, &["rewind", "1"]);
    assert!(names_enospc(&message), "{message}");
    assert_same_tree(
        "a rewind that cannot write leaves the tree",
        &after,
        &snapshot_work(&proj),
    );
    let leftovers: Vec<String> = list(&proj)
        .into_iter()
        .filter(|n| !after.contains_key(n.as_bytes()))
        .collect();
    assert!(leftovers.is_empty(), "temp files left: {leftovers:?}");
    hello(&env.socket).expect("the daemon is up");

    std::fs::remove_file(&filler).unwrap();
    let r = env.ctl_json(&proj, &["rewind", "1"]);
    assert_eq!(r["outcome"], "applied", "{r:#}");
    let mut expected = before.clone();
    expected.remove(b"filler".as_slice());
    let mut now = snapshot_work(&proj);
    now.remove(b"filler".as_slice());
    assert_same_tree("rewound once space is back", &expected, &now);
    assert!(d.terminate().success());
}

#[test]
fn a_capture_failing_while_turn_end_waits_does_not_close_the_turn_on_a_stale_cache() {
    let env = Env::new();
    let Some(_mnt) = Tmpfs::mount(&env.data, "40m") else {
        return;
    };
    let d = env.start_daemon();
    let proj = env.git_repo("app", &[("a.txt", b"a0\n")]);
    env.ctl_ok(&proj, &["watch"]);
    let before = snapshot_work(&proj);
    env.ctl_ok(&proj, &["turn-start"]);
    // Room for the database to close the turn, none for the new content.
    let reserve = env.data.join("reserve");
    std::fs::write(&reserve, vec![0u8; 1 << 20]).unwrap();
    let filler = env.data.join("filler");
    fill(&filler);
    std::fs::remove_file(&reserve).unwrap();
    // Moved in whole (one event), and big enough that its capture is still
    // under way when turn-end asks for the barrier: the capture fails while
    // the barrier waits.
    let staged = env.path().join("huge.bin");
    std::fs::write(&staged, noise(12 << 20, 9)).unwrap();
    std::fs::rename(&staged, proj.join("huge.bin")).unwrap();
    let out = env.ctl(&proj, &["--json", "turn-end"]);
    assert_eq!(
        out.code(),
        1,
        "a turn must not end on a cache behind the disk: {}",
        out.stdout
    );
    std::fs::remove_file(&filler).unwrap();
    let ended = env.ctl_json(&proj, &["turn-end"]);
    assert_eq!(entry_paths(&ended), ["huge.bin"], "{ended:#}");
    env.ctl_ok(&proj, &["rewind", "1"]);
    assert_same_tree("rewound", &before, &snapshot_work(&proj));
    assert!(d.terminate().success());
}

#[test]
fn a_rewind_cut_short_with_the_data_disk_full_is_finished_from_its_journal_once_space_is_back() {
    let env = Env::new();
    let Some(_mnt) = Tmpfs::mount(&env.data, "12m") else {
        return;
    };
    let marker = env.path().join("paused");
    let marker_s = marker.to_str().expect("utf-8 temp path").to_string();
    let d = env.start_daemon_with(&[
        ("CKPT_TEST_PAUSE_REWIND_AFTER", "3"),
        ("CKPT_TEST_PAUSE_MARKER", &marker_s),
    ]);
    let proj = env.git_repo("app", &[("a.txt", b"a0\n"), ("b.txt", b"b0\n")]);
    for i in 0..6 {
        std::fs::write(proj.join(format!("f{i}.bin")), noise(64 << 10, i)).unwrap();
    }
    env.ctl_ok(&proj, &["watch"]);
    let before = snapshot_work(&proj);
    env.ctl_ok(&proj, &["turn-start"]);
    for i in 0..6 {
        std::fs::write(proj.join(format!("f{i}.bin")), noise(64 << 10, 10 + i)).unwrap();
    }
    sh(
        &proj,
        "echo a1 > a.txt && rm b.txt && mkdir n && echo n > n/n.txt",
    );
    env.ctl_ok(&proj, &["turn-end"]);
    let after = snapshot_work(&proj);

    let mut rewind = env.rewind_until_paused(&proj, "1", &marker);
    // Journaled and half-way; then the data disk fills and the daemon dies.
    let filler = env.data.join("filler");
    fill(&filler);
    d.kill();
    wait_timeout(&mut rewind, std::time::Duration::from_secs(30)).expect("ckptctl returns");

    // Restarted on the full disk: recovery needs the store, which cannot
    // even be opened; the project is listed as unavailable, saying why.
    let d = env.start_daemon();
    let mut st = serde_json::Value::Null;
    wait_for(
        "start-up to settle",
        std::time::Duration::from_secs(60),
        || {
            st = env.ctl_json(&proj, &["status"]);
            st["projects"][0]["health"] != "loading"
        },
    );
    let p = &st["projects"][0];
    let reason = p["degraded"].as_str().unwrap_or_default();
    assert_ne!(p["health"], "ok", "{st:#}");
    assert!(names_enospc(reason), "status names ENOSPC: {st:#}");

    std::fs::remove_file(&filler).unwrap();
    let sync = env.ctl_json(&proj, &["sync"]);
    assert!(sync["degraded"].is_null(), "recovered: {sync:#}");
    assert_same_tree("finished from the journal", &before, &snapshot_work(&proj));
    let log = env.ctl_json(&proj, &["log"]);
    assert_eq!(log["turns"][0]["status"], "rewound", "{log:#}");
    env.ctl_ok(&proj, &["redo"]);
    assert_same_tree("redone", &after, &snapshot_work(&proj));
    assert!(d.terminate().success());
}

/// Free bytes on `dir`'s filesystem, as `df` reports them.
fn free_bytes(dir: &Path) -> u64 {
    let out = run(Command::new("df").args(["-B1", "--output=avail"]).arg(dir));
    out.stdout.lines().nth(1).unwrap().trim().parse().unwrap()
}

#[test]
fn a_rewind_needing_no_new_content_and_turn_boundaries_work_on_a_full_data_disk() {
    let env = Env::new();
    let Some(_mnt) = Tmpfs::mount(&env.data, "12m") else {
        return;
    };
    let d = env.start_daemon();
    let proj = env.git_repo("app", &[("a.txt", b"a0\n")]);
    let files: Vec<String> = (0..40).map(|i| format!("f{i}.txt")).collect();
    for (i, f) in files.iter().enumerate() {
        std::fs::write(proj.join(f), noise(8 << 10, i as u64)).unwrap();
    }
    env.ctl_ok(&proj, &["watch"]);
    let before = snapshot_work(&proj);
    env.ctl_ok(&proj, &["turn-start"]);
    for (i, f) in files.iter().enumerate() {
        std::fs::write(proj.join(f), noise(8 << 10, 100 + i as u64)).unwrap();
    }
    sh(&proj, "echo a1 > a.txt && mkdir d && echo x > d/x");
    env.ctl_ok(&proj, &["turn-end"]);
    let after = snapshot_work(&proj);
    assert!(
        env.data.join("space-reserve").is_file(),
        "a reserve is kept"
    );

    let filler = env.data.join("filler");
    fill(&filler);
    // Every state this rewind and its redo need is stored already.
    let r = env.ctl_json(&proj, &["rewind", "1"]);
    assert_eq!(r["outcome"], "applied", "{r:#}");
    assert_same_tree(
        "rewound on a full data disk",
        &before,
        &snapshot_work(&proj),
    );
    eprintln!(
        "after the rewind on the full disk: {} bytes of the {}-byte reserve left",
        free_bytes(&env.data),
        1 << 20
    );
    env.ctl_ok(&proj, &["redo"]);
    assert_same_tree("redone on a full data disk", &after, &snapshot_work(&proj));
    // The next turn opens, so the agent's work is not put in the last one.
    let started = env.ctl_json(&proj, &["turn-start"]);
    assert_eq!(started["turn"], 2, "{started:#}");
    eprintln!(
        "after redo and turn-start: {} bytes left",
        free_bytes(&env.data)
    );
    // New content cannot be stored: turn-end says so plainly, as its own kind.
    std::fs::write(proj.join("big.bin"), noise(3 << 20, 7)).unwrap();
    let out = env.ctl(&proj, &["--json", "turn-end"]);
    assert_eq!(out.code(), 1, "{out:?}");
    let err = &out.json()["error"];
    assert_eq!(err["kind"], "disk_full", "{err:#}");
    assert!(out.stderr.contains("disk full: "), "{}", out.stderr);

    // Space comes back: the turn ends with everything, the reserve is made again.
    std::fs::remove_file(&filler).unwrap();
    let ended = env.ctl_json(&proj, &["turn-end"]);
    assert_eq!(entry_paths(&ended), ["big.bin"], "{ended:#}");
    assert!(
        env.data.join("space-reserve").is_file(),
        "the reserve is back"
    );
    assert!(d.terminate().success());
}
