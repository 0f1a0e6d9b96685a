//! The watched projects, found by root: longest root prefix wins.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use crate::project::ProjectHandle;

/// A store that could not be opened at start-up; listed so it is not silently
/// forgotten.
#[derive(Clone, Debug)]
pub struct BrokenStore {
    pub id: String,
    pub store_dir: PathBuf,
    /// The root it belongs to, when the daemon's own record knows it.
    pub root: Option<PathBuf>,
    pub error: String,
    /// It failed for lack of space: opened again when a request names its
    /// project, so freeing space is enough to get it back.
    pub retry: bool,
}

#[derive(Default)]
pub struct Registry {
    /// Sorted by root length, longest first, so the first match is the
    /// innermost project.
    projects: RwLock<Vec<Arc<ProjectHandle>>>,
    broken: RwLock<Vec<BrokenStore>>,
}

impl Registry {
    pub fn all(&self) -> Vec<Arc<ProjectHandle>> {
        read(&self.projects).clone()
    }

    pub fn broken(&self) -> Vec<BrokenStore> {
        read(&self.broken).clone()
    }

    pub fn add_broken(&self, b: BrokenStore) {
        write(&self.broken).push(b);
    }

    pub fn remove_broken(&self, id: &str) -> Option<BrokenStore> {
        let mut v = write(&self.broken);
        let i = v.iter().position(|b| b.id == id)?;
        Some(v.remove(i))
    }

    pub fn insert(&self, h: Arc<ProjectHandle>) {
        let mut v = write(&self.projects);
        v.retain(|p| p.id != h.id);
        v.push(h);
        v.sort_by_key(|p| std::cmp::Reverse(p.root.as_os_str().len()));
    }

    pub fn remove(&self, id: &str) -> Option<Arc<ProjectHandle>> {
        let mut v = write(&self.projects);
        let i = v.iter().position(|p| p.id == id)?;
        Some(v.remove(i))
    }

    pub fn get(&self, id: &str) -> Option<Arc<ProjectHandle>> {
        read(&self.projects).iter().find(|p| p.id == id).cloned()
    }

    /// The innermost project whose root contains `path` (or is it).
    pub fn containing(&self, path: &Path) -> Option<Arc<ProjectHandle>> {
        self.containing_rel(path).map(|(h, _)| h)
    }

    /// The innermost project whose root contains `path`, and the rest of
    /// `path` below its root (empty for the root itself). `path` is
    /// absolute and clean, as canonical paths and notify's are; compared as
    /// bytes, since every file event comes through here.
    pub fn containing_rel<'p>(&self, path: &'p Path) -> Option<(Arc<ProjectHandle>, &'p [u8])> {
        read(&self.projects)
            .iter()
            .find_map(|p| Some((Arc::clone(p), below(path, &p.root)?)))
    }

    /// Projects whose roots lie strictly inside `path`.
    pub fn inside(&self, path: &Path) -> Vec<Arc<ProjectHandle>> {
        read(&self.projects)
            .iter()
            .filter(|p| p.root != path && p.root.starts_with(path))
            .cloned()
            .collect()
    }
}

/// The bytes of `path` after `root/` (empty when it is `root`).
fn below<'p>(path: &'p Path, root: &Path) -> Option<&'p [u8]> {
    let root = root.as_os_str().as_bytes();
    let rest = path.as_os_str().as_bytes().strip_prefix(root)?;
    if rest.is_empty() || root.ends_with(b"/") {
        return Some(rest);
    }
    rest.strip_prefix(b"/")
}

fn read<T>(l: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|p| p.into_inner())
}

fn write<T>(l: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::below;
    use std::path::Path;

    #[test]
    fn below_takes_whole_names_only() {
        let b = |p: &str, r: &str| below(Path::new(p), Path::new(r)).map(|s| s.to_vec());
        assert_eq!(b("/a/b/c/d", "/a/b"), Some(b"c/d".to_vec()));
        assert_eq!(b("/a/b", "/a/b"), Some(Vec::new()), "the root itself");
        assert_eq!(b("/a/bc/d", "/a/b"), None, "a sibling sharing a prefix");
        assert_eq!(b("/a", "/a/b"), None, "above the root");
        assert_eq!(b("/x/y", "/"), Some(b"x/y".to_vec()));
    }
}
