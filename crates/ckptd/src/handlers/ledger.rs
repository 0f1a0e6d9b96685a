//! The slop ledger: `ledger add|list|show|resolve|reopen|import`. Buckets,
//! severities, statuses and anchor states arrive as the values they are
//! (`ckpt_types::ledger`); this file only resolves paths.

use std::sync::Arc;

use ckpt_core as core;
use ckpt_proto as proto;
use ckpt_proto::WirePath;

use super::gate::Gate;
use super::About;
use crate::daemon::Daemon;
use crate::error::{ReqError, ReqResult};
use crate::project::ProjectHandle;

/// Records an entry after a barrier, so its span is checked against the
/// file as it is now.
pub fn add(
    d: &Arc<Daemon>,
    g: Gate,
    a: proto::LedgerAdd,
) -> ReqResult<About<proto::LedgerAddedBody>> {
    let h = d.project_for(&a.dir)?;
    h.ensure_available()?;
    let entry = core::NewLedgerEntry {
        path: Daemon::rel_path(&h, &a.path)?,
        span: a.span,
        bucket: a.bucket,
        severity: a.severity,
        confidence: a.confidence,
        owner: a.owner,
        user: a.user,
        note: a.note,
    };
    g.pass(d, &h)?;
    let id = h.call(|p| p.ledger_add(entry))?;
    let body = proto::LedgerAddedBody { id };
    Ok((h, body))
}

pub fn list(
    d: &Arc<Daemon>,
    dir: &WirePath,
    f: &proto::LedgerFilter,
) -> ReqResult<About<proto::LedgerBody>> {
    let h = d.project_for(dir)?;
    h.ensure_available()?;
    let filter = core::LedgerFilter {
        bucket: f.bucket,
        min_severity: f.min_severity,
        min_confidence: f.min_confidence,
        path_prefix: match &f.path {
            Some(p) => path_prefix(&h, p)?,
            None => None,
        },
        turn: f.turn,
        agent: f.agent.clone(),
        owner: f.owner.clone(),
        status: f.status,
        anchor: f.anchor,
        history: f.history,
    };
    let entries = h.call(|p| p.ledger_list(&filter))?;
    let body = proto::LedgerBody { entries };
    Ok((h, body))
}

/// `None` for the project's root itself: every path is below it.
fn path_prefix(h: &ProjectHandle, p: &WirePath) -> ReqResult<Option<core::RelPath>> {
    if std::fs::canonicalize(p.as_path()).is_ok_and(|c| c == h.root) {
        return Ok(None);
    }
    Daemon::rel_path(h, p).map(Some)
}

pub fn show(d: &Arc<Daemon>, dir: &WirePath, id: i64) -> ReqResult<About<proto::LedgerEntryBody>> {
    let h = d.project_for(dir)?;
    h.ensure_available()?;
    let e = h.call(|p| p.ledger_show(id))?;
    let body = proto::LedgerEntryBody { entry: e };
    Ok((h, body))
}

pub fn set_status(
    d: &Arc<Daemon>,
    r: proto::LedgerSetStatus,
) -> ReqResult<About<proto::LedgerEntryBody>> {
    let (id, who, why) = (r.id, r.who, r.why);
    let h = d.project_for(&r.dir)?;
    h.ensure_available()?;
    let e = h.call(|p| p.ledger_set_status(id, r.status, who, why))?;
    let body = proto::LedgerEntryBody { entry: e };
    Ok((h, body))
}

pub fn import(
    d: &Arc<Daemon>,
    dir: &WirePath,
    records: &[proto::LedgerRecord],
) -> ReqResult<About<proto::LedgerImportedBody>> {
    let h = d.project_for(dir)?;
    h.ensure_available()?;
    let records = records
        .iter()
        .enumerate()
        .map(|(i, r)| {
            record(r).map_err(|e| {
                ReqError::bad_request(format!("entry {} of the import: {}", i + 1, e.message))
            })
        })
        .collect::<ReqResult<Vec<_>>>()?;
    let report = h.call(|p| p.ledger_import(&records))?;
    let body = proto::LedgerImportedBody {
        added: report.added,
        skipped: report.skipped,
    };
    Ok((h, body))
}

fn record(r: &proto::LedgerRecord) -> ReqResult<core::LedgerRecord> {
    let path =
        core::RelPath::new(r.path.0.clone()).map_err(|e| ReqError::bad_request(e.to_string()))?;
    let history = r.history.clone().unwrap_or_default();
    Ok(core::LedgerRecord {
        body: core::EntryBody {
            bucket: r.bucket,
            severity: r.severity,
            confidence: r.confidence,
            owner: r.owner.clone(),
            path,
            span: r.span,
            span_text: r.span_text.clone(),
            note: r.note.clone(),
            agent: r.agent.clone(),
            session: r.session.clone(),
            created_ns: r.created_ns,
        },
        history,
    })
}
