//! The slop ledger: add, list, show, set status, import.

use serde::{Deserialize, Serialize};

use crate::Reply;

use crate::{
    AnchorState, Bucket, LedgerEntry, LedgerEvent, LedgerStatus, LineSpan, Severity, WirePath,
};

/// Record residue in the slop ledger; `path` is absolute. The entry
/// belongs to the open turn, if any.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LedgerAdd {
    pub dir: WirePath,
    pub path: WirePath,
    /// `None`: the whole file.
    #[serde(default)]
    pub span: Option<LineSpan>,
    pub bucket: Bucket,
    pub severity: Severity,
    pub confidence: f64,
    /// Default: `agent:<agent of the open turn>`, else `user`.
    #[serde(default)]
    pub owner: Option<String>,
    /// The client's user name ($USER).
    #[serde(default)]
    pub user: Option<String>,
    pub note: String,
}

/// Append a status change: `open`, `resolved` or `wont-fix`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LedgerSetStatus {
    pub dir: WirePath,
    pub id: i64,
    pub status: LedgerStatus,
    #[serde(default)]
    pub who: Option<String>,
    pub why: String,
}

/// Which ledger entries to list; each field set must match. Buckets,
/// severities, statuses and anchor states travel spelled as `ckptctl
/// ledger` takes them (`compat-shim`, `high`, `wont-fix`, `moved`); a
/// misspelled one does not decode, and the error names every accepted one.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LedgerFilter {
    #[serde(default)]
    pub bucket: Option<Bucket>,
    #[serde(default)]
    pub min_severity: Option<Severity>,
    #[serde(default)]
    pub min_confidence: Option<f64>,
    /// Absolute: the entries about this path or below it.
    #[serde(default)]
    pub path: Option<WirePath>,
    #[serde(default)]
    pub turn: Option<i64>,
    #[serde(default)]
    pub agent: Option<String>,
    #[serde(default)]
    pub owner: Option<String>,
    #[serde(default)]
    pub status: Option<LedgerStatus>,
    #[serde(default)]
    pub anchor: Option<AnchorState>,
    /// Each entry's history too (for an export).
    #[serde(default)]
    pub history: bool,
}

/// An entry as an export holds it and an import takes it (the fields of
/// [`LedgerEntry`] that travel between clones; others are ignored).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LedgerRecord {
    pub bucket: Bucket,
    pub severity: Severity,
    pub confidence: f64,
    pub owner: String,
    /// Relative to the project root.
    pub path: WirePath,
    #[serde(default)]
    pub span: Option<LineSpan>,
    #[serde(default)]
    pub span_text: Option<String>,
    pub note: String,
    #[serde(default)]
    pub agent: Option<String>,
    #[serde(default)]
    pub session: Option<String>,
    #[serde(default)]
    pub created_ns: i64,
    #[serde(default)]
    pub history: Option<Vec<LedgerEvent>>,
}

pub type LedgerAdded = Reply<LedgerAddedBody>;

/// What [`LedgerAdded`] carries past `project` and `degraded`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LedgerAddedBody {
    pub id: i64,
}

pub type LedgerReply = Reply<LedgerBody>;

/// What [`LedgerReply`] carries past `project` and `degraded`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LedgerBody {
    pub entries: Vec<LedgerEntry>,
}

pub type LedgerEntryReply = Reply<LedgerEntryBody>;

/// What [`LedgerEntryReply`] carries past `project` and `degraded`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LedgerEntryBody {
    pub entry: LedgerEntry,
}

pub type LedgerImported = Reply<LedgerImportedBody>;

/// What [`LedgerImported`] carries past `project` and `degraded`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LedgerImportedBody {
    pub added: u64,
    /// Already in the ledger (same path, span text, bucket and note).
    pub skipped: u64,
}
