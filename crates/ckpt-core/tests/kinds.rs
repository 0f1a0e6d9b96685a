//! File kinds and names: empty, binary, modes, symlinks (dangling too), odd
//! and non-UTF-8 names, files over the size cap, file ↔ directory changes.
//! All captured and restored byte-exactly, or skipped with a reason.

mod common;

use ckpt_core::{ContinuedTurn, Options, State};
use common::*;

const NON_UTF8: &[u8] = b"\xff\xfe";

#[test]
fn odd_kinds_and_names_rewind_and_redo_exactly() {
    let fx = Fx::new();
    let all_bytes: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
    fx.write("empty", "");
    fx.write("becomes-empty", "soon nothing\n");
    fx.write("binary.bin", &all_bytes);
    fx.write("run.sh", "#!/bin/sh\necho run\n");
    fx.chmod("run.sh", 0o755);
    fx.write("plain.txt", "mode only\n");
    fx.write("private.key", "secret\n");
    fx.chmod("private.key", 0o600);
    fx.symlink("binary.bin", "link");
    fx.symlink("does/not/exist", "dangling");
    fx.symlink("../../outside/of/root", "dangling-up");
    fx.write("résumé ü 日本.txt", "unicode\n");
    fx.write("with space.txt", "spaces\n");
    fx.write("-rf", "leading dash\n");
    fx.write("new\nline", "newline in name\n");
    fx.write(NON_UTF8, "not utf-8\n");
    fx.write(
        [b"dir-\xc3\x28/".as_slice(), NON_UTF8].concat(),
        "non-UTF-8 dir and file\n",
    );
    fx.write("x", "x is a file\n");
    fx.write("y/a", "y/a\n");
    fx.write("y/b/c", "y/b/c\n");
    fx.write("l2f", "target of a link that becomes a file\n");
    fx.write("d2l/inner.txt", "a directory that becomes a symlink\n");
    fx.symlink("y", "l2d");
    fx.mkdir("emptydir");
    fx.mkdir("locked-dir");
    fx.chmod("locked-dir", 0o700);

    let mut p = fx.open();
    sync(&mut p);
    let before = fx.tree();
    let t = start(&mut p, "odd");

    fx.write("empty", "now something\n");
    fx.write("becomes-empty", "");
    let mut bin2 = all_bytes.clone();
    bin2[500] ^= 0xff;
    bin2.extend_from_slice(&[0, 0, 0]);
    fx.write("binary.bin", &bin2);
    fx.write("run.sh", "#!/bin/sh\necho changed\n");
    fx.chmod("run.sh", 0o644);
    fx.chmod("plain.txt", 0o755);
    fx.chmod("locked-dir", 0o755);
    fx.rm("link");
    fx.symlink("run.sh", "link");
    fx.rm("dangling");
    fx.symlink("also/dangling", "new-dangling");
    fx.write("résumé ü 日本.txt", "unicode, edited\n");
    fx.rm("with space.txt");
    fx.write("-rf", "leading dash, edited\n");
    fx.write("new\nline", "newline in name, edited\n");
    fx.write(NON_UTF8, "not utf-8, edited\n");
    fx.write(b"\x80new\xff", "new non-UTF-8 name\n");
    fx.rm_rf(b"dir-\xc3\x28");
    fx.rm_rf("emptydir");
    // file -> directory, directory -> file, symlink -> file, file -> symlink
    fx.rm("x");
    fx.write("x/1", "x/1\n");
    fx.write("x/sub/2", "x/sub/2\n");
    fx.rm_rf("y");
    fx.write("y", "y is a file now\n");
    fx.rm("dangling-up");
    fx.write("dangling-up", "a file where a link was\n");
    fx.rm("l2f");
    fx.symlink("x/1", "l2f");
    // directory -> symlink (to a directory), symlink -> directory
    fx.rm_rf("d2l");
    fx.symlink("x", "d2l");
    fx.rm("l2d");
    fx.write("l2d/file", "a symlink that became a directory\n");
    end(&mut p);
    let after = fx.tree();

    // Every change above is an entry of the turn.
    let paths = entry_paths(&p, t);
    for want in [
        &b"empty"[..],
        b"becomes-empty",
        b"binary.bin",
        b"run.sh",
        b"plain.txt",
        b"locked-dir",
        b"link",
        b"dangling",
        b"new-dangling",
        "résumé ü 日本.txt".as_bytes(),
        b"with space.txt",
        b"-rf",
        b"new\nline",
        NON_UTF8,
        b"\x80new\xff",
        b"dir-\xc3\x28",
        b"dir-\xc3\x28/\xff\xfe",
        b"emptydir",
        b"x",
        b"x/1",
        b"x/sub",
        b"x/sub/2",
        b"y",
        b"y/a",
        b"y/b",
        b"y/b/c",
        b"dangling-up",
        b"l2f",
        b"d2l",
        b"d2l/inner.txt",
        b"l2d",
        b"l2d/file",
    ] {
        assert!(
            paths.contains(want),
            "turn misses {}; has {:?}",
            show_path(want),
            paths.iter().map(|p| show_path(p)).collect::<Vec<_>>()
        );
    }

    let plan = rewind(&mut p, t);
    assert!(plan.skipped.is_empty(), "{:?}", plan.skipped);
    assert_tree(&before, &fx.tree(), "after rewind");
    redo(&mut p);
    assert_tree(&after, &fx.tree(), "after redo");
    rewind(&mut p, t);
    assert_tree(&before, &fx.tree(), "after a second rewind");
}

#[test]
fn files_over_the_size_cap_are_skipped_with_a_reason_and_never_clobbered() {
    let fx = Fx::with_opts(Options {
        max_file_size: 4096,
        ..test_opts()
    });
    let mut rng = Rng::new(9);
    fx.write("big.bin", rng.bytes(8192));
    fx.write("big-deleted.bin", rng.bytes(6000));
    fx.write("small.txt", "small\n");
    let mut p = fx.open();
    let report = p.reconcile().expect("baseline");
    let skipped: Vec<String> = report.skipped.iter().map(|s| s.path.display()).collect();
    assert!(
        skipped.contains(&"big.bin".to_string())
            && skipped.contains(&"big-deleted.bin".to_string()),
        "baseline reports the files over the cap: {:?}",
        report.skipped
    );
    assert!(report.skipped.iter().all(|s| !s.reason.is_empty()));
    assert!(p.status().expect("status").skipped >= 2);

    let before = fx.tree();
    let t = start(&mut p, "big");
    let agent_big = rng.bytes(9000);
    fx.write("big.bin", &agent_big);
    fx.rm("big-deleted.bin");
    fx.write("small.txt", "small, edited\n");
    end(&mut p);
    let after = fx.tree();

    let detail = p.show(t).expect("show");
    for name in ["big.bin", "big-deleted.bin"] {
        let e = detail
            .entries
            .iter()
            .find(|e| e.path == rp(name))
            .unwrap_or_else(|| panic!("the turn does not mention {name}: {:#?}", detail.entries));
        match &e.pre {
            State::Skipped { reason } => assert!(!reason.is_empty(), "{name}: empty reason"),
            other => panic!("{name}: pre-image {other:?}, expected skipped"),
        }
    }
    assert!(detail.info.counts.skipped >= 1, "{:?}", detail.info.counts);

    let plan = rewind(&mut p, t);
    let skipped: Vec<String> = plan.skipped.iter().map(|s| s.path.display()).collect();
    assert!(
        skipped.contains(&"big.bin".to_string())
            && skipped.contains(&"big-deleted.bin".to_string()),
        "the rewind reports what it cannot restore: {:?}",
        plan.skipped
    );
    assert!(plan.skipped.iter().all(|s| !s.reason.is_empty()));
    assert_eq!(fx.read("big.bin"), agent_big, "big.bin was clobbered");
    assert!(
        !fx.abs("big-deleted.bin").exists(),
        "big-deleted.bin cannot come back"
    );
    let mut want = before.clone();
    want.insert(b"big.bin".to_vec(), after[b"big.bin".as_slice()].clone());
    want.remove(b"big-deleted.bin".as_slice());
    assert_tree(&want, &fx.tree(), "after rewind");

    redo(&mut p);
    assert_tree(&after, &fx.tree(), "after redo");
}

#[test]
fn a_fifo_is_skipped_with_a_reason_and_never_blocks_capture() {
    use std::os::unix::ffi::OsStrExt;
    let fx = Fx::new();
    fx.write("pipe", "a file that becomes a fifo\n");
    let mut p = fx.open();
    sync(&mut p);
    let t = start(&mut p, "fifo");
    fx.rm("pipe");
    let path = std::ffi::CString::new(fx.abs("pipe").as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o644) }, 0, "mkfifo");
    let new = std::ffi::CString::new(fx.abs("new-pipe").as_os_str().as_bytes()).unwrap();
    // SAFETY: as above.
    assert_eq!(unsafe { libc::mkfifo(new.as_ptr(), 0o644) }, 0, "mkfifo");
    fx.write("plain.txt", "plain\n");
    // Capturing must not open the fifos for reading (that would block).
    let detail = end(&mut p);
    for name in ["pipe", "new-pipe"] {
        let e = detail
            .entries
            .iter()
            .find(|e| e.path == rp(name))
            .unwrap_or_else(|| panic!("{name} not in the turn: {:#?}", detail.entries));
        assert!(
            matches!(&e.post, Some(State::Skipped { reason }) if !reason.is_empty()),
            "{name}: post-image {:?}",
            e.post
        );
    }
    let plan = rewind(&mut p, t);
    assert!(!fx.abs("plain.txt").exists(), "the rest is rewound");
    let skipped: Vec<String> = plan.skipped.iter().map(|s| s.path.display()).collect();
    for name in ["pipe", "new-pipe"] {
        assert!(
            skipped.contains(&name.to_string()),
            "{name}: uncaptured current content is left alone and reported: {:?}",
            plan.skipped
        );
    }
    let ft = std::fs::symlink_metadata(fx.abs("pipe"))
        .unwrap()
        .file_type();
    use std::os::unix::fs::FileTypeExt;
    assert!(ft.is_fifo(), "the fifo was left alone");
    redo(&mut p);
    assert_eq!(fx.read("plain.txt"), b"plain\n");
}

/// The agent rewinds its own open turn: undone, then ended and continued
/// by a new turn (same label), which records what follows; a redo ends and
/// continues that one in turn.
#[test]
fn rewinding_an_open_turn_undoes_it_and_continues_it_in_a_new_turn() {
    let fx = Fx::new();
    fx.write("a.txt", "a0\n");
    let mut p = fx.open();
    sync(&mut p);
    let before = fx.tree();
    let t = start(&mut p, "open");
    fx.write("a.txt", "a1\n");
    fx.write("b.txt", "b1\n");
    let after = fx.tree();
    // No turn_end: the daemon's barrier, then rewind.
    let plan = rewind(&mut p, t);
    assert_eq!(plan.actions.len(), 2, "{plan:#?}");
    assert_tree(&before, &fx.tree(), "rewind of an open turn");
    let next = p.open_turn().unwrap().expect("a turn continues it");
    let continued = |ended, opened| ContinuedTurn {
        ended,
        session: None,
        opened: Some(opened),
    };
    assert_eq!(plan.continued, [continued(t, next)]);
    assert_eq!(p.turn_meta(next).unwrap().label.as_deref(), Some("open"));
    let plan = redo(&mut p);
    assert_tree(&after, &fx.tree(), "redo");
    let last = p.open_turn().unwrap().expect("a turn continues it");
    assert_eq!(plan.continued, [continued(next, last)]);
    fx.write("c.txt", "c\n");
    let ended = end(&mut p);
    assert_eq!(ended.info.id, last);
    let paths: Vec<String> = ended.entries.iter().map(|e| e.path.to_string()).collect();
    assert_eq!(paths, ["c.txt"]);
}
