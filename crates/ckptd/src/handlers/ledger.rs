//! The slop ledger: `ledger add|list|show|resolve|reopen|import`. Spellings
//! (buckets, severities, statuses, anchor states) are the core's; this file
//! only carries them across the wire.

use std::sync::Arc;

use ckpt_core as core;
use ckpt_proto as proto;
use ckpt_proto::WirePath;

use super::gate::Gate;
use super::About;
use crate::convert;
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
        span: a.span.map(span),
        bucket: core::Bucket::parse(&a.bucket)?,
        severity: core::Severity::parse(&a.severity)?,
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
        bucket: f.bucket.as_deref().map(core::Bucket::parse).transpose()?,
        min_severity: f
            .min_severity
            .as_deref()
            .map(core::Severity::parse)
            .transpose()?,
        min_confidence: f.min_confidence,
        path_prefix: match &f.path {
            Some(p) => path_prefix(&h, p)?,
            None => None,
        },
        turn: f.turn,
        agent: f.agent.clone(),
        owner: f.owner.clone(),
        status: f
            .status
            .as_deref()
            .map(core::LedgerStatus::parse)
            .transpose()?,
        anchor: f
            .anchor
            .as_deref()
            .map(core::AnchorState::parse)
            .transpose()?,
        history: f.history,
    };
    let entries = h.call(|p| p.ledger_list(&filter))?;
    let body = proto::LedgerBody {
        entries: entries.iter().map(|e| entry(e, f.history)).collect(),
    };
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
    let body = proto::LedgerEntryBody {
        entry: entry(&e, true),
    };
    Ok((h, body))
}

pub fn set_status(
    d: &Arc<Daemon>,
    r: proto::LedgerSetStatus,
) -> ReqResult<About<proto::LedgerEntryBody>> {
    let (id, who, why) = (r.id, r.who, r.why);
    let h = d.project_for(&r.dir)?;
    h.ensure_available()?;
    let status = core::LedgerStatus::parse(&r.status)?;
    let e = h.call(|p| p.ledger_set_status(id, status, who, why))?;
    let body = proto::LedgerEntryBody {
        entry: entry(&e, true),
    };
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
    let history = r
        .history
        .iter()
        .flatten()
        .map(|h| {
            Ok(core::StatusEvent {
                status: core::LedgerStatus::parse(&h.status)?,
                who: h.who.clone(),
                why: h.why.clone(),
                at_ns: h.at_ns,
            })
        })
        .collect::<core::Result<Vec<_>>>()?;
    Ok(core::LedgerRecord {
        body: core::EntryBody {
            bucket: core::Bucket::parse(&r.bucket)?,
            severity: core::Severity::parse(&r.severity)?,
            confidence: r.confidence,
            owner: r.owner.clone(),
            path,
            span: r.span.map(span),
            span_text: r.span_text.clone(),
            note: r.note.clone(),
            agent: r.agent.clone(),
            session: r.session.clone(),
            created_ns: r.created_ns,
        },
        history,
    })
}

fn span(s: proto::LineSpan) -> core::Span {
    core::Span {
        start: s.start,
        end: s.end,
    }
}

fn line_span(s: core::Span) -> proto::LineSpan {
    proto::LineSpan {
        start: s.start,
        end: s.end,
    }
}

fn entry(entry: &core::LedgerEntry, history: bool) -> proto::LedgerEntry {
    let e = &entry.body;
    proto::LedgerEntry {
        id: entry.id,
        bucket: e.bucket.to_string(),
        severity: e.severity.to_string(),
        confidence: e.confidence,
        owner: e.owner.clone(),
        path: convert::rel(&e.path),
        span: e.span.map(line_span),
        note: e.note.clone(),
        turn: entry.turn,
        status: entry.status.to_string(),
        rewound_by: entry.rewound_by,
        anchor: proto::LedgerAnchor {
            state: entry.anchor.state.to_string(),
            span: entry.anchor.span.map(line_span),
        },
        agent: e.agent.clone(),
        session: e.session.clone(),
        created_ns: e.created_ns,
        span_text: e.span_text.clone(),
        history: history.then(|| {
            entry
                .history
                .iter()
                .map(|h| proto::LedgerEvent {
                    status: h.status.to_string(),
                    who: h.who.clone(),
                    why: h.why.clone(),
                    at_ns: h.at_ns,
                })
                .collect()
        }),
    }
}
