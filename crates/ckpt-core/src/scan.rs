//! Walking a project tree: what is excluded, and the stat of everything else.

use std::collections::HashSet;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use ignore::gitignore::{Gitignore, GitignoreBuilder};

use crate::confined::Stat;
use crate::model::Skipped;
use crate::relpath::RelPath;
use ckpt_types::names::{is_internal_name, CACHE_TAG, DEFAULT_EXCLUDES, GIT_DIR, IGNORE_FILE};

/// Whether the directory at `abs` is tagged with [`CACHE_TAG`].
pub fn is_cache_dir(abs: &Path) -> bool {
    abs.join(CACHE_TAG).is_file()
}

/// What is never captured: `.git` (file or directory), built-in dependency and
/// build directories, ckpt's own cookies and temp files, and `.ckptignore`
/// matches, and directories tagged with `CACHEDIR.TAG`. Gitignored files such
/// as `.env` are captured.
#[derive(Clone)]
pub(crate) struct Excludes {
    names: Arc<HashSet<Vec<u8>>>,
    ignore: Option<Gitignore>,
    /// Tagged directories found so far (by walks and by events).
    tagged: Arc<Mutex<HashSet<Vec<u8>>>>,
}

impl Excludes {
    /// The rules for `root`: the built-in names, `extra` (gitignore
    /// patterns from the settings, as if at the top of `.ckptignore`), and
    /// `.ckptignore`.
    pub fn load(root: &Path, extra: &[String]) -> Excludes {
        let mut names: HashSet<Vec<u8>> = DEFAULT_EXCLUDES
            .iter()
            .map(|n| n.as_bytes().to_vec())
            .collect();
        names.insert(GIT_DIR.to_vec());
        let file = root.join(IGNORE_FILE);
        let has_file = file.is_file();
        let ignore = (has_file || !extra.is_empty()).then(|| {
            let mut b = GitignoreBuilder::new(root);
            for line in extra {
                if let Err(err) = b.add_line(None, line) {
                    tracing::warn!("capture.excludes: {line}: {err}");
                }
            }
            if has_file {
                if let Some(err) = b.add(&file) {
                    tracing::warn!("{}: {err}", file.display());
                }
            }
            b.build().unwrap_or_else(|err| {
                tracing::warn!("{}: {err}", file.display());
                Gitignore::empty()
            })
        });
        Excludes {
            names: Arc::new(names),
            ignore,
            tagged: Arc::default(),
        }
    }

    /// Records that `dir` holds a `CACHEDIR.TAG`: excluded from now on.
    pub fn note_tagged(&self, dir: &RelPath) {
        self.tagged
            .lock()
            .expect("tag set poisoned")
            .insert(dir.as_bytes().to_vec());
    }

    fn name_excluded(&self, name: &[u8]) -> bool {
        self.names.contains(name) || is_internal_name(name)
    }

    /// Whether `path` (or a directory above it) is excluded.
    pub fn is_excluded(&self, path: &RelPath, is_dir: bool) -> bool {
        if path.components().any(|c| self.name_excluded(c.as_bytes())) {
            return true;
        }
        let tagged = self.tagged.lock().expect("tag set poisoned");
        if !tagged.is_empty() {
            let bytes = path.as_bytes();
            let below_tagged = bytes
                .iter()
                .enumerate()
                .filter(|(_, &b)| b == b'/')
                .any(|(i, _)| tagged.contains(&bytes[..i]));
            if below_tagged || (is_dir && tagged.contains(bytes)) {
                return true;
            }
        }
        drop(tagged);
        match &self.ignore {
            Some(gi) => gi
                .matched_path_or_any_parents(path.as_path(), is_dir)
                .is_ignore(),
            None => false,
        }
    }
}

/// Every path ckpt captures below `root`, in byte order, and the paths
/// that could not be read: the daemon's own rules (`.git`, [`DEFAULT_EXCLUDES`],
/// `extra` gitignore patterns, `CACHEDIR.TAG`-tagged directories,
/// `.ckptignore` matches, ckpt's cookies and temp files), for clients that
/// copy what ckpt would capture (`ckptctl workcopy create --base current`).
pub fn captured_paths(root: &Path, extra: &[String]) -> (Vec<RelPath>, Vec<Skipped>) {
    let w = walk(root, None, &Excludes::load(root, extra));
    (
        w.entries.into_iter().map(|(p, _)| p).collect(),
        w.unreadable,
    )
}

/// The result of a walk: every entry found, and directories that could not
/// be read (their cached contents must not be taken as deleted).
#[derive(Default)]
pub(crate) struct Walk {
    pub entries: Vec<(RelPath, Stat)>,
    pub unreadable: Vec<Skipped>,
}

/// Walks the tree below `start` (the root when `None`) and collects it; see
/// [`SortedWalk`].
pub(crate) fn walk(root: &Path, start: Option<&RelPath>, excludes: &Excludes) -> Walk {
    let mut w = SortedWalk::new(root, start, excludes);
    let entries = w.by_ref().collect();
    Walk {
        entries,
        unreadable: w.unreadable,
    }
}

/// What is left to yield in one directory, sorted so that `pop` gives the
/// next one.
enum Item {
    Entry(RelPath, Stat),
    /// A directory's contents, read when their turn comes.
    Below(RelPath),
}

impl Item {
    /// The sort key: a directory's contents sort as `dir/`, which is where
    /// byte order puts every path below it (`a` < `a-b` < `a/x`).
    fn key(&self) -> (&[u8], bool) {
        match self {
            Item::Entry(p, _) => (p.as_bytes(), false),
            Item::Below(p) => (p.as_bytes(), true),
        }
    }
}

fn key_cmp(a: &Item, b: &Item) -> std::cmp::Ordering {
    let ((a, a_below), (b, b_below)) = (a.key(), b.key());
    let a = a.iter().chain(a_below.then_some(&b'/'));
    let b = b.iter().chain(b_below.then_some(&b'/'));
    a.cmp(b)
}

/// Walks a tree lazily, yielding every entry below `start` (not `start`
/// itself) with its lstat, in the byte order of the relative paths: the
/// order of the cache's keys, so the walk can be merged with the cache
/// without holding either in memory. Never follows symlinks, never enters
/// excluded or `CACHEDIR.TAG`-tagged directories (noting the latter in
/// `excludes`). Holds one sorted listing per directory level.
pub(crate) struct SortedWalk {
    root: PathBuf,
    excludes: Excludes,
    stack: Vec<Vec<Item>>,
    /// Directories (and entries) that could not be read, so far.
    pub unreadable: Vec<Skipped>,
}

impl SortedWalk {
    pub fn new(root: &Path, start: Option<&RelPath>, excludes: &Excludes) -> SortedWalk {
        let mut w = SortedWalk {
            root: root.to_path_buf(),
            excludes: excludes.clone(),
            stack: Vec::new(),
            unreadable: Vec::new(),
        };
        w.read(start);
        w
    }

    /// Lists `dir` and pushes its sorted entries as a new level.
    fn read(&mut self, dir: Option<&RelPath>) {
        let abs = match dir {
            Some(rel) => self.root.join(rel.as_path()),
            None => self.root.clone(),
        };
        let listing = match std::fs::read_dir(&abs) {
            Ok(l) => l,
            Err(err) => {
                if let Some(rel) = dir {
                    self.unreadable
                        .push(Skipped::new(rel.clone(), err.to_string()));
                }
                return;
            }
        };
        let mut items = Vec::new();
        for entry in listing {
            let entry = match entry {
                Ok(e) => e,
                Err(err) => {
                    if let Some(rel) = dir {
                        self.unreadable
                            .push(Skipped::new(rel.clone(), err.to_string()));
                    }
                    continue;
                }
            };
            let name = entry.file_name();
            let rel = match dir {
                Some(d) => d.join(name.as_bytes()),
                None => RelPath::new(name.as_bytes()),
            };
            let Ok(rel) = rel else { continue };
            // `DirEntry::metadata` does not follow a symlink.
            let md = match entry.metadata() {
                Ok(md) => md,
                Err(err) => {
                    self.unreadable.push(Skipped::new(rel, err.to_string()));
                    continue;
                }
            };
            let is_dir = md.is_dir();
            if is_dir && is_cache_dir(&entry.path()) {
                self.excludes.note_tagged(&rel);
                continue;
            }
            if self.excludes.is_excluded(&rel, is_dir) {
                continue;
            }
            if is_dir {
                items.push(Item::Below(rel.clone()));
            }
            items.push(Item::Entry(rel, Stat::from_std(&md)));
        }
        items.sort_unstable_by(|a, b| key_cmp(b, a));
        self.stack.push(items);
    }
}

impl Iterator for SortedWalk {
    type Item = (RelPath, Stat);

    fn next(&mut self) -> Option<(RelPath, Stat)> {
        loop {
            let level = self.stack.last_mut()?;
            match level.pop() {
                None => {
                    self.stack.pop();
                }
                Some(Item::Entry(path, stat)) => return Some((path, stat)),
                Some(Item::Below(dir)) => self.read(Some(&dir)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    #[test]
    fn captured_paths_follow_the_capture_rules() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        for d in [".git/objects", "node_modules/m", "t", "scratch", "src"] {
            fs::create_dir_all(root.join(d)).unwrap();
        }
        for f in [
            ".env",
            ".ckptignore",
            "t/CACHEDIR.TAG",
            "scratch/s",
            "src/a",
            "x.log",
        ] {
            fs::write(root.join(f), "*.log\n/scratch/\n").unwrap();
        }
        let (paths, unreadable) = captured_paths(root, &["t".to_string()]);
        let got: Vec<String> = paths.iter().map(RelPath::display).collect();
        assert_eq!(got, [".ckptignore", ".env", "src", "src/a"]);
        assert!(unreadable.is_empty());
    }

    #[test]
    fn sorted_walk_yields_paths_in_byte_order_and_skips_excluded_dirs() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        for d in ["a/x/y", "a/x-y", "a0", "node_modules/m", "t"] {
            fs::create_dir_all(root.join(d)).unwrap();
        }
        for f in [
            "a-b",
            "a.rs",
            "a/x/y/1",
            "a/x/z",
            "a/x.txt",
            "a/x-y/1",
            "a0/q",
            "node_modules/m/i.js",
            "t/CACHEDIR.TAG",
        ] {
            fs::write(root.join(f), f).unwrap();
        }
        let excludes = Excludes::load(root, &[]);
        let got: Vec<String> = SortedWalk::new(root, None, &excludes)
            .map(|(p, _)| p.display())
            .collect();
        assert_eq!(
            got,
            [
                "a", "a-b", "a.rs", "a/x", "a/x-y", "a/x-y/1", "a/x.txt", "a/x/y", "a/x/y/1",
                "a/x/z", "a0", "a0/q"
            ]
        );
        let a = RelPath::new("a").unwrap();
        let below: Vec<String> = SortedWalk::new(root, Some(&a), &excludes)
            .map(|(p, _)| p.display())
            .collect();
        assert_eq!(
            below,
            ["a/x", "a/x-y", "a/x-y/1", "a/x.txt", "a/x/y", "a/x/y/1", "a/x/z"]
        );
        assert!(
            excludes.is_excluded(&RelPath::new("t/x").unwrap(), false),
            "tagged dir noted"
        );
    }
}
