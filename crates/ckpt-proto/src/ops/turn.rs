//! Turns: their start and end, `log`, `show`, `diff`, tool windows.

use serde::{Deserialize, Serialize};

use crate::Reply;

use crate::{FileDiff, TurnDetail, TurnInfo, WirePath};

/// `TurnStart`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TurnStart {
    pub dir: WirePath,
    #[serde(default)]
    pub label: Option<String>,
    #[serde(default)]
    pub agent: Option<String>,
    #[serde(default)]
    pub session: Option<String>,
    /// The agent's transcript file, when its hook names one.
    #[serde(default)]
    pub transcript: Option<String>,
    /// Watch the project (root discovered from `dir`) if it is not yet.
    #[serde(default)]
    pub auto_watch: bool,
    /// Where the agent's conversation stood just before this turn's
    /// prompt (the client's session adapter's JSON, kept as it is).
    #[serde(default)]
    pub conversation: Option<String>,
}

/// `TurnEnd`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TurnEnd {
    pub dir: WirePath,
    /// The agent's session: a turn another session opened is left open.
    #[serde(default)]
    pub session: Option<String>,
    /// The agent's transcript file, kept on the turn if it has none.
    #[serde(default)]
    pub transcript: Option<String>,
    /// Only the first this many entries in the reply (its turn's
    /// `total_entries` counts them all); all without. Left out of the
    /// JSON when `None`, so an older daemon reads the request as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list: Option<u64>,
}

/// `Log`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Log {
    pub dir: WirePath,
    #[serde(default)]
    pub limit: Option<usize>,
    /// Only this session's turns.
    #[serde(default)]
    pub session: Option<String>,
}

/// `paths` are absolute (the client resolves them against its cwd).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Diff {
    pub dir: WirePath,
    pub turn: i64,
    #[serde(default)]
    pub paths: Vec<WirePath>,
}

pub type TurnStarted = Reply<TurnStartedBody>;

/// What [`TurnStarted`] carries past `project` and `degraded`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TurnStartedBody {
    pub turn: i64,
    /// The project was not watched; this request watched it first.
    #[serde(default)]
    pub watched_now: bool,
    /// A turn that was still open and was closed first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed_turn: Option<i64>,
}

pub type TurnEnded = Reply<TurnEndedBody>;

/// What [`TurnEnded`] carries past `project` and `degraded`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TurnEndedBody {
    /// The closed turn; or, when [`TurnEnded::left_open`], the open one.
    pub turn: TurnDetail,
    /// The open turn belongs to another session than the request's, and
    /// was left open.
    #[serde(default)]
    pub left_open: bool,
}

pub type LogReply = Reply<LogBody>;

/// What [`LogReply`] carries past `project` and `degraded`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LogBody {
    pub turns: Vec<TurnInfo>,
}

pub type ShowReply = Reply<ShowBody>;

/// What [`ShowReply`] carries past `project` and `degraded`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ShowBody {
    pub turn: TurnDetail,
}

pub type DiffReply = Reply<DiffBody>;

/// What [`DiffReply`] carries past `project` and `degraded`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DiffBody {
    pub turn: i64,
    pub files: Vec<FileDiff>,
}

pub type ToolReply = Reply<ToolBody>;

/// What [`ToolReply`] carries past `project` and `degraded`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ToolBody {
    /// The session's tool calls running now.
    pub running: u32,
    /// The session's open turn, if any (a tool window without one narrows
    /// nothing).
    #[serde(default)]
    pub turn: Option<i64>,
}
