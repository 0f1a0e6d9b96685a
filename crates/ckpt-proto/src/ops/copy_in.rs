//! `CopyIn`: a work copy written back into the project.

use serde::{Deserialize, Serialize};

use crate::WirePath;
use crate::{Action, Outcome, PathEntry, Skipped, State};

/// One path of a `CopyIn`; `None` entries mean absent.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CopyPath {
    /// Relative to both the project and the source.
    pub path: WirePath,
    pub base: Option<PathEntry>,
    pub copy: Option<PathEntry>,
}

/// A path the project no longer holds as it was at the base.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CopyConflict {
    pub path: WirePath,
    pub base: Option<PathEntry>,
    pub current: State,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CopyInReply {
    pub project: WirePath,
    /// `applied` or `refused`.
    pub outcome: Outcome,
    /// The turn the write made.
    #[serde(default)]
    pub turn: Option<i64>,
    #[serde(default)]
    pub rewind_id: Option<i64>,
    pub actions: Vec<Action>,
    pub conflicts: Vec<CopyConflict>,
    /// Paths that cannot be written exactly, with why.
    pub blocked: Vec<Skipped>,
    pub elapsed_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub degraded: Option<String>,
}
