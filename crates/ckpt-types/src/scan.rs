//! What a scan found: the paths present but not captured, and why.

use serde::{Deserialize, Serialize};

use crate::RelPath;

/// A path present but not captured (or not restorable, or left as it
/// was), and why.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Skipped {
    pub path: RelPath,
    pub reason: String,
}

impl Skipped {
    pub fn new(path: RelPath, reason: impl Into<String>) -> Skipped {
        Skipped {
            path,
            reason: reason.into(),
        }
    }
}

/// What a scan or a path check found.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ScanSummary {
    /// Entries looked at (files, dirs, links).
    pub entries: u64,
    /// Entries whose state changed and were re-captured.
    pub changed: u64,
    /// Bytes read and hashed.
    pub bytes_hashed: u64,
    /// Every path present whose content is not captured (what `status`
    /// counts as not captured).
    #[serde(default)]
    pub skipped: Vec<Skipped>,
    /// Directories (and entries) the walk could not read, with the error:
    /// nothing below them is seen or captured, and they are not counted in
    /// `skipped`.
    #[serde(default)]
    pub unreadable: Vec<Skipped>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scan_summary_has_its_wire_form() {
        let s = ScanSummary {
            entries: 4,
            changed: 1,
            bytes_hashed: 9,
            skipped: vec![Skipped::new(RelPath::new("big").unwrap(), "too big")],
            unreadable: vec![],
        };
        let json = r#"{"entries":4,"changed":1,"bytes_hashed":9,"skipped":[{"path":"big","reason":"too big"}],"unreadable":[]}"#;
        assert_eq!(serde_json::to_string(&s).unwrap(), json);
        let old: ScanSummary =
            serde_json::from_str(r#"{"entries":4,"changed":1,"bytes_hashed":9}"#).unwrap();
        assert!(old.skipped.is_empty() && old.unreadable.is_empty());
    }
}
