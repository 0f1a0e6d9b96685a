//! What a client asks: one variant per operation.

use serde::{Deserialize, Serialize};

use crate::WirePath;
use crate::{CopyPath, LedgerFilter, LedgerRecord, LineSpan, MergeMode};

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
