//! Plain values many operations carry: path states, counts, skipped paths.

use crate::WirePath;
use serde::{Deserialize, Serialize};

/// One path's state: what pre-images, post-images and rewind targets are made of.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum State {
    Absent,
    File {
        hash: String,
        size: u64,
        #[serde(with = "crate::mode")]
        mode: u32,
    },
    Dir {
        #[serde(with = "crate::mode")]
        mode: u32,
    },
    Symlink {
        target: WirePath,
    },
    Skipped {
        reason: String,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    Added,
    Modified,
    Deleted,
    Skipped,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub added: u64,
    pub modified: u64,
    pub deleted: u64,
    pub skipped: u64,
}

/// A path present but not captured (or not restorable), and why.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Skipped {
    pub path: WirePath,
    pub reason: String,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ScanSummary {
    pub entries: u64,
    pub changed: u64,
    pub bytes_hashed: u64,
    /// Every path present whose content is not captured (what `status`
    /// counts as not captured).
    #[serde(default)]
    pub skipped: Vec<Skipped>,
    /// Directories the scan could not read: nothing below them is
    /// captured, and they are not counted in `skipped`.
    #[serde(default)]
    pub unreadable: Vec<Skipped>,
}

/// A present path as fingerprints name it: `kind` is `file`, `dir` or
/// `symlink`; `sha256` is the hex of the content (of the target for a
/// symlink, empty for a directory); `mode` the permission bits.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathEntry {
    pub kind: String,
    #[serde(with = "crate::mode")]
    pub mode: u32,
    pub sha256: String,
}

/// Lines `start..=end`, 1-based.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineSpan {
    pub start: u32,
    pub end: u32,
}
