//! A rewind of many files (blobs read on other threads, files synced from
//! several threads while later ones are written, each renamed into place
//! once written): every file comes back, no temp file stays behind, and an
//! interruption anywhere recovers to exactly one side.

mod common;

use ckpt_core::{Error, RewindOptions, State};
use common::*;

/// Enough files to fill the read-ahead and sync queues, in nested
/// directories.
const FILES: usize = 700;

fn name(i: usize) -> String {
    format!("d{}/e{}/f{i}.txt", i % 7, i % 3)
}

/// A turn that appends to half of the files and deletes the other half
/// (the rewind writes both back through temp names), and creates a
/// directory with a file.
fn setup() -> Turned {
    let fx = Fx::new();
    for i in 0..FILES {
        fx.write(name(i), format!("file {i}\n"));
    }
    turned(fx, |fx| {
        for i in 0..FILES {
            if i % 2 == 0 {
                fx.append(name(i), "// reformatted\n");
            } else {
                fx.rm(name(i));
            }
        }
        fx.write("newdir/sub/n.txt", "new\n");
    })
}

#[test]
fn rewind_of_many_files_restores_every_one() {
    let Turned {
        fx,
        mut p,
        turn,
        target,
        orig,
    } = setup();
    let opts = RewindOptions {
        after_barrier: true,
        ..Default::default()
    };
    let plan = applied(p.rewind(turn, opts).expect("rewind"));
    assert!(plan.actions.len() > FILES, "{} actions", plan.actions.len());
    // The tree holds no temp file either: it would differ from the target.
    assert_tree(&target, &fx.tree(), "rewind");
    // What the rewind wrote is what the cache says: nothing changed.
    let report = p.reconcile().expect("reconcile");
    assert_eq!(report.changed, 0, "the rewind left the cache stale");
    redo(&mut p);
    assert_tree(&orig, &fx.tree(), "redo");
}

#[test]
fn interrupted_large_rewind_recovers_to_exactly_one_side() {
    // One operation per action, then one per rename of a written file.
    let total = {
        // `fx` holds the tree: keep it.
        let Turned {
            fx: _fx,
            mut p,
            turn,
            ..
        } = setup();
        let plan = planned(&mut p, turn);
        let files = plan
            .actions
            .iter()
            .filter(|a| matches!(a.target, State::File { .. }))
            .count();
        let recreated = plan
            .actions
            .iter()
            .filter(|a| a.current.is_absent() && !a.target.is_absent())
            .count();
        assert!(recreated > 300, "{recreated} files to recreate");
        assert!(files >= FILES, "{files} files to write");
        plan.actions.len() + files
    };
    for k in [0, total / 4, total / 2, 3 * total / 4, total - 1] {
        let Turned {
            fx,
            mut p,
            turn,
            target,
            orig,
        } = setup();
        match p.rewind(turn, fail_at(k)) {
            Err(Error::Injected(i)) => assert_eq!(i, k),
            Ok(_) => panic!("the rewind finished before operation {k} of {total}"),
            Err(e) => panic!("op {k}: unexpected error {e}"),
        }
        drop(p);
        let mut p = fx.open();
        p.recover().expect("recover").expect("a pending rewind");
        let tree = fx.tree();
        assert!(
            tree == target || tree == orig,
            "op {k}: after recovery the tree {}",
            describe_sides(&tree, &target, &orig)
        );
    }
}
