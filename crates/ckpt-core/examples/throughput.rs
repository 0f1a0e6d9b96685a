//! Capture and restore throughput of the core on a real tree.
//!
//! `cargo run --release -p ckpt-core --example throughput -- SRC_TREE [MAX_FILES]`
//! copies up to MAX_FILES (default 5000) files of SRC_TREE into a temp dir,
//! then times: the baseline capture, an idle reconcile, a turn that appends a
//! line to every file (captured by `check_paths`, as the daemon's events
//! would), its rewind, and the redo. Every rewind and redo is checked byte
//! for byte.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use ckpt_core::{Options, Project, RelPath, RewindOptions, RewindOutcome, TurnMeta};

fn files_under(dir: &Path, max: usize, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = rd.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if out.len() >= max {
            return;
        }
        let Ok(md) = std::fs::symlink_metadata(&p) else {
            continue;
        };
        if md.is_dir() {
            files_under(&p, max, out);
        } else if md.is_file() && md.len() < (1 << 20) {
            out.push(p);
        }
    }
}

fn snapshot(root: &Path, files: &[PathBuf]) -> BTreeMap<PathBuf, Vec<u8>> {
    files
        .iter()
        .map(|f| (f.clone(), std::fs::read(root.join(f)).unwrap()))
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let src = PathBuf::from(args.get(1).expect("usage: throughput SRC_TREE [MAX_FILES]"));
    let max: usize = args
        .get(2)
        .map_or(5000, |s| s.parse().expect("MAX_FILES is a number"));
    let mut files = Vec::new();
    files_under(&src, max, &mut files);
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("tree");
    let mut rel = Vec::new();
    let mut bytes = 0u64;
    for f in &files {
        let r = f.strip_prefix(&src).unwrap().to_path_buf();
        let dst = root.join(&r);
        std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
        bytes += std::fs::copy(f, &dst).unwrap();
        rel.push(r);
    }
    println!("tree: {} files, {:.1} MB", rel.len(), bytes as f64 / 1e6);
    let mut p = Project::open(&tmp.path().join("store"), &root, Options::default()).unwrap();

    let t = Instant::now();
    p.reconcile().unwrap();
    let base = t.elapsed();
    let st = p.status().unwrap();
    println!(
        "baseline capture: {:.0} ms ({:.0} MB/s), store {:.1} MB ({:.1}% of raw)",
        base.as_secs_f64() * 1e3,
        bytes as f64 / 1e6 / base.as_secs_f64(),
        st.store_bytes as f64 / 1e6,
        st.store_bytes as f64 * 100.0 / bytes as f64
    );
    // Let the racy window pass, then an idle reconcile re-hashes nothing.
    std::thread::sleep(std::time::Duration::from_millis(100));
    p.reconcile().unwrap();
    let t = Instant::now();
    let idle = p.reconcile().unwrap();
    println!(
        "idle reconcile: {:.1} ms (changed {})",
        t.elapsed().as_secs_f64() * 1e3,
        idle.changed
    );

    let before = snapshot(&root, &rel);
    let turn = p.turn_start(TurnMeta::default()).unwrap();
    for r in &rel {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(root.join(r))
            .unwrap();
        f.write_all(b"\n// formatted\n").unwrap();
    }
    let paths: Vec<RelPath> = rel
        .iter()
        .map(|r| RelPath::new(r.as_os_str().as_encoded_bytes()).unwrap())
        .collect();
    let t = Instant::now();
    p.check_paths(paths).unwrap();
    let detail = p.turn_end().unwrap();
    println!(
        "full-tree turn capture + turn-end: {:.0} ms ({} paths)",
        t.elapsed().as_secs_f64() * 1e3,
        detail.entries.len()
    );
    let after = snapshot(&root, &rel);

    let t = Instant::now();
    let out = p.rewind(turn, RewindOptions::default()).unwrap();
    let rw = t.elapsed();
    assert!(matches!(out, RewindOutcome::Applied { .. }));
    let now = snapshot(&root, &rel);
    let wrong: Vec<_> = now
        .iter()
        .filter(|(k, v)| before.get(*k) != Some(v))
        .map(|(k, _)| k)
        .take(5)
        .collect();
    assert!(wrong.is_empty(), "rewind is not exact: {wrong:?}");
    println!(
        "rewind of {} files: {:.0} ms ({:.0} files/s)",
        rel.len(),
        rw.as_secs_f64() * 1e3,
        rel.len() as f64 / rw.as_secs_f64()
    );
    let t = Instant::now();
    p.redo(RewindOptions::default()).unwrap();
    println!("redo: {:.0} ms", t.elapsed().as_secs_f64() * 1e3);
    assert!(snapshot(&root, &rel) == after, "redo is not exact");
    println!(
        "store after: {:.1} MB",
        p.status().unwrap().store_bytes as f64 / 1e6
    );
}
