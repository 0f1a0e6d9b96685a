//! `rewind`, `redo` and `rewinds`.

use serde::{Deserialize, Serialize};

use crate::Reply;

use crate::WirePath;
use crate::{MergeMode, RewindFlags, Skipped, State};

/// `rewind`: restore the state from just before `turn`. `paths` are
/// absolute (the client resolves them against its cwd).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Rewind {
    pub dir: WirePath,
    pub turn: i64,
    #[serde(default)]
    pub paths: Vec<WirePath>,
    #[serde(flatten)]
    pub flags: RewindFlags,
    /// Merge text files changed since the rewound turns.
    #[serde(default)]
    pub merge: Option<MergeMode>,
}

/// `redo`: undo the last rewind.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Redo {
    pub dir: WirePath,
    #[serde(flatten)]
    pub flags: RewindFlags,
}

/// What one rewind action does to a path, seen from the user.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionKind {
    /// Given back its earlier content (or mode, or link target).
    Restore,
    /// Removed: it did not exist before.
    Delete,
    /// Brought back: it had been deleted.
    Recreate,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Action {
    pub path: WirePath,
    pub action: ActionKind,
    pub current: State,
    pub target: State,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Conflict {
    pub path: WirePath,
    pub expected: State,
    pub current: State,
    /// Another session's turn that changed the path during or after the
    /// rewound turns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_turn: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_session: Option<String>,
    /// Under `--merge`: why it was not merged (e.g. a binary file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_mergeable: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MergeOutcome {
    Clean,
    Markers,
    /// Left as it is: the changes overlap.
    Overlapping,
}

/// A file `rewind --merge` merged, or left because its changes overlap.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MergedFile {
    pub path: WirePath,
    pub outcome: MergeOutcome,
    /// The merged text, in a dry run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// In a dry run: the unified hunks the merge makes of the file as it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hunks: Option<String>,
}

/// An open turn a rewind or redo ended, and the turn of the same session
/// (agent, label, transcript) that continues it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContinuedTurn {
    pub ended: i64,
    #[serde(default)]
    pub session: Option<String>,
    /// `None` in a dry run or a refusal: no turn was ended.
    #[serde(default)]
    pub opened: Option<i64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    DryRun,
    /// Conflicts and no force, or blocked: nothing was changed.
    Refused,
    Applied,
}

pub type RewindReply = Reply<RewindBody>;

/// What [`RewindReply`] carries past `project` and `degraded`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RewindBody {
    /// A redo rather than a rewind.
    pub redo: bool,
    pub outcome: Outcome,
    #[serde(default)]
    pub rewind_id: Option<i64>,
    /// The turn rewound to (for a redo: the turn the undone rewind targeted).
    pub turn: i64,
    /// Turns undone (or, for a redo, brought back).
    pub turns: Vec<i64>,
    pub actions: Vec<Action>,
    pub conflicts: Vec<Conflict>,
    pub skipped: Vec<Skipped>,
    /// Why it is refused even with `--force` (a redo that cannot put the
    /// tree back exactly).
    #[serde(default)]
    pub blocked: Vec<Skipped>,
    /// What `--merge` did.
    #[serde(default)]
    pub merged: Vec<MergedFile>,
    /// Open turns this ends, each continued by a new turn of its session
    /// (`opened`, once applied): an agent's edits after a rewind it asked
    /// for in the middle of its turn are still recorded.
    #[serde(default)]
    pub continued: Vec<ContinuedTurn>,
    pub elapsed_ms: u64,
}

/// Where a journaled rewind or redo stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RewindState {
    /// Being applied (a daemon that died finishes it at its next start).
    Pending,
    Applied,
    /// Failed and rolled back: nothing changed.
    Failed,
    /// Undone by a redo.
    Redone,
    /// A state this client does not know (from a newer daemon).
    #[serde(other)]
    Other,
}

/// A rewind or a redo.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RewindKind {
    Rewind,
    Redo,
}

/// One journaled rewind or redo.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RewindRecord {
    pub id: i64,
    /// Unix time in nanoseconds.
    pub created_ns: i64,
    pub kind: RewindKind,
    pub state: RewindState,
    /// The turn rewound to (for a redo: the undone rewind's).
    pub turn: i64,
    /// Turns undone in whole or in part (for a redo: brought back).
    pub turns: Vec<i64>,
    /// For a redo: the rewind it undid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redoes: Option<i64>,
    /// Only some of its turns' paths were restored (`scope`, `left`).
    pub partial: bool,
    /// The paths it was limited to (`--path`); empty for a whole rewind.
    #[serde(default)]
    pub scope: Vec<WirePath>,
    /// Paths of its turns it left as they were, with why.
    #[serde(default)]
    pub left: Vec<Skipped>,
    /// Paths it changed.
    pub changed: u64,
}

pub type RewindsReply = Reply<RewindsBody>;

/// What [`RewindsReply`] carries past `project` and `degraded`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RewindsBody {
    /// Newest first.
    pub rewinds: Vec<RewindRecord>,
}
