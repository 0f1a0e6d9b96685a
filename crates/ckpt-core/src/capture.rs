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
use crate::scan::{self, Excludes, IGNORE_FILE};
use crate::state::State;
use crate::store::{BlobStore, Prepared};
use crate::turns;

/// Raw bytes read per write batch: bounds memory on big trees while keeping
/// commits (one fsync each) few.
const BATCH_BYTES: u64 = 64 << 20;

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
        for path in paths {
            let stat = self
                .root_fs
                .lstat(&path)
                .map_err(|e| io_err("stat", &self.root_fs, &path, e))?;
            if self
                .excludes
                .is_excluded(&path, stat.is_some_and(|s| s.kind == StatKind::Dir))
            {
                continue;
            }
            report.entries += 1;
            let old = cache::get(&self.conn, &path)?;
            let was_dir = old.as_ref().is_some_and(|o| o.stat.kind == StatKind::Dir);
            let is_dir = stat.is_some_and(|s| s.kind == StatKind::Dir);
            let same_dir = was_dir
                && is_dir
                && old
                    .as_ref()
                    .zip(stat)
                    .is_some_and(|(o, s)| o.stat.ino == s.ino);
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
            if is_dir && !same_dir {
                // A new directory: files created in it before we could watch
                // it produce no events, so scan it.
                let walk = scan::walk(&self.root, Some(&path), &self.excludes, 1);
                report.entries += walk.entries.len() as u64;
                report.skipped.extend(walk.unreadable);
                for (p, st) in walk.entries {
                    let old = cache::get(&self.conn, &p)?;
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
            let captured = read_batch(
                &self.root_fs,
                &self.store,
                batch,
                self.opts.max_file_size,
                self.opts.threads,
            );
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

/// Reads, hashes and compresses a batch on `threads` threads.
fn read_batch(
    root: &Root,
    store: &BlobStore,
    batch: Vec<Seen>,
    max_size: u64,
    threads: usize,
) -> Vec<Captured> {
    let threads = threads.clamp(1, 16).min(batch.len().div_ceil(8).max(1));
    if threads == 1 {
        return batch
            .into_iter()
            .map(|s| read_one(root, store, s, max_size))
            .collect();
    }
    let mut chunks: Vec<Vec<Seen>> = (0..threads).map(|_| Vec::new()).collect();
    for (i, s) in batch.into_iter().enumerate() {
        chunks[i % threads].push(s);
    }
    std::thread::scope(|scope| {
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                scope.spawn(move || {
                    chunk
                        .into_iter()
                        .map(|s| read_one(root, store, s, max_size))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("capture worker panicked"))
            .collect()
    })
}

fn read_one(root: &Root, store: &BlobStore, seen: Seen, max_size: u64) -> Captured {
    let Seen { path, stat, old } = seen;
    let mut out = Captured {
        path,
        old,
        new: None,
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
                let blob = store.prepare(&data);
                let state = State::File {
                    hash: blob.hash,
                    size: data.len() as u64,
                    mode: st.mode,
                };
                out.blob = Some(blob);
                // The stat of the file we read, so a change made while we
                // read it is seen next time.
                out.new = Some((
                    state,
                    Stat {
                        size: data.len() as u64,
                        ..st
                    },
                ));
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
