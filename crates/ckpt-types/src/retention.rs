//! Retention: how much history a project keeps, what a gc did, and what
//! retention drops next.
//!
//! History is dropped oldest first and as a prefix (dropping turn N drops
//! every older turn too), so every turn that remains can be rewound. A turn
//! that must stay (pinned, still open, carrying a live ledger entry, or
//! named by an apply in flight) therefore stops retention there: it and
//! every later turn stay.

use serde::{Deserialize, Serialize};

/// How much history a project keeps. Turns beyond both limits are dropped,
/// then, while the store is over its budget, the oldest remaining ones;
/// then blobs nothing refers to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Retention {
    /// Always keep at least this many of the newest turns that changed
    /// something (turns that changed nothing do not count).
    pub keep_turns: usize,
    /// Drop older turns once they are older than this many seconds.
    pub max_age_secs: u64,
    /// Blobs younger than this are never collected (a capture in flight may
    /// be about to refer to them).
    pub grace_secs: u64,
    /// Past this many bytes of store, drop the oldest turns that may go
    /// until it fits (`None`: no budget).
    #[serde(default)]
    pub budget_bytes: Option<u64>,
}

impl Default for Retention {
    fn default() -> Self {
        Retention {
            keep_turns: 100,
            max_age_secs: 14 * 24 * 3600,
            grace_secs: 3600,
            budget_bytes: None,
        }
    }
}

/// What a gc dropped (or, in a dry run, would drop).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GcReport {
    pub turns_dropped: u64,
    /// The turns dropped are every turn up to this one.
    #[serde(default)]
    pub through: Option<i64>,
    pub blobs_removed: u64,
    /// Compressed bytes the blob store gave back.
    pub bytes_freed: u64,
    /// The store's size afterwards.
    #[serde(default)]
    pub store_bytes: u64,
    /// Still over the budget: nothing more may be dropped.
    #[serde(default)]
    pub over_budget: bool,
    #[serde(default)]
    pub dry_run: bool,
}

/// Why a turn stops retention.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Hold {
    Pinned,
    Open,
    /// A ledger entry of the turn is still open.
    Ledger,
    /// A journaled rewind, redo or work-copy apply that has not finished
    /// names it.
    Apply,
    /// A work copy's apply made it, and that work copy is still kept: the
    /// apply stays undoable and `workcopy status` can show it.
    WorkCopy,
}

impl Hold {
    pub fn describe(self) -> &'static str {
        match self {
            Hold::Pinned => "pinned",
            Hold::Open => "still open",
            Hold::Ledger => "an open ledger entry",
            Hold::Apply => "an unfinished rewind or apply",
            Hold::WorkCopy => "a work copy's apply",
        }
    }
}

/// The first turn retention stops at, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldBy {
    pub turn: i64,
    pub why: Hold,
}

/// The next turn retention will drop, and when.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NextDrop {
    pub turn: i64,
    /// Once it is past the age limit (Unix ns).
    pub at_ns: i64,
    /// Once this many more turns that change something have ended.
    pub after_turns: u64,
}

/// The policy in force, and what it will do.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetentionView {
    pub policy: Retention,
    pub pinned: Vec<i64>,
    #[serde(default)]
    pub held: Option<HeldBy>,
    /// Turns up to this one are past the policy: the next gc drops them.
    #[serde(default)]
    pub due: Option<i64>,
    /// Else the oldest turn that will go, and when.
    #[serde(default)]
    pub next: Option<NextDrop>,
}
