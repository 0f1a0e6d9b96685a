//! Capture: compare what is on disk with the hash cache, store new content,
//! update the cache, and record pre-images for the open turn.

use std::collections::BTreeMap;
use std::io;

use crate::cache::{self, CacheRow};
use crate::confined::{Root, Stat, StatKind};
use crate::error::Result;
use crate::model::ScanReport;
use crate::project::{now_ns, Project};
use crate::relpath::RelPath;
use crate::scan::{self, Excludes, CACHE_TAG, IGNORE_FILE};
use crate::state::{Hash, State};
use crate::store::{Prepared, DELTA_MIN};
use crate::turns;

/// Raw bytes read per write batch: bounds the daemon's memory on big trees
/// (a batch is held raw and compressed at once).
const BATCH_BYTES: u64 = 8 << 20;

/// A path to re-examine: its current stat (`None`: nothing there) and the
/// cache row it is compared with.
struct Seen {
    path: RelPath,
    stat: Option<Stat>,
    old: Option<CacheRow>,
}

/// The captured result for one path.
struct Captured {
    path: RelPath,
    old: Option<CacheRow>,
    new: Option<(State, Stat)>,
    /// The bytes read, kept only until we know whether the store has them.
    content: Option<Vec<u8>>,
    blob: Option<Prepared>,
}

impl Project {
    /// Full stat-compare scan of the tree against the hash cache; captures
    /// every change. The first call is the baseline.
    pub fn reconcile(&mut self) -> Result<ScanReport> {
        let scan_start = now_ns();
        self.excludes = Excludes::load(&self.root, &self.opts.extra_excludes);
        let walk = scan::walk(&self.root, None, &self.excludes, self.opts.threads);
        let mut cached = cache::all(&self.conn)?;
        let mut report = ScanReport {
            entries: walk.entries.len() as u64,
            ..Default::default()
        };
        let mut seen = Vec::new();
        for (path, stat) in walk.entries {
            let old = cached.remove(&path);
            if old.as_ref().is_none_or(|o| !o.unchanged(&stat)) {
                seen.push(Seen {
                    path,
                    stat: Some(stat),
                    old,
                });
            }
        }
        // What the cache holds but the walk did not find is gone, unless it
        // lies in a directory we could not read, or is excluded now (then it
        // simply leaves the cache: it was not deleted).
        let tx = self.conn.transaction()?;
        for (path, row) in cached {
            if walk
                .unreadable
                .iter()
                .any(|(d, _)| path.starts_with(d) && &path != d)
            {
                continue;
            }
            if self.excludes.is_excluded(&path, row.state.is_dir()) {
                cache::remove(&tx, &path)?;
                continue;
            }
            seen.push(Seen {
                path,
                stat: None,
                old: Some(row),
            });
        }
        tx.commit()?;
        report.skipped.extend(walk.unreadable);
        self.capture(seen, scan_start, &mut report)?;
        Ok(report)
    }

    /// Re-checks these paths (and, for a new, replaced or removed directory,
    /// everything below it); captures what changed. Excluded paths are
    /// ignored.
    pub fn check_paths(&mut self, paths: impl IntoIterator<Item = RelPath>) -> Result<ScanReport> {
        let scan_start = now_ns();
        let paths: Vec<RelPath> = {
            let mut v: Vec<RelPath> = paths.into_iter().collect();
            v.sort();
            v.dedup();
            v
        };
        if paths.iter().any(|p| p.as_bytes() == IGNORE_FILE.as_bytes()) {
            self.excludes = Excludes::load(&self.root, &self.opts.extra_excludes);
        }
        let mut report = ScanReport::default();
        let mut seen: BTreeMap<RelPath, Seen> = BTreeMap::new();
        let add = |seen: &mut BTreeMap<RelPath, Seen>, s: Seen| {
            seen.entry(s.path.clone()).or_insert(s);
        };
        let mut done: std::collections::HashSet<RelPath> = std::collections::HashSet::new();
        let mut work = paths;
        while let Some(path) = work.pop() {
            if !done.insert(path.clone()) {
                continue;
            }
            let stat = self
                .root_fs
                .lstat(&path)
                .map_err(|e| io_err("stat", &self.root_fs, &path, e))?;
            if path.file_name() == CACHE_TAG && stat.is_some_and(|s| s.kind == StatKind::File) {
                if let Some(dir) = path.parent() {
                    self.excludes.note_tagged(&dir);
                    // Tagged now: its contents leave the cache (not deleted).
                    cache::remove_below(&self.conn, &dir)?;
                }
            }
            let is_dir = stat.is_some_and(|s| s.kind == StatKind::Dir);
            if self.excludes.is_excluded(&path, is_dir) {
                continue;
            }
            report.entries += 1;
            // A path in a directory the cache does not know yet: that
            // directory is new too (its own event may never come, if it was
            // created before a watch could be added), so check it as well.
            if let (Some(_), Some(parent)) = (stat, path.parent()) {
                if !done.contains(&parent) && !cache::state(&self.conn, &parent)?.is_dir() {
                    work.push(parent);
                }
            }
            let old = cache::get(&self.conn, &path)?;
            let was_dir = old.as_ref().is_some_and(|o| o.stat.kind == StatKind::Dir);
            let same_dir = was_dir
                && is_dir
                && old
                    .as_ref()
                    .zip(stat)
                    .is_some_and(|(o, s)| o.stat.ino == s.ino);
            if same_dir
                && old
                    .as_ref()
                    .zip(stat)
                    .is_some_and(|(o, s)| !o.unchanged(&s))
            {
                // Same directory (or a new one that got the old inode number
                // back): compare its entries with the cache's, one level.
                let on_disk: std::collections::HashSet<Vec<u8>> = self
                    .root_fs
                    .list_dir(&path)
                    .map_err(|e| io_err("list", &self.root_fs, &path, e))?
                    .into_iter()
                    .collect();
                let cached = cache::children(&self.conn, &path)?;
                for child in &cached {
                    if !on_disk.contains(child.file_name().as_encoded_bytes()) {
                        work.push(child.clone());
                    }
                }
                let cached: std::collections::HashSet<&[u8]> = cached
                    .iter()
                    .map(|c| c.file_name().as_encoded_bytes())
                    .collect();
                for name in on_disk.iter().filter(|n| !cached.contains(n.as_slice())) {
                    work.extend(path.join(name).ok());
                }
            }
            if was_dir && !same_dir {
                // The directory went away or was replaced: so did its contents.
                for (p, row) in cache::below(&self.conn, &path)? {
                    add(
                        &mut seen,
                        Seen {
                            path: p,
                            stat: None,
                            old: Some(row),
                        },
                    );
                }
            }
            if is_dir && !same_dir && self.root.join(path.as_path()).join(CACHE_TAG).is_file() {
                self.excludes.note_tagged(&path);
                continue;
            }
            if is_dir && !same_dir {
                // A new directory: files created in it before we could watch
                // it produce no events, so scan it.
                let walk = scan::walk(&self.root, Some(&path), &self.excludes, 1);
                report.entries += walk.entries.len() as u64;
                report.skipped.extend(walk.unreadable);
                for (p, st) in walk.entries {
                    let old = cache::get(&self.conn, &p)?;
                    done.insert(p.clone());
                    seen.insert(
                        p.clone(),
                        Seen {
                            path: p,
                            stat: Some(st),
                            old,
                        },
                    );
                }
            }
            match (&stat, &old) {
                (None, None) => {}
                (Some(st), Some(o)) if o.unchanged(st) => {}
                _ => {
                    seen.insert(path.clone(), Seen { path, stat, old });
                }
            }
        }
        let seen = seen.into_values().filter(|s| match (&s.stat, &s.old) {
            (None, None) => false,
            (Some(st), Some(o)) => !o.unchanged(st),
            _ => true,
        });
        self.capture(seen.collect(), scan_start, &mut report)?;
        Ok(report)
    }

    /// Reads and stores what changed, in batches, each one transaction.
    fn capture(
        &mut self,
        mut seen: Vec<Seen>,
        scan_start: i64,
        report: &mut ScanReport,
    ) -> Result<()> {
        if seen.is_empty() {
            return Ok(());
        }
        seen.sort_by(|a, b| a.path.cmp(&b.path));
        while !seen.is_empty() {
            let mut end = 0;
            let mut bytes = 0;
            while end < seen.len() && (end == 0 || bytes < BATCH_BYTES) {
                bytes += seen[end].stat.map_or(0, |s| s.size);
                end += 1;
            }
            let batch: Vec<Seen> = seen.drain(..end).collect();
            let (fs, max, threads) = (&self.root_fs, self.opts.max_file_size, self.opts.threads);
            let mut captured = par_map(batch, threads, |s| read_one(fs, s, max));
            // Compress only content the store does not have yet: touching,
            // rewinding and redoing mostly produce known blobs.
            let mut fresh = std::collections::HashSet::new();
            let mut to_store = Vec::new();
            for (i, c) in captured.iter_mut().enumerate() {
                let (Some(data), Some((State::File { hash, .. }, _))) = (c.content.take(), &c.new)
                else {
                    continue;
                };
                if !fresh.insert(*hash) || self.store.contains(&self.conn, hash)? {
                    continue;
                }
                // A large file's previous version makes a good delta base.
                let base = match c.old.as_ref().and_then(|o| o.state.hash()) {
                    Some(old)
                        if data.len() >= DELTA_MIN
                            && self.store.delta_base_ok(&self.conn, &old)? =>
                    {
                        Some((old, self.store.get(&self.conn, &old)?))
                    }
                    _ => None,
                };
                to_store.push((i, *hash, data, base));
            }
            let store = &self.store;
            let prepared = par_map(to_store, threads, |(i, hash, data, base)| {
                let blob = match base {
                    Some((base_hash, base)) => store.prepare_delta(hash, &data, base_hash, &base),
                    None => store.prepare_hashed(hash, &data),
                };
                (i, blob)
            });
            for (i, blob) in prepared {
                captured[i].blob = Some(blob);
            }
            self.write_batch(captured, scan_start, report)?;
        }
        Ok(())
    }

    fn write_batch(
        &mut self,
        captured: Vec<Captured>,
        scan_start: i64,
        report: &mut ScanReport,
    ) -> Result<()> {
        let tx = self.conn.transaction()?;
        let turn = turns::open_turn(&tx)?;
        for c in captured {
            if let Some(blob) = &c.blob {
                self.store.insert(&tx, blob)?;
                report.bytes_hashed += blob.size;
            }
            let old_state = c.old.as_ref().map_or(State::Absent, |o| o.state.clone());
            let new_state = c.new.as_ref().map_or(State::Absent, |(s, _)| s.clone());
            match &c.new {
                Some((state, stat)) => {
                    if let State::Skipped { reason } = state {
                        report.skipped.push((c.path.clone(), reason.clone()));
                    }
                    cache::put(&tx, &c.path, state, stat, scan_start)?;
                }
                None => cache::remove(&tx, &c.path)?,
            }
            if old_state != new_state {
                report.changed += 1;
                if let Some(turn) = turn {
                    turns::record_pre(&tx, turn, &c.path, &old_state)?;
                }
            }
        }
        tx.commit()?;
        Ok(())
    }
}

/// `items.map(f)` on up to `threads` scoped threads, keeping the order.
fn par_map<T: Send, R: Send>(items: Vec<T>, threads: usize, f: impl Fn(T) -> R + Sync) -> Vec<R> {
    let threads = threads.clamp(1, 16).min(items.len().div_ceil(8).max(1));
    if threads == 1 {
        return items.into_iter().map(f).collect();
    }
    let n = items.len();
    let mut chunks: Vec<Vec<(usize, T)>> = (0..threads).map(|_| Vec::new()).collect();
    for (i, item) in items.into_iter().enumerate() {
        chunks[i % threads].push((i, item));
    }
    let f = &f;
    let mut out: Vec<Option<R>> = (0..n).map(|_| None).collect();
    std::thread::scope(|scope| {
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                scope.spawn(move || {
                    chunk
                        .into_iter()
                        .map(|(i, t)| (i, f(t)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for h in handles {
            for (i, r) in h.join().expect("capture worker panicked") {
                out[i] = Some(r);
            }
        }
    });
    out.into_iter()
        .map(|r| r.expect("every item mapped"))
        .collect()
}

fn read_one(root: &Root, seen: Seen, max_size: u64) -> Captured {
    let Seen { path, stat, old } = seen;
    let mut out = Captured {
        path,
        old,
        new: None,
        content: None,
        blob: None,
    };
    let Some(stat) = stat else {
        return out;
    };
    let skipped = |reason: String| State::Skipped { reason };
    let state = match stat.kind {
        StatKind::Dir => State::Dir { mode: stat.mode },
        StatKind::Other => skipped("not a regular file, directory or symlink".into()),
        StatKind::Symlink => match root.read_link(&out.path) {
            Ok(target) => State::Symlink { target },
            Err(e) if e.kind() == io::ErrorKind::NotFound => return out,
            Err(e) => skipped(format!("unreadable link: {e}")),
        },
        StatKind::File if stat.size > max_size => skipped(format!(
            "larger than the {} byte cap ({} bytes)",
            max_size, stat.size
        )),
        StatKind::File => match root.read_file(&out.path) {
            Ok((data, st)) => {
                let state = State::File {
                    hash: Hash::of(&data),
                    size: data.len() as u64,
                    mode: st.mode,
                };
                let size = data.len() as u64;
                out.content = Some(data);
                // The stat of the file we read, so a change made while we
                // read it is seen next time.
                out.new = Some((state, Stat { size, ..st }));
                return out;
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => return out,
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return out,
            Err(e) => skipped(format!("unreadable: {e}")),
        },
    };
    out.new = Some((state, stat));
    out
}

fn io_err(action: &'static str, root: &Root, path: &RelPath, source: io::Error) -> crate::Error {
    crate::Error::Io {
        action,
        path: root.path().join(path.as_path()),
        source,
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use crate::model::{Options, TurnMeta};
    use crate::project::Project;
    use crate::relpath::RelPath;

    fn setup() -> (tempfile::TempDir, std::path::PathBuf, Project) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("proj");
        fs::create_dir_all(root.join("src/target")).unwrap();
        fs::write(root.join("src/target/x.rs"), "source, not build output").unwrap();
        fs::create_dir_all(root.join("target/debug")).unwrap();
        fs::write(
            root.join("target/CACHEDIR.TAG"),
            "Signature: 8a477f597d28d172789f06886806bc55",
        )
        .unwrap();
        fs::write(root.join("target/debug/bin"), "built").unwrap();
        fs::create_dir_all(root.join("node_modules/x")).unwrap();
        fs::write(root.join("node_modules/x/i.js"), "dep").unwrap();
        fs::write(root.join(".ckptignore"), "*.log\n/scratch/\n").unwrap();
        fs::write(root.join("a.log"), "log").unwrap();
        fs::create_dir_all(root.join("scratch")).unwrap();
        fs::write(root.join("scratch/s"), "s").unwrap();
        fs::write(root.join(".env"), "SECRET=1").unwrap();
        let p = Project::open(&tmp.path().join("store"), &root, Options::default()).unwrap();
        (tmp, root, p)
    }

    fn cached(p: &Project) -> Vec<String> {
        let mut v: Vec<String> = crate::cache::all(&p.conn)
            .unwrap()
            .into_keys()
            .map(|k| k.display())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn excludes_tagged_build_dirs_dependencies_and_ckptignore_but_not_dotenv() {
        let (_tmp, _root, mut p) = setup();
        p.reconcile().unwrap();
        assert_eq!(
            cached(&p),
            [
                ".ckptignore",
                ".env",
                "src",
                "src/target",
                "src/target/x.rs"
            ],
        );
        for (path, dir) in [
            ("target/debug/bin", false),
            ("node_modules/x", true),
            ("a.log", false),
            ("scratch/s", false),
        ] {
            assert!(p.is_excluded(&RelPath::new(path).unwrap(), dir), "{path}");
        }
        assert!(!p.is_excluded(&RelPath::new("src/target/x.rs").unwrap(), false));
    }

    #[test]
    fn a_dir_tagged_later_leaves_the_cache_without_counting_as_deleted() {
        let (_tmp, root, mut p) = setup();
        p.reconcile().unwrap();
        let turn = p.turn_start(TurnMeta::default()).unwrap();
        fs::write(
            root.join("src/target/CACHEDIR.TAG"),
            "Signature: 8a477f597d28d172789f06886806bc55",
        )
        .unwrap();
        p.check_paths([RelPath::new("src/target/CACHEDIR.TAG").unwrap()])
            .unwrap();
        assert_eq!(cached(&p), [".ckptignore", ".env", "src", "src/target"]);
        assert!(p.turn_end().unwrap().entries.is_empty());
        assert!(p.show(turn).unwrap().entries.is_empty());
    }

    #[test]
    fn events_for_a_new_directory_capture_its_whole_subtree() {
        let (_tmp, root, mut p) = setup();
        p.reconcile().unwrap();
        let turn = p.turn_start(TurnMeta::default()).unwrap();
        fs::create_dir_all(root.join("new/a/b")).unwrap();
        fs::write(root.join("new/a/b/f"), "x").unwrap();
        // Only the top directory's event arrives (the rest were created
        // before a watch could be added).
        p.check_paths([RelPath::new("new").unwrap()]).unwrap();
        let paths: Vec<String> = p
            .turn_end()
            .unwrap()
            .entries
            .iter()
            .map(|e| e.path.display())
            .collect();
        assert_eq!(paths, ["new", "new/a", "new/a/b", "new/a/b/f"]);
        let _ = turn;
    }

    #[test]
    fn an_event_deep_in_new_directories_captures_the_whole_new_chain() {
        let (_tmp, root, mut p) = setup();
        p.reconcile().unwrap();
        p.turn_start(TurnMeta::default()).unwrap();
        fs::create_dir_all(root.join("a/b/c")).unwrap();
        fs::write(root.join("a/b/c/f"), "x").unwrap();
        fs::write(root.join("a/b/sibling"), "y").unwrap();
        // Only the deepest file's event arrives.
        p.check_paths([RelPath::new("a/b/c/f").unwrap()]).unwrap();
        let paths: Vec<String> = p
            .turn_end()
            .unwrap()
            .entries
            .iter()
            .map(|e| e.path.display())
            .collect();
        assert_eq!(paths, ["a", "a/b", "a/b/c", "a/b/c/f", "a/b/sibling"]);
    }
}
