//! `status`, `projects` and `fsck`.

use crate::WirePath;
use serde::{Deserialize, Serialize};

use crate::{Reply, RetentionView};

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
    /// Every open turn with its session, oldest first.
    #[serde(default)]
    pub open_turns: Vec<crate::OpenTurn>,
    #[serde(default)]
    pub turns: u64,
    /// Entries in the hash cache (files, dirs, links).
    #[serde(default)]
    pub entries: u64,
    #[serde(default)]
    pub skipped: u64,
    /// Turns whose capture is partial (`show` says what is missing).
    #[serde(default)]
    pub partial_turns: u64,
    /// Turns complete only after a rescan (events were lost).
    #[serde(default)]
    pub rescanned_turns: u64,
    #[serde(default)]
    pub store_bytes: u64,
    #[serde(default)]
    pub blobs: u64,
    /// Paths queued by the watcher and not yet checked.
    #[serde(default)]
    pub backlog: u64,
    /// Kernel watches the daemon holds for the project: one per captured
    /// directory (per-directory watcher), one per root (recursive).
    #[serde(default)]
    pub watches: u64,
    /// A long operation held the project past the quarter second `status`
    /// waits for it; the numbers are from before it.
    #[serde(default)]
    pub busy: bool,
    /// The daemon's start-up finished a rewind a crash interrupted: said in
    /// the first `status` or `projects` reply after it, once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovered: Option<String>,
    /// What is wrong with a config file (the user's or the project's) or a
    /// `CKPT_<KEY>` variable: the last good settings stay in force.
    #[serde(default)]
    pub config_error: Option<String>,
    /// The retention policy in force and what it drops next (absent while
    /// the project is busy or unavailable).
    #[serde(default)]
    pub retention: Option<RetentionView>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ProjectList {
    pub projects: Vec<ProjectInfo>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DaemonInfo {
    pub pid: u32,
    pub version: String,
    pub protocol: u32,
    pub uptime_s: u64,
    pub socket: WirePath,
    pub data_dir: WirePath,
    /// The file watcher in use: `inotify` (one watch per directory),
    /// `notify-recursive` (one recursive watch per project), or `none`
    /// (it could not start; every turn boundary scans).
    #[serde(default)]
    pub watcher: String,
    /// What is wrong with the user's config file or a `CKPT_<KEY>`
    /// variable of the daemon's: the last good settings stay in force.
    #[serde(default)]
    pub config_error: Option<String>,
    /// inotify watches the daemon holds in all (projects and the cookie
    /// directory); `None` where the watcher does not count them (recursive).
    #[serde(default)]
    pub watches: Option<u64>,
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

pub type FsckReply = Reply<FsckBody>;

/// What [`FsckReply`] carries past `project` and `degraded`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FsckBody {
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
}
