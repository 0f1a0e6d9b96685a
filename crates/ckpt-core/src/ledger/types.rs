//! The ledger's values as the core takes them: what to add, import and
//! list. Buckets, severities, statuses, anchors and entries themselves are
//! `ckpt_types::ledger`'s.

use crate::relpath::RelPath;

pub use ckpt_types::ledger::{
    AnchorState, Bucket, EntryBody, LedgerAnchor, LedgerEntry, LedgerEvent, LedgerStatus, LineSpan,
    Severity,
};

/// What `ledger_add` records.
#[derive(Clone, Debug)]
pub struct NewLedgerEntry {
    pub path: RelPath,
    pub span: Option<LineSpan>,
    pub bucket: Bucket,
    pub severity: Severity,
    pub confidence: f64,
    /// Default: `agent:<agent of the open turn>`, else `user`.
    pub owner: Option<String>,
    /// The caller's user name, the owner of last resort.
    pub user: Option<String>,
    pub note: String,
}

/// An entry from another clone's export, with its history.
#[derive(Clone, Debug)]
pub struct LedgerRecord {
    pub body: EntryBody,
    pub history: Vec<LedgerEvent>,
}

/// Which entries `ledger_list` returns; every field set must match.
#[derive(Clone, Debug, Default)]
pub struct LedgerFilter {
    pub bucket: Option<Bucket>,
    pub min_severity: Option<Severity>,
    pub min_confidence: Option<f64>,
    /// The path or a directory above it.
    pub path_prefix: Option<RelPath>,
    pub turn: Option<i64>,
    pub agent: Option<String>,
    pub owner: Option<String>,
    pub status: Option<LedgerStatus>,
    pub anchor: Option<AnchorState>,
    /// Read each entry's history too.
    pub history: bool,
}

/// Counts of an import.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ImportReport {
    pub added: u64,
    /// Already here (same path, span text, bucket and note).
    pub skipped: u64,
}
