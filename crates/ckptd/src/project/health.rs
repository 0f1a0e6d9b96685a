//! A project's health: still loading, unavailable (its root is gone),
//! degraded (capture cannot be fully trusted), or fine; what every reply
//! about the project says.

use ckpt_proto::{ErrorKind, Health};

use super::reasons::{DegradedReason, Unavailable};
use super::ProjectHandle;
use crate::error::{ReqError, ReqResult};
use crate::mutex::lock;

#[derive(Default)]
pub(super) struct HealthState {
    loading: bool,
    unavailable: Option<Unavailable>,
    degraded: Option<DegradedReason>,
    /// What start-up recovery did, until a `status` or `projects` reply
    /// has told it once.
    recovered: Option<String>,
}

impl ProjectHandle {
    /// Start-up finished an interrupted rewind: the next `status` says so.
    pub fn note_recovered(&self, what: String) {
        lock(&self.health).recovered = Some(what);
    }

    /// What start-up recovery did, handed out once.
    pub fn take_recovered(&self) -> Option<String> {
        lock(&self.health).recovered.take()
    }

    pub fn set_loading(&self, loading: bool) {
        lock(&self.health).loading = loading;
        self.loaded.notify_all();
    }

    /// Waits until start-up recovery of this project has finished.
    pub fn wait_loaded(&self) {
        let mut h = lock(&self.health);
        while h.loading {
            h = self.loaded.wait(h).unwrap_or_else(|p| p.into_inner());
        }
    }

    pub fn set_unavailable(&self, reason: Option<Unavailable>) {
        if let Some(r) = &reason {
            let reason = r.message(&self.root);
            tracing::warn!(root = %self.root.display(), %reason, "project unavailable");
        }
        let gone = reason.is_some();
        lock(&self.health).unavailable = reason;
        if gone {
            // The worker then polls for the root's return; it reads the
            // state under the queue lock, so this wake-up is not lost.
            drop(lock(&self.queue));
            self.work.notify_all();
        }
    }

    pub fn unavailable(&self) -> Option<Unavailable> {
        lock(&self.health).unavailable.clone()
    }

    /// Marks capture untrustworthy and schedules a full scan.
    pub fn mark_degraded(&self, reason: DegradedReason) {
        {
            let mut h = lock(&self.health);
            let keep_old = matches!(&h.degraded, Some(d) if d.persistent() && !reason.persistent());
            if !keep_old {
                if h.degraded.as_ref() != Some(&reason) {
                    let reason = reason.message();
                    tracing::warn!(root = %self.root.display(), %reason, "capture degraded");
                }
                h.degraded = Some(reason);
            }
        }
        self.request_reconcile();
    }

    /// A full scan succeeded: a passing degradation is over.
    pub fn clear_transient(&self) {
        let mut h = lock(&self.health);
        if matches!(&h.degraded, Some(d) if !d.persistent()) {
            tracing::info!(root = %self.root.display(), "capture recovered after a full scan");
            h.degraded = None;
        }
    }

    pub fn degraded(&self) -> Option<DegradedReason> {
        lock(&self.health).degraded.clone()
    }

    /// What every reply about this project says when capture is not fully
    /// trusted.
    pub fn degraded_reason(&self) -> Option<String> {
        let h = lock(&self.health);
        if let Some(u) = &h.unavailable {
            return Some(u.message(&self.root));
        }
        h.degraded.as_ref().map(DegradedReason::message)
    }

    pub fn health(&self) -> Health {
        let h = lock(&self.health);
        if h.unavailable.is_some() {
            Health::Unavailable
        } else if h.loading {
            Health::Loading
        } else if h.degraded.is_some() {
            Health::Degraded
        } else {
            Health::Ok
        }
    }

    /// Fails when requests cannot be served for this project. A root that
    /// was deleted and is there again is watched again and rescanned first.
    pub fn ensure_available(&self) -> ReqResult<()> {
        self.wait_loaded();
        self.check_root();
        self.reattach_if_back()?;
        match self.unavailable() {
            Some(reason) => Err(ReqError::new(
                ErrorKind::ProjectUnavailable,
                format!(
                    "project {} is unavailable: {}",
                    self.root.display(),
                    reason.message(&self.root)
                ),
            )),
            None => Ok(()),
        }
    }

    /// Marks the project unavailable when its root is gone; true if it is there.
    pub fn check_root(&self) -> bool {
        let reason = match std::fs::metadata(&self.root) {
            Ok(m) if m.is_dir() && self.is_open_root(&m) => return true,
            // Deleted and made again before anything noticed: the core
            // still has the old directory open.
            Ok(m) if m.is_dir() => Unavailable::RootReplaced,
            _ => Unavailable::RootGone,
        };
        if self.unavailable().is_none() {
            self.set_unavailable(Some(reason));
        }
        false
    }

    /// Whether `m` (the root path's metadata) is the directory the core has open.
    fn is_open_root(&self, m: &std::fs::Metadata) -> bool {
        use std::os::unix::fs::MetadataExt;
        lock(&self.root_identity).is_none_or(|id| id == (m.dev(), m.ino()))
    }

    /// If the project is unavailable and its root is a directory again:
    /// opens the root again, drops the old watches, watches the new tree
    /// and rescans it, so what is there now is captured (into the open turn,
    /// if any). Returns the scan, or `None` if nothing was to be done.
    pub fn reattach_if_back(&self) -> ReqResult<Option<ckpt_core::ScanSummary>> {
        let _one = lock(&self.reattaching);
        if self.unavailable().is_none() || !self.root.is_dir() {
            return Ok(None);
        }
        let identity = self.call(|p| {
            p.reopen_root()?;
            p.root_identity()
        })?;
        *lock(&self.root_identity) = Some(identity);
        self.watch_again();
        lock(&self.health).unavailable = None;
        tracing::info!(root = %self.root.display(), "project root is back; watching it again");
        self.full_scan().map(Some)
    }

    /// Capture failed (a full disk, an unreadable tree): degraded until a
    /// full scan succeeds, unless something worse already holds.
    pub(super) fn capture_failed(&self, e: &ReqError) {
        if !self.check_root() {
            return;
        }
        let mut h = lock(&self.health);
        if h.degraded.as_ref().is_none_or(|d| !d.persistent()) {
            h.degraded = Some(DegradedReason::CaptureFailed {
                message: e.to_string(),
                disk_full: e.kind == ErrorKind::DiskFull,
            });
        }
        tracing::error!(root = %self.root.display(), error = %e, "capture failed");
    }
}
