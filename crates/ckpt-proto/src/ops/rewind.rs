//! `rewind`, `redo` and `rewinds`.

use serde::{Deserialize, Serialize};

use crate::Reply;

use crate::{
    Action, ActionCounts, Caveats, Conflict, ContinuedTurn, MergeMode, MergedFile, RewindFlags,
    RewindRecord, Skipped, WirePath,
};

/// `rewind`: restore the state from just before a turn, or just after
/// it. `paths` are absolute (the client resolves them against its cwd).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Rewind {
    pub dir: WirePath,
    #[serde(flatten)]
    pub to: RewindTo,
    #[serde(default)]
    pub paths: Vec<WirePath>,
    #[serde(flatten)]
    pub flags: RewindFlags,
    /// Merge text files changed since the rewound turns.
    #[serde(default)]
    pub merge: Option<MergeMode>,
    /// List at most this many actions in the reply (see [`RewindBody`]);
    /// none: every one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list: Option<u64>,
}

/// Where a rewind goes. On the wire, one field of the request: `"turn": N`
/// (before N, as ever) or `"after": N`. A daemon older than `after` finds
/// no `turn` in such a request and refuses it, rather than rewinding to
/// before N.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RewindTo {
    /// Undo turn N and its session's later turns.
    #[serde(rename = "turn")]
    Before(i64),
    /// Keep turn N; undo its session's later turns.
    #[serde(rename = "after")]
    After(i64),
}

impl RewindTo {
    /// The turn named.
    pub fn turn(self) -> i64 {
        match self {
            RewindTo::Before(t) | RewindTo::After(t) => t,
        }
    }
}

/// `redo`: undo the last rewind.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Redo {
    pub dir: WirePath,
    #[serde(flatten)]
    pub flags: RewindFlags,
    /// As [`Rewind::list`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list: Option<u64>,
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
    /// What it does to each path, in path order. Under the request's
    /// `list`, the first that many, and every one a merge wrote.
    pub actions: Vec<Action>,
    /// Every action, counted by kind (a daemon older than `list` sent none).
    #[serde(default)]
    pub counts: Option<ActionCounts>,
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
    /// What the rewound turns did that it does not undo, and what of them
    /// it cannot restore (turns whose capture is partial).
    #[serde(flatten)]
    pub caveats: Caveats,
    pub elapsed_ms: u64,
}

impl RewindBody {
    /// Every action, counted by kind, whether or not `actions` lists them all.
    pub fn counts(&self) -> ActionCounts {
        self.counts
            .unwrap_or_else(|| ActionCounts::of(&self.actions))
    }
}

pub type RewindsReply = Reply<RewindsBody>;

/// What [`RewindsReply`] carries past `project` and `degraded`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RewindsBody {
    /// Newest first.
    pub rewinds: Vec<RewindRecord>,
}
