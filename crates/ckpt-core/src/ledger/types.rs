//! The ledger's values: buckets, severities, statuses, anchors, entries
//! and filters, each spelled once.

use crate::error::{Error, Result};
use crate::relpath::RelPath;

/// Spells an enum's values once: `as_str`, `parse` (a clear error naming
/// every value), `ALL`.
macro_rules! spelled {
    ($ty:ident, $what:literal, { $($var:ident => $s:literal),+ $(,)? }) => {
        impl $ty {
            pub const ALL: &'static [$ty] = &[$($ty::$var),+];

            pub const fn as_str(self) -> &'static str {
                match self { $($ty::$var => $s),+ }
            }

            pub fn parse(s: &str) -> Result<$ty> {
                Self::ALL.iter().copied().find(|v| v.as_str() == s).ok_or_else(|| {
                    let all: Vec<&str> = Self::ALL.iter().map(|v| v.as_str()).collect();
                    Error::BadInput(format!(
                        concat!("unknown ", $what, " '{}' (one of: {})"),
                        s,
                        all.join(", ")
                    ))
                })
            }
        }

        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

/// What kind of residue an entry records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Bucket {
    CompatShim,
    UnmigratedCallers,
    DuplicateConcept,
    NamingDrift,
    StaleDocsTests,
    SuspectedDeadCode,
    ToolGap,
}

spelled!(Bucket, "bucket", {
    CompatShim => "compat-shim",
    UnmigratedCallers => "unmigrated-callers",
    DuplicateConcept => "duplicate-concept",
    NamingDrift => "naming-drift",
    StaleDocsTests => "stale-docs-tests",
    SuspectedDeadCode => "suspected-dead-code",
    ToolGap => "tool-gap",
});

/// How much it matters, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Low,
    Medium,
    High,
    Critical,
}

spelled!(Severity, "severity", {
    Low => "low",
    Medium => "medium",
    High => "high",
    Critical => "critical",
});

/// An entry's status. `Rewound` is never stored: it is shown while the
/// entry's turn is rewound.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LedgerStatus {
    Open,
    Resolved,
    WontFix,
    Rewound,
}

spelled!(LedgerStatus, "status", {
    Open => "open",
    Resolved => "resolved",
    WontFix => "wont-fix",
    Rewound => "rewound",
});

/// Where the entry's lines are now.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AnchorState {
    /// The span's lines are unchanged, at the same place (whole file: it exists).
    Fresh,
    /// The same lines, elsewhere in the file.
    Moved,
    /// Some of its non-blank lines are still in the file.
    Changed,
    /// The file is gone, or none of its lines are left.
    Gone,
}

spelled!(AnchorState, "anchor state", {
    Fresh => "fresh",
    Moved => "moved",
    Changed => "changed",
    Gone => "gone",
});

/// Lines `start..=end`, 1-based.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Anchor {
    pub state: AnchorState,
    /// Where the lines are now (fresh or moved spans).
    pub span: Option<Span>,
}

/// One change of an entry's status (the first records its adding).
#[derive(Clone, Debug, PartialEq)]
pub struct StatusEvent {
    pub status: LedgerStatus,
    pub who: Option<String>,
    pub why: Option<String>,
    pub at_ns: i64,
}

/// What an entry records, the same whether it is stored, read, or carried
/// to another clone.
#[derive(Clone, Debug)]
pub struct EntryBody {
    pub bucket: Bucket,
    pub severity: Severity,
    pub confidence: f64,
    pub owner: String,
    pub path: RelPath,
    /// `None`: the whole file.
    pub span: Option<Span>,
    /// The span's text when the entry was added.
    pub span_text: Option<String>,
    pub note: String,
    pub agent: Option<String>,
    pub session: Option<String>,
    pub created_ns: i64,
}

/// An entry as read.
#[derive(Clone, Debug)]
pub struct LedgerEntry {
    pub id: i64,
    pub body: EntryBody,
    /// The turn open when it was added.
    pub turn: Option<i64>,
    pub status: LedgerStatus,
    /// While `status` is rewound: the rewind that did it.
    pub rewound_by: Option<i64>,
    pub anchor: Anchor,
    /// Filled by `ledger_show`, and by `ledger_list` when the filter asks.
    pub history: Vec<StatusEvent>,
}

/// What `ledger_add` records.
#[derive(Clone, Debug)]
pub struct NewLedgerEntry {
    pub path: RelPath,
    pub span: Option<Span>,
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
    pub history: Vec<StatusEvent>,
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
