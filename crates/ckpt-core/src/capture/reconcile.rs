//! The full scan: the sorted walk of the tree merged with the hash cache,
//! read page by page in the same order, so memory does not grow with the
//! size of the tree.

use std::path::Path;
use std::sync::mpsc::{Receiver, SyncSender};

use rusqlite::Connection;

use super::pipeline::capture;
use super::{Seen, BATCH_BYTES, BATCH_PATHS};
use crate::cache::{self, CacheRow};
use crate::confined::Stat;
use crate::error::{IoContext, Result};
use crate::model::{Progress, ProgressOp, ScanSummary, Skipped};
use crate::parts::Parts;
use crate::relpath::RelPath;
use crate::scan::{self, Excludes};
use ckpt_types::now_ns;

/// Cache rows read per query while a full scan merges the cache with the walk.
const CACHE_PAGE: usize = if cfg!(test) { 3 } else { 1024 };

/// Reads the cache in path order, a page at a time.
#[derive(Default)]
struct CacheCursor {
    /// The current page, reversed (`pop` gives the next row).
    page: Vec<(RelPath, CacheRow)>,
    /// The key of the last row read.
    after: Vec<u8>,
    done: bool,
}

impl CacheCursor {
    /// The next row. The merge only writes rows at or before the one it
    /// compares, so rows read ahead stay valid and the next page (keys after
    /// the last row read) sees none of its writes.
    fn next(&mut self, conn: &Connection) -> Result<Option<(RelPath, CacheRow)>> {
        while self.page.is_empty() && !self.done {
            match cache::page(conn, &self.after, CACHE_PAGE, &mut self.page)? {
                Some(last) => self.after = last,
                None => self.done = true,
            }
            self.page.reverse();
        }
        Ok(self.page.pop())
    }
}

/// What the walk's thread hands the merge: entries in path order, and
/// each directory it could not read, ahead of the entries that follow it.
enum Walked {
    Entry(RelPath, Stat),
    Unreadable(Skipped),
    /// The walk is complete. Without it, a closed channel means the walk
    /// died, and the cached rows not yet reached are not deletions.
    End,
}

/// Entries per message from the walk's thread, and messages it may walk
/// ahead of the merge: enough to keep walking while the merge's last
/// capture (up to `SCAN_BATCHES` batches) is read and written.
const WALK_CHUNK: usize = if cfg!(test) { 2 } else { 1024 };
const WALK_AHEAD: usize = if cfg!(test) { 2 } else { 64 };

/// Write batches handed to the pipeline at once, so it prepares one while
/// it writes the one before (a single batch would leave the workers idle
/// while it is written, and the writer while it is read).
const SCAN_BATCHES: usize = 8;

/// The walk as the merge reads it, from the walk's thread.
struct Disk {
    rx: Receiver<Vec<Walked>>,
    chunk: std::vec::IntoIter<Walked>,
    /// The directories the walk could not read, so far.
    unreadable: Vec<Skipped>,
}

impl Disk {
    fn next(&mut self) -> Result<Option<(RelPath, Stat)>> {
        loop {
            match self.chunk.next() {
                Some(Walked::Entry(path, stat)) => return Ok(Some((path, stat))),
                Some(Walked::Unreadable(s)) => self.unreadable.push(s),
                Some(Walked::End) => return Ok(None),
                None => match self.rx.recv() {
                    Ok(chunk) => self.chunk = chunk.into_iter(),
                    Err(_) => {
                        return Err(crate::Error::Invariant(
                            "the tree walk ended before the tree did".into(),
                        ))
                    }
                },
            }
        }
    }
}

/// Walks the tree on its own thread (the walk's syscalls overlap the
/// merge and the capture), sending what it finds in order to `tx`.
fn walk_into(root: &Path, excludes: &Excludes, tx: SyncSender<Vec<Walked>>) {
    let mut walk = scan::SortedWalk::new(root, None, excludes);
    let mut chunk = Vec::with_capacity(WALK_CHUNK);
    loop {
        let next = walk.next();
        // Read while finding `next`: before it, as the merge must see it.
        chunk.extend(walk.unreadable.drain(..).map(Walked::Unreadable));
        let Some((path, stat)) = next else { break };
        chunk.push(Walked::Entry(path, stat));
        if chunk.len() >= WALK_CHUNK && tx.send(std::mem::take(&mut chunk)).is_err() {
            return;
        }
    }
    chunk.push(Walked::End);
    let _ = tx.send(chunk);
}

/// Full stat-compare scan of the tree against the hash cache; captures
/// every change. The first call is the baseline.
///
/// The walk and the cache are both read in path order and merged, and
/// what changed is captured batch by batch as the merge goes, so memory
/// does not grow with the size of the tree.
pub(crate) fn reconcile(parts: &mut Parts<'_>) -> Result<ScanSummary> {
    let scan_start = now_ns();
    *parts.excludes = Excludes::load(parts.root, &parts.opts.extra_excludes);
    let (root, excludes) = (parts.root, parts.excludes.clone());
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::sync_channel(WALK_AHEAD);
        let walker = std::thread::Builder::new()
            .name("ckpt-walk".into())
            .spawn_scoped(scope, move || walk_into(root, &excludes, tx))
            .ctx("starting a walk of", root)?;
        let mut disk = Disk {
            rx,
            chunk: Vec::new().into_iter(),
            unreadable: Vec::new(),
        };
        let mut bulk = None;
        let merged = merge(parts, &mut disk, scan_start, &mut bulk);
        parts.readers.close();
        let ended = bulk.map_or(Ok(()), |c| crate::db::bulk_end(parts.conn, c));
        // Dropped first, so a walk that is still going ends.
        drop(disk.rx);
        if walker.join().is_err() {
            return Err(crate::Error::Invariant("the tree walk panicked".into()));
        }
        let mut report = merged?;
        ended?;
        report.unreadable = disk.unreadable;
        Ok(report)
    })
}

/// The merge of the walk with the cache, capturing as it goes. Once
/// there is more to capture than one hand-off, the database goes into
/// bulk mode (`bulk`: what to restore), which a small scan never needs.
fn merge(
    parts: &mut Parts<'_>,
    disk: &mut Disk,
    scan_start: i64,
    bulk: &mut Option<i64>,
) -> Result<ScanSummary> {
    use std::cmp::Ordering;
    let mut cached = CacheCursor::default();
    let mut report = ScanSummary::default();
    let mut seen = Vec::new();
    let mut seen_bytes = 0;
    // Rows of paths that are excluded now: they simply leave the cache
    // (they were not deleted).
    let mut gone = Vec::new();
    let mut on_disk = disk.next()?;
    let mut row = cached.next(parts.conn)?;
    loop {
        let ord = match (&on_disk, &row) {
            (None, None) => break,
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some((d, _)), Some((c, _))) => d.cmp(c),
        };
        if ord == Ordering::Greater {
            // In the cache, not found by the walk: gone, unless it lies
            // in a directory we could not read (which the walk, being in
            // the same order, has tried to read by now), or is excluded.
            let (path, old) = row.take().expect("compared above");
            row = cached.next(parts.conn)?;
            if disk
                .unreadable
                .iter()
                .any(|d| path.starts_with(&d.path) && path != d.path)
            {
                continue;
            }
            if parts.excludes.is_excluded(&path, old.state.is_dir()) {
                gone.push(path);
            } else {
                seen.push(Seen {
                    path,
                    stat: None,
                    old: Some(old),
                });
            }
        } else {
            let (path, stat) = on_disk.take().expect("compared above");
            on_disk = disk.next()?;
            report.entries += 1;
            let old = match ord {
                Ordering::Equal => {
                    let old = row.take().map(|(_, r)| r);
                    row = cached.next(parts.conn)?;
                    old
                }
                _ => None,
            };
            if old.as_ref().is_none_or(|o| !o.unchanged(&stat)) {
                seen_bytes += stat.size;
                seen.push(Seen {
                    path,
                    stat: Some(stat),
                    old,
                });
            }
            parts.progress(Progress {
                op: ProgressOp::Scan,
                done: report.entries,
                total: None,
                bytes: report.bytes_hashed + seen_bytes,
            });
        }
        if seen_bytes >= SCAN_BATCHES as u64 * BATCH_BYTES
            || seen.len() + gone.len() >= SCAN_BATCHES * BATCH_PATHS
        {
            if bulk.is_none() {
                *bulk = Some(crate::db::bulk_begin(parts.conn)?);
            }
            let (s, g) = (std::mem::take(&mut seen), std::mem::take(&mut gone));
            capture(parts, s, g, scan_start, &mut report)?;
            seen_bytes = 0;
        }
    }
    capture(parts, seen, gone, scan_start, &mut report)?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::fs;
    use std::path::Path;

    use super::super::tests::{cached, setup};
    use crate::model::{Options, TurnMeta};
    use crate::project::Project;
    use crate::relpath::RelPath;
    use crate::state::State;

    /// Every cache row: path and state.
    fn states(p: &Project) -> BTreeMap<String, State> {
        crate::cache::all(&p.conn)
            .unwrap()
            .into_iter()
            .map(|(k, r)| (k.display(), r.state))
            .collect()
    }

    /// Names whose byte order interleaves a directory's own entry, its
    /// siblings and its contents (`a` < `a-b` < `a.rs` < `a/x` < `a0`), more
    /// of them than one page of the cache or one batch holds.
    fn tricky_tree(root: &Path) {
        for d in ["a/x/y", "a/x-y", "a0/q", "b/c"] {
            fs::create_dir_all(root.join(d)).unwrap();
        }
        for f in [
            "a-b", "a.rs", "a/x/y/1", "a/x/z", "a/x/z-", "a/x.txt", "a/x-y/1", "a0/q/2", "b/c/d",
            "b0",
        ] {
            fs::write(root.join(f), f).unwrap();
        }
    }

    /// The merge's view of a walk whose thread sent `chunks` and ended.
    fn walked(chunks: Vec<Vec<super::Walked>>) -> super::Disk {
        let (tx, rx) = std::sync::mpsc::sync_channel(chunks.len());
        for c in chunks {
            tx.send(c).unwrap();
        }
        super::Disk {
            rx,
            chunk: Vec::new().into_iter(),
            unreadable: Vec::new(),
        }
    }

    /// An entry of the walk at `path` (its stat is any directory's).
    fn entry(path: &str) -> super::Walked {
        let st = fs::symlink_metadata(std::env::temp_dir()).unwrap();
        let st = crate::confined::Stat::from_std(&st);
        super::Walked::Entry(RelPath::new(path).unwrap(), st)
    }

    /// The merge takes a cached row below a directory the walk could not
    /// read as still there only if it has heard of that directory by the
    /// time it sees the walk's next entry: the walk's thread sends it first.
    #[test]
    fn the_walk_thread_reports_an_unreadable_directory_before_the_entries_after_it() {
        use super::{Disk, Walked};
        use crate::model::Skipped;
        let denied = Skipped::new(RelPath::new("b").unwrap(), "denied");
        let mut disk = walked(vec![
            vec![entry("a")],
            vec![Walked::Unreadable(denied), entry("c"), Walked::End],
        ]);
        let next = |d: &mut Disk| d.next().unwrap().map(|(p, _)| p.display());
        assert_eq!(next(&mut disk).unwrap(), "a");
        assert!(disk.unreadable.is_empty());
        assert_eq!(next(&mut disk).unwrap(), "c");
        assert_eq!(disk.unreadable.len(), 1, "b, heard of before c");
        assert!(next(&mut disk).is_none());
    }

    /// A walk whose thread stops without saying it is done (it died) is an
    /// error, not the end of the tree: the cached rows not reached yet would
    /// otherwise be recorded as deleted.
    #[test]
    fn a_walk_that_stops_short_is_an_error_not_the_end_of_the_tree() {
        let mut disk = walked(vec![vec![entry("a")]]);
        assert!(disk.next().unwrap().is_some());
        assert!(disk.next().is_err());
    }

    #[test]
    fn reconcile_finds_what_a_fresh_baseline_finds_and_records_each_change_once() {
        let (tmp, root, mut p) = setup();
        tricky_tree(&root);
        p.reconcile().unwrap();
        let before = states(&p);
        assert!(before.contains_key("a/x/z-") && before.contains_key("b/c/d"));
        p.turn_start(TurnMeta::default()).unwrap();
        // Changes on both sides of every interleaving: a directory replaced
        // by a file, removals, an edit, a renamed directory, additions
        // before, between and after cached paths, and a cached directory
        // that is excluded now (it leaves the cache; it was not deleted).
        fs::remove_dir_all(root.join("a/x")).unwrap();
        fs::write(root.join("a/x"), "now a file").unwrap();
        fs::remove_file(root.join("a-b")).unwrap();
        fs::write(root.join("a.rs"), "edited").unwrap();
        fs::rename(root.join("a0"), root.join("a1")).unwrap();
        fs::write(root.join("a+"), "new").unwrap();
        fs::write(root.join("0"), "new").unwrap();
        fs::create_dir_all(root.join("zz/new")).unwrap();
        fs::write(root.join("zz/new/f"), "new").unwrap();
        fs::write(root.join(".ckptignore"), "*.log\n/scratch/\n/b/\n").unwrap();
        let report = p.reconcile().unwrap();
        let after = states(&p);

        let mut fresh =
            Project::open(&tmp.path().join("store2"), &root, Options::default()).unwrap();
        fresh.reconcile().unwrap();
        assert_eq!(after, states(&fresh));
        assert!(!after.contains_key("b") && !after.contains_key("b/c/d"));

        let mut want = BTreeMap::new();
        for path in before.keys().chain(after.keys()) {
            let rel = RelPath::new(path.as_str()).unwrap();
            let is_dir = before.get(path).is_some_and(|s| s.is_dir());
            if before.get(path) != after.get(path) && !p.is_excluded(&rel, is_dir) {
                want.insert(
                    path.clone(),
                    before.get(path).cloned().unwrap_or(State::Absent),
                );
            }
        }
        assert!(want.contains_key("a/x/y/1") && want.contains_key("a1/q/2"));
        assert_eq!(report.changed, want.len() as u64);
        let got: BTreeMap<String, State> = p
            .turn_end()
            .unwrap()
            .entries
            .into_iter()
            .map(|e| (e.path.display(), e.pre))
            .collect();
        assert_eq!(got, want);
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
}
