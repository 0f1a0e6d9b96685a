//! Turns: how they are listed (`log`), shown (`show`, `turn-end`) and
//! diffed, as the core records them and the wire carries them.

use serde::{Deserialize, Serialize};

use crate::{Effect, Integrity, RelPath, Skipped, State};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnStatus {
    Open,
    Closed,
    Rewound,
}

impl TurnStatus {
    pub const ALL: [TurnStatus; 3] = [TurnStatus::Open, TurnStatus::Closed, TurnStatus::Rewound];

    /// As the wire and the store (`turns.status`) spell it.
    pub const fn as_str(self) -> &'static str {
        match self {
            TurnStatus::Open => "open",
            TurnStatus::Closed => "closed",
            TurnStatus::Rewound => "rewound",
        }
    }

    /// `None` for a status ckpt never writes.
    pub fn parse(s: &str) -> Option<TurnStatus> {
        Self::ALL.into_iter().find(|t| t.as_str() == s)
    }
}

/// How a path changed over a turn (or between two states).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    Added,
    Modified,
    Deleted,
    /// The content on one side could not be captured.
    Skipped,
    /// Only in a diff: an added path paired with a deleted one of the same
    /// or similar content ([`FileDiff::from`]); `between` never says it.
    Renamed,
}

impl ChangeKind {
    pub fn between(before: &State, after: &State) -> ChangeKind {
        match (before, after) {
            (State::Skipped { .. }, _) | (_, State::Skipped { .. }) => ChangeKind::Skipped,
            (State::Absent, _) => ChangeKind::Added,
            (_, State::Absent) => ChangeKind::Deleted,
            _ => ChangeKind::Modified,
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub added: u64,
    pub modified: u64,
    pub deleted: u64,
    pub skipped: u64,
}

impl Counts {
    /// No path changed.
    pub fn is_empty(&self) -> bool {
        *self == Counts::default()
    }
}

/// A turn as `log` lists it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TurnInfo {
    pub id: i64,
    /// Unix time in nanoseconds.
    pub started_ns: i64,
    #[serde(default)]
    pub ended_ns: Option<i64>,
    #[serde(default)]
    pub label: Option<String>,
    #[serde(default)]
    pub agent: Option<String>,
    #[serde(default)]
    pub session: Option<String>,
    /// The agent's transcript file, when its hook named one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript: Option<String>,
    pub status: TurnStatus,
    pub counts: Counts,
    /// Slop-ledger entries recorded in the turn.
    #[serde(default)]
    pub ledger_entries: u64,
    /// Where the conversation stood just before the turn's prompt (the
    /// client's session adapter's JSON object; the core keeps its text).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "json_or_json_text"
    )]
    pub conversation: Option<serde_json::Value>,
    /// What rewinds still applied did to the turn in part; `None` when it
    /// is live and untouched, or rewound whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial: Option<PartialRewind>,
    /// Whether the turn's capture is complete, complete after a rescan,
    /// or partial and why.
    #[serde(default)]
    pub integrity: Integrity,
    /// Commands its tool calls ran whose effects a rewind does not undo.
    #[serde(default)]
    pub effects: Vec<Effect>,
}

impl TurnInfo {
    /// A finished turn that changed no path (an idle agent's turn, a
    /// command that failed to start). It is kept, for the conversation
    /// position it may carry, but `log` collapses it and retention does
    /// not count it: this is the one definition both use.
    pub fn is_empty(&self) -> bool {
        self.status != TurnStatus::Open && self.counts.is_empty()
    }
}

/// The conversation as its stored text holds it: the JSON it is, or the
/// text itself if it is not JSON.
pub fn conversation_of(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|_| serde_json::Value::String(text.to_string()))
}

/// A JSON value, or a string holding one, as earlier daemons sent it.
fn json_or_json_text<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<serde_json::Value>, D::Error> {
    Ok(
        Option::<serde_json::Value>::deserialize(d)?.map(|v| match v {
            serde_json::Value::String(s) => conversation_of(&s),
            v => v,
        }),
    )
}

/// A turn that is open now, and the session it belongs to (`None`: the
/// default session): `status` lists one per session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenTurn {
    pub turn: i64,
    #[serde(default)]
    pub session: Option<String>,
}

/// A turn rewound in part: some of its paths restored (`rewind --path`)
/// while it stays live, or marked rewound with some of its paths left as
/// they were (skipped, or merged changes that overlap).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartialRewind {
    /// The rewinds (journal ids, as `rewinds` lists them), oldest first.
    pub rewinds: Vec<i64>,
    /// Paths of the turn a rewind limited by `--path` restored; the
    /// turn's other paths are as it left them.
    #[serde(default)]
    pub rewound: Vec<RelPath>,
    /// Paths of the turn the rewind that marked it left as they were, with why.
    #[serde(default)]
    pub left: Vec<Skipped>,
}

/// One path a turn touched: its state when the turn first changed it, and
/// at the end of the turn (`None` while the turn is open). On the wire it
/// also says how it changed (`change`, from the two).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct TurnEntry {
    pub path: RelPath,
    pub pre: State,
    #[serde(default)]
    pub post: Option<State>,
    /// Changed while other sessions had turns open too: any of them may
    /// have made the change, so each of their turns records it.
    #[serde(default)]
    pub shared: bool,
}

impl TurnEntry {
    /// How it changed; `None` while the turn is open and the end state unknown.
    pub fn change(&self) -> Option<ChangeKind> {
        self.post
            .as_ref()
            .map(|post| ChangeKind::between(&self.pre, post))
    }
}

impl Serialize for TurnEntry {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Wire<'a> {
            path: &'a RelPath,
            change: Option<ChangeKind>,
            pre: &'a State,
            post: &'a Option<State>,
            shared: bool,
        }
        Wire {
            path: &self.path,
            change: self.change(),
            pre: &self.pre,
            post: &self.post,
            shared: self.shared,
        }
        .serialize(s)
    }
}

/// A turn with its entries (`show`, `turn-end`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TurnDetail {
    pub info: TurnInfo,
    pub entries: Vec<TurnEntry>,
    /// The shell commands the turn's tool calls ran, as the agents' hooks
    /// gave them, oldest first.
    #[serde(default)]
    pub commands: Vec<String>,
    /// How many entries the turn has, when a request's `list` left some
    /// out of `entries` (the core's `show_listing` keeps the first `list`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_entries: Option<u64>,
}

impl TurnDetail {
    /// The turn's entries, those listed and those left out (a daemon
    /// older than `total_entries` listed every one).
    pub fn total_entries(&self) -> usize {
        self.total_entries
            .map_or(self.entries.len(), |n| n as usize)
    }
}

/// One path's unified diff within a turn.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FileDiff {
    pub path: RelPath,
    pub kind: ChangeKind,
    /// Unified diff text; `None` for binary or skipped content.
    #[serde(default)]
    pub unified: Option<String>,
    /// Why there is no text diff.
    #[serde(default)]
    pub note: Option<String>,
    /// For [`ChangeKind::Renamed`]: the deleted path whose content moved
    /// here, and how similar the two are (100 for the same bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<RenamedFrom>,
    /// The permission bits before and after, when they changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<ModeChange>,
}

/// Where a renamed path's content came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RenamedFrom {
    pub path: RelPath,
    /// Percent, as git's `similarity index` (50 to 100).
    pub similarity: u8,
}

/// A file's mode before and after a turn (octal strings in JSON).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModeChange {
    #[serde(with = "crate::mode")]
    pub old: u32,
    #[serde(with = "crate::mode")]
    pub new: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(p: &str) -> RelPath {
        RelPath::new(p).unwrap()
    }

    #[test]
    fn a_turn_lists_with_its_wire_form() {
        let info = TurnInfo {
            id: 3,
            started_ns: 10,
            ended_ns: None,
            label: Some("fix".into()),
            agent: None,
            session: Some("s1".into()),
            transcript: None,
            status: TurnStatus::Rewound,
            counts: Counts {
                added: 1,
                modified: 2,
                deleted: 3,
                skipped: 4,
            },
            ledger_entries: 5,
            conversation: Some(serde_json::json!({"at": 7})),
            partial: Some(PartialRewind {
                rewinds: vec![9],
                rewound: vec![rel("a")],
                left: vec![Skipped {
                    path: rel("b"),
                    reason: "why".into(),
                }],
            }),
            integrity: Integrity::default(),
            effects: vec![],
        };
        let json = r#"{"id":3,"started_ns":10,"ended_ns":null,"label":"fix","agent":null,"session":"s1","status":"rewound","counts":{"added":1,"modified":2,"deleted":3,"skipped":4},"ledger_entries":5,"conversation":{"at":7},"partial":{"rewinds":[9],"rewound":["a"],"left":[{"path":"b","reason":"why"}]},"integrity":{"capture":"complete","rescans":0},"effects":[]}"#;
        assert_eq!(serde_json::to_string(&info).unwrap(), json);
        let back: TurnInfo = serde_json::from_str(json).unwrap();
        assert_eq!(serde_json::to_string(&back).unwrap(), json);
        // Earlier daemons sent the conversation as its text.
        let old = json.replace(r#"{"at":7}"#, r#""{\"at\":7}""#);
        let back: TurnInfo = serde_json::from_str(&old).unwrap();
        assert_eq!(serde_json::to_string(&back).unwrap(), json);
    }

    #[test]
    fn an_entry_says_how_it_changed_once_the_turn_ended() {
        let mut e = TurnEntry {
            path: rel("d"),
            pre: State::Absent,
            post: None,
            shared: false,
        };
        let open =
            r#"{"path":"d","change":null,"pre":{"kind":"absent"},"post":null,"shared":false}"#;
        assert_eq!(serde_json::to_string(&e).unwrap(), open);
        e.post = Some(State::Dir { mode: 0o700 });
        let closed = r#"{"path":"d","change":"added","pre":{"kind":"absent"},"post":{"kind":"dir","mode":"700"},"shared":false}"#;
        assert_eq!(serde_json::to_string(&e).unwrap(), closed);
        assert_eq!(serde_json::from_str::<TurnEntry>(closed).unwrap(), e);
        let diff = FileDiff {
            path: rel("d"),
            kind: ChangeKind::Skipped,
            unified: None,
            note: Some("binary".into()),
            from: None,
            mode: None,
        };
        assert_eq!(
            serde_json::to_string(&diff).unwrap(),
            r#"{"path":"d","kind":"skipped","unified":null,"note":"binary"}"#
        );
        assert_eq!(
            serde_json::to_string(&TurnStatus::ALL).unwrap(),
            r#"["open","closed","rewound"]"#
        );
    }
}
