//! Absolute paths kept in byte order, so that a directory and everything
//! below it are one range: forgetting a removed or moved-away subtree costs
//! its size, not a scan of every path. Bytes, not `Path`s: the router looks
//! a path up for every file renamed or removed, and comparing `Path`s
//! component by component was a fifth of the event thread's CPU over a
//! full-tree rewind.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

pub struct PathMap<V> {
    map: BTreeMap<Vec<u8>, V>,
}

impl<V> Default for PathMap<V> {
    fn default() -> Self {
        PathMap {
            map: BTreeMap::new(),
        }
    }
}

fn key(path: &Path) -> &[u8] {
    path.as_os_str().as_bytes()
}

fn path_of(key: Vec<u8>) -> PathBuf {
    PathBuf::from(OsString::from_vec(key))
}

impl<V> PathMap<V> {
    /// Records `path`; returns what it had before.
    pub fn insert(&mut self, path: &Path, value: V) -> Option<V> {
        self.map.insert(key(path).to_vec(), value)
    }

    pub fn get(&self, path: &Path) -> Option<&V> {
        self.map.get(key(path))
    }

    pub fn contains(&self, path: &Path) -> bool {
        self.map.contains_key(key(path))
    }

    pub fn remove(&mut self, path: &Path) -> Option<V> {
        self.map.remove(key(path))
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    #[cfg(test)]
    pub fn paths(&self) -> Vec<PathBuf> {
        self.map.keys().map(|k| path_of(k.clone())).collect()
    }

    /// Forgets every path, returning them in order.
    pub fn take_all(&mut self) -> Vec<(PathBuf, V)> {
        std::mem::take(&mut self.map)
            .into_iter()
            .map(|(k, v)| (path_of(k), v))
            .collect()
    }

    /// Forgets `dir` and every path below it, returning them (`dir` first).
    pub fn remove_below(&mut self, dir: &Path) -> Vec<(PathBuf, V)> {
        let mut gone: Vec<(Vec<u8>, V)> = self.map.remove_entry(key(dir)).into_iter().collect();
        let below: Vec<Vec<u8>> = self
            .map
            .range(ckpt_core::below_range(key(dir)))
            .map(|(k, _)| k.clone())
            .collect();
        for k in below {
            if let Some(v) = self.map.remove(&k) {
                gone.push((k, v));
            }
        }
        gone.into_iter().map(|(k, v)| (path_of(k), v)).collect()
    }
}
