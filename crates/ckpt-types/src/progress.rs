//! How far a long operation has got: what the core reports to an observer
//! and the daemon sends to a client that asked for it.

use serde::{Deserialize, Serialize};

/// Which long operation a [`Progress`] is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProgressOp {
    /// A full stat-scan: a first watch's baseline, or the scan after
    /// lost events (no total: the walk is lazy).
    Scan,
    /// A rewind, a redo or a work copy's apply writing the tree.
    Apply,
    /// A kind this client does not know (from a newer daemon).
    #[serde(other)]
    Other,
}

/// A snapshot of a long operation's progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Progress {
    pub op: ProgressOp,
    /// Entries scanned, or paths applied.
    pub done: u64,
    /// Paths to apply, when known before the work starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Bytes read to hash (a scan) or written (an apply) so far.
    #[serde(default)]
    pub bytes: u64,
}
