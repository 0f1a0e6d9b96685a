//! A rewind replaces a file (temp file, then an exchange or rename); it
//! never writes through one, nor reuses a replaced file that has another
//! link: that link may be outside the project, and writing through it
//! would change a file there.

mod common;

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
