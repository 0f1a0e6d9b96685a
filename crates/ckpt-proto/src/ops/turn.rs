//! Turns: their start and end, `log`, `show`, `diff`, tool windows.

use serde::{Deserialize, Serialize};

use crate::WirePath;
use crate::{ChangeKind, Counts, Skipped, State};

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

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DiffReply {
    pub project: WirePath,
    pub turn: i64,
    pub files: Vec<FileDiff>,
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
