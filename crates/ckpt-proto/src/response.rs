//! What the daemon answers: one variant per reply, and the error kinds.

use serde::{Deserialize, Serialize};

use crate::{
    ActivityReply, BlameReply, CopyInReply, DiffReply, ExportReply, FsckReply, GcReply,
    LedgerAdded, LedgerEntryReply, LedgerImported, LedgerReply, LogReply, PinReply, Progress,
    ProjectList, ReleasedReply, RewindReply, RewindsReply, ShowReply, StatusReply, Synced,
    ToolReply, TurnEnded, TurnStarted, Unwatched, Watched,
};

/// What the daemon answers: exactly one response per request, after any
/// number of [`Response::Progress`] frames if the hello asked for them.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Response {
    Hello(HelloReply),
    /// How far the request's scan or apply has got: sent at most ~10 times
    /// a second, only to a connection whose hello asked for it; the reply
    /// follows.
    Progress(Progress),
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
    /// `Pin`, pinning or unpinning.
    Pinned(PinReply),
    /// `ReleaseWorkcopy`.
    Released(ReleasedReply),
    Gc(GcReply),
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
