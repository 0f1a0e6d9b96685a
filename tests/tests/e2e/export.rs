//! `ckptctl export`: the patch applies with `git apply` to a fresh clone of
//! the base and gives the project's tree; the fingerprints, recomputed here
//! from `docs/export.md`'s definition, match the manifest; the ZIP holds
//! exactly the post-images; what cannot be exported is refused clearly.

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use ckpt_e2e::*;

fn s(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 temp path")
}

fn turn(env: &Env, proj: &Path, label: &str, script: &str) {
    env.ctl_ok(
        proj,
        &["turn-start", "--label", label, "--agent", "test-agent"],
    );
    sh(proj, script);
    env.ctl_ok(proj, &["turn-end"]);
}

fn export_json(env: &Env, proj: &Path, range: &str, out: &Path) -> serde_json::Value {
    env.ctl_json(proj, &["export", range, "--out", s(out)])
}

/// The manifest's touched paths.
fn manifest_paths(m: &serde_json::Value) -> Vec<String> {
    m["paths"]
        .as_array()
        .expect("paths")
        .iter()
        .map(|p| p["path"].as_str().expect("a path").to_string())
        .collect()
}

#[test]
fn an_exported_patch_applied_to_the_base_gives_the_tree_after_the_turns() {
    let env = Env::new();
    let _d = env.start_daemon();
    let old_bin = binary(7, 3000);
    let proj = env.git_repo(
        "p",
        &[
            ("keep.txt", b"kept\n"),
            ("mod.txt", b"one\ntwo\nthree\nfour\nfive\nsix\nseven\n"),
            ("del.txt", b"to be deleted\n"),
            ("script.sh", b"#!/bin/sh\necho hi\n"),
            ("link_me.txt", b"soon a link\n"),
            ("old.bin", &old_bin),
            ("sub/x.txt", b"x\n"),
        ],
    );
    let base = git(&proj, &["rev-parse", "HEAD"]).stdout.trim().to_string();
    env.ctl_ok(&proj, &["watch"]);
    std::fs::write(env.path().join("img.bin"), binary(1, 2000)).unwrap();
    let mut new_bin = old_bin.clone();
    new_bin[100..140].copy_from_slice(&[0u8; 40]);
    new_bin.extend_from_slice(&binary(3, 500));
    std::fs::write(env.path().join("old.bin.new"), &new_bin).unwrap();

    turn(
        &env,
        &proj,
        "text",
        "printf 'fresh\\n' > new.txt && printf 'one\\nTWO\\nthree\\nfour\\nfive\\nsix\\nseven' > mod.txt && rm del.txt \
         && printf 'spaced\\n' > 'with space.txt' && printf 'quoted\\n' > 'é.txt'",
    );
    turn(
        &env,
        &proj,
        "binary, mode, link, empty",
        "cp ../img.bin img.bin && cp ../old.bin.new old.bin && chmod +x script.sh \
         && rm link_me.txt && ln -s keep.txt link_me.txt && : > empty.txt",
    );
    turn(
        &env,
        &proj,
        "again",
        "printf 'fresh\\nand more\\n' >> new.txt",
    );

    let out = env.path().join("export-1-3");
    let m = export_json(&env, &proj, "1..3", &out);
    assert_eq!(m["out"], s(&out.canonicalize().unwrap()), "{m}");
    assert_eq!(m["from"], 1, "{m}");
    assert_eq!(m["to"], 3, "{m}");
    assert_eq!(m["turns"], serde_json::json!([1, 2, 3]), "{m}");
    assert_eq!(m["live_matches_result"], true, "{m}");
    assert!(m["tool_version"].is_string(), "{m}");
    let mut paths = manifest_paths(&m);
    paths.sort();
    assert_eq!(
        paths,
        [
            "del.txt",
            "empty.txt",
            "img.bin",
            "link_me.txt",
            "mod.txt",
            "new.txt",
            "old.bin",
            "script.sh",
            "with space.txt",
            "é.txt"
        ],
        "{m}"
    );
    let by_path: BTreeMap<String, &serde_json::Value> = m["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["path"].as_str().unwrap().to_string(), p))
        .collect();
    assert_eq!(by_path["script.sh"]["pre"]["mode"], "644", "{m}");
    assert_eq!(by_path["script.sh"]["post"]["mode"], "755", "{m}");
    assert_eq!(by_path["link_me.txt"]["post"]["kind"], "symlink", "{m}");
    assert_eq!(by_path["del.txt"]["post"], serde_json::Value::Null, "{m}");
    assert_eq!(by_path["new.txt"]["pre"], serde_json::Value::Null, "{m}");
    assert_eq!(
        by_path["new.txt"]["post"]["sha256"],
        sha256_hex(b"fresh\nfresh\nand more\n"),
        "the last turn's post-image: {m}"
    );

    let mut names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["changes.patch", "files.zip", "manifest.json", "report.md"]
    );
    let on_disk: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(on_disk["result_fingerprint"], m["result_fingerprint"]);
    let patch = std::fs::read(out.join("changes.patch")).unwrap();
    let zip_bytes = std::fs::read(out.join("files.zip")).unwrap();
    assert_eq!(m["patch_sha256"], sha256_hex(&patch), "{m}");
    assert_eq!(m["zip_sha256"], sha256_hex(&zip_bytes), "{m}");
    let patch_text = String::from_utf8_lossy(&patch);
    for needle in [
        "GIT binary patch",
        "old mode 100644\nnew mode 100755",
        "new file mode 120000",
        "deleted file mode 100644",
        "diff --git \"a/\\303\\251.txt\" \"b/\\303\\251.txt\"\n",
        "+++ b/with space.txt\t\n",
        "diff --git a/empty.txt b/empty.txt\nnew file mode 100644\nindex 0000000000000000000000000000000000000000..e69de29bb2d1d6434b8b29ae775ad8c2e48c5391\n",
    ] {
        assert!(patch_text.contains(needle), "no {needle:?} in:\n{patch_text}");
    }

    // A fresh clone of the base, the patch applied: the project's tree.
    let clone = env.path().join("clone");
    git(env.path(), &["clone", "-q", s(&proj), s(&clone)]);
    git(&clone, &["checkout", "-q", "--detach", &base]);
    assert_eq!(
        fingerprint(&clone, &paths),
        m["base_fingerprint"].as_str().unwrap(),
        "the base fingerprint, recomputed from the clone"
    );
    let patch_file = out.join("changes.patch");
    git(&clone, &["apply", "--check", s(&patch_file)]);
    git(&clone, &["apply", s(&patch_file)]);
    assert_same_tree(
        "the base with the patch applied",
        &snapshot_work(&proj),
        &snapshot_work(&clone),
    );
    assert_eq!(
        fingerprint(&proj, &paths),
        m["result_fingerprint"].as_str().unwrap(),
        "the result fingerprint, recomputed from the tree"
    );
    // And back: the reverse hunks undo it.
    git(&clone, &["apply", "-R", s(&patch_file)]);
    assert_eq!(
        fingerprint(&clone, &paths),
        m["base_fingerprint"].as_str().unwrap()
    );

    // The ZIP holds exactly the post-images.
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(zip_bytes)).unwrap();
    let mut in_zip = Vec::new();
    for i in 0..zip.len() {
        let mut f = zip.by_index(i).unwrap();
        let name = f.name().unwrap().into_owned();
        let mode = f.unix_mode().expect("unix mode recorded");
        let mut data = Vec::new();
        f.read_to_end(&mut data).unwrap();
        let disk = proj.join(&name);
        let meta = std::fs::symlink_metadata(&disk).unwrap();
        if meta.file_type().is_symlink() {
            assert_eq!(mode & 0o170000, 0o120000, "{name} is a link in the zip");
            assert_eq!(
                data,
                std::fs::read_link(&disk).unwrap().as_os_str().as_bytes()
            );
        } else {
            assert_eq!(mode & 0o7777, meta.permissions().mode() & 0o7777, "{name}");
            assert_eq!(data, std::fs::read(&disk).unwrap(), "{name}");
        }
        in_zip.push(name);
    }
    in_zip.sort();
    let mut after: Vec<&str> = paths.iter().map(String::as_str).collect();
    after.retain(|p| *p != "del.txt");
    assert_eq!(in_zip, after);

    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    for needle in [
        "| 2 | binary, mode, link, empty | test-agent |",
        "| `script.sh` | mode 644 → 755 |",
        "| `del.txt` | deleted |",
    ] {
        assert!(report.contains(needle), "no {needle:?} in:\n{report}");
    }

    // From the store: a tree changed since gives the same files, and the
    // manifest says the tree no longer matches.
    sh(&proj, "echo later > new.txt");
    let again = export_json(&env, &proj, "1..3", &env.path().join("export-again"));
    assert_eq!(again["patch_sha256"], m["patch_sha256"], "{again}");
    assert_eq!(again["zip_sha256"], m["zip_sha256"], "{again}");
    assert_eq!(again["live_matches_result"], false, "{again}");
}

/// The error's text, after asserting the command failed.
fn refused(env: &Env, proj: &Path, args: &[&str]) -> String {
    let out = env.ctl(proj, args);
    assert!(!out.status.success(), "ckptctl {args:?} succeeded: {out:?}");
    out.stderr
}

#[test]
fn open_rewound_unknown_turns_and_bad_ranges_are_refused() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("f", b"1\n")]);
    env.ctl_ok(&proj, &["watch"]);
    turn(&env, &proj, "one", "echo 2 > f");
    turn(&env, &proj, "two", "echo 3 > f");
    let out = env.path().join("out");
    let o = s(&out);

    let e = refused(&env, &proj, &["export", "99", "--out", o]);
    assert!(e.contains("no turn 99"), "{e}");
    assert!(
        !out.exists(),
        "the directory the command made is gone again"
    );
    let e = refused(&env, &proj, &["export", "2..1", "--out", o]);
    assert!(e.contains("bad range 2..1"), "{e}");
    let e = refused(&env, &proj, &["export", "x..2", "--out", o]);
    assert!(e.contains("TURN..TURN"), "{e}");
    let e = refused(&env, &proj, &["export", "1", "--out", s(&proj.join("exp"))]);
    assert!(e.contains("inside the project"), "{e}");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("stray"), b"").unwrap();
    let e = refused(&env, &proj, &["export", "1", "--out", o]);
    assert!(e.contains("not empty"), "{e}");
    std::fs::remove_file(out.join("stray")).unwrap();

    env.ctl_ok(&proj, &["turn-start"]);
    sh(&proj, "echo 4 > f");
    let e = refused(&env, &proj, &["export", "3", "--out", o]);
    assert!(e.contains("turn 3 is still open"), "{e}");
    let e = refused(&env, &proj, &["export", "1..3", "--out", o]);
    assert!(e.contains("turn 3 is still open"), "{e}");
    env.ctl_ok(&proj, &["turn-end"]);

    env.ctl_ok(&proj, &["rewind", "2"]);
    let e = refused(&env, &proj, &["export", "1..2", "--out", o]);
    assert!(e.contains("turn 2 was already rewound"), "{e}");
    assert!(out.exists(), "a directory the user made is kept");
    assert_eq!(
        std::fs::read_dir(&out).unwrap().count(),
        0,
        "nothing written"
    );

    // Turn 1 alone is still live and closed.
    let m = export_json(&env, &proj, "1", &out);
    assert_eq!(m["turns"], serde_json::json!([1]), "{m}");
}
