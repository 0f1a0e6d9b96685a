//! `CopyIn`: a work copy written back into the project.

use serde::{Deserialize, Serialize};

use crate::Reply;

use crate::WirePath;
use crate::{Action, Outcome, PathEntry, Skipped, State};

/// Write `paths` as `source` (an absolute directory: a work copy) holds
/// them into the project, as one new turn journaled like a rewind.
/// Refused, nothing written, if the project no longer holds a path as
/// its `base` says; an error if `source` no longer holds it as `copy`
/// says.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct CopyIn {
    pub dir: WirePath,
    pub source: WirePath,
    pub paths: Vec<CopyPath>,
    #[serde(default)]
    pub label: Option<String>,
    #[serde(default)]
    pub agent: Option<String>,
    #[serde(default)]
    pub session: Option<String>,
}

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

pub type CopyInReply = Reply<CopyInBody>;

/// What [`CopyInReply`] carries past `project` and `degraded`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CopyInBody {
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
}
