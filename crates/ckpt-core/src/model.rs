//! Plain data the core hands to its callers: options, reports, turn records.

use serde::{Deserialize, Serialize};

use crate::relpath::RelPath;

pub use ckpt_types::names::{
    is_internal_name, COOKIE_PREFIX, DEFAULT_EXCLUDES, TEMP_PREFIX, WRITE_TEMP_PREFIX,
};
pub use ckpt_types::{
    Action, ActionCounts, ChangeKind, Conflict, ContinuedTurn, CopyConflict, Counts, FileDiff,
    MergeOutcome, MergedFile, ModeChange, OtherTurn, PartialRewind, RenamedFrom, RewindRecord,
    RewindState, ScanSummary, Skipped, TurnDetail, TurnEntry, TurnInfo, TurnStatus,
};
pub use ckpt_types::{Blame, BlameAt, BlameLine, LineOrigin, Reformatted};
pub use ckpt_types::{
    Capture, Caveats, Effect, EffectCategory, Gap, GapKind, Integrity, PartialCapture,
};
pub use ckpt_types::{GcReport, HeldBy, Hold, NextDrop, Retention, RetentionView};
pub use ckpt_types::{Progress, ProgressOp};

/// Told how far a full scan or an apply has got, after every entry: it
/// must be cheap, and decides itself how often to pass it on.
pub type Observer = Box<dyn Fn(&Progress) + Send + Sync>;

/// What the daemon saw go wrong with capture, noted on every open turn
/// ([`crate::Project::note_capture`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CaptureNote {
    /// Events were lost and a full rescan found what they would have told.
    Rescanned,
    /// Content may be missing.
    Gap(GapKind, String),
}

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
    /// Paths excluded in addition to [`DEFAULT_EXCLUDES`] and
    /// `.ckptignore`, in gitignore syntax (the `capture.excludes` setting).
    pub extra_excludes: Vec<String>,
    /// Closes what a rewind removed or replaced (see [`FreeRemoved`]);
    /// `None`: closed on the rewinding thread, when the rewind is done.
    pub free_removed: Option<FreeRemoved>,
    /// How many of a rewind's actions it holds in memory.
    pub plan_window: PlanWindow,
}

/// A rewind holds `blocks` blocks of `block` actions of each of its lists
/// in memory; past them a list goes to a temp file beside the project's
/// database, read back a block at a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanWindow {
    pub block: usize,
    pub blocks: usize,
}

impl Default for PlanWindow {
    /// 65,536 actions, ~10 MB: a rewind of a 50,000-file turn never
    /// touches the file. (The crate's own tests: 8, so theirs do.)
    fn default() -> Self {
        if cfg!(test) {
            PlanWindow {
                block: 4,
                blocks: 2,
            }
        } else {
            PlanWindow {
                block: 4096,
                blocks: 16,
            }
        }
    }
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
            plan_window: PlanWindow::default(),
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

pub use ckpt_types::{MergeMode, RewindFlags};

/// A rewind or redo, planned or done.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RewindPlan {
    /// The turn rewound to (for a redo: the turn the undone rewind targeted).
    pub turn: i64,
    /// Turns this undoes (or, for a redo, brings back).
    pub turns: Vec<i64>,
    /// In path order: the first `RewindOptions::list` (every one without
    /// it) and every one `--merge` wrote.
    pub actions: Vec<Action>,
    /// Every action, counted by kind.
    #[serde(default)]
    pub counts: ActionCounts,
    pub conflicts: Vec<Conflict>,
    /// Paths left as they are (their target or current content was not
    /// captured, or the tree's shape does not allow it), with the reason.
    pub skipped: Vec<Skipped>,
    /// Why the plan cannot be applied, even with force: a redo that could
    /// not put the tree back exactly.
    #[serde(default)]
    pub blocked: Vec<Skipped>,
    /// Files `--merge` merged instead of reporting a conflict.
    #[serde(default)]
    pub merged: Vec<MergedFile>,
    /// Open turns the rewind or redo ends, each continued by a new turn of
    /// its session (opened once applied), so what the agent does next in
    /// the same prompt is still recorded.
    #[serde(default)]
    pub continued: Vec<ContinuedTurn>,
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
    /// How many actions the outcome's plan lists (every one without it):
    /// a rewind of 500,000 paths has as many, which no client prints.
    pub list: Option<usize>,
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
    /// Every open turn, oldest first: one per session at most.
    pub open_turns: Vec<ckpt_types::OpenTurn>,
    pub turns: u64,
    /// Entries in the hash cache (files, dirs, links).
    pub entries: u64,
    /// Entries present but not captured.
    pub skipped: u64,
    /// Bytes the blob store takes (compressed, inline and files).
    pub store_bytes: u64,
    pub blobs: u64,
    /// Turns whose capture is partial (a noted gap, or a path not captured
    /// before or after the turn).
    pub partial_turns: u64,
    /// Turns whose capture is complete after a rescan (lost events).
    pub rescanned_turns: u64,
}
