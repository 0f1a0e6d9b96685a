//! `ckptctl fsck` through the real binaries: a sound store passes, a
//! damaged object is named and fails the check, the store is not changed
//! by checking it, and a check runs while the daemon captures.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ckpt_e2e::*;

/// A watched project with a turn, a rewind and a redo behind it; returns
/// it and its store directory.
fn project_with_history(env: &Env) -> (PathBuf, PathBuf) {
    let big = noise(300 << 10, 7);
    let proj = env.git_repo(
        "app",
        &[
            ("a.txt", b"a\n"),
            ("src/lib.rs", b"pub fn f() {}\n"),
            ("big.bin", &big),
        ],
    );
    let id = env.ctl_json(&proj, &["watch"])["id"]
        .as_str()
        .expect("watch names the project's id")
        .to_string();
    env.ctl_ok(&proj, &["turn-start", "--label", "edit"]);
    sh(
        &proj,
        "echo b >> a.txt && echo 'pub fn g() {}' > src/g.rs && rm src/lib.rs",
    );
    env.ctl_ok(&proj, &["turn-end"]);
    env.ctl_ok(&proj, &["rewind", "1"]);
    env.ctl_ok(&proj, &["redo"]);
    (proj, env.data.join("projects").join(id))
}

/// The object files of a store (`objects/<2 hex>/<62 hex>`), by blob hash.
fn object_files(store: &Path) -> BTreeMap<String, PathBuf> {
    let mut out = BTreeMap::new();
    for fan in std::fs::read_dir(store.join("objects")).expect("objects dir") {
        let fan = fan.expect("entry").path();
        for f in std::fs::read_dir(&fan).expect("fan dir") {
            let f = f.expect("entry").path();
            let name = |p: &Path| p.file_name().unwrap().to_string_lossy().into_owned();
            out.insert(format!("{}{}", name(&fan), name(&f)), f);
        }
    }
    out
}

/// Everything in the store, byte for byte, except SQLite's shared-memory
/// index (readers write their read marks there by design).
fn store_bytes(dir: &Path) -> Tree {
    let mut tree = snapshot(dir);
    tree.retain(|path, _| !path.ends_with(b"-shm"));
    tree
}

#[test]
fn fsck_passes_a_sound_store_without_changing_it_and_names_a_corrupt_object() {
    let env = Env::new();
    let _d = env.start_daemon();
    let (proj, store) = project_with_history(&env);
    env.ctl_ok(&proj, &["sync"]);

    let before = store_bytes(&store);
    let text = env.ctl_ok(&proj, &["fsck"]);
    assert!(text.contains(": ok"), "{text}");
    let doc = env.ctl_json(&proj, &["fsck"]);
    assert_eq!(doc["ok"], true, "{doc}");
    assert_eq!(doc["problems"].as_array().unwrap().len(), 0, "{doc}");
    assert!(doc["project"].as_str().unwrap().ends_with("/app"), "{doc}");
    for field in [
        "blobs",
        "packs",
        "objects",
        "cache_rows",
        "turn_entries",
        "rewind_actions",
    ] {
        assert!(
            doc["checked"][field].as_u64().unwrap() > 0,
            "{field}: {doc}"
        );
    }
    assert_eq!(before, store_bytes(&store), "fsck changed the store");

    // Damage the object file of big.bin's content: one byte.
    let objects = object_files(&store);
    let (hash, path) = objects.iter().next().expect("big.bin is an object file");
    let mut bytes = std::fs::read(path).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x01;
    std::fs::write(path, &bytes).unwrap();

    let out = env.ctl(&proj, &["fsck"]);
    assert_eq!(out.code(), 1, "{out:?}");
    assert!(
        out.stdout.contains("corrupt_blob") && out.stdout.contains(hash.as_str()),
        "names the blob: {out:?}"
    );
    let out = env.ctl(&proj, &["fsck", "--json"]);
    assert_eq!(out.code(), 1, "{out:?}");
    let doc = out.json();
    assert_eq!(doc["ok"], false);
    let subject = format!("blob {hash}");
    assert!(
        doc["problems"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["kind"] == "corrupt_blob" && p["subject"] == subject.as_str()),
        "{doc}"
    );

    // Gone altogether: a missing object, named with its file.
    std::fs::remove_file(path).unwrap();
    let out = env.ctl(&proj, &["fsck", "--json"]);
    assert_eq!(out.code(), 1, "{out:?}");
    let doc = out.json();
    let missing = doc["problems"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["kind"] == "missing_object" && p["subject"] == subject.as_str())
        .unwrap_or_else(|| panic!("{doc}"))
        .clone();
    assert!(
        missing["detail"].as_str().unwrap().contains(&hash[2..]),
        "{missing}"
    );
    assert!(!path.exists(), "fsck repairs nothing");
}

#[test]
fn fsck_runs_while_the_daemon_captures() {
    let env = Env::new();
    let _d = env.start_daemon();
    let (proj, _store) = project_with_history(&env);
    env.ctl_ok(&proj, &["turn-start", "--label", "while checking"]);
    const FILES: usize = 1500;
    let writer = {
        let proj = proj.clone();
        std::thread::spawn(move || {
            for i in 0..FILES {
                let dir = proj.join(format!("gen/{}", i % 10));
                std::fs::create_dir_all(&dir).unwrap();
                let line = format!("line of file {i}\n");
                std::fs::write(dir.join(format!("f{i}.txt")), line.repeat(1 + i % 200)).unwrap();
            }
        })
    };
    let mut runs = 0;
    while !writer.is_finished() || runs < 3 {
        let doc = env.ctl_json(&proj, &["fsck"]);
        assert_eq!(doc["ok"], true, "{doc}");
        runs += 1;
    }
    writer.join().unwrap();
    eprintln!("{runs} fsck runs while {FILES} files were written");
    let ended = env.ctl_json(&proj, &["turn-end"]);
    assert!(
        ended["turn"]["entries"].as_array().unwrap().len() >= FILES,
        "the capture went on: {ended}"
    );
    let doc = env.ctl_json(&proj, &["fsck"]);
    assert_eq!(doc["ok"], true, "{doc}");
    assert!(
        doc["checked"]["turn_entries"].as_u64().unwrap() >= FILES as u64,
        "{doc}"
    );
}

/// Several agents in one folder each keep a turn open: that is the normal
/// state of sessions, not damage.
#[test]
fn fsck_passes_while_two_sessions_each_have_a_turn_open() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("app", &[("a.txt", b"a\n")]);
    env.ctl_ok(&proj, &["watch"]);
    env.ctl_ok(&proj, &["turn-start", "--session", "A"]);
    env.ctl_ok(&proj, &["turn-start", "--session", "B"]);
    sh(&proj, "echo both >> a.txt");
    let doc = env.ctl_json(&proj, &["fsck"]);
    assert_eq!(doc["ok"], true, "{doc}");
    assert_eq!(doc["problems"].as_array().unwrap().len(), 0, "{doc}");
    let open = env.ctl_json(&proj, &["log", "--json"])["turns"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["status"] == "open")
        .count();
    assert_eq!(open, 2, "both sessions' turns are open");
}

/// A damaged blob is named with the turns and paths that use it (and the
/// current file whose content it is), not by its hash alone.
#[test]
fn fsck_names_the_turns_and_paths_that_use_a_damaged_blob() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("app", &[("a.txt", b"a\n")]);
    std::fs::write(proj.join("big.bin"), noise(300 << 10, 3)).unwrap();
    env.ctl_ok(&proj, &["watch"]);
    let store = env
        .data
        .join("projects")
        .join(env.ctl_json(&proj, &["watch"])["id"].as_str().unwrap());
    env.ctl_ok(&proj, &["sync"]);
    let before_turn = object_files(&store);
    assert_eq!(before_turn.len(), 1, "big.bin's content: {before_turn:?}");
    // Written whole (renamed into place): read half-written on a loaded
    // machine, big.bin was captured twice more, and the turns' contents
    // went to a pack as deltas instead of to object files of their own.
    let write_whole = |seed| {
        let tmp = proj.with_extension("big.tmp");
        std::fs::write(&tmp, noise(300 << 10, seed)).unwrap();
        std::fs::rename(&tmp, proj.join("big.bin")).unwrap();
    };
    env.ctl_ok(&proj, &["turn-start"]);
    write_whole(4);
    env.ctl_ok(&proj, &["turn-end"]);
    env.ctl_ok(&proj, &["turn-start"]);
    write_whole(5);
    env.ctl_ok(&proj, &["turn-end"]);
    env.ctl_ok(&proj, &["sync"]);
    // The content turn 1 replaced, and the one turn 1 wrote (which turn 2
    // replaced).
    let original = before_turn.keys().next().unwrap().clone();
    let objects = object_files(&store);
    let middle: Vec<&String> = objects.keys().filter(|h| **h != original).collect();
    assert_eq!(middle.len(), 2, "{objects:?}");
    std::fs::remove_file(&objects[&original]).unwrap();

    let out = env.ctl(&proj, &["fsck"]);
    assert_eq!(out.code(), 1, "{out:?}");
    let line = out
        .stdout
        .lines()
        .find(|l| l.contains(&format!("blob {original}:")))
        .unwrap_or_else(|| panic!("{out:?}"));
    assert!(line.contains("used by turn 1 big.bin (before)"), "{line}");
    assert!(!line.contains("turn 2"), "{line}");

    // The current content: the cache names it.
    let doc = env.ctl_json(&proj, &["show", "2"]);
    let current = doc["turn"]["entries"][0]["post"]["hash"]
        .as_str()
        .unwrap_or_else(|| panic!("{doc}"))
        .to_string();
    std::fs::remove_file(&objects[&current]).unwrap();
    let out = env.ctl(&proj, &["fsck", "--json"]);
    let doc = out.json();
    let detail = doc["problems"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["subject"] == format!("blob {current}").as_str())
        .unwrap_or_else(|| panic!("{doc}"))["detail"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        detail.ends_with("used by turn 2 big.bin (after), the current big.bin"),
        "{detail}"
    );
}

/// A store missing a blob a rewind needs is damaged, not asked badly: the
/// reply's kind is `corrupt`, the message says to run fsck, and the
/// project's files are left as they were.
#[test]
fn a_rewind_that_needs_a_missing_blob_reports_a_damaged_store() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("app", &[("big.bin", &noise(300 << 10, 3))]);
    let id = env.ctl_json(&proj, &["watch"])["id"]
        .as_str()
        .expect("watch names the project's id")
        .to_string();
    let store = env.data.join("projects").join(id);
    env.ctl_ok(&proj, &["sync"]);
    let before_turn = object_files(&store);
    assert_eq!(before_turn.len(), 1, "big.bin is one object file");
    env.ctl_ok(&proj, &["turn-start"]);
    std::fs::write(proj.join("big.bin"), noise(300 << 10, 4)).unwrap();
    env.ctl_ok(&proj, &["turn-end"]);
    let after_turn = snapshot_work(&proj);
    let (_, pre_image) = before_turn.iter().next().unwrap();
    std::fs::remove_file(pre_image).unwrap();

    let out = env.ctl(&proj, &["--json", "rewind", "1"]);
    assert_eq!(out.code(), 1, "{out:?}");
    let doc = out.json();
    assert_eq!(doc["error"]["kind"], "corrupt", "{doc}");
    let out = env.ctl(&proj, &["rewind", "1"]);
    assert!(
        out.stderr.contains("store damaged: ") && out.stderr.contains("ckptctl fsck"),
        "{out:?}"
    );
    assert_same_tree("refused rewind", &after_turn, &snapshot_work(&proj));
}

/// A ledger row whose bucket is not one ckpt writes is a damaged store.
#[test]
fn a_ledger_row_that_does_not_decode_reports_a_damaged_store() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("app", &[("a.txt", b"a\n")]);
    let id = env.ctl_json(&proj, &["watch"])["id"]
        .as_str()
        .expect("watch names the project's id")
        .to_string();
    let store = env.data.join("projects").join(id);
    let add = [
        "ledger",
        "add",
        "a.txt",
        "--bucket",
        "naming-drift",
        "--severity",
        "low",
        "--confidence",
        "0.5",
        "--note",
        "n",
    ];
    env.ctl_ok(&proj, &add);
    let db = rusqlite::Connection::open(store.join("ckpt.db")).unwrap();
    db.execute("UPDATE ledger_entries SET bucket = 'no-such-bucket'", [])
        .unwrap();

    let out = env.ctl(&proj, &["--json", "ledger", "list"]);
    assert_eq!(out.code(), 1, "{out:?}");
    assert_eq!(out.json()["error"]["kind"], "corrupt", "{out:?}");
}
