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

/// What is never captured: `.git` (file or directory), built-in dependency and
/// build directories, ckpt's own cookies and temp files, and `.ckptignore`
/// matches. Gitignored files such as `.env` are captured.
#[derive(Clone)]
pub(crate) struct Excludes {
    names: HashSet<Vec<u8>>,
    ignore: Option<Gitignore>,
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
        Excludes { names, ignore }
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
    let excl = Arc::new(excludes.clone());
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
            match RelPath::from_abs(&filter_root, e.path()) {
                Ok(rel) => !excl.is_excluded(&rel, e.file_type().is_some_and(|t| t.is_dir())),
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
