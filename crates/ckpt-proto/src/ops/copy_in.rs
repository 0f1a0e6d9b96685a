//! `CopyIn`: a work copy written back into the project.

use serde::{Deserialize, Serialize};

use crate::Reply;

use crate::{Action, CopyConflict, Entry, Outcome, Skipped, WirePath};

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
    /// The work copy whose apply this is: its turn is kept past retention
    /// until `ReleaseWorkcopy` names that copy.
    #[serde(default)]
    pub workcopy: Option<String>,
}

/// One path of a `CopyIn`; `None` entries mean absent. The path is the
/// client's, checked by the daemon (its error names the copy-in), so a
/// `WirePath` here where the core's `CopyPath` holds a `RelPath`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CopyPath {
    /// Relative to both the project and the source.
    pub path: WirePath,
    pub base: Option<Entry>,
    pub copy: Option<Entry>,
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
