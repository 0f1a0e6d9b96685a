//! A config file the daemon reads again when it changes: one `stat` per
//! look, a parse only when the stat differs, and the last good parse kept
//! while the file is bad.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::{read_file, Layer, SettingsError, Source};

/// What tells a changed file: its inode (an editor renames a new file in),
/// size, and modification and change times in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    ino: u64,
    len: u64,
    mtime_ns: i64,
    ctime_ns: i64,
}

fn stamp(path: &Path) -> Option<Stamp> {
    let m = std::fs::metadata(path).ok()?;
    Some(Stamp {
        ino: m.ino(),
        len: m.len(),
        mtime_ns: m.mtime() * 1_000_000_000 + m.mtime_nsec(),
        ctime_ns: m.ctime() * 1_000_000_000 + m.ctime_nsec(),
    })
}

#[derive(Debug)]
pub struct CachedFile {
    path: PathBuf,
    source: Source,
    /// `None` before the first look, `Some(None)` while there is no file.
    seen: Option<Option<Stamp>>,
    good: Option<Layer>,
    error: Option<SettingsError>,
}

impl CachedFile {
    pub fn new(path: PathBuf, source: Source) -> CachedFile {
        CachedFile {
            path,
            source,
            seen: None,
            good: None,
            error: None,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Looks at the file again; returns whether what it holds changed (a
    /// new good parse, or a new error).
    pub fn refresh(&mut self) -> bool {
        let now = stamp(&self.path);
        if self.seen == Some(now) {
            return false;
        }
        let first = self.seen.is_none();
        self.seen = Some(now);
        match read_file(&self.path, self.source) {
            Ok(layer) => {
                let changed = first || self.good != layer || self.error.is_some();
                self.good = layer;
                self.error = None;
                changed
            }
            Err(e) => {
                let changed = first || self.error.as_ref() != Some(&e);
                self.error = Some(e);
                changed
            }
        }
    }

    /// The last good parse (`None`: no file, or none good yet).
    pub fn layer(&self) -> Option<&Layer> {
        self.good.as_ref()
    }

    /// What is wrong with the file as it is now.
    pub fn error(&self) -> Option<&SettingsError> {
        self.error.as_ref()
    }
}
