//! Event hints: each path an event names is re-checked, and walked out to
//! what it implies (a parent the cache does not know, a directory's changed
//! entries, a new directory's subtree, a removed directory's contents).

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use rusqlite::Connection;

use super::{Seen, BATCH_PATHS};
use crate::cache::{self, CacheRow};
use crate::confined::{KeptParent, Root, Stat, StatKind};
use crate::db;
use crate::error::{IoContext, Result};
use crate::model::ScanSummary;
use crate::parts::Parts;
use crate::relpath::RelPath;
use crate::scan::{Excludes, SortedWalk};
use ckpt_types::names::{CACHE_TAG, IGNORE_FILE};
use ckpt_types::now_ns;

/// Paths that differ captured at once by a `check_paths` call: four write
/// batches, so the pipeline has batches in flight (a window of one batch
/// made a 200,000-file new directory's turn-end 1.2x slower).
const WINDOW: usize = 4 * BATCH_PATHS;

/// Re-checks these paths (and, for a new, replaced or removed directory,
/// everything below it); captures what changed. Excluded paths are
/// ignored. What differs is captured every `WINDOW` paths, so a new
/// directory of 200,000 files is walked a window at a time, not held.
pub(crate) fn check_paths(
    parts: &mut Parts<'_>,
    paths: impl IntoIterator<Item = RelPath>,
) -> Result<ScanSummary> {
    let scan_start = now_ns();
    let mut work: Vec<RelPath> = paths.into_iter().collect();
    work.sort();
    work.dedup();
    if work.iter().any(|p| p.as_bytes() == IGNORE_FILE.as_bytes()) {
        *parts.excludes = Excludes::load(parts.root, &parts.opts.extra_excludes);
    }
    let mut state = CheckState {
        work,
        ..CheckState::default()
    };
    loop {
        let conn: &Connection = parts.conn;
        let mut check = PathCheck {
            conn,
            root_fs: parts.root_fs,
            root: parts.root,
            excludes: parts.excludes,
            st: &mut state,
        };
        // One read transaction for a window's lookups.
        let more = db::reading(conn, || check.window())?;
        let seen = std::mem::take(&mut state.seen);
        #[cfg(test)]
        MOST_SEEN.with(|n| n.set(n.get().max(seen.len())));
        #[cfg(test)]
        MOST_DONE.with(|n| n.set(n.get().max(state.done.len())));
        let seen = seen.into_values().filter(|s| match (&s.stat, &s.old) {
            (None, None) => false,
            (Some(st), Some(o)) => !o.unchanged(st),
            _ => true,
        });
        let seen = seen.collect();
        super::pipeline::capture(parts, seen, Vec::new(), scan_start, &mut state.report)?;
        if !more {
            return Ok(state.report);
        }
    }
}

/// One `check_paths` call's worklist and what it found, kept from window
/// to window.
#[derive(Default)]
struct CheckState {
    report: ScanSummary,
    /// What differs from the cache (or may), by path, this window.
    seen: BTreeMap<RelPath, Seen>,
    /// Paths checked already, but those a walk found: those are below
    /// `walked`.
    done: HashSet<RelPath>,
    /// New directories walked to the end: what is below each was checked
    /// (a set of every path walked held ~60 B for each of 200,000 files).
    walked: HashSet<Vec<u8>>,
    /// Directories the cache has as directories: most paths share one.
    cached_dirs: HashSet<RelPath>,
    /// Paths still to check.
    work: Vec<RelPath>,
    /// Directories gone or replaced whose cached contents are still to
    /// drop, each with the last path dropped so far.
    drops: Vec<(RelPath, Vec<u8>)>,
    /// New directories being walked, the last one first.
    walks: Vec<(RelPath, SortedWalk)>,
    /// Files (dev, ino) that gained a cached name with more than one link:
    /// their names cached before that are looked for by a scan.
    new_links: HashSet<(u64, u64)>,
    /// The last path's parent, kept open: the work is in path order, so
    /// siblings come one after another.
    parents: KeptParent,
}

impl CheckState {
    /// Whether this call checked `path` already: by itself, or in a new
    /// directory's walk. (Asked only between walks: a walk, once begun,
    /// runs to its end before any other path is looked at.)
    fn checked(&self, path: &RelPath) -> bool {
        let bytes = path.as_bytes();
        self.done.contains(path)
            || (!self.walked.is_empty()
                && bytes
                    .iter()
                    .enumerate()
                    .any(|(i, &b)| b == b'/' && self.walked.contains(&bytes[..i])))
    }
}

/// A window of a `check_paths` call.
struct PathCheck<'a> {
    conn: &'a Connection,
    root_fs: &'a Root,
    root: &'a Path,
    excludes: &'a Excludes,
    st: &'a mut CheckState,
}

impl PathCheck<'_> {
    /// Checks paths until `WINDOW` differ or none is left; whether any is
    /// left.
    fn window(&mut self) -> Result<bool> {
        while self.st.seen.len() < WINDOW {
            // A directory's old contents go before its new ones are walked.
            if let Some((dir, after)) = self.st.drops.last_mut() {
                let room = WINDOW - self.st.seen.len();
                let mut rows = Vec::new();
                match cache::below_page(self.conn, dir, after, room, &mut rows)? {
                    Some(last) => *after = last,
                    None => {
                        self.st.drops.pop();
                    }
                }
                for (path, row) in rows {
                    // Checked on disk in this call: it is there.
                    if self.st.checked(&path) {
                        continue;
                    }
                    let gone = Seen {
                        path: path.clone(),
                        stat: None,
                        old: Some(row),
                    };
                    self.st.seen.entry(path).or_insert(gone);
                }
            } else if let Some((_, walk)) = self.st.walks.last_mut() {
                match walk.next() {
                    Some((path, stat)) => self.walked(path, stat)?,
                    None => {
                        let unreadable = std::mem::take(&mut walk.unreadable);
                        self.st.report.unreadable.extend(unreadable);
                        if let Some((dir, _)) = self.st.walks.pop() {
                            self.st.walked.insert(dir.as_bytes().to_vec());
                        }
                    }
                }
            } else if let Some(path) = self.st.work.pop() {
                self.one(path)?;
            } else if !self.st.new_links.is_empty() {
                // One scan of the cache for every new link so far.
                let inodes = std::mem::take(&mut self.st.new_links);
                self.st.work = cache::named_inodes(self.conn, &inodes)?;
            } else {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Checks one path: queues what it implies and records it if it differs
    /// from the cache.
    fn one(&mut self, path: RelPath) -> Result<()> {
        if self.st.checked(&path) || !self.st.done.insert(path.clone()) {
            return Ok(());
        }
        let stat = self
            .root_fs
            .lstat_kept(&path, &mut self.st.parents)
            .ctx_in("stat", self.root_fs.path(), path.as_path())?;
        self.note_cache_tag(&path, stat)?;
        let is_dir = stat.is_some_and(|s| s.kind == StatKind::Dir);
        if self.excludes.is_excluded(&path, is_dir) {
            return Ok(());
        }
        self.st.report.entries += 1;
        if stat.is_some() {
            self.queue_uncached_parent(&path)?;
        }
        let old = cache::get(self.conn, &path)?;
        let was_dir = old.as_ref().is_some_and(|o| o.stat.kind == StatKind::Dir);
        // The same directory, or a new one that got the old inode number back.
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
            self.queue_changed_entries(&path)?;
        }
        if was_dir && !same_dir {
            self.drop_contents(&path);
        }
        if is_dir && !same_dir {
            if self.root.join(path.as_path()).join(CACHE_TAG).is_file() {
                self.excludes.note_tagged(&path);
                return Ok(());
            }
            self.scan_new_dir(&path);
        }
        match (&stat, &old) {
            (None, None) => {}
            (Some(st), Some(o)) if o.unchanged(st) => {}
            _ => {
                if let Some(st) = stat.filter(|s| s.kind == StatKind::File && s.nlink > 1) {
                    self.queue_other_links(&st, old.as_ref())?;
                }
                self.st.seen.insert(path.clone(), Seen { path, stat, old });
            }
        }
        Ok(())
    }

    /// A changed file with other hard links: a write through one name
    /// changes every name, but inotify reports only the one written to, so
    /// its other cached names are checked too. A name new to this inode
    /// (`ln` reports the new name only) may have names cached with one
    /// link, which the index of linked rows lacks: `new_links` finds them.
    fn queue_other_links(&mut self, st: &Stat, old: Option<&CacheRow>) -> Result<()> {
        self.st
            .work
            .extend(cache::linked(self.conn, st.dev, st.ino)?);
        let known =
            old.is_some_and(|o| (o.stat.dev, o.stat.ino) == (st.dev, st.ino) && o.stat.nlink > 1);
        if !known {
            self.st.new_links.insert((st.dev, st.ino));
        }
        Ok(())
    }

    /// A cache tag that is a file now: its directory is excluded from here
    /// on, and its contents leave the cache (they were not deleted).
    fn note_cache_tag(&self, path: &RelPath, stat: Option<Stat>) -> Result<()> {
        if path.file_name() == CACHE_TAG && stat.is_some_and(|s| s.kind == StatKind::File) {
            if let Some(dir) = path.parent() {
                self.excludes.note_tagged(&dir);
                cache::remove_below(self.conn, &dir)?;
                crate::history::resync_open_posts(self.conn)?;
            }
        }
        Ok(())
    }

    /// Queues `path`'s parent if the cache does not have it as a directory:
    /// then it is new too, and its own event may never come (it was created
    /// before a watch could be added).
    fn queue_uncached_parent(&mut self, path: &RelPath) -> Result<()> {
        let Some(parent) = path.parent() else {
            return Ok(());
        };
        if !self.st.checked(&parent) && !self.st.cached_dirs.contains(&parent) {
            if cache::state(self.conn, &parent)?.is_dir() {
                self.st.cached_dirs.insert(parent);
            } else {
                self.st.work.push(parent);
            }
        }
        Ok(())
    }

    /// A directory that changed but is the same one: queues the entries
    /// that differ, one level, between the disk and the cache.
    fn queue_changed_entries(&mut self, path: &RelPath) -> Result<()> {
        let on_disk: HashSet<Vec<u8>> = self
            .root_fs
            .list_dir(path)
            .ctx_in("list", self.root_fs.path(), path.as_path())?
            .into_iter()
            .collect();
        let cached = cache::children_at(self.conn, Some(path))?;
        for child in &cached {
            if !on_disk.contains(child.file_name().as_encoded_bytes()) {
                self.st.work.push(child.clone());
            }
        }
        let cached: HashSet<&[u8]> = cached
            .iter()
            .map(|c| c.file_name().as_encoded_bytes())
            .collect();
        for name in on_disk.iter().filter(|n| !cached.contains(n.as_slice())) {
            self.st.work.extend(path.join(name).ok());
        }
        Ok(())
    }

    /// A directory that went away or was replaced: so did its contents,
    /// dropped a window at a time (see [`Self::window`]).
    fn drop_contents(&mut self, path: &RelPath) {
        self.st.drops.push((path.clone(), Vec::new()));
    }

    /// A new directory: files created in it before it could be watched
    /// produce no events, so it is walked, lazily (see [`Self::window`]).
    fn scan_new_dir(&mut self, path: &RelPath) {
        let walk = SortedWalk::new(self.root, Some(path), self.excludes);
        self.st.walks.push((path.clone(), walk));
    }

    /// One path a new directory's walk found.
    fn walked(&mut self, path: RelPath, stat: Stat) -> Result<()> {
        self.st.report.entries += 1;
        let old = cache::get(self.conn, &path)?;
        if stat.kind == StatKind::File && stat.nlink > 1 {
            self.queue_other_links(&stat, old.as_ref())?;
        }
        let seen = Seen {
            path: path.clone(),
            stat: Some(stat),
            old,
        };
        self.st.seen.insert(path, seen);
        Ok(())
    }
}

#[cfg(test)]
thread_local! {
    /// The most paths a `check_paths` window held to capture.
    static MOST_SEEN: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// The most paths a `check_paths` call listed as checked.
    static MOST_DONE: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::super::tests::{cached, setup};
    use crate::model::TurnMeta;
    use crate::project::Project;
    use crate::relpath::RelPath;

    /// Ends the open turn; the paths it recorded.
    fn ended_paths(p: &mut Project) -> Vec<String> {
        let ended = p.turn_end().unwrap();
        ended.entries.iter().map(|e| e.path.display()).collect()
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
        p.turn_start(TurnMeta::default()).unwrap();
        fs::create_dir_all(root.join("new/a/b")).unwrap();
        fs::write(root.join("new/a/b/f"), "x").unwrap();
        // Only the top directory's event arrives (the rest were created
        // before a watch could be added).
        p.check_paths([RelPath::new("new").unwrap()]).unwrap();
        let paths = ended_paths(&mut p);
        assert_eq!(paths, ["new", "new/a", "new/a/b", "new/a/b/f"]);
    }

    /// A new directory is walked and captured a window at a time, and a
    /// directory replaced by another is captured as its old and new
    /// contents' differences, whichever window each falls in. What the
    /// walks found is not listed as checked, path by path.
    #[test]
    fn a_new_directorys_walk_is_captured_a_window_at_a_time() {
        let (_tmp, root, mut p) = setup();
        for i in 0..10 {
            fs::create_dir_all(root.join(format!("old/{i}"))).unwrap();
            fs::write(root.join(format!("old/{i}/same")), "same").unwrap();
            fs::write(root.join(format!("old/{i}/gone")), "gone").unwrap();
        }
        p.reconcile().unwrap();
        p.turn_start(TurnMeta::default()).unwrap();
        let mut expected = Vec::new();
        for i in 0..10 {
            for f in ["f", "g", "h"] {
                fs::create_dir_all(root.join(format!("new/{i}"))).unwrap();
                fs::write(root.join(format!("new/{i}/{f}")), f).unwrap();
                expected.push(format!("new/{i}/{f}"));
            }
            expected.push(format!("new/{i}"));
            // (`old/{i}` is a directory as before: no change.)
            expected.push(format!("old/{i}/gone"));
            expected.push(format!("old/{i}/new"));
        }
        expected.push("new".to_string());
        expected.sort();
        // `old` replaced by a directory of the same names, one file
        // changed (`same`, rewritten alike, is not), one gone, one new.
        fs::rename(root.join("old"), root.join("old.bak")).unwrap();
        for i in 0..10 {
            fs::create_dir_all(root.join(format!("old/{i}"))).unwrap();
            fs::write(root.join(format!("old/{i}/same")), "same").unwrap();
            fs::write(root.join(format!("old/{i}/new")), "new").unwrap();
        }
        fs::remove_dir_all(root.join("old.bak")).unwrap();
        super::MOST_SEEN.with(|n| n.set(0));
        super::MOST_DONE.with(|n| n.set(0));
        p.check_paths([RelPath::new("new").unwrap(), RelPath::new("old").unwrap()])
            .unwrap();
        assert_eq!(super::MOST_SEEN.with(|n| n.get()), super::WINDOW);
        assert_eq!(super::MOST_DONE.with(|n| n.get()), 2, "new and old");
        let mut paths = ended_paths(&mut p);
        paths.sort();
        assert_eq!(paths, expected);
        let on_disk = crate::capture::tests::cached(&p);
        assert!(on_disk.iter().all(|c| !c.contains("gone")), "{on_disk:?}");
        assert_eq!(on_disk.iter().filter(|c| c.ends_with("/new")).count(), 10);
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
        let paths = ended_paths(&mut p);
        assert_eq!(paths, ["a", "a/b", "a/b/c", "a/b/c/f", "a/b/sibling"]);
    }
}
