//! Requests, responses and the plain data they carry.
//!
//! Every reply about one project names it (`project`, its root) and carries
//! `degraded` when capture for it cannot be fully trusted, so a client can
//! warn on every command.

use serde::{Deserialize, Serialize};

use crate::WirePath;

/// What a client asks. Per-project requests carry `dir`: an absolute
/// directory inside the project (the client's cwd or `-C DIR`); the daemon
/// picks the watched project whose root contains it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Request {
    /// Must be the first request on a connection.
    Hello {
        version: u32,
        #[serde(default)]
        client: String,
    },
    /// Watch a tree. With `discover`, `dir` is a starting point: the root is
    /// the git top-level containing it, else `dir` itself.
    Watch {
        dir: WirePath,
        #[serde(default)]
        discover: bool,
    },
    /// Stop watching; with `drop_data`, delete the project's store too.
    Unwatch {
        dir: WirePath,
        #[serde(default)]
        drop_data: bool,
    },
    Projects,
    TurnStart {
        dir: WirePath,
        #[serde(default)]
        label: Option<String>,
        #[serde(default)]
        agent: Option<String>,
        #[serde(default)]
        session: Option<String>,
        /// The agent's transcript file, when its hook names one.
        #[serde(default)]
        transcript: Option<String>,
        /// Watch the project (root discovered from `dir`) if it is not yet.
        #[serde(default)]
        auto_watch: bool,
        /// Where the agent's conversation stood just before this turn's
        /// prompt (the client's session adapter's JSON, kept as it is).
        #[serde(default)]
        conversation: Option<String>,
    },
    TurnEnd {
        dir: WirePath,
        /// The agent's session: a turn another session opened is left open.
        #[serde(default)]
        session: Option<String>,
        /// The agent's transcript file, kept on the turn if it has none.
        #[serde(default)]
        transcript: Option<String>,
    },
    Sync {
        dir: WirePath,
    },
    Log {
        dir: WirePath,
        #[serde(default)]
        limit: Option<usize>,
        /// Only this session's turns.
        #[serde(default)]
        session: Option<String>,
    },
    Show {
        dir: WirePath,
        turn: i64,
    },
    /// `paths` are absolute (the client resolves them against its cwd).
    Diff {
        dir: WirePath,
        turn: i64,
        #[serde(default)]
        paths: Vec<WirePath>,
    },
    Rewind {
        dir: WirePath,
        turn: i64,
        #[serde(default)]
        paths: Vec<WirePath>,
        #[serde(default)]
        dry_run: bool,
        #[serde(default)]
        force: bool,
        /// Merge text files changed since the rewound turns.
        #[serde(default)]
        merge: Option<MergeMode>,
    },
    Redo {
        dir: WirePath,
        #[serde(default)]
        dry_run: bool,
        #[serde(default)]
        force: bool,
    },
    /// The rewinds and redos journaled, newest first.
    Rewinds {
        dir: WirePath,
        #[serde(default)]
        limit: Option<usize>,
    },
    Status,
    /// Check the project's store, read-only: every blob, every reference
    /// to one, the rewind journal, SQLite's own check.
    Fsck {
        dir: WirePath,
    },
    /// When the project last saw a change, without a barrier: cheap enough
    /// to poll (`ckptctl run --bursts`).
    Activity {
        dir: WirePath,
    },
    /// Record residue in the slop ledger; `path` is absolute. The entry
    /// belongs to the open turn, if any.
    LedgerAdd {
        dir: WirePath,
        path: WirePath,
        /// `None`: the whole file.
        #[serde(default)]
        span: Option<LineSpan>,
        bucket: String,
        severity: String,
        confidence: f64,
        /// Default: `agent:<agent of the open turn>`, else `user`.
        #[serde(default)]
        owner: Option<String>,
        /// The client's user name ($USER).
        #[serde(default)]
        user: Option<String>,
        note: String,
    },
    LedgerList {
        dir: WirePath,
        #[serde(default)]
        filter: LedgerFilter,
    },
    LedgerShow {
        dir: WirePath,
        id: i64,
    },
    /// Append a status change: `open`, `resolved` or `wont-fix`.
    LedgerSetStatus {
        dir: WirePath,
        id: i64,
        status: String,
        #[serde(default)]
        who: Option<String>,
        why: String,
    },
    /// Entries from another clone's export, with their history.
    LedgerImport {
        dir: WirePath,
        entries: Vec<LedgerRecord>,
    },
    /// Every line of the file at `path` (absolute) with the turn that last
    /// introduced it.
    Blame {
        dir: WirePath,
        path: WirePath,
    },
    /// Write the export of turns `from..=to` (patch, ZIP, report, manifest)
    /// into `out`: an absolute, existing, empty directory outside the project.
    Export {
        dir: WirePath,
        from: i64,
        to: i64,
        out: WirePath,
    },
    /// Write `paths` as `source` (an absolute directory: a work copy) holds
    /// them into the project, as one new turn journaled like a rewind.
    /// Refused, nothing written, if the project no longer holds a path as
    /// its `base` says; an error if `source` no longer holds it as `copy`
    /// says.
    CopyIn {
        dir: WirePath,
        source: WirePath,
        paths: Vec<CopyPath>,
        #[serde(default)]
        label: Option<String>,
        #[serde(default)]
        agent: Option<String>,
        #[serde(default)]
        session: Option<String>,
    },
    /// A tool call of `session` starts (an agent's pre-tool hook): barrier,
    /// then until it ends, a change seen while only this session runs tools
    /// goes to its turn alone.
    ToolStart {
        dir: WirePath,
        #[serde(default)]
        session: Option<String>,
    },
    /// A tool call of `session` ended (barrier first).
    ToolEnd {
        dir: WirePath,
        #[serde(default)]
        session: Option<String>,
    },
}

/// What the daemon answers: exactly one response per request.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Response {
    Hello(HelloReply),
    Error {
        kind: ErrorKind,
        message: String,
    },
    Watched(Watched),
    Unwatched(Unwatched),
    Projects(ProjectList),
    TurnStarted(TurnStarted),
    TurnEnded(TurnEnded),
    Synced(Synced),
    Log(LogReply),
    Show(ShowReply),
    Diff(DiffReply),
    /// A rewind or a redo, planned, refused or applied.
    Rewind(RewindReply),
    Rewinds(RewindsReply),
    Status(StatusReply),
    Fsck(FsckReply),
    Activity(ActivityReply),
    LedgerAdded(LedgerAdded),
    /// `LedgerList`.
    Ledger(LedgerReply),
    /// `LedgerShow` and `LedgerSetStatus`: the entry, with its history.
    LedgerEntry(LedgerEntryReply),
    LedgerImported(LedgerImported),
    Blame(BlameReply),
    Export(ExportReply),
    CopyIn(CopyInReply),
    /// `ToolStart` and `ToolEnd`.
    Tool(ToolReply),
}

/// Kinds of failure; `ckptctl` maps them to exit codes (1, or 3 for
/// [`ErrorKind::Conflicts`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The frame could not be read (too large, not JSON, not a request).
    BadFrame,
    /// The request is well-formed but not acceptable (bad path, bad order).
    BadRequest,
    /// Client and daemon speak different protocol versions.
    Version,
    /// No watched project contains the directory.
    NotWatched,
    UnknownTurn,
    TurnRewound,
    NoOpenTurn,
    NothingToRedo,
    /// Paths were edited after the agent; refused.
    Conflicts,
    /// The project's root is gone or its store cannot be opened.
    ProjectUnavailable,
    /// A filesystem or database operation failed.
    Io,
    /// The project's store is damaged (a corrupt row, a missing blob, a bad
    /// hash): never the request's fault; `ckptctl fsck` says more.
    Corrupt,
    /// A filesystem ran out of room (ENOSPC, EDQUOT): ckpt's data disk or
    /// the project's. Nothing captured before is lost; free space and retry.
    DiskFull,
    /// A bug: an unexpected state in the daemon, or an invariant of the
    /// core that did not hold.
    Internal,
    /// A kind this client does not know (from a newer daemon).
    #[serde(other)]
    Other,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct HelloReply {
    pub version: u32,
    /// The daemon's package version.
    #[serde(default)]
    pub daemon_version: String,
    #[serde(default)]
    pub pid: u32,
}

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

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnStatus {
    Open,
    Closed,
    Rewound,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub added: u64,
    pub modified: u64,
    pub deleted: u64,
    pub skipped: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TurnInfo {
    pub id: i64,
    /// Unix time in nanoseconds.
    pub started_ns: i64,
    #[serde(default)]
    pub ended_ns: Option<i64>,
    #[serde(default)]
    pub label: Option<String>,
    #[serde(default)]
    pub agent: Option<String>,
    #[serde(default)]
    pub session: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript: Option<String>,
    pub status: TurnStatus,
    pub counts: Counts,
    /// Slop-ledger entries recorded in the turn.
    #[serde(default)]
    pub ledger_entries: u64,
    /// Where the conversation stood just before the turn's prompt (the
    /// client's session adapter's JSON object).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "json_or_json_text"
    )]
    pub conversation: Option<serde_json::Value>,
    /// What rewinds still applied did to the turn in part (some paths
    /// restored while it stays live, or some left while it is rewound).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial: Option<PartialRewind>,
}

/// A turn rewound in part.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PartialRewind {
    /// The rewinds (as `rewinds` lists them), oldest first.
    pub rewinds: Vec<i64>,
    /// Paths of the turn a rewind limited by `--path` restored; the
    /// turn's other paths are as it left them.
    #[serde(default)]
    pub rewound: Vec<WirePath>,
    /// Paths of the turn the rewind that marked it left as they were.
    #[serde(default)]
    pub left: Vec<Skipped>,
}

/// A JSON value, or a string holding one, as earlier daemons sent it.
fn json_or_json_text<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<serde_json::Value>, D::Error> {
    Ok(
        Option::<serde_json::Value>::deserialize(d)?.map(|v| match v {
            serde_json::Value::String(s) => {
                serde_json::from_str(&s).unwrap_or(serde_json::Value::String(s))
            }
            v => v,
        }),
    )
}

/// One path a turn touched.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TurnEntry {
    pub path: WirePath,
    /// How it changed; `None` while the turn is open and the end state unknown.
    #[serde(default)]
    pub change: Option<ChangeKind>,
    pub pre: State,
    #[serde(default)]
    pub post: Option<State>,
    /// Changed while other sessions had turns open too.
    #[serde(default)]
    pub shared: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TurnDetail {
    pub info: TurnInfo,
    pub entries: Vec<TurnEntry>,
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

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Watched {
    pub project: WirePath,
    pub id: String,
    /// It was watched already; nothing was scanned.
    pub already: bool,
    pub scan: ScanSummary,
    pub elapsed_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub degraded: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Unwatched {
    pub project: WirePath,
    pub dropped_data: bool,
}

/// How the daemon stands with one project.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Health {
    /// Watching; every change is captured.
    Ok,
    /// Capture cannot be fully trusted (see `degraded`); barriers fall back
    /// to full scans.
    Degraded,
    /// Opening or recovering at start-up.
    Loading,
    /// The root or the store is unusable; requests for it fail.
    Unavailable,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ProjectInfo {
    pub root: WirePath,
    pub id: String,
    pub health: Health,
    #[serde(default)]
    pub degraded: Option<String>,
    #[serde(default)]
    pub open_turn: Option<i64>,
    #[serde(default)]
    pub turns: u64,
    /// Entries in the hash cache (files, dirs, links).
    #[serde(default)]
    pub entries: u64,
    #[serde(default)]
    pub skipped: u64,
    #[serde(default)]
    pub store_bytes: u64,
    #[serde(default)]
    pub blobs: u64,
    /// Paths queued by the watcher and not yet checked.
    #[serde(default)]
    pub backlog: u64,
    /// A long operation holds the project; the numbers are from before it.
    #[serde(default)]
    pub busy: bool,
    /// The daemon's start-up finished a rewind a crash interrupted: said in
    /// the first `status` or `projects` reply after it, once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovered: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ProjectList {
    pub projects: Vec<ProjectInfo>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TurnStarted {
    pub project: WirePath,
    pub turn: i64,
    /// The project was not watched; this request watched it first.
    #[serde(default)]
    pub watched_now: bool,
    /// A turn that was still open and was closed first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed_turn: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub degraded: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TurnEnded {
    pub project: WirePath,
    /// The closed turn; or, when [`TurnEnded::left_open`], the open one.
    pub turn: TurnDetail,
    /// The open turn belongs to another session than the request's, and
    /// was left open.
    #[serde(default)]
    pub left_open: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub degraded: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BarrierMethod {
    /// The cookie came through the watcher.
    Cookie,
    /// A full stat-scan (degraded, or the cookie timed out).
    Scan,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Synced {
    pub project: WirePath,
    pub method: BarrierMethod,
    pub elapsed_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub degraded: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LogReply {
    pub project: WirePath,
    pub turns: Vec<TurnInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub degraded: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ShowReply {
    pub project: WirePath,
    pub turn: TurnDetail,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub degraded: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FileDiff {
    pub path: WirePath,
    pub kind: ChangeKind,
    /// Unified diff text; `None` for binary or skipped content.
    #[serde(default)]
    pub unified: Option<String>,
    #[serde(default)]
    pub note: Option<String>,
}

/// An export written: where, and its manifest (`manifest.json`'s content).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ExportReply {
    pub project: WirePath,
    pub out: WirePath,
    pub manifest: serde_json::Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub degraded: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DiffReply {
    pub project: WirePath,
    pub turn: i64,
    pub files: Vec<FileDiff>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub degraded: Option<String>,
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
pub enum MergeMode {
    /// Write clean merges; leave files whose changes overlap as they are.
    Clean,
    /// Write overlapping changes with conflict markers.
    Markers,
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

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RewindReply {
    pub project: WirePath,
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub degraded: Option<String>,
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

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RewindsReply {
    pub project: WirePath,
    /// Newest first.
    pub rewinds: Vec<RewindRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub degraded: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ToolReply {
    pub project: WirePath,
    /// The session's tool calls running now.
    pub running: u32,
    /// The session's open turn, if any (a tool window without one narrows
    /// nothing).
    #[serde(default)]
    pub turn: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub degraded: Option<String>,
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

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DaemonInfo {
    pub pid: u32,
    pub version: String,
    pub protocol: u32,
    pub uptime_s: u64,
    pub socket: WirePath,
    pub data_dir: WirePath,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StatusReply {
    pub daemon: DaemonInfo,
    pub projects: Vec<ProjectInfo>,
}

/// What `fsck` looked at.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct FsckChecked {
    /// Blobs decoded and hashed, packed or not.
    pub blobs: u64,
    pub packs: u64,
    /// Blobs stored as object files.
    pub objects: u64,
    pub cache_rows: u64,
    pub turn_entries: u64,
    pub rewind_actions: u64,
}

/// One thing `fsck` found: `kind` (e.g. `corrupt_blob`, `missing_object`,
/// `missing_blob`, `bad_journal`; a string, so a newer daemon's kinds
/// still reach an older client), what it is about (`blob <hex>`, `pack 3`,
/// `cache <path>`, `turn 2 <path>`, `rewind 1 action 4 <path>`,
/// `objects/ab/...`), and why.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FsckFinding {
    pub kind: String,
    pub subject: String,
    pub detail: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FsckReply {
    pub project: WirePath,
    /// No problems (warnings allowed).
    pub ok: bool,
    pub checked: FsckChecked,
    pub problems: Vec<FsckFinding>,
    /// Odd but harmless, e.g. object files no row names (gc removes them).
    #[serde(default)]
    pub warnings: Vec<FsckFinding>,
    /// Problems found beyond those listed.
    #[serde(default)]
    pub problems_unlisted: u64,
    #[serde(default)]
    pub warnings_unlisted: u64,
    #[serde(default)]
    pub elapsed_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub degraded: Option<String>,
}

/// A project's recent activity, as the daemon knows it without a barrier.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ActivityReply {
    pub project: WirePath,
    /// The open turn, if any.
    #[serde(default)]
    pub open_turn: Option<i64>,
    /// Unix time (ns) at which the daemon last captured a change in the
    /// project; `None` if none since it started watching.
    #[serde(default)]
    pub last_change_ns: Option<i64>,
    /// Events queued and not yet checked: changes may be under way.
    #[serde(default)]
    pub queued: u64,
    /// The daemon's clock (unix ns) when it answered.
    pub now_ns: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub degraded: Option<String>,
}

/// Lines `start..=end`, 1-based.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineSpan {
    pub start: u32,
    pub end: u32,
}

/// Which ledger entries to list; each field set must match. Buckets,
/// severities, statuses and anchor states are spelled as `ckptctl ledger`
/// takes them (`compat-shim`, `high`, `wont-fix`, `moved`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LedgerFilter {
    #[serde(default)]
    pub bucket: Option<String>,
    #[serde(default)]
    pub min_severity: Option<String>,
    #[serde(default)]
    pub min_confidence: Option<f64>,
    /// Absolute: the entries about this path or below it.
    #[serde(default)]
    pub path: Option<WirePath>,
    #[serde(default)]
    pub turn: Option<i64>,
    #[serde(default)]
    pub agent: Option<String>,
    #[serde(default)]
    pub owner: Option<String>,
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub anchor: Option<String>,
    /// Each entry's history too (for an export).
    #[serde(default)]
    pub history: bool,
}

/// Where an entry's lines are now: `fresh`, `moved` (with the new span),
/// `changed` or `gone`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerAnchor {
    pub state: String,
    #[serde(default)]
    pub span: Option<LineSpan>,
}

/// One change of an entry's status.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerEvent {
    pub status: String,
    #[serde(default)]
    pub who: Option<String>,
    #[serde(default)]
    pub why: Option<String>,
    pub at_ns: i64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LedgerEntry {
    pub id: i64,
    pub bucket: String,
    pub severity: String,
    pub confidence: f64,
    pub owner: String,
    /// Relative to the project root.
    pub path: WirePath,
    /// `None`: the whole file.
    pub span: Option<LineSpan>,
    pub note: String,
    pub turn: Option<i64>,
    /// `open`, `resolved`, `wont-fix` or `rewound` (while its turn is).
    pub status: String,
    /// The rewind that rewound the entry's turn, while it is rewound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewound_by: Option<i64>,
    pub anchor: LedgerAnchor,
    #[serde(default)]
    pub agent: Option<String>,
    #[serde(default)]
    pub session: Option<String>,
    #[serde(default)]
    pub created_ns: i64,
    /// The span's text when the entry was added.
    #[serde(default)]
    pub span_text: Option<String>,
    /// Its status changes, oldest first (`show`, and lists that ask).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<Vec<LedgerEvent>>,
}

/// An entry as an export holds it and an import takes it (the fields of
/// [`LedgerEntry`] that travel between clones; others are ignored).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LedgerRecord {
    pub bucket: String,
    pub severity: String,
    pub confidence: f64,
    pub owner: String,
    /// Relative to the project root.
    pub path: WirePath,
    #[serde(default)]
    pub span: Option<LineSpan>,
    #[serde(default)]
    pub span_text: Option<String>,
    pub note: String,
    #[serde(default)]
    pub agent: Option<String>,
    #[serde(default)]
    pub session: Option<String>,
    #[serde(default)]
    pub created_ns: i64,
    #[serde(default)]
    pub history: Option<Vec<LedgerEvent>>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LedgerAdded {
    pub project: WirePath,
    pub id: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub degraded: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LedgerReply {
    pub project: WirePath,
    pub entries: Vec<LedgerEntry>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub degraded: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LedgerEntryReply {
    pub project: WirePath,
    pub entry: LedgerEntry,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub degraded: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LedgerImported {
    pub project: WirePath,
    pub added: u64,
    /// Already in the ledger (same path, span text, bucket and note).
    pub skipped: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub degraded: Option<String>,
}

/// Where a line came from: `turn`, `baseline` (there before the first turn
/// that touched the file) or `between-turns` (the user's own edit).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LineOrigin {
    Turn,
    Baseline,
    BetweenTurns,
    /// An origin this client does not know (from a newer daemon).
    #[serde(other)]
    Other,
}

/// One line of a blamed file; the turn fields are null unless the origin is
/// [`LineOrigin::Turn`].
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BlameLine {
    /// 1-based.
    pub line: u64,
    pub text: String,
    pub origin: LineOrigin,
    #[serde(default)]
    pub turn: Option<i64>,
    #[serde(default)]
    pub agent: Option<String>,
    #[serde(default)]
    pub session: Option<String>,
    #[serde(default)]
    pub label: Option<String>,
    /// When the turn started.
    #[serde(default)]
    pub time_ns: Option<i64>,
    /// The open slop-ledger entries whose span covers the line.
    #[serde(default)]
    pub ledger: Vec<i64>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BlameReply {
    pub project: WirePath,
    /// Relative to the project root.
    pub path: WirePath,
    pub lines: Vec<BlameLine>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub degraded: Option<String>,
}
