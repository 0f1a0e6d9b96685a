//! A rewind swaps each replaced file out (an atomic exchange) and, when no
//! one can notice, rewrites that old file with a later file's content
//! instead of freeing it and creating a new one. "No one can notice" is
//! what these tests hold it to: a process that has the old file open keeps
//! its content, another hard link keeps its content, extended attributes
//! do not travel to another path, and modes are the target's.
#![cfg(target_os = "linux")]

mod common;

use std::io::{Read, Seek};
use std::os::unix::fs::MetadataExt;

use common::*;

/// `a.txt` and `b.txt` both changed by one turn, and the inode `a.txt` has
/// after it (the first file the rewind replaces).
fn two_changed_files() -> (Turned, u64) {
    let fx = Fx::new();
    fx.write("a.txt", "a before\n");
    fx.write("b.txt", "b before\n");
    fx.chmod("b.txt", 0o755);
    let t = turned(fx, |fx| {
        fx.write("a.txt", "a after\n");
        fx.write("b.txt", "b after\n");
        fx.chmod("b.txt", 0o644);
    });
    let a_inode = ino(&t.fx, "a.txt");
    (t, a_inode)
}

fn ino(fx: &Fx, rel: &str) -> u64 {
    std::fs::symlink_metadata(fx.abs(rel)).unwrap().ino()
}

#[test]
fn a_replaced_file_is_reused_for_the_next_one() {
    let (mut t, a_after) = two_changed_files();
    rewind(&mut t.p, t.turn);
    assert_tree(&t.target, &t.fx.tree(), "rewind");
    // Proof that the reuse happens (so the tests below exercise it): the
    // file `b.txt` now holds is the one `a.txt` held after the turn.
    assert_eq!(
        ino(&t.fx, "b.txt"),
        a_after,
        "a.txt's old file was not reused"
    );
    let mode = std::fs::metadata(t.fx.abs("b.txt")).unwrap().mode() & 0o7777;
    assert_eq!(mode, 0o755, "the reused file has the target's mode");
}

#[test]
fn a_file_someone_has_open_is_not_reused() {
    let (mut t, a_after) = two_changed_files();
    let mut held = std::fs::File::open(t.fx.abs("a.txt")).unwrap();
    rewind(&mut t.p, t.turn);
    assert_tree(&t.target, &t.fx.tree(), "rewind");
    assert_ne!(ino(&t.fx, "b.txt"), a_after);
    let mut seen = String::new();
    held.rewind().unwrap();
    held.read_to_string(&mut seen).unwrap();
    assert_eq!(seen, "a after\n", "an open file changed under its reader");
}

#[test]
fn a_file_with_another_link_is_not_reused() {
    let (mut t, a_after) = two_changed_files();
    let outside = t.fx.tmp.path().join("outside").join("link-to-a");
    std::fs::hard_link(t.fx.abs("a.txt"), &outside).unwrap();
    rewind(&mut t.p, t.turn);
    assert_tree(&t.target, &t.fx.tree(), "rewind");
    assert_ne!(ino(&t.fx, "b.txt"), a_after);
    assert_eq!(std::fs::read(&outside).unwrap(), b"a after\n");
}

#[test]
fn extended_attributes_do_not_move_to_another_path() {
    let (mut t, _) = two_changed_files();
    let set = rustix::fs::setxattr(
        t.fx.abs("a.txt").as_path(),
        "user.ckpt-test",
        b"label of a",
        rustix::fs::XattrFlags::empty(),
    );
    if set.is_err() {
        eprintln!("skipped: this filesystem has no user xattrs ({set:?})");
        return;
    }
    rewind(&mut t.p, t.turn);
    assert_tree(&t.target, &t.fx.tree(), "rewind");
    let mut names = [0u8; 256];
    let n = rustix::fs::listxattr(t.fx.abs("b.txt").as_path(), &mut names[..]).unwrap();
    assert!(
        !names[..n].windows(4).any(|w| w == b"ckpt"),
        "a.txt's attribute moved to b.txt: {:?}",
        names[..n].escape_ascii().to_string()
    );
}

#[test]
fn larger_and_smaller_contents_reuse_files_byte_exactly() {
    let fx = Fx::new();
    // Sizes across block boundaries, so reused files grow and shrink.
    let sizes = [0usize, 1, 4095, 4096, 4097, 70_000, 3, 9000, 20, 150_000];
    for (i, n) in sizes.iter().enumerate() {
        fx.write(format!("f{i:02}"), vec![b'a' + i as u8; *n]);
    }
    let mut t = turned(fx, |fx| {
        for (i, n) in sizes.iter().rev().enumerate() {
            fx.write(format!("f{i:02}"), vec![b'A' + i as u8; *n + 1]);
        }
    });
    rewind(&mut t.p, t.turn);
    assert_tree(&t.target, &t.fx.tree(), "rewind");
    redo(&mut t.p);
    assert_tree(&t.orig, &t.fx.tree(), "redo");
}

/// A file system mounted inside the project: a spare from one device is
/// never used for a file on another (an exchange across them fails).
#[test]
fn a_spare_stays_on_its_own_file_system() {
    let fx = Fx::new();
    fx.mkdir("mnt");
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "ckpt-test", fx.abs("mnt").to_str().unwrap()])
        .status();
    if !mounted.as_ref().is_ok_and(|s| s.success()) {
        eprintln!("skipped: cannot mount a tmpfs here ({mounted:?})");
        return;
    }
    struct Unmount(std::path::PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(&self.0).status();
        }
    }
    let unmount = Unmount(fx.abs("mnt"));
    fx.write("a.txt", "a before\n");
    fx.write("mnt/b.txt", "b before\n");
    let mut t = turned(fx, |fx| {
        fx.write("a.txt", "a after\n");
        fx.write("mnt/b.txt", "b after\n");
    });
    rewind(&mut t.p, t.turn);
    assert_tree(&t.target, &t.fx.tree(), "rewind");
    // Unmounted before the fixture's directory is removed.
    drop(unmount);
}
