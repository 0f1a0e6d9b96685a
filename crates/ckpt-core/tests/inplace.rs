//! A rewind rewrites a file the agent modified in place (same inode), but
//! never a file with more than one link: the other name may be outside the
//! project, and writing through it would change a file there.

mod common;

use std::os::unix::fs::MetadataExt;

use common::*;

#[test]
fn modified_file_is_rewritten_in_place() {
    let fx = Fx::new();
    fx.write("src/a.rs", "fn a() {}\n");
    let mut p = fx.open();
    sync(&mut p);
    let target = fx.tree();
    let turn = start(&mut p, "agent");
    fx.append("src/a.rs", "// reformatted\n");
    end(&mut p);
    let ino = std::fs::metadata(fx.abs("src/a.rs")).unwrap().ino();
    rewind(&mut p, turn);
    assert_tree(&target, &fx.tree(), "rewind");
    assert_eq!(
        std::fs::metadata(fx.abs("src/a.rs")).unwrap().ino(),
        ino,
        "the file was replaced, not rewritten"
    );
}

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
