//! `watch`, `unwatch`, `sync` and `activity`.

use serde::{Deserialize, Serialize};

use crate::ScanSummary;
use crate::WirePath;

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
