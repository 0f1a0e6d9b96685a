//! Walking a project tree: what is excluded, and the stat of everything else.

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, Mutex};

use ignore::gitignore::{Gitignore, GitignoreBuilder};

use crate::confined::Stat;
use crate::model::{is_internal_name, DEFAULT_EXCLUDES};
use crate::relpath::RelPath;

/// The project's ignore file (gitignore syntax), read from the root only.
pub const IGNORE_FILE: &str = ".ckptignore";

/// A directory holding this file is a cache or build output
/// (<https://bford.info/cachedir/>; Cargo tags `target/` with it): excluded.
pub const CACHE_TAG: &str = "CACHEDIR.TAG";

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
    pub fn load(root: &Path, extra: &[String]) -> Excludes {
        let mut names: HashSet<Vec<u8>> = DEFAULT_EXCLUDES
            .iter()
            .map(|n| n.as_bytes().to_vec())
            .collect();
        names.extend(extra.iter().map(|n| n.as_bytes().to_vec()));
        names.insert(b".git".to_vec());
        let file = root.join(IGNORE_FILE);
        let ignore = file.is_file().then(|| {
            let mut b = GitignoreBuilder::new(root);
            if let Some(err) = b.add(&file) {
                tracing::warn!("{}: {err}", file.display());
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
        use std::os::unix::ffi::OsStrExt;
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

/// The result of a walk: every entry found, and directories that could not
/// be read (their cached contents must not be taken as deleted).
#[derive(Default)]
pub(crate) struct Walk {
    pub entries: Vec<(RelPath, Stat)>,
    pub unreadable: Vec<(RelPath, String)>,
}

/// Walks the tree below `start` (the root when `None`), never following
/// symlinks and never entering excluded directories. `start` itself is not
/// listed.
pub(crate) fn walk(
    root: &Path,
    start: Option<&RelPath>,
    excludes: &Excludes,
    threads: usize,
) -> Walk {
    let top = match start {
        Some(rel) => root.join(rel.as_path()),
        None => root.to_path_buf(),
    };
    let excl = excludes.clone();
    let filter_root = root.to_path_buf();
    let walker = ignore::WalkBuilder::new(&top)
        .standard_filters(false)
        .hidden(false)
        .follow_links(false)
        .threads(threads.max(1))
        .filter_entry(move |e| {
            if e.depth() == 0 {
                return true;
            }
            let is_dir = e.file_type().is_some_and(|t| t.is_dir());
            match RelPath::from_abs(&filter_root, e.path()) {
                Ok(rel) if is_dir && e.path().join(CACHE_TAG).is_file() => {
                    excl.note_tagged(&rel);
                    false
                }
                Ok(rel) => !excl.is_excluded(&rel, is_dir),
                Err(_) => false,
            }
        })
        .build_parallel();
    let out = Mutex::new(Walk::default());
    walker.run(|| {
        Box::new(|res| {
            let mut found = None;
            let mut failed = None;
            match res {
                Ok(e) if e.depth() == 0 => {}
                Ok(e) => match (RelPath::from_abs(root, e.path()), e.metadata()) {
                    (Ok(rel), Ok(md)) => found = Some((rel, Stat::from_std(&md))),
                    (Ok(rel), Err(err)) => failed = Some((rel, err.to_string())),
                    (Err(_), _) => {}
                },
                Err(err) => {
                    if let Some(rel) =
                        error_path(&err).and_then(|p| RelPath::from_abs(root, p).ok())
                    {
                        failed = Some((rel, err.to_string()));
                    }
                }
            }
            let mut out = out.lock().expect("walk collector poisoned");
            out.entries.extend(found);
            out.unreadable.extend(failed);
            ignore::WalkState::Continue
        })
    });
    let mut walk = out.into_inner().expect("walk collector poisoned");
    walk.entries.sort_by(|a, b| a.0.cmp(&b.0));
    walk
}

fn error_path(err: &ignore::Error) -> Option<&Path> {
    match err {
        ignore::Error::WithPath { path, .. } => Some(path),
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
            error_path(err)
        }
        _ => None,
    }
}
