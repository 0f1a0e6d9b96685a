//! The directories watched for a project. In the per-directory shape, one
//! non-recursive watch per captured directory, so excluded trees (`.git`,
//! `node_modules`, tagged build directories, `.ckptignore` matches) cost no
//! watch and send no events. One walk, [`ProjectHandle::walk_below`], both
//! adds the watches of a new directory and, when its recheck is released
//! by the next cookie, lists what is in it then. In the recursive shape,
//! one watch on the root covers the tree (the router drops what is
//! excluded); the walk only lists.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ckpt_core::{is_cache_dir, RelPath, CACHE_TAG};

use super::{DegradedReason, ProjectHandle};
use crate::backend::{self, Backend, Shape};
use crate::mutex::lock;
use crate::pathmap::PathMap;

/// The directories of a project that have a watch, and the backend to add
/// more with. Never held while calling the backend: the backend's thread
/// runs the router, which updates `dirs`.
#[derive(Default)]
pub(super) struct DirWatches {
    backend: Option<Arc<Backend>>,
    /// Absolute paths, root included.
    dirs: PathMap<()>,
}

/// Whether a directory already in the watch table is watched again.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Again {
    No,
    /// After lost events: the table is keyed by path, and the directory at
    /// a path may have been replaced unseen (its watch went with the old
    /// one). Watching an inode again only returns its watch.
    Yes,
}

impl ProjectHandle {
    /// Watches the root and every captured directory below it (the project
    /// must already be in the registry, so early events find it). Failures
    /// degrade the project.
    pub fn start_watching(&self, backend: &Arc<Backend>) {
        lock(&self.watches).backend = Some(Arc::clone(backend));
        let root = self.root.clone();
        if backend.shape() == Shape::Recursive {
            self.watch_tree(backend);
            return;
        }
        if let Err(e) = self.add_dir(backend, &root, Again::No) {
            self.mark_degraded(DegradedReason::Watcher(backend::describe(&e)));
            return;
        }
        self.walk_below(Some(backend), &root, Again::No, None);
    }

    /// Drops every watch.
    pub fn stop_watching(&self) {
        let (backend, dirs) = {
            let mut w = lock(&self.watches);
            (w.backend.take(), w.dirs.take_all())
        };
        if let Some(backend) = backend {
            for (dir, ()) in &dirs {
                backend.unwatch_dir(dir);
            }
        }
    }

    /// Drops every watch and watches the tree at the root again with the
    /// same backend: the root was replaced, so the old watches name the old
    /// directories.
    pub(super) fn watch_again(&self) {
        let backend = lock(&self.watches).backend.clone();
        self.stop_watching();
        if let Some(backend) = backend {
            self.start_watching(&backend);
        }
    }

    /// Forgets the watches of `dir` and everything below it: the backend
    /// dropped them (the directory went away) or they are stale (one was
    /// renamed in); the worker watches what is there again.
    pub fn forget_watches_below(&self, dir: &Path) {
        lock(&self.watches).dirs.remove_below(dir);
    }

    /// The recursive shape's one watch, on the root.
    fn watch_tree(&self, backend: &Backend) {
        lock(&self.watches).dirs.insert(&self.root, ());
        if let Err(e) = backend.watch_tree(&self.root) {
            lock(&self.watches).dirs.remove(&self.root);
            if !backend::nothing_to_watch(&e) {
                self.watch_failed(&e);
            }
        }
    }

    /// Adds one directory's watch unless it has one; true if it is new. A
    /// directory that vanished or cannot be read is not an error.
    fn add_dir(&self, backend: &Backend, abs: &Path, again: Again) -> backend::Result<bool> {
        let known = lock(&self.watches).dirs.insert(abs, ()).is_some();
        if known && again == Again::No {
            return Ok(false);
        }
        match backend.watch_dir(abs) {
            Ok(()) => Ok(!known),
            Err(e) => {
                lock(&self.watches).dirs.remove(abs);
                if backend::nothing_to_watch(&e) {
                    tracing::debug!(dir = %abs.display(), error = %e, "not watched");
                    return Ok(false);
                }
                Err(e)
            }
        }
    }

    /// The one walk of a subtree. With `backend`, watches every captured
    /// directory below `top` (already watched), each before it is listed,
    /// so a subdirectory made meanwhile either is listed or sends its own
    /// create event. With `found`, collects every captured path listed (a
    /// tagged directory itself, not what is in it). Symlinks are never
    /// followed; the core's rules decide what is captured. Returns how many
    /// watches were added; a watch limit degrades the project and stops.
    fn walk_below(
        &self,
        backend: Option<&Backend>,
        top: &Path,
        again: Again,
        mut found: Option<&mut dyn FnMut(RelPath, bool)>,
    ) -> usize {
        let mut added = 0;
        let mut stack = vec![top.to_path_buf()];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            let mut children: Vec<(PathBuf, RelPath, bool)> = Vec::new();
            for entry in entries.flatten() {
                let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
                if !is_dir && found.is_none() {
                    continue;
                }
                let abs = entry.path();
                if let Ok(rel) = RelPath::from_abs(&self.root, &abs) {
                    children.push((abs, rel, is_dir));
                }
            }
            if children.is_empty() {
                continue;
            }
            let keep = self.call(|p| {
                Ok(children
                    .iter()
                    .map(|(_, rel, is_dir)| !p.is_excluded(rel, *is_dir))
                    .collect::<Vec<bool>>())
            });
            let Ok(keep) = keep else {
                continue;
            };
            for ((abs, rel, is_dir), keep) in children.into_iter().zip(keep) {
                if !keep {
                    continue;
                }
                if let Some(found) = found.as_deref_mut() {
                    found(rel, is_dir);
                }
                if !is_dir || is_cache_dir(&abs) {
                    continue;
                }
                if let Some(backend) = backend {
                    match self.add_dir(backend, &abs, again) {
                        Ok(true) => added += 1,
                        Ok(false) => {}
                        Err(e) => {
                            self.watch_failed(&e);
                            return added;
                        }
                    }
                }
                stack.push(abs);
            }
        }
        added
    }

    /// After the worker checked `paths`: gives every captured directory among
    /// them (new ones, renamed-in ones, whose watches the router dropped) a
    /// watch, with its subdirectories, and drops the watches of directories
    /// that became excluded (a `CACHEDIR.TAG` appeared). Returns the
    /// directories that got new watches: files made in them before the
    /// watch existed send no event, so they are listed again at the next
    /// cookie ([`Self::each_below_released`]).
    pub(super) fn sync_dirs(&self, paths: &[RelPath]) -> Vec<RelPath> {
        let Some(backend) = lock(&self.watches).backend.clone() else {
            return Vec::new();
        };
        if self.scans_only() || backend.shape() == Shape::Recursive {
            return Vec::new();
        }
        let mut fresh = Vec::new();
        for rel in paths {
            let abs = self.root.join(rel.as_path());
            if rel.file_name() == CACHE_TAG {
                if let Some(dir) = rel.parent() {
                    let dir_abs = self.root.join(dir.as_path());
                    let watched = lock(&self.watches).dirs.contains(&dir_abs);
                    if watched
                        && self
                            .call(|p| Ok(p.is_excluded(&dir, true)))
                            .unwrap_or(false)
                    {
                        let gone = lock(&self.watches).dirs.remove_below(&dir_abs);
                        for (d, ()) in gone.iter().rev() {
                            backend.unwatch_dir(d);
                        }
                    }
                }
                continue;
            }
            if lock(&self.watches).dirs.contains(&abs) {
                continue;
            }
            if !std::fs::symlink_metadata(&abs).is_ok_and(|m| m.is_dir()) {
                continue;
            }
            // Only below a watched parent: an excluded or vanished parent's
            // children stay unwatched.
            let parent_watched = abs
                .parent()
                .is_some_and(|p| lock(&self.watches).dirs.contains(p));
            if !parent_watched
                || is_cache_dir(&abs)
                || self.call(|p| Ok(p.is_excluded(rel, true))).unwrap_or(true)
            {
                continue;
            }
            match self.add_dir(&backend, &abs, Again::No) {
                Ok(true) => {}
                Ok(false) => continue,
                Err(e) => {
                    self.watch_failed(&e);
                    break;
                }
            }
            self.walk_below(Some(&backend), &abs, Again::No, None);
            fresh.push(rel.clone());
        }
        fresh
    }

    /// Calls `found` with each path released by a cookie and, for each
    /// that is a directory, every captured path in it now, as it is
    /// listed, with whether it is a directory: a directory that appeared
    /// or was renamed in may have changed inside before its watches
    /// existed, and its mtime does not tell.
    pub(super) fn each_below_released(
        &self,
        released: Vec<RelPath>,
        found: &mut dyn FnMut(RelPath, bool),
    ) {
        for rel in released {
            let abs = self.root.join(rel.as_path());
            let is_dir = std::fs::symlink_metadata(&abs).is_ok_and(|m| m.is_dir());
            found(rel, is_dir);
            if is_dir && !is_cache_dir(&abs) {
                self.walk_below(None, &abs, Again::No, Some(found));
            }
        }
    }

    /// Before a full scan: watches whatever directory lacks a watch (events
    /// lost in an overflow may have hidden new directories).
    pub(super) fn resync_watches(&self) {
        let Some(backend) = lock(&self.watches).backend.clone() else {
            return;
        };
        if self.scans_only() {
            return;
        }
        let root = self.root.clone();
        if !lock(&self.watches).dirs.contains(&root) {
            return;
        }
        if backend.shape() == Shape::Recursive {
            if self.degraded() != Some(DegradedReason::LostEvents) {
                return;
            }
            // Lost events may have hidden new directories from the
            // backend's own walk, and watching a watched root again adds
            // nothing: watching it afresh walks the tree again.
            backend.unwatch_dir(&root);
            self.watch_tree(&backend);
            return;
        }
        let added = self.walk_below(Some(&backend), &root, Again::Yes, None);
        if added > 0 {
            tracing::debug!(root = %root.display(), added, "watches added after a full scan");
        }
    }

    /// A watch could not be added (the watch limit, mostly): capture relies
    /// on full scans from now on. Already persistently degraded: nothing
    /// more to say (and no new scan to schedule, or scans and retries would
    /// loop).
    fn watch_failed(&self, e: &backend::Error) {
        if self.scans_only() {
            return;
        }
        self.mark_degraded(DegradedReason::Watcher(backend::describe(e)));
    }

    /// Whether adding watches is pointless: the project already relies on scans.
    fn scans_only(&self) -> bool {
        self.degraded().is_some_and(|d| d.persistent())
    }

    /// The directories watched for this project (in the recursive shape,
    /// the root's one watch).
    pub fn watch_count(&self) -> u64 {
        lock(&self.watches).dirs.len() as u64
    }

    /// Records a watch without asking the backend, for tests of the router.
    #[cfg(test)]
    pub fn note_watched(&self, abs: &Path) {
        lock(&self.watches).dirs.insert(abs, ());
    }

    /// The watched directories, in order.
    #[cfg(test)]
    pub fn watched_dirs(&self) -> Vec<PathBuf> {
        lock(&self.watches).dirs.paths()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_walk_watches_a_new_directory_and_lists_it_when_released() {
        for shape in crate::shape::available() {
            let t = tempfile::tempdir().unwrap();
            let h = crate::project::for_test(t.path());
            let root = h.root.clone();
            let backend = Arc::new(Backend::start(shape, |_| {}, || {}).unwrap());
            h.start_watching(&backend);
            for d in ["new/sub", "new/node_modules/m", "new/tagged/in"] {
                std::fs::create_dir_all(root.join(d)).unwrap();
            }
            for f in [
                "new/a",
                "new/sub/b",
                "new/node_modules/m/c",
                "new/tagged/CACHEDIR.TAG",
            ] {
                std::fs::write(root.join(f), f).unwrap();
            }

            // The recursive shape adds no watch: its one watch covers the
            // tree; the new directory is listed at the cookie all the same
            // (the router asks for that on its create event).
            let new = RelPath::new("new").unwrap();
            let fresh = h.sync_dirs(std::slice::from_ref(&new));
            let (fresh, watched) = match shape {
                Shape::PerDirectory => (fresh, vec!["", "new", "new/sub"]),
                Shape::Recursive => {
                    assert!(fresh.is_empty());
                    (vec![new], vec![""])
                }
            };
            std::fs::write(root.join("new/sub/late"), "made after the watch walk").unwrap();
            let mut found: Vec<String> = Vec::new();
            h.each_below_released(fresh, &mut |p, _| found.push(p.display()));
            found.sort();
            assert_eq!(
                found,
                [
                    "new",
                    "new/a",
                    "new/sub",
                    "new/sub/b",
                    "new/sub/late",
                    "new/tagged"
                ]
            );
            let watched: Vec<PathBuf> = watched.iter().map(|d| root.join(d)).collect();
            assert_eq!(h.watched_dirs(), watched, "{shape:?}");
            backend.shutdown();
        }
    }
}
