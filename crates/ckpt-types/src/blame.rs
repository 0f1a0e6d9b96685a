//! `blame`: every line of a file as it is now, with where it came from.

use serde::{Deserialize, Serialize};

use crate::RelPath;

/// Where a line came from: `turn`, `baseline` (there before the first turn
/// that touched the file) or `between-turns` (the user's own edit).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LineOrigin {
    Turn,
    Baseline,
    BetweenTurns,
    /// An origin this client does not know (from a newer daemon); the core
    /// never makes it.
    #[serde(other)]
    Other,
}

/// One line of a blamed file; the turn fields are null unless the origin is
/// [`LineOrigin::Turn`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlameLine {
    /// 1-based.
    pub line: u64,
    /// Without its line ending.
    pub text: String,
    pub origin: LineOrigin,
    #[serde(default)]
    pub turn: Option<i64>,
    #[serde(default)]
    pub agent: Option<String>,
    #[serde(default)]
    pub session: Option<String>,
    #[serde(default)]
    pub label: Option<String>,
    /// When the turn started.
    #[serde(default)]
    pub time_ns: Option<i64>,
    /// The open slop-ledger entries whose span covers the line.
    #[serde(default)]
    pub ledger: Vec<i64>,
}

/// Every line of a file with the turn that last introduced it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Blame {
    /// Relative to the project root.
    pub path: RelPath,
    pub lines: Vec<BlameLine>,
    /// The lines whose last change only moved whitespace (a formatter's
    /// work), with where they were before it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reformatted: Vec<Reformatted>,
}

/// A line whose last change was whitespace only: `line` (as in
/// [`BlameLine::line`]) was `pre_line` of the version before that change,
/// where it came from `pre_origin` (and `pre_turn`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reformatted {
    pub line: u64,
    pub pre_line: u64,
    pub pre_origin: LineOrigin,
    #[serde(default)]
    pub pre_turn: Option<i64>,
}

/// A version of a file other than the one on disk to blame: a committed
/// one (`ckptctl blame --rev`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlameAt {
    /// The version's text.
    pub text: String,
    /// When it was made (the commit's time): turns started later cannot
    /// have written it.
    pub before_ns: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blame_has_its_wire_form() {
        let b = Blame {
            path: RelPath::new("f.txt").unwrap(),
            lines: vec![
                BlameLine {
                    line: 1,
                    text: "a".into(),
                    origin: LineOrigin::BetweenTurns,
                    turn: None,
                    agent: None,
                    session: None,
                    label: None,
                    time_ns: None,
                    ledger: vec![],
                },
                BlameLine {
                    line: 2,
                    text: "b".into(),
                    origin: LineOrigin::Turn,
                    turn: Some(3),
                    agent: Some("claude".into()),
                    session: Some("s".into()),
                    label: Some("fix".into()),
                    time_ns: Some(5),
                    ledger: vec![7],
                },
            ],
            reformatted: vec![],
        };
        let json = r#"{"path":"f.txt","lines":[{"line":1,"text":"a","origin":"between-turns","turn":null,"agent":null,"session":null,"label":null,"time_ns":null,"ledger":[]},{"line":2,"text":"b","origin":"turn","turn":3,"agent":"claude","session":"s","label":"fix","time_ns":5,"ledger":[7]}]}"#;
        assert_eq!(serde_json::to_string(&b).unwrap(), json);
        assert_eq!(serde_json::from_str::<Blame>(json).unwrap(), b);
        let newer = json.replace("between-turns", "pasted");
        let back: Blame = serde_json::from_str(&newer).unwrap();
        assert_eq!(back.lines[0].origin, LineOrigin::Other);
    }
}
