//! A rewind replaces a file (temp file, then an exchange or rename); it
//! never writes through one, nor reuses a replaced file that has another
//! link: that link may be outside the project, and writing through it
//! would change a file there.

mod common;

use ckpt_core::TurnMeta;
use common::*;

#[test]
fn hard_linked_file_is_replaced_and_the_other_link_left_alone() {
    let fx = Fx::new();
    fx.write("a.txt", "one\n");
    let mut p = fx.open();
    sync(&mut p);
    let target = fx.tree();
    let turn = start(&mut p, "agent");
    fx.write("a.txt", "two\n");
    // Another name for the same file, outside the project.
    let outside = fx.tmp.path().join("outside").join("link-to-a");
    std::fs::create_dir_all(outside.parent().unwrap()).unwrap();
    std::fs::hard_link(fx.abs("a.txt"), &outside).unwrap();
    end(&mut p);
    let world = fx.outside_world();
    rewind(&mut p, turn);
    assert_tree(&target, &fx.tree(), "rewind");
    assert_eq!(std::fs::read(&outside).unwrap(), b"two\n");
    assert_eq!(
        fx.outside_world(),
        world,
        "the rewind wrote outside the project"
    );
}

fn append(fx: &Fx, path: &str, text: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(fx.abs(path))
        .unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

/// Paths a turn recorded.
fn recorded(d: &ckpt_core::TurnDetail) -> Vec<String> {
    d.entries.iter().map(|e| e.path.to_string()).collect()
}

/// A write through one of two names inside the project changes both; the
/// event names only the one written to (as inotify does), and the turn
/// must record both, so the rewind restores both.
#[test]
fn a_write_through_one_link_is_recorded_under_every_name_in_the_project() {
    let fx = Fx::new();
    fx.write("a", "one\n");
    std::fs::hard_link(fx.abs("a"), fx.abs("b")).unwrap();
    let mut p = fx.open();
    sync(&mut p);
    let target = fx.tree();
    let turn = start(&mut p, "agent");
    append(&fx, "a", "two\n");
    p.check_paths([rp("a")]).unwrap();
    let ended = p.turn_end().unwrap();
    assert_eq!(recorded(&ended), ["a", "b"]);
    rewind(&mut p, turn);
    assert_tree(&target, &fx.tree(), "rewind");
}

/// Links made while the project is watched: `ln` reports the new name
/// only, and the old name's row still says one link; a later write
/// through either name (the new one in a new directory too) is recorded
/// under all of them. No full scan runs in between (it would see every
/// name's changed ctime by itself).
#[test]
fn links_made_while_watched_are_followed_whichever_name_is_written() {
    let fx = Fx::new();
    fx.write("a", "one\n");
    let mut p = fx.open();
    sync(&mut p);
    std::fs::hard_link(fx.abs("a"), fx.abs("b")).unwrap();
    p.check_paths([rp("b")]).unwrap();
    std::fs::create_dir(fx.abs("d")).unwrap();
    std::fs::hard_link(fx.abs("a"), fx.abs("d/c")).unwrap();
    p.check_paths([rp("d")]).unwrap();
    let target = fx.tree();
    let meta = || TurnMeta {
        label: Some("agent".into()),
        ..TurnMeta::default()
    };
    let turn = p.turn_start(meta()).unwrap();
    append(&fx, "d/c", "two\n");
    p.check_paths([rp("d/c")]).unwrap();
    let ended = p.turn_end().unwrap();
    assert_eq!(recorded(&ended), ["a", "b", "d/c"]);
    rewind(&mut p, turn);
    assert_tree(&target, &fx.tree(), "rewind");
    // The rewind wrote each name as a file of its own.
    p.turn_start(meta()).unwrap();
    append(&fx, "b", "three\n");
    p.check_paths([rp("b")]).unwrap();
    assert_eq!(recorded(&p.turn_end().unwrap()), ["b"]);
    assert_eq!(fx.read("a"), b"one\n");
}
