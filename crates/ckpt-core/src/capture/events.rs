//! Event hints: each path an event names is re-checked, and walked out to
//! what it implies (a parent the cache does not know, a directory's changed
//! entries, a new directory's subtree, a removed directory's contents).

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use rusqlite::Connection;

use super::Seen;
use crate::cache::{self, CacheRow};
use crate::confined::{KeptParent, Root, Stat, StatKind};
use crate::db;
use crate::error::{IoContext, Result};
use crate::model::ScanSummary;
use crate::parts::Parts;
use crate::relpath::RelPath;
use crate::scan::{self, Excludes};
use ckpt_types::names::{CACHE_TAG, IGNORE_FILE};
use ckpt_types::now_ns;

/// Re-checks these paths (and, for a new, replaced or removed directory,
/// everything below it); captures what changed. Excluded paths are
/// ignored.
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
    let conn: &Connection = parts.conn;
    let mut check = PathCheck {
        conn,
        root_fs: parts.root_fs,
        root: parts.root,
        excludes: parts.excludes,
        report: ScanSummary::default(),
        seen: BTreeMap::new(),
        done: HashSet::new(),
        cached_dirs: HashSet::new(),
        work,
        new_links: HashSet::new(),
        parents: KeptParent::default(),
    };
    // One read transaction for the lookups (thousands after a rewind).
    db::reading(conn, || {
        loop {
            while let Some(path) = check.work.pop() {
                check.one(path)?;
            }
            if check.new_links.is_empty() {
                return Ok(());
            }
            // One scan of the cache for every new link of this call.
            let inodes = std::mem::take(&mut check.new_links);
            check.work = cache::named_inodes(check.conn, &inodes)?;
        }
    })?;
    let PathCheck {
        seen, mut report, ..
    } = check;
    let seen = seen.into_values().filter(|s| match (&s.stat, &s.old) {
        (None, None) => false,
        (Some(st), Some(o)) => !o.unchanged(st),
        _ => true,
    });
    super::pipeline::capture(parts, seen.collect(), Vec::new(), scan_start, &mut report)?;
    Ok(report)
}

/// One `check_paths` call's worklist and what it found.
struct PathCheck<'a> {
    conn: &'a Connection,
    root_fs: &'a Root,
    root: &'a Path,
    excludes: &'a Excludes,
    report: ScanSummary,
    /// What differs from the cache (or may), by path.
    seen: BTreeMap<RelPath, Seen>,
    /// Paths checked already.
    done: HashSet<RelPath>,
    /// Directories the cache has as directories: most paths share one.
    cached_dirs: HashSet<RelPath>,
    /// Paths still to check.
    work: Vec<RelPath>,
    /// Files (dev, ino) that gained a cached name with more than one link:
    /// their names cached before that are looked for by a scan.
    new_links: HashSet<(u64, u64)>,
    /// The last path's parent, kept open: the work is in path order, so
    /// siblings come one after another.
    parents: KeptParent,
}

impl PathCheck<'_> {
    /// Checks one path: queues what it implies and records it if it differs
    /// from the cache.
    fn one(&mut self, path: RelPath) -> Result<()> {
        if !self.done.insert(path.clone()) {
            return Ok(());
        }
        let stat = self.root_fs.lstat_kept(&path, &mut self.parents).ctx_in(
            "stat",
            self.root_fs.path(),
            path.as_path(),
        )?;
        self.note_cache_tag(&path, stat)?;
        let is_dir = stat.is_some_and(|s| s.kind == StatKind::Dir);
        if self.excludes.is_excluded(&path, is_dir) {
            return Ok(());
        }
        self.report.entries += 1;
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
            self.drop_contents(&path)?;
        }
        if is_dir && !same_dir {
            if self.root.join(path.as_path()).join(CACHE_TAG).is_file() {
                self.excludes.note_tagged(&path);
                return Ok(());
            }
            self.scan_new_dir(&path)?;
        }
        match (&stat, &old) {
            (None, None) => {}
            (Some(st), Some(o)) if o.unchanged(st) => {}
            _ => {
                if let Some(st) = stat.filter(|s| s.kind == StatKind::File && s.nlink > 1) {
                    self.queue_other_links(&st, old.as_ref())?;
                }
                self.seen.insert(path.clone(), Seen { path, stat, old });
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
        self.work.extend(cache::linked(self.conn, st.dev, st.ino)?);
        let known =
            old.is_some_and(|o| (o.stat.dev, o.stat.ino) == (st.dev, st.ino) && o.stat.nlink > 1);
        if !known {
            self.new_links.insert((st.dev, st.ino));
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
        if !self.done.contains(&parent) && !self.cached_dirs.contains(&parent) {
            if cache::state(self.conn, &parent)?.is_dir() {
                self.cached_dirs.insert(parent);
            } else {
                self.work.push(parent);
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
        let cached = cache::children(self.conn, path)?;
        for child in &cached {
            if !on_disk.contains(child.file_name().as_encoded_bytes()) {
                self.work.push(child.clone());
            }
        }
        let cached: HashSet<&[u8]> = cached
            .iter()
            .map(|c| c.file_name().as_encoded_bytes())
            .collect();
        for name in on_disk.iter().filter(|n| !cached.contains(n.as_slice())) {
            self.work.extend(path.join(name).ok());
        }
        Ok(())
    }

    /// A directory that went away or was replaced: so did its contents.
    fn drop_contents(&mut self, path: &RelPath) -> Result<()> {
        for (p, row) in cache::below(self.conn, path)? {
            self.seen.entry(p.clone()).or_insert(Seen {
                path: p,
                stat: None,
                old: Some(row),
            });
        }
        Ok(())
    }

    /// A new directory: files created in it before it could be watched
    /// produce no events, so it is walked.
    fn scan_new_dir(&mut self, path: &RelPath) -> Result<()> {
        let walk = scan::walk(self.root, Some(path), self.excludes);
        self.report.entries += walk.entries.len() as u64;
        self.report.unreadable.extend(walk.unreadable);
        for (p, st) in walk.entries {
            let old = cache::get(self.conn, &p)?;
            if st.kind == StatKind::File && st.nlink > 1 {
                self.queue_other_links(&st, old.as_ref())?;
            }
            self.done.insert(p.clone());
            self.seen.insert(
                p.clone(),
                Seen {
                    path: p,
                    stat: Some(st),
                    old,
                },
            );
        }
        Ok(())
    }
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
