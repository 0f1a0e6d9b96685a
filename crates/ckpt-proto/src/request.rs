//! What a client asks: one variant per operation.

use serde::{Deserialize, Serialize};

use crate::{BlameAt, WirePath};
use crate::{
    CopyIn, Diff, Export, LedgerAdd, LedgerFilter, LedgerRecord, LedgerSetStatus, Log, Redo,
    Rewind, TurnEnd, TurnStart,
};

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
        /// Send [`Response::Progress`](crate::Response::Progress) frames
        /// before the reply of a long request on this connection (a scan,
        /// an apply). Off unless asked (a daemon that knows no such field
        /// ignores it and sends none): a hook's call never reads any.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        progress: bool,
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
    TurnStart(TurnStart),
    TurnEnd(TurnEnd),
    Sync {
        dir: WirePath,
    },
    Log(Log),
    Show {
        dir: WirePath,
        turn: i64,
        /// As [`TurnEnd::list`].
        #[serde(default, skip_serializing_if = "Option::is_none")]
        list: Option<u64>,
    },
    Diff(Diff),
    Rewind(Rewind),
    Redo(Redo),
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
    LedgerAdd(LedgerAdd),
    LedgerList {
        dir: WirePath,
        #[serde(default)]
        filter: LedgerFilter,
    },
    LedgerShow {
        dir: WirePath,
        id: i64,
    },
    LedgerSetStatus(LedgerSetStatus),
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
        /// A committed version to blame instead of the file on disk.
        #[serde(default)]
        at: Option<BlameAt>,
    },
    Export(Export),
    CopyIn(CopyIn),
    /// A tool call of `session` starts (an agent's pre-tool hook): barrier,
    /// then until it ends, a change seen while only this session runs tools
    /// goes to its turn alone.
    ToolStart {
        dir: WirePath,
        #[serde(default)]
        session: Option<String>,
        /// The shell command the tool runs, when the agent's hook names
        /// one: kept with the turn (`show`'s `commands` and `effects`).
        #[serde(default)]
        command: Option<String>,
    },
    /// A tool call of `session` ended (barrier first).
    ToolEnd {
        dir: WirePath,
        #[serde(default)]
        session: Option<String>,
    },
    /// Pin `turn` (kept past retention, with every later turn) or unpin it.
    Pin {
        dir: WirePath,
        turn: i64,
        pinned: bool,
    },
    /// Work copy `name` is removed: retention may drop the turns its
    /// applies made in the project at `dir`.
    ReleaseWorkcopy {
        dir: WirePath,
        name: String,
    },
    /// Run retention now; with `dry_run`, only say what it would drop.
    Gc {
        dir: WirePath,
        #[serde(default)]
        dry_run: bool,
    },
}

/// When a request passes a barrier (the daemon first captures every change
/// made before the request was sent), as each request declares it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Barrier {
    /// Before it acts.
    Always,
    /// Only when the turn it reads is the open one (still growing).
    IfTurnOpen,
    /// Tried before it acts; its failure does not fail the request.
    BestEffort,
    /// Never: it reads only what the daemon keeps, or nothing of the tree.
    Never,
}

impl Request {
    /// Whether this request passes a barrier: the one table of it.
    pub fn barrier(&self) -> Barrier {
        match self {
            Request::TurnStart(_)
            | Request::TurnEnd(_)
            | Request::Sync { .. }
            | Request::Rewind(_)
            | Request::Redo(_)
            | Request::LedgerAdd(_)
            | Request::Blame { .. }
            | Request::Export(_)
            | Request::CopyIn(_)
            | Request::ToolStart { .. }
            | Request::ToolEnd { .. } => Barrier::Always,
            Request::Show { .. } | Request::Diff(_) => Barrier::IfTurnOpen,
            Request::Unwatch { .. } => Barrier::BestEffort,
            Request::Hello { .. }
            | Request::Watch { .. }
            | Request::Projects
            | Request::Log(_)
            | Request::Rewinds { .. }
            | Request::Status
            | Request::Fsck { .. }
            | Request::Activity { .. }
            | Request::LedgerList { .. }
            | Request::LedgerShow { .. }
            | Request::LedgerSetStatus(_)
            | Request::LedgerImport { .. }
            | Request::Pin { .. }
            | Request::ReleaseWorkcopy { .. }
            | Request::Gc { .. } => Barrier::Never,
        }
    }
}
