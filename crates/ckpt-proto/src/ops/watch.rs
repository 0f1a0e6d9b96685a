//! `watch`, `unwatch`, `sync` and `activity`.

use serde::{Deserialize, Serialize};

use crate::Reply;

use crate::ScanSummary;
use crate::WirePath;

pub type Watched = Reply<WatchedBody>;

/// What [`Watched`] carries past `project` and `degraded`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WatchedBody {
    pub id: String,
    /// It was watched already; nothing was scanned.
    pub already: bool,
    pub scan: ScanSummary,
    pub elapsed_ms: u64,
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

pub type Synced = Reply<SyncedBody>;

/// What [`Synced`] carries past `project` and `degraded`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SyncedBody {
    pub method: BarrierMethod,
    pub elapsed_ms: u64,
}

/// A project's recent activity, as the daemon knows it without a barrier.
pub type ActivityReply = Reply<ActivityBody>;

/// What [`ActivityReply`] carries past `project` and `degraded`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ActivityBody {
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
}
