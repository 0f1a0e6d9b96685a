//! Turns: their start and end, `log`, `show`, `diff`, tool windows.

use serde::{Deserialize, Serialize};

use crate::Reply;

use crate::WirePath;
use crate::{ChangeKind, Counts, Skipped, State};

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

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnStatus {
    Open,
    Closed,
    Rewound,
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
