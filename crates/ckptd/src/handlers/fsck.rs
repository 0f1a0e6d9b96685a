//! `fsck`: check a project's store, read-only, without holding the project.
//!
//! The check runs on its own read-only connection in one read transaction,
//! not through the project's lock, so capture and turn boundaries go on
//! while it reads (a long fsck only keeps the WAL from being truncated
//! until it ends).

use std::sync::Arc;
use std::time::Instant;

use ckpt_core::{Finding, FsckOptions};
use ckpt_proto::{FsckBody, FsckChecked, FsckFinding, WirePath};

use super::About;
use crate::daemon::Daemon;
use crate::error::{ReqError, ReqResult};

pub fn handle(d: &Arc<Daemon>, dir: &WirePath) -> ReqResult<About<FsckBody>> {
    let h = d.project_for(dir)?;
    h.ensure_available()?;
    let started = Instant::now();
    let report = ckpt_core::fsck(&h.store_dir, &FsckOptions::default()).map_err(|e| {
        let mut err = ReqError::from(e);
        err.message = format!("fsck of {}: {}", h.store_dir.display(), err.message);
        err
    })?;
    let elapsed_ms = started.elapsed().as_millis() as u64;
    tracing::info!(
        root = %h.root.display(), problems = report.problems.len() as u64 + report.problems_unlisted,
        warnings = report.warnings.len() as u64 + report.warnings_unlisted, elapsed_ms, "fsck"
    );
    let c = &report.checked;
    let body = FsckBody {
        ok: report.ok(),
        checked: FsckChecked {
            blobs: c.blobs,
            packs: c.packs,
            objects: c.objects,
            cache_rows: c.cache_rows,
            turn_entries: c.turn_entries,
            rewind_actions: c.rewind_actions,
        },
        problems: report.problems.iter().map(finding).collect(),
        warnings: report.warnings.iter().map(finding).collect(),
        problems_unlisted: report.problems_unlisted,
        warnings_unlisted: report.warnings_unlisted,
        elapsed_ms,
    };
    Ok((h, body))
}

fn finding(f: &Finding) -> FsckFinding {
    FsckFinding {
        kind: f.kind.as_str().to_string(),
        subject: f.subject.clone(),
        detail: f.detail.clone(),
    }
}
