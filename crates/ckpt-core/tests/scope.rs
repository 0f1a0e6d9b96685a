//! What is outside capture stays outside: `.git` directories and files at any
//! depth, dependency folders, directories tagged with `CACHEDIR.TAG`,
//! `.ckptignore` matches, barrier cookies. A turn never records them and a rewind never touches them.

mod common;

use std::collections::BTreeSet;

use common::*;

#[test]
fn excluded_paths_are_neither_recorded_nor_restored() {
    let fx = Fx::new();
    fx.write("src.js", "console.log(1)\n");
    fx.write(".ckptignore", "*.log\nbuild/\n");
    fx.write("app.log", "log 1\n");
    fx.write("build/out.js", "built\n");
    fx.write("node_modules/pkg/index.js", "module.exports = 1\n");
    fx.write("web/node_modules/pkg/index.js", "nested dependency\n");
    // Build output marked as a cache (cargo writes this tag into target/).
    fx.write(
        "target/CACHEDIR.TAG",
        "Signature: 8a477f597d28d172789f06886806bc55\n",
    );
    fx.write("target/debug/app", "binary\n");
    // A directory merely named like build output is ordinary content.
    fx.write("docs/target/page.md", "a page\n");
    fx.write("sub/file.txt", "submodule work tree file\n");
    fx.write("sub/.git/HEAD", "ref: refs/heads/main\n");
    fx.write("wt/.git", "gitdir: /somewhere/else\n");
    fx.write("wt/code.rs", "fn wt() {}\n");
    git(&fx.root, &["init", "-q"]);
    let git_before = fx.git_dir();

    let mut p = fx.open();
    sync(&mut p);
    for (path, dir, want) in [
        ("node_modules", true, true),
        ("web/node_modules", true, true),
        ("target", true, true),
        ("target/debug/app", false, true),
        ("docs/target", true, false),
        ("app.log", false, true),
        ("build", true, true),
        (".ckpt-cookie-42", false, true),
        ("src.js", false, false),
        ("sub/file.txt", false, false),
        ("wt", true, false),
        (".ckptignore", false, false),
    ] {
        assert_eq!(p.is_excluded(&rp(path), dir), want, "is_excluded({path})");
    }

    let before = fx.tree();
    let t = start(&mut p, "agent");
    fx.write("src.js", "console.log(2)\n");
    fx.write("sub/file.txt", "edited\n");
    fx.write("wt/code.rs", "fn wt() { edited() }\n");
    fx.write("app.log", "log 2\n");
    fx.write("build/out.js", "rebuilt\n");
    fx.write("build/new.js", "new output\n");
    fx.write("node_modules/pkg/index.js", "module.exports = 2\n");
    fx.write("node_modules/new-dep/index.js", "new dep\n");
    fx.write(
        "web/node_modules/pkg/index.js",
        "nested dependency, updated\n",
    );
    fx.write("target/debug/app", "binary 2\n");
    fx.write("docs/target/page.md", "a page, edited\n");
    fx.write("sub/.git/HEAD", "ref: refs/heads/agent\n");
    fx.write("sub/.git/new", "new\n");
    fx.write("wt/.git", "gitdir: /elsewhere\n");
    fx.write(".ckpt-cookie-7", "");
    end(&mut p);
    std::fs::remove_file(fx.abs(".ckpt-cookie-7")).unwrap();
    let after = fx.tree();
    let sub_git_after = snapshot_all(&fx.abs("sub/.git"));

    let got = entry_paths(&p, t);
    let want: BTreeSet<Vec<u8>> = byte_set([
        &b"src.js"[..],
        b"sub/file.txt",
        b"wt/code.rs",
        b"docs/target/page.md",
    ]);
    assert_eq!(
        got.iter().map(|p| show_path(p)).collect::<Vec<_>>(),
        want.iter().map(|p| show_path(p)).collect::<Vec<_>>(),
        "only captured paths are turn entries"
    );

    rewind(&mut p, t);
    let mut expect = after.clone();
    for k in [
        "src.js",
        "sub/file.txt",
        "wt/code.rs",
        "docs/target/page.md",
    ] {
        expect.insert(k.as_bytes().to_vec(), before[k.as_bytes()].clone());
    }
    assert_tree(&expect, &fx.tree(), "after rewind");
    assert_eq!(
        fx.read("wt/.git"),
        b"gitdir: /elsewhere\n",
        "a .git file is left alone"
    );
    assert_tree(
        &sub_git_after,
        &snapshot_all(&fx.abs("sub/.git")),
        "a nested .git is left alone",
    );
    redo(&mut p);
    assert_tree(&after, &fx.tree(), "after redo");
    drop(p);
    assert_tree(&git_before, &fx.git_dir(), ".git");
}
