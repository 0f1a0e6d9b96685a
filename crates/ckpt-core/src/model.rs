//! Plain data the core hands to its callers: options, reports, turn records.

use serde::{Deserialize, Serialize};

use crate::relpath::RelPath;
use crate::state::State;

/// Barrier cookies left at a project's root by older daemons start with
/// this: never captured, never restored.
pub const COOKIE_PREFIX: &str = ".ckpt-cookie-";

/// Temp files ckpt writes while restoring start with this; never captured.
pub const TEMP_PREFIX: &str = ".ckpt-tmp-";

/// Temp files of the client's atomic writes ([`crate::atomic`]) start with
/// this: never captured, and apart from [`TEMP_PREFIX`], whose leftovers a
/// recovering rewind removes, so a write in flight is never taken away.
pub const WRITE_TEMP_PREFIX: &str = ".ckpt-write-";

/// Whether a file name is one of ckpt's own (cookie or temp file), which are
/// never captured or restored. Cheap enough for the event path.
pub fn is_internal_name(name: &[u8]) -> bool {
    [COOKIE_PREFIX, TEMP_PREFIX, WRITE_TEMP_PREFIX]
        .iter()
        .any(|p| name.starts_with(p.as_bytes()))
}

/// Directory names never descended into, wherever they are: dependency and
/// build output that tools regenerate. `.git` is handled separately and can
/// never be configured back in. Build directories with a common name (Cargo's
/// `target`) are recognized by their `CACHEDIR.TAG` instead, so a source
/// folder that happens to be called `target` is still captured.
pub const DEFAULT_EXCLUDES: &[&str] = &[
    "node_modules",
    ".venv",
    "venv",
    "__pycache__",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".tox",
    ".gradle",
    ".next",
    ".nuxt",
    ".turbo",
    ".parcel-cache",
    ".cache",
    ".hg",
    ".svn",
    ".jj",
];

/// How a project is captured. The defaults suit a source tree.
#[derive(Clone, Debug)]
pub struct Options {
    /// Files larger than this are recorded as skipped, not stored.
    pub max_file_size: u64,
    /// zstd level for stored blobs.
    pub compression_level: i32,
    /// Blobs up to this many compressed bytes live inside the database;
    /// larger ones are files in the object directory.
    pub inline_max: usize,
    /// Worker threads for hashing and compressing (1 = the caller's thread only).
    pub threads: usize,
    /// Directory names excluded in addition to [`DEFAULT_EXCLUDES`].
    pub extra_excludes: Vec<String>,
    /// Closes what a rewind removed or replaced (see [`FreeRemoved`]);
    /// `None`: closed on the rewinding thread, when the rewind is done.
    pub free_removed: Option<FreeRemoved>,
}

/// Takes files and directories a rewind removed or replaced, still open,
/// and closes them. The last close frees an inode and its blocks, which on
/// ext4 with `discard` waits for the device (~0.8 ms per block run): a
/// caller with threads of its own (the daemon) closes them on one, so that
/// the rewind need not wait. The core itself starts no thread for it.
#[derive(Clone)]
pub struct FreeRemoved(pub std::sync::Arc<dyn Fn(Vec<std::os::fd::OwnedFd>) + Send + Sync>);

impl std::fmt::Debug for FreeRemoved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FreeRemoved(..)")
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            max_file_size: 16 << 20,
            compression_level: 3,
            inline_max: 64 << 10,
            threads: 2,
            extra_excludes: Vec::new(),
            free_removed: None,
        }
    }
}

/// Who opened a turn and why.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TurnMeta {
    pub label: Option<String>,
    pub agent: Option<String>,
    pub session: Option<String>,
    /// The agent's transcript file, when its hook names one.
    pub transcript: Option<String>,
    /// Where the conversation stood just before the turn's prompt: the
    /// client's session adapter writes and reads it (JSON), the core only
    /// keeps it.
    #[serde(default)]
    pub conversation: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TurnStatus {
    Open,
    Closed,
    Rewound,
}

/// How a path changed over a turn (or between two states).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ChangeKind {
    Added,
    Modified,
    Deleted,
    /// The content on one side could not be captured.
    Skipped,
}

impl ChangeKind {
    pub fn between(before: &State, after: &State) -> ChangeKind {
        match (before, after) {
            (State::Skipped { .. }, _) | (_, State::Skipped { .. }) => ChangeKind::Skipped,
            (State::Absent, _) => ChangeKind::Added,
            (_, State::Absent) => ChangeKind::Deleted,
            _ => ChangeKind::Modified,
        }
    }
}

/// One path a turn touched: its state when the turn first changed it, and at
/// the end of the turn (`None` while the turn is open).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TurnEntry {
    pub path: RelPath,
    pub pre: State,
    pub post: Option<State>,
    /// Changed while other sessions had turns open too: any of them may
    /// have made the change, so each of their turns records it.
    #[serde(default)]
    pub shared: bool,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub added: u64,
    pub modified: u64,
    pub deleted: u64,
    pub skipped: u64,
}

/// A turn as listed by `log`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TurnInfo {
    pub id: i64,
    pub started_ns: i64,
    pub ended_ns: Option<i64>,
    pub meta: TurnMeta,
    pub status: TurnStatus,
    pub counts: Counts,
    /// Slop-ledger entries recorded in the turn.
    pub ledger_entries: u64,
    /// What rewinds still applied did to the turn in part; `None` when it
    /// is live and untouched, or rewound whole.
    #[serde(default)]
    pub partial: Option<PartialRewind>,
}

/// A turn rewound in part: some of its paths restored (`rewind --path`)
/// while it stays live, or marked rewound with some of its paths left as
/// they were (skipped, or merged changes that overlap).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartialRewind {
    /// The rewinds (journal ids), oldest first.
    pub rewinds: Vec<i64>,
    /// Paths of the turn a rewind limited by `--path` restored.
    pub rewound: Vec<RelPath>,
    /// Paths of the turn the rewind that marked it left as they were, with why.
    pub left: Vec<(RelPath, String)>,
}

/// Where a journaled rewind or redo stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RewindState {
    /// Journaled, not yet finished (recovery finishes it).
    Pending,
    Applied,
    /// Applying it failed and was rolled back.
    Failed,
    /// Undone by a redo.
    Redone,
}

/// A rewind or redo as `rewinds` lists it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RewindRecord {
    pub id: i64,
    pub created_ns: i64,
    /// For a redo: the rewind it undid.
    pub redoes: Option<i64>,
    pub state: RewindState,
    /// The turn rewound to (for a redo: the undone rewind's).
    pub turn: i64,
    /// Turns undone in whole or in part (for a redo: brought back).
    pub turns: Vec<i64>,
    /// Paths it was limited to (`--path`); empty for a whole rewind.
    pub scope: Vec<RelPath>,
    /// Paths of its turns it left as they were, with why.
    pub left: Vec<(RelPath, String)>,
    /// Paths it changed.
    pub changed: u64,
}

impl RewindRecord {
    /// Whether it restored only some of its turns' paths.
    pub fn partial(&self) -> bool {
        !self.scope.is_empty() || !self.left.is_empty()
    }
}

/// A turn with its entries (`show`, `turn-end`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TurnDetail {
    pub info: TurnInfo,
    pub entries: Vec<TurnEntry>,
}

/// What a scan or a path check found.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ScanReport {
    /// Entries looked at (files, dirs, links).
    pub entries: u64,
    /// Entries whose state changed and were re-captured.
    pub changed: u64,
    /// Bytes read and hashed.
    pub bytes_hashed: u64,
    /// Paths present but not captured, with the reason.
    pub skipped: Vec<(RelPath, String)>,
    /// Directories (and entries) the walk could not read, with the error:
    /// nothing below them is seen, so they are no store row.
    #[serde(default)]
    pub unreadable: Vec<(RelPath, String)>,
}

/// What a rewind (or redo) does to one path.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Action {
    pub path: RelPath,
    /// The path's state now (captured, so the rewind can be redone).
    pub current: State,
    /// The state it is given.
    pub target: State,
}

/// A path edited after the agent's last turn touched it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Conflict {
    pub path: RelPath,
    /// What the last turn left there.
    pub expected: State,
    /// What is there now.
    pub current: State,
    /// Another session's turn that changed the path during or after the
    /// rewound turns.
    #[serde(default)]
    pub other: Option<OtherTurn>,
    /// Under `--merge`: why it could not be merged (a binary file, …).
    #[serde(default)]
    pub not_mergeable: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OtherTurn {
    pub turn: i64,
    pub session: Option<String>,
}

pub use ckpt_types::{MergeMode, RewindFlags};

/// A file `rewind --merge` merged (or could not).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Merged {
    pub path: RelPath,
    pub outcome: MergeOutcome,
    /// The merged text, in a dry run.
    pub content: Option<String>,
    /// In a dry run: the unified hunks the merge would make of the file
    /// as it is now.
    #[serde(default)]
    pub hunks: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum MergeOutcome {
    /// Every hunk merged: the rewound turns' change undone, the later edit kept.
    Clean,
    /// Written with conflict markers where the changes overlap.
    Markers,
    /// The changes overlap: left as it is.
    Overlapping,
}

/// A rewind or redo, planned or done.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RewindPlan {
    /// The turn rewound to (for a redo: the turn the undone rewind targeted).
    pub turn: i64,
    /// Turns this undoes (or, for a redo, brings back).
    pub turns: Vec<i64>,
    pub actions: Vec<Action>,
    pub conflicts: Vec<Conflict>,
    /// Paths left as they are (their target or current content was not
    /// captured, or the tree's shape does not allow it), with the reason.
    pub skipped: Vec<(RelPath, String)>,
    /// Why the plan cannot be applied, even with force: a redo that could
    /// not put the tree back exactly.
    #[serde(default)]
    pub blocked: Vec<(RelPath, String)>,
    /// Files `--merge` merged instead of reporting a conflict.
    #[serde(default)]
    pub merged: Vec<Merged>,
    /// Open turns the rewind or redo ends, each continued by a new turn of
    /// its session (opened once applied), so what the agent does next in
    /// the same prompt is still recorded.
    #[serde(default)]
    pub continued: Vec<Continued>,
}

/// An open turn a rewind or redo ended, and the turn that continues it:
/// same agent, session, label and transcript.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Continued {
    pub ended: i64,
    pub session: Option<String>,
    /// `None` until applied (a dry run or a refusal ends no turn).
    pub opened: Option<i64>,
}

impl RewindPlan {
    /// Whether applying this plan is refused: conflicts without force, or
    /// anything blocking it.
    pub fn refused(&self, flags: RewindFlags) -> bool {
        !self.blocked.is_empty() || (!self.conflicts.is_empty() && !flags.force)
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum RewindOutcome {
    /// Nothing was changed: the plan, as asked.
    DryRun(RewindPlan),
    /// Conflicts and no force, or blocked: nothing was changed, not the
    /// turns either.
    Refused(RewindPlan),
    /// Done; `rewind_id` names the journal record.
    Applied { rewind_id: i64, plan: RewindPlan },
}

/// Options of one rewind.
#[derive(Default)]
pub struct RewindOptions {
    /// Restrict to these paths (and paths below them).
    pub paths: Vec<RelPath>,
    /// Only plan; overwrite what was edited after the agent.
    pub flags: RewindFlags,
    /// Merge text files changed since the rewound turns instead of
    /// reporting them as conflicts.
    pub merge: Option<MergeMode>,
    /// The caller has just run a barrier (the hash cache equals the disk,
    /// racy entries included: every change since their capture came as an
    /// event and was re-hashed), so only paths whose stat changed since
    /// (an edit after the barrier) are checked again, and nothing is
    /// re-hashed for being racy.
    pub after_barrier: bool,
    /// Test hook (`test-hooks` feature only), called before each
    /// filesystem operation with its index; an error aborts the apply there
    /// as if the process had died.
    #[cfg(any(test, feature = "test-hooks"))]
    pub before_op: Option<Box<dyn FnMut(usize) -> crate::Result<()> + Send>>,
}

/// `RewindOptions::before_op`'s type.
type OpHook = Box<dyn FnMut(usize) -> crate::Result<()> + Send>;

impl RewindOptions {
    /// The test hook, taken out for the apply.
    #[cfg(any(test, feature = "test-hooks"))]
    pub(crate) fn take_hook(&mut self) -> Option<OpHook> {
        self.before_op.take()
    }

    /// Without `test-hooks` there is none.
    #[cfg(not(any(test, feature = "test-hooks")))]
    pub(crate) fn take_hook(&mut self) -> Option<OpHook> {
        None
    }
}

/// What start-up recovery did with an interrupted rewind or redo.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RecoveryReport {
    pub rewind_id: i64,
    pub redo: bool,
    pub paths: usize,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ProjectStatus {
    pub root: std::path::PathBuf,
    pub open_turn: Option<i64>,
    pub turns: u64,
    /// Entries in the hash cache (files, dirs, links).
    pub entries: u64,
    /// Entries present but not captured.
    pub skipped: u64,
    /// Bytes the blob store takes (compressed, inline and files).
    pub store_bytes: u64,
    pub blobs: u64,
}

/// One path's unified diff within a turn.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FileDiff {
    pub path: RelPath,
    pub kind: ChangeKind,
    /// Unified diff text; `None` for binary or skipped content.
    pub unified: Option<String>,
    /// Why there is no text diff.
    pub note: Option<String>,
}

/// How much history a project keeps. Turns beyond both limits are dropped
/// (oldest first; the open turn never), then blobs nothing refers to.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Retention {
    /// Always keep at least this many of the newest turns.
    pub keep_turns: usize,
    /// Drop older turns once they are older than this many seconds.
    pub max_age_secs: u64,
    /// Blobs younger than this are never collected (a capture in flight may
    /// be about to refer to them).
    pub grace_secs: u64,
}

impl Default for Retention {
    fn default() -> Self {
        Retention {
            keep_turns: 100,
            max_age_secs: 14 * 24 * 3600,
            grace_secs: 3600,
        }
    }
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct GcReport {
    pub turns_dropped: u64,
    pub blobs_removed: u64,
    pub bytes_freed: u64,
}

/// Where a line of a file came from (`blame`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum LineOrigin {
    /// There before the first live turn that touched the file.
    Baseline,
    /// Changed while no turn was open: the user's own edit.
    BetweenTurns,
    /// Last introduced by this turn; [`Blame::turns`] holds who ran it.
    Turn(i64),
}

/// One line of a file as it is now.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BlameLine {
    /// Without its line ending.
    pub text: String,
    pub origin: LineOrigin,
}

/// A turn some line is attributed to.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BlameTurn {
    pub id: i64,
    pub started_ns: i64,
    pub meta: TurnMeta,
}

/// Every line of a file with the turn that last introduced it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Blame {
    pub path: RelPath,
    pub lines: Vec<BlameLine>,
    /// The turns named by `lines`, oldest first.
    pub turns: Vec<BlameTurn>,
}
