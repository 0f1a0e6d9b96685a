//! `projects`: every watched project with its health.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ckpt_proto::{Health, ProjectInfo, ProjectList, WirePath};

use crate::daemon::Daemon;
use crate::project::ProjectHandle;

/// How long `status` waits, for every project together, for operations
/// holding them: a worker's batch or a turn boundary lets go within it, so
/// the answer is fresh; a long rewind does not, and its line says busy.
const STATUS_PATIENCE: Duration = Duration::from_millis(250);

pub fn handle(d: &Arc<Daemon>) -> ProjectList {
    ProjectList { projects: all(d) }
}

/// Every project, including stores that could not be opened.
pub fn all(d: &Arc<Daemon>) -> Vec<ProjectInfo> {
    let deadline = Instant::now() + STATUS_PATIENCE;
    let mut out: Vec<ProjectInfo> = d
        .registry
        .all()
        .iter()
        .map(|h| project_info(d, h, deadline))
        .collect();
    out.sort_by(|a, b| a.root.cmp(&b.root));
    for b in d.registry.broken() {
        out.push(ProjectInfo {
            root: WirePath::from(b.root.as_deref().unwrap_or(&b.store_dir)),
            id: b.id,
            health: Health::Unavailable,
            degraded: Some(b.error),
            open_turn: None,
            open_turns: Vec::new(),
            turns: 0,
            entries: 0,
            skipped: 0,
            partial_turns: 0,
            rescanned_turns: 0,
            store_bytes: 0,
            blobs: 0,
            backlog: 0,
            watches: 0,
            busy: false,
            recovered: None,
            config_error: None,
            retention: None,
        });
    }
    out
}

/// One project's line, waiting until `deadline` at most for an operation
/// holding the project.
pub fn project_info(d: &Daemon, h: &ProjectHandle, deadline: Instant) -> ProjectInfo {
    h.check_root();
    h.refresh_settings(&d.user_settings);
    let now = h.status_until(&h.retention_policy(), deadline);
    let s = now.status.as_ref();
    ProjectInfo {
        root: WirePath::from(h.root.as_path()),
        id: h.id.clone(),
        health: h.health(),
        degraded: h.degraded_reason(),
        open_turn: s.and_then(|s| s.open_turn),
        open_turns: s.map_or_else(Vec::new, |s| s.open_turns.clone()),
        turns: s.map_or(0, |s| s.turns),
        entries: s.map_or(0, |s| s.entries),
        skipped: s.map_or(0, |s| s.skipped),
        partial_turns: s.map_or(0, |s| s.partial_turns),
        rescanned_turns: s.map_or(0, |s| s.rescanned_turns),
        store_bytes: s.map_or(0, |s| s.store_bytes),
        blobs: s.map_or(0, |s| s.blobs),
        backlog: h.backlog(),
        watches: h.watch_count(),
        busy: now.busy,
        recovered: h.take_recovered(),
        config_error: h.config_error(),
        retention: now.retention,
    }
}
