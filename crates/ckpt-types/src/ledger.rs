//! The slop ledger's values: buckets, severities, statuses and anchor
//! states, each spelled once, the same on the command line, on the wire,
//! in the store and in an export.

use serde::{Deserialize, Serialize};

use crate::RelPath;

/// A spelling no value has; says every one it could have been.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unknown(pub String);

impl std::fmt::Display for Unknown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Unknown {}

/// Spells an enum's values once: `as_str`, `parse` (a clear error naming
/// every value), `ALL`, `Display`, and serde as the same strings.
macro_rules! spelled {
    ($ty:ident, $what:literal, { $($var:ident => $s:literal),+ $(,)? }) => {
        impl $ty {
            pub const ALL: &'static [$ty] = &[$($ty::$var),+];

            pub const fn as_str(self) -> &'static str {
                match self { $($ty::$var => $s),+ }
            }

            pub fn parse(s: &str) -> Result<$ty, Unknown> {
                Self::ALL.iter().copied().find(|v| v.as_str() == s).ok_or_else(|| {
                    let all: Vec<&str> = Self::ALL.iter().map(|v| v.as_str()).collect();
                    Unknown(format!(
                        concat!("unknown ", $what, " '{}' (one of: {})"),
                        s,
                        all.join(", ")
                    ))
                })
            }
        }

        // `pad`, so a table's `{:<9}` lines it up as it did a string.
        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.pad(self.as_str())
            }
        }

        impl Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                $ty::parse(&s).map_err(serde::de::Error::custom)
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineSpan {
    pub start: u32,
    pub end: u32,
}

/// Where an entry's lines are now: the state, and for `fresh` or `moved`
/// the span they are at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerAnchor {
    pub state: AnchorState,
    #[serde(default)]
    pub span: Option<LineSpan>,
}

/// One change of an entry's status (the first records its adding).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerEvent {
    pub status: LedgerStatus,
    #[serde(default)]
    pub who: Option<String>,
    #[serde(default)]
    pub why: Option<String>,
    pub at_ns: i64,
}

/// What an entry records, the same whether it is stored, read, or carried
/// to another clone.
#[derive(Clone, Debug, PartialEq)]
pub struct EntryBody {
    pub bucket: Bucket,
    pub severity: Severity,
    pub confidence: f64,
    pub owner: String,
    /// Relative to the project root.
    pub path: RelPath,
    /// `None`: the whole file.
    pub span: Option<LineSpan>,
    /// The span's text when the entry was added.
    pub span_text: Option<String>,
    pub note: String,
    pub agent: Option<String>,
    pub session: Option<String>,
    pub created_ns: i64,
}

/// An entry as read. On the wire its body's fields are the entry's own
/// (`ledger list --json` shows them so).
#[derive(Clone, Debug, PartialEq)]
pub struct LedgerEntry {
    pub id: i64,
    pub body: EntryBody,
    /// The turn open when it was added.
    pub turn: Option<i64>,
    /// `open`, `resolved`, `wont-fix` or `rewound` (while its turn is).
    pub status: LedgerStatus,
    /// While `status` is rewound: the rewind that did it.
    pub rewound_by: Option<i64>,
    pub anchor: LedgerAnchor,
    /// Its status changes, oldest first: read for `show`, and for lists
    /// that ask.
    pub history: Option<Vec<LedgerEvent>>,
}

/// [`LedgerEntry`] as the wire spells it, field by field.
#[derive(Serialize, Deserialize)]
struct WireEntry<H> {
    id: i64,
    bucket: Bucket,
    severity: Severity,
    confidence: f64,
    owner: String,
    path: RelPath,
    span: Option<LineSpan>,
    note: String,
    turn: Option<i64>,
    status: LedgerStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rewound_by: Option<i64>,
    anchor: LedgerAnchor,
    #[serde(default)]
    agent: Option<String>,
    #[serde(default)]
    session: Option<String>,
    #[serde(default)]
    created_ns: i64,
    #[serde(default)]
    span_text: Option<String>,
    #[serde(default = "none", skip_serializing_if = "Option::is_none")]
    history: Option<H>,
}

fn none<H>() -> Option<H> {
    None
}

impl Serialize for LedgerEntry {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let b = &self.body;
        WireEntry::<&Vec<LedgerEvent>> {
            id: self.id,
            bucket: b.bucket,
            severity: b.severity,
            confidence: b.confidence,
            owner: b.owner.clone(),
            path: b.path.clone(),
            span: b.span,
            note: b.note.clone(),
            turn: self.turn,
            status: self.status,
            rewound_by: self.rewound_by,
            anchor: self.anchor,
            agent: b.agent.clone(),
            session: b.session.clone(),
            created_ns: b.created_ns,
            span_text: b.span_text.clone(),
            history: self.history.as_ref(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for LedgerEntry {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = WireEntry::<Vec<LedgerEvent>>::deserialize(d)?;
        Ok(LedgerEntry {
            id: w.id,
            body: EntryBody {
                bucket: w.bucket,
                severity: w.severity,
                confidence: w.confidence,
                owner: w.owner,
                path: w.path,
                span: w.span,
                span_text: w.span_text,
                note: w.note,
                agent: w.agent,
                session: w.session,
                created_ns: w.created_ns,
            },
            turn: w.turn,
            status: w.status,
            rewound_by: w.rewound_by,
            anchor: w.anchor,
            history: w.history,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_travel_as_they_are_spelled() {
        let json = serde_json::to_string(&(
            Bucket::CompatShim,
            Severity::Critical,
            LedgerStatus::WontFix,
            AnchorState::Moved,
            LineSpan { start: 1, end: 2 },
        ))
        .unwrap();
        assert_eq!(
            json,
            r#"["compat-shim","critical","wont-fix","moved",{"start":1,"end":2}]"#
        );
        let back: (Bucket, Severity, LedgerStatus, AnchorState, LineSpan) =
            serde_json::from_str(&json).unwrap();
        assert_eq!(back.0, Bucket::CompatShim);
        for b in Bucket::ALL {
            assert_eq!(Bucket::parse(b.as_str()), Ok(*b));
        }
        assert!(Severity::Low < Severity::Critical);
        assert_eq!(format!("[{:<6}]", Severity::Low), "[low   ]");
        let a = LedgerAnchor {
            state: AnchorState::Gone,
            span: None,
        };
        assert_eq!(
            serde_json::to_string(&a).unwrap(),
            r#"{"state":"gone","span":null}"#
        );
        let e = LedgerEvent {
            status: LedgerStatus::Open,
            who: None,
            why: Some("w".into()),
            at_ns: 3,
        };
        let json = r#"{"status":"open","who":null,"why":"w","at_ns":3}"#;
        assert_eq!(serde_json::to_string(&e).unwrap(), json);
        assert_eq!(serde_json::from_str::<LedgerEvent>(json).unwrap(), e);
    }

    #[test]
    fn an_entry_travels_flat() {
        let mut e = LedgerEntry {
            id: 4,
            body: EntryBody {
                bucket: Bucket::ToolGap,
                severity: Severity::High,
                confidence: 0.5,
                owner: "user".into(),
                path: RelPath::new("src/a.rs").unwrap(),
                span: Some(LineSpan { start: 2, end: 3 }),
                span_text: Some("x".into()),
                note: "n".into(),
                agent: None,
                session: Some("s".into()),
                created_ns: 9,
            },
            turn: Some(1),
            status: LedgerStatus::Rewound,
            rewound_by: Some(2),
            anchor: LedgerAnchor {
                state: AnchorState::Fresh,
                span: Some(LineSpan { start: 2, end: 3 }),
            },
            history: None,
        };
        let json = r#"{"id":4,"bucket":"tool-gap","severity":"high","confidence":0.5,"owner":"user","path":"src/a.rs","span":{"start":2,"end":3},"note":"n","turn":1,"status":"rewound","rewound_by":2,"anchor":{"state":"fresh","span":{"start":2,"end":3}},"agent":null,"session":"s","created_ns":9,"span_text":"x"}"#;
        assert_eq!(serde_json::to_string(&e).unwrap(), json);
        assert_eq!(serde_json::from_str::<LedgerEntry>(json).unwrap(), e);
        e.rewound_by = None;
        e.history = Some(vec![]);
        let json = json
            .replace(r#""rewound_by":2,"#, "")
            .replace(r#""span_text":"x""#, r#""span_text":"x","history":[]"#);
        assert_eq!(serde_json::to_string(&e).unwrap(), json);
        assert_eq!(serde_json::from_str::<LedgerEntry>(&json).unwrap(), e);
    }

    #[test]
    fn an_unknown_spelling_names_every_accepted_one() {
        let e = serde_json::from_str::<Bucket>(r#""shim""#)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("unknown bucket 'shim'") && e.contains("tool-gap"),
            "{e}"
        );
        let e = Severity::parse("urgent").unwrap_err().to_string();
        assert_eq!(
            e,
            "unknown severity 'urgent' (one of: low, medium, high, critical)"
        );
    }
}
