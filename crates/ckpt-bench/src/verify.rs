//! Byte-for-byte tree states: every entry's kind, permission bits, and for
//! files the SHA-256 of their full content; symlink targets; directories
//! (so an empty directory left behind, or one not recreated, is a difference).

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use anyhow::{Context, Result};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entry {
    Dir { mode: u32 },
    File { mode: u32, len: u64, hash: [u8; 32] },
    Symlink { target: PathBuf },
    Other,
}

/// The state of a tree: relative path -> entry. The root itself is not an entry.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TreeState {
    pub entries: BTreeMap<PathBuf, Entry>,
}

/// Which top-level names to leave out of a capture.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Everything under the root except any directory named `.git`.
    WorkTree,
    /// Everything under the root (used on a `.git` directory itself).
    All,
}

fn hash_file(path: &Path) -> Result<[u8; 32]> {
    let data = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let d = ring::digest::digest(&ring::digest::SHA256, &data);
    let mut out = [0u8; 32];
    out.copy_from_slice(d.as_ref());
    Ok(out)
}

fn stat_entry(path: &Path) -> Result<(Entry, bool)> {
    let md = fs::symlink_metadata(path).with_context(|| format!("lstat {}", path.display()))?;
    let ft = md.file_type();
    let mode = md.permissions().mode() & 0o7777;
    Ok(if ft.is_dir() {
        (Entry::Dir { mode }, false)
    } else if ft.is_file() {
        (
            Entry::File {
                mode,
                len: md.len(),
                hash: [0; 32],
            },
            true,
        )
    } else if ft.is_symlink() {
        let target = fs::read_link(path).with_context(|| format!("readlink {}", path.display()))?;
        (Entry::Symlink { target }, false)
    } else {
        (Entry::Other, false)
    })
}

/// Captures `root` completely, hashing file contents on a few threads.
pub fn capture(root: &Path, scope: Scope) -> Result<TreeState> {
    let mut entries = BTreeMap::new();
    let mut to_hash = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let dir = root.join(&rel);
        for de in fs::read_dir(&dir).with_context(|| format!("listing {}", dir.display()))? {
            let de = de.with_context(|| format!("listing {}", dir.display()))?;
            if scope == Scope::WorkTree && de.file_name() == ".git" {
                continue;
            }
            let r = rel.join(de.file_name());
            let (e, needs_hash) = stat_entry(&root.join(&r))?;
            if matches!(e, Entry::Dir { .. }) {
                stack.push(r.clone());
            }
            if needs_hash {
                to_hash.push(r.clone());
            }
            entries.insert(r, e);
        }
    }
    let hashes = hash_all(root, &to_hash)?;
    for (r, h) in to_hash.iter().zip(hashes) {
        if let Some(Entry::File { hash, .. }) = entries.get_mut(r) {
            *hash = h;
        }
    }
    Ok(TreeState { entries })
}

fn hash_all(root: &Path, rels: &[PathBuf]) -> Result<Vec<[u8; 32]>> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 4);
    let next = AtomicUsize::new(0);
    let out = Mutex::new(vec![[0u8; 32]; rels.len()]);
    let first_err: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= rels.len() {
                    break;
                }
                match hash_file(&root.join(&rels[i])) {
                    Ok(h) => out.lock().unwrap_or_else(|e| e.into_inner())[i] = h,
                    Err(e) => {
                        first_err
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .get_or_insert(e);
                        break;
                    }
                }
            });
        }
    });
    if let Some(e) = first_err.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(e);
    }
    Ok(out.into_inner().unwrap_or_else(|e| e.into_inner()))
}

impl TreeState {
    /// Re-reads the given paths (and their parent directories) from disk,
    /// so the state becomes "what it was, plus these known changes".
    pub fn refresh(&mut self, root: &Path, rels: &[PathBuf]) -> Result<()> {
        for rel in rels {
            let mut cur = rel.as_path();
            loop {
                self.refresh_one(root, cur)?;
                match cur.parent() {
                    Some(p) if !p.as_os_str().is_empty() => cur = p,
                    _ => break,
                }
            }
        }
        Ok(())
    }

    fn refresh_one(&mut self, root: &Path, rel: &Path) -> Result<()> {
        let path = root.join(rel);
        if fs::symlink_metadata(&path).is_err() {
            let prefix = rel.to_path_buf();
            self.entries.retain(|k, _| !k.starts_with(&prefix));
            return Ok(());
        }
        let (mut e, needs_hash) = stat_entry(&path)?;
        if needs_hash {
            if let Entry::File { hash, .. } = &mut e {
                *hash = hash_file(&path)?;
            }
        }
        self.entries.insert(rel.to_path_buf(), e);
        Ok(())
    }

    /// Regular files, sorted, with their sizes.
    pub fn files(&self) -> Vec<(PathBuf, u64)> {
        self.entries
            .iter()
            .filter_map(|(p, e)| match e {
                Entry::File { len, .. } => Some((p.clone(), *len)),
                _ => None,
            })
            .collect()
    }

    /// Total size of regular files.
    pub fn bytes(&self) -> u64 {
        self.files().iter().map(|(_, l)| l).sum()
    }
}

/// Human-readable differences, at most `limit` of them (plus a count).
pub fn diff(expected: &TreeState, actual: &TreeState, limit: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut n = 0usize;
    let mut push = |s: String| {
        n += 1;
        if out.len() < limit {
            out.push(s);
        }
    };
    for (p, e) in &expected.entries {
        match actual.entries.get(p) {
            None => push(format!("missing {}", p.display())),
            Some(a) if a != e => push(format!(
                "differs {}: expected {}, found {}",
                p.display(),
                short(e),
                short(a)
            )),
            _ => {}
        }
    }
    for p in actual.entries.keys() {
        if !expected.entries.contains_key(p) {
            push(format!("unexpected {}", p.display()));
        }
    }
    if n > out.len() {
        out.push(format!("... {} differences in all", n));
    }
    out
}

fn short(e: &Entry) -> String {
    match e {
        Entry::Dir { mode } => format!("dir {mode:o}"),
        Entry::File { mode, len, hash } => {
            format!(
                "file {mode:o} {len} bytes sha256 {:02x}{:02x}{:02x}{:02x}…",
                hash[0], hash[1], hash[2], hash[3]
            )
        }
        Entry::Symlink { target } => format!("symlink -> {}", target.display()),
        Entry::Other => "special file".into(),
    }
}
