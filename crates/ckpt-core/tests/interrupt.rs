//! A rewind (or redo) that dies after k of its n filesystem operations is
//! finished or rolled back by `recover()` on the next open: the tree is then
//! exactly the target or exactly the original, never a mix, and the project
//! keeps working.

mod common;

use ckpt_core::{Error, TurnStatus};
use common::*;

/// A turn with every kind of action: modify, delete, create (nested), remove
/// a directory tree, chmod, retarget a symlink, file → directory and back.
fn setup() -> Turned {
    let fx = Fx::new();
    fx.write("f1.txt", "one\n");
    fx.write("f2.txt", "two two two\n");
    fx.write("f3.txt", "three\n");
    fx.write("f4", "a file that becomes a directory\n");
    fx.write("olddir/a", "old a\n");
    fx.write("olddir/deep/b", "old b\n");
    fx.write("run.sh", "#!/bin/sh\necho hi\n");
    fx.chmod("run.sh", 0o755);
    fx.write("dir2file/x", "x\n");
    fx.symlink("f1.txt", "link");
    turned(fx, |fx| {
        fx.write("f1.txt", "one, rewritten by the agent\n");
        fx.write("f2.txt", "2\n");
        fx.rm("f3.txt");
        fx.write("new1.txt", "new\n");
        fx.write("newdir/sub/x", "nested new\n");
        fx.rm_rf("olddir");
        fx.chmod("run.sh", 0o644);
        fx.rm("link");
        fx.symlink("f2.txt", "link");
        fx.rm("f4");
        fx.write("f4/inner", "now a directory\n");
        fx.rm_rf("dir2file");
        fx.write("dir2file", "now a file\n");
    })
}

fn planned_actions() -> usize {
    let Turned { mut p, turn, .. } = setup();
    planned(&mut p, turn).actions.len()
}

#[test]
fn interrupted_rewind_is_recovered_to_exactly_one_side() {
    let n = planned_actions();
    assert!(n >= 10, "the setup plans {n} actions");
    let mut k = 0;
    let (mut forward, mut back) = (0, 0);
    loop {
        let Turned {
            fx,
            mut p,
            turn,
            target,
            orig,
        } = setup();
        match p.rewind(turn, fail_at(k)) {
            Ok(out) => {
                applied(out);
                assert_tree(&target, &fx.tree(), "uninterrupted rewind");
                assert!(
                    k >= n,
                    "the rewind finished after only {k} operations for {n} actions"
                );
                break;
            }
            Err(Error::Injected(i)) => assert_eq!(i, k),
            Err(e) => panic!("rewind failing at op {k}: unexpected error {e}"),
        }
        // The process "died": a fresh open, then start-up recovery.
        drop(p);
        let mut p = fx.open();
        let report = p
            .recover()
            .unwrap_or_else(|e| panic!("recover after op {k}: {e}"))
            .unwrap_or_else(|| panic!("recover after op {k} found nothing to recover"));
        assert!(!report.redo);
        assert!(
            p.recover().expect("second recover").is_none(),
            "recovery is done once"
        );
        let tree = fx.tree();
        if tree == target {
            forward += 1;
            assert_eq!(
                statuses(&p)[&turn],
                TurnStatus::Rewound,
                "op {k}: finished rewind marks the turn"
            );
            redo(&mut p);
            assert_tree(
                &orig,
                &fx.tree(),
                &format!("op {k}: redo after a finished recovery"),
            );
        } else if tree == orig {
            back += 1;
            assert_eq!(
                statuses(&p)[&turn],
                TurnStatus::Closed,
                "op {k}: rolled-back rewind"
            );
            rewind(&mut p, turn);
            assert_tree(
                &target,
                &fx.tree(),
                &format!("op {k}: rewind after a rollback"),
            );
            redo(&mut p);
            assert_tree(&orig, &fx.tree(), &format!("op {k}: redo after a rollback"));
        } else {
            panic!(
                "after failing at op {k} and recovering, the tree {}",
                describe_sides(&tree, &target, &orig)
            );
        }
        k += 1;
        assert!(k <= 20 * n, "the rewind never finished");
    }
    eprintln!("{n} actions, {k} operations; recovery went forward {forward}×, back {back}×");
}

#[test]
fn interrupted_redo_is_recovered_to_exactly_one_side() {
    let n = planned_actions();
    let mut k = 0;
    loop {
        let Turned {
            fx,
            mut p,
            turn,
            target,
            orig,
        } = setup();
        rewind(&mut p, turn);
        assert_tree(&target, &fx.tree(), "rewind");
        sync(&mut p);
        match p.redo(fail_at(k)) {
            Ok(out) => {
                applied(out);
                assert_tree(&orig, &fx.tree(), "uninterrupted redo");
                assert!(
                    k >= n,
                    "the redo finished after only {k} operations for {n} actions"
                );
                break;
            }
            Err(Error::Injected(i)) => assert_eq!(i, k),
            Err(e) => panic!("redo failing at op {k}: unexpected error {e}"),
        }
        drop(p);
        let mut p = fx.open();
        let report = p
            .recover()
            .unwrap_or_else(|e| panic!("recover after redo op {k}: {e}"))
            .unwrap_or_else(|| panic!("recover after redo op {k} found nothing to recover"));
        assert!(report.redo);
        let tree = fx.tree();
        if tree == orig {
            assert_eq!(
                statuses(&p)[&turn],
                TurnStatus::Closed,
                "redo op {k}: finished redo"
            );
            rewind(&mut p, turn);
            assert_tree(
                &target,
                &fx.tree(),
                &format!("redo op {k}: rewind after a finished redo"),
            );
        } else if tree == target {
            assert_eq!(
                statuses(&p)[&turn],
                TurnStatus::Rewound,
                "redo op {k}: rolled-back redo"
            );
            redo(&mut p);
            assert_tree(
                &orig,
                &fx.tree(),
                &format!("redo op {k}: redo after a rollback"),
            );
        } else {
            panic!(
                "after failing redo at op {k} and recovering, the tree {}",
                describe_sides(&tree, &orig, &target)
            );
        }
        k += 1;
        assert!(k <= 20 * n, "the redo never finished");
    }
}

#[test]
fn recover_with_nothing_pending_does_nothing() {
    let Turned {
        fx, mut p, orig, ..
    } = setup();
    assert!(p.recover().expect("recover").is_none());
    assert_tree(&orig, &fx.tree(), "recover without a journal");
}

/// A process killed inside a write leaves its temp file (written, not yet
/// renamed into place) next to the file it was restoring. Recovery must not
/// leave such half-written files in the project: ckpt never captures them
/// (they are its own), so nothing else would ever remove them.
#[test]
fn recovery_removes_temp_files_a_crashed_write_left_behind() {
    let Turned {
        fx,
        mut p,
        turn,
        target,
        orig,
    } = setup();
    match p.rewind(turn, fail_at(3)) {
        Err(Error::Injected(3)) => {}
        other => panic!("expected the injected failure, got {other:?}"),
    }
    drop(p);
    // What a write killed between creating its temp file and renaming it
    // leaves behind (the name the core's writer uses, a dead process's id).
    let leftovers = [
        format!("{}4194304-0", ckpt_core::TEMP_PREFIX),
        format!("newdir/sub/{}4194304-1", ckpt_core::TEMP_PREFIX),
    ];
    for l in &leftovers {
        if fx.abs(l).parent().unwrap().is_dir() {
            fx.write(l, "half of a restored fi");
        }
    }
    let mut p = fx.open();
    p.recover().expect("recover").expect("a pending rewind");
    let tree = fx.tree();
    assert!(
        tree == target || tree == orig,
        "after recovery the tree {}",
        describe_sides(&tree, &target, &orig)
    );
}
