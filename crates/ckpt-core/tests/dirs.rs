//! Directories and what lives in them: a rewind that removes a directory a
//! turn created must never take anything with it that no rewound turn
//! created (the user's files, excluded content, a nested `.git`).

mod common;

use ckpt_core::{RewindOptions, RewindOutcome};
use common::*;

#[test]
fn a_users_file_inside_an_agent_created_directory_survives_the_rewind() {
    let fx = Fx::new();
    fx.write("keep.txt", "keep\n");
    let mut p = fx.open();
    sync(&mut p);
    let t = start(&mut p, "agent");
    fx.write("gen/a.txt", "generated\n");
    fx.write("gen/sub/b.txt", "generated too\n");
    end(&mut p);
    // The user, after the turn, puts their own file in the new directory.
    fx.write("gen/mine.txt", "the user's own\n");
    let tree = fx.tree();

    sync(&mut p);
    let plan = refused(p.rewind(t, RewindOptions::default()).expect("rewind"));
    assert!(
        plan.conflicts.iter().any(|c| c.path == rp("gen/mine.txt")),
        "the user's file is named as the conflict: {:?}",
        plan.conflicts
    );
    assert_tree(&tree, &fx.tree(), "a refused rewind changes nothing");

    let plan = rewind_forced(&mut p, t);
    assert_eq!(
        fx.read("gen/mine.txt"),
        b"the user's own\n",
        "forced rewind deleted a file no turn created"
    );
    assert!(
        !plan.skipped.is_empty(),
        "what was left alone is reported: {plan:#?}"
    );
    redo(&mut p);
    assert_tree(&tree, &fx.tree(), "redo");
}

/// The agent scaffolds a package and installs its dependencies: the new
/// directory holds excluded content ckpt never captured.
#[test]
fn rewinding_a_new_directory_with_excluded_content_inside() {
    let fx = Fx::new();
    fx.write("README.md", "readme\n");
    let mut p = fx.open();
    sync(&mut p);
    let before = fx.tree();
    let t = start(&mut p, "scaffold");
    fx.write("app/package.json", "{}\n");
    fx.write("app/src/index.js", "export {}\n");
    fx.write("app/node_modules/dep/index.js", "module.exports = 1\n");
    end(&mut p);
    let after = fx.tree();

    sync(&mut p);
    let res = p.rewind(t, RewindOptions::default());
    if res.is_err() {
        assert_tree(&after, &fx.tree(), "a failed rewind is rolled back");
    }
    let plan = match res {
        Ok(RewindOutcome::Applied { plan, .. }) => plan,
        other => panic!("rewinding a scaffold with node_modules inside: {other:#?}"),
    };
    assert!(!fx.abs("app/package.json").exists());
    assert!(!fx.abs("app/src").exists());
    // Either the whole directory is gone (it did not exist before the turn),
    // or it stays for its excluded content and the rewind says so.
    if fx.abs("app").exists() {
        assert!(
            plan.skipped.iter().any(|s| s.path == rp("app")),
            "app/ left behind silently: {plan:#?}"
        );
    } else {
        assert_tree(&before, &fx.tree(), "after rewind");
    }
    redo(&mut p);
    let now = fx.tree();
    for k in [&b"app/package.json"[..], b"app/src/index.js"] {
        assert_eq!(now.get(k), after.get(k), "redo of {}", show_path(k));
    }
}

/// The agent runs `git init` in a new directory: its `.git` must never be
/// touched, and the rest of the rewind must still happen.
#[test]
fn rewinding_a_new_directory_with_a_nested_git_repository() {
    let fx = Fx::new();
    fx.write("README.md", "readme\n");
    let mut p = fx.open();
    sync(&mut p);
    let t = start(&mut p, "vendor");
    fx.write("vendor/lib/lib.rs", "pub fn f() {}\n");
    git(&fx.abs("vendor/lib"), &["init", "-q"]);
    fx.write("other.txt", "other\n");
    end(&mut p);
    let after = fx.tree();
    let nested_git = snapshot_all(&fx.abs("vendor/lib/.git"));

    sync(&mut p);
    let res = p.rewind(t, RewindOptions::default());
    eprintln!(
        "rewind with a nested .git: {:?}",
        res.as_ref().map(|o| match o {
            RewindOutcome::Applied { plan, .. } => format!("applied, skipped {:?}", plan.skipped),
            other => format!("{other:?}"),
        })
    );
    assert_tree(
        &nested_git,
        &snapshot_all(&fx.abs("vendor/lib/.git")),
        "nested .git",
    );
    if res.is_err() {
        assert_tree(&after, &fx.tree(), "a failed rewind is rolled back");
    }
    let plan = match res {
        Ok(RewindOutcome::Applied { plan, .. }) => plan,
        other => panic!("rewinding a new directory holding a .git: {other:#?}"),
    };
    assert!(!fx.abs("other.txt").exists(), "the rest was rewound");
    assert!(
        !fx.abs("vendor/lib/lib.rs").exists(),
        "the rest was rewound"
    );
    assert!(
        plan.skipped
            .iter()
            .any(|s| s.path.starts_with(&rp("vendor"))),
        "the kept directory is reported: {plan:#?}"
    );
}

#[test]
fn a_directory_the_user_removed_between_turns_is_recreated_for_a_restored_file() {
    let fx = Fx::new();
    fx.write("d/a.txt", "a0\n");
    fx.write("d/b.txt", "b0\n");
    let mut p = fx.open();
    sync(&mut p);
    let t = start(&mut p, "edit");
    fx.write("d/a.txt", "a1\n");
    end(&mut p);
    // The user removes the whole directory afterwards.
    fx.rm_rf("d");
    let tree = fx.tree();
    sync(&mut p);
    let plan = refused(p.rewind(t, RewindOptions::default()).expect("rewind"));
    assert!(plan.conflicts.iter().any(|c| c.path == rp("d/a.txt")));
    assert_tree(&tree, &fx.tree(), "refused");
    rewind_forced(&mut p, t);
    assert_eq!(fx.read("d/a.txt"), b"a0\n");
    assert!(!fx.abs("d/b.txt").exists(), "d/b.txt belongs to no turn");
    redo(&mut p);
    assert_tree(&tree, &fx.tree(), "redo");
}

/// `rm -r d && mkdir d` between two checks. ext4 (and tmpfs) hand the new
/// directory the inode number the old one just freed, so the inode alone
/// cannot tell that `d` was replaced; `check_paths` promises to re-examine
/// everything below a replaced directory all the same.
#[test]
fn check_paths_sees_a_directory_replaced_under_the_same_inode_number() {
    use std::os::unix::fs::MetadataExt;
    let fx = Fx::new();
    fx.write("d/a", "a\n");
    fx.write("d/b", "b\n");
    let mut p = fx.open();
    sync(&mut p);
    let before = fx.tree();
    let ino = |fx: &Fx| std::fs::symlink_metadata(fx.abs("d")).unwrap().ino();
    let old = ino(&fx);
    let t = start(&mut p, "replace d");
    fx.rm_rf("d");
    fx.mkdir("d");
    fx.write("d/c", "c\n");
    eprintln!("inode number reused: {}", ino(&fx) == old);
    // What the watcher reports for the new directory and the new file.
    p.check_paths([rp("d"), rp("d/c")]).expect("check_paths");
    let detail = p.turn_end().expect("turn_end");
    let mut got: Vec<String> = detail.entries.iter().map(|e| e.path.display()).collect();
    got.sort();
    assert_eq!(got, ["d/a", "d/b", "d/c"], "turn entries");
    rewind(&mut p, t);
    assert_tree(&before, &fx.tree(), "after rewind");
}
