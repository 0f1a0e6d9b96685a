//! `blame`.

use crate::WirePath;
use serde::{Deserialize, Serialize};

use crate::Reply;

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

pub type BlameReply = Reply<BlameBody>;

/// What [`BlameReply`] carries past `project` and `degraded`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BlameBody {
    /// Relative to the project root.
    pub path: WirePath,
    pub lines: Vec<BlameLine>,
}
