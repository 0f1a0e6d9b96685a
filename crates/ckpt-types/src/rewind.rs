//! Rewinds and redos: how they are asked for, what they do to each path,
//! and how the journal lists them.

use serde::{Deserialize, Serialize};

use crate::{Entry, RelPath, Skipped, State};

/// Whether a rewind (or redo) only plans, and whether it overwrites what
/// was edited after the agent. On the wire, as fields of the request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct RewindFlags {
    /// Show what would change; change nothing.
    #[serde(default)]
    #[cfg_attr(feature = "clap", arg(long))]
    pub dry_run: bool,
    /// Overwrite paths edited after the agent (or by another session).
    #[serde(default)]
    #[cfg_attr(feature = "clap", arg(long))]
    pub force: bool,
}

/// How `rewind --merge` treats a text file changed since the rewound turns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
// (Plain comments: as doc comments clap would list them in `--help`.)
pub enum MergeMode {
    // Write clean merges; leave a file whose changes overlap as it is.
    Clean,
    // Write overlapping changes with conflict markers too.
    Markers,
}

/// What a rewind (or redo) does to one path: its state now (captured, so
/// the rewind can be redone) and the state it is given. On the wire it
/// also says what that is to the user (`action`, from the two).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Action {
    pub path: RelPath,
    pub current: State,
    pub target: State,
}

/// What one rewind action does to a path, seen from the user.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionKind {
    /// Given back its earlier content (or mode, or link target).
    Restore,
    /// Removed: it did not exist before.
    Delete,
    /// Brought back: it had been deleted.
    Recreate,
}

impl Action {
    pub fn kind(&self) -> ActionKind {
        if self.target.is_absent() {
            ActionKind::Delete
        } else if self.current.is_absent() {
            ActionKind::Recreate
        } else {
            ActionKind::Restore
        }
    }
}

impl Serialize for Action {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Wire<'a> {
            path: &'a RelPath,
            action: ActionKind,
            current: &'a State,
            target: &'a State,
        }
        Wire {
            path: &self.path,
            action: self.kind(),
            current: &self.current,
            target: &self.target,
        }
        .serialize(s)
    }
}

/// How many paths a rewind (or redo) restores, deletes and recreates: the
/// whole of it, when its reply lists only the first actions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionCounts {
    pub restore: u64,
    pub delete: u64,
    pub recreate: u64,
}

impl ActionCounts {
    pub fn of<'a>(actions: impl IntoIterator<Item = &'a Action>) -> Self {
        let mut n = Self::default();
        for a in actions {
            n.add(a);
        }
        n
    }

    /// Counts one more action.
    pub fn add(&mut self, a: &Action) {
        *self.of_kind_mut(a.kind()) += 1;
    }

    pub fn of_kind(&self, kind: ActionKind) -> u64 {
        match kind {
            ActionKind::Restore => self.restore,
            ActionKind::Delete => self.delete,
            ActionKind::Recreate => self.recreate,
        }
    }

    fn of_kind_mut(&mut self, kind: ActionKind) -> &mut u64 {
        match kind {
            ActionKind::Restore => &mut self.restore,
            ActionKind::Delete => &mut self.delete,
            ActionKind::Recreate => &mut self.recreate,
        }
    }

    pub fn total(&self) -> u64 {
        self.restore + self.delete + self.recreate
    }
}

/// A path edited after the agent's last turn touched it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Conflict {
    pub path: RelPath,
    /// What the last turn left there.
    pub expected: State,
    /// What is there now.
    pub current: State,
    /// Another session's turn that changed the path during or after the
    /// rewound turns (`other_turn`, `other_session` on the wire).
    #[serde(flatten)]
    pub other: Option<OtherTurn>,
    /// Under `--merge`: why it could not be merged (a binary file, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_mergeable: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OtherTurn {
    #[serde(rename = "other_turn")]
    pub turn: i64,
    #[serde(
        rename = "other_session",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub session: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MergeOutcome {
    /// Every hunk merged: the rewound turns' change undone, the later edit kept.
    Clean,
    /// Written with conflict markers where the changes overlap.
    Markers,
    /// The changes overlap: left as it is.
    Overlapping,
}

/// A file `rewind --merge` merged, or left because its changes overlap.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergedFile {
    pub path: RelPath,
    pub outcome: MergeOutcome,
    /// The merged text, in a dry run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// In a dry run: the unified hunks the merge makes of the file as it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hunks: Option<String>,
}

/// An open turn a rewind or redo ended, and the turn of the same session
/// (agent, label, transcript) that continues it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContinuedTurn {
    pub ended: i64,
    #[serde(default)]
    pub session: Option<String>,
    /// `None` in a dry run or a refusal: no turn was ended.
    #[serde(default)]
    pub opened: Option<i64>,
}

/// Where a journaled rewind or redo stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RewindState {
    /// Being applied (a daemon that died finishes it at its next start).
    Pending,
    Applied,
    /// Failed and rolled back: nothing changed.
    Failed,
    /// Undone by a redo.
    Redone,
    /// A state this client does not know (from a newer daemon); the core
    /// never makes it.
    #[serde(other)]
    Other,
}

/// A rewind or a redo.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RewindKind {
    Rewind,
    Redo,
}

/// One journaled rewind or redo, as `rewinds` lists it. On the wire it
/// also says its `kind` and whether it was `partial`, from the rest.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct RewindRecord {
    pub id: i64,
    /// Unix time in nanoseconds.
    pub created_ns: i64,
    pub state: RewindState,
    /// The turn rewound to (for a redo: the undone rewind's).
    pub turn: i64,
    /// Turns undone in whole or in part (for a redo: brought back).
    pub turns: Vec<i64>,
    /// For a redo: the rewind it undid.
    #[serde(default)]
    pub redoes: Option<i64>,
    /// The paths it was limited to (`--path`); empty for a whole rewind.
    #[serde(default)]
    pub scope: Vec<RelPath>,
    /// Paths of its turns it left as they were, with why.
    #[serde(default)]
    pub left: Vec<Skipped>,
    /// Paths it changed.
    pub changed: u64,
}

impl RewindRecord {
    pub fn kind(&self) -> RewindKind {
        match self.redoes {
            Some(_) => RewindKind::Redo,
            None => RewindKind::Rewind,
        }
    }

    /// Whether it restored only some of its turns' paths (`scope`, `left`).
    pub fn partial(&self) -> bool {
        !self.scope.is_empty() || !self.left.is_empty()
    }
}

impl Serialize for RewindRecord {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Wire<'a> {
            id: i64,
            created_ns: i64,
            kind: RewindKind,
            state: RewindState,
            turn: i64,
            turns: &'a [i64],
            #[serde(skip_serializing_if = "Option::is_none")]
            redoes: Option<i64>,
            partial: bool,
            scope: &'a [RelPath],
            left: &'a [Skipped],
            changed: u64,
        }
        Wire {
            id: self.id,
            created_ns: self.created_ns,
            kind: self.kind(),
            state: self.state,
            turn: self.turn,
            turns: &self.turns,
            redoes: self.redoes,
            partial: self.partial(),
            scope: &self.scope,
            left: &self.left,
            changed: self.changed,
        }
        .serialize(s)
    }
}

/// A path a copy-in found the project no longer holds as it was at the
/// work copy's base.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CopyConflict {
    pub path: RelPath,
    pub base: Option<Entry>,
    pub current: State,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(p: &str) -> RelPath {
        RelPath::new(p).unwrap()
    }

    #[test]
    fn an_action_says_what_it_does() {
        let a = Action {
            path: rel("a"),
            current: State::Absent,
            target: State::Dir { mode: 0o755 },
        };
        let json = r#"{"path":"a","action":"recreate","current":{"kind":"absent"},"target":{"kind":"dir","mode":"755"}}"#;
        assert_eq!(serde_json::to_string(&a).unwrap(), json);
        assert_eq!(serde_json::from_str::<Action>(json).unwrap(), a);
        let delete = Action {
            current: a.target.clone(),
            target: State::Absent,
            ..a.clone()
        };
        assert_eq!(delete.kind(), ActionKind::Delete);
        let restore = Action {
            current: a.target.clone(),
            ..a
        };
        assert_eq!(restore.kind(), ActionKind::Restore);
    }

    #[test]
    fn a_conflict_names_the_other_session_flat() {
        let mut c = Conflict {
            path: rel("a"),
            expected: State::Absent,
            current: State::Skipped { reason: "r".into() },
            other: None,
            not_mergeable: None,
        };
        let alone = r#"{"path":"a","expected":{"kind":"absent"},"current":{"kind":"skipped","reason":"r"}}"#;
        assert_eq!(serde_json::to_string(&c).unwrap(), alone);
        assert_eq!(serde_json::from_str::<Conflict>(alone).unwrap(), c);
        c.other = Some(OtherTurn {
            turn: 4,
            session: Some("s2".into()),
        });
        c.not_mergeable = Some("binary".into());
        let other = r#"{"path":"a","expected":{"kind":"absent"},"current":{"kind":"skipped","reason":"r"},"other_turn":4,"other_session":"s2","not_mergeable":"binary"}"#;
        assert_eq!(serde_json::to_string(&c).unwrap(), other);
        assert_eq!(serde_json::from_str::<Conflict>(other).unwrap(), c);
        c.other = Some(OtherTurn {
            turn: 4,
            session: None,
        });
        let no_session: Conflict =
            serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
        assert_eq!(no_session, c);
    }

    #[test]
    fn merges_and_continued_turns_have_their_wire_form() {
        let m = MergedFile {
            path: rel("t"),
            outcome: MergeOutcome::Overlapping,
            content: None,
            hunks: Some("@@".into()),
        };
        let json = r#"{"path":"t","outcome":"overlapping","hunks":"@@"}"#;
        assert_eq!(serde_json::to_string(&m).unwrap(), json);
        assert_eq!(serde_json::from_str::<MergedFile>(json).unwrap(), m);
        let c = ContinuedTurn {
            ended: 2,
            session: None,
            opened: Some(3),
        };
        let json = r#"{"ended":2,"session":null,"opened":3}"#;
        assert_eq!(serde_json::to_string(&c).unwrap(), json);
        assert_eq!(serde_json::from_str::<ContinuedTurn>(json).unwrap(), c);
        assert_eq!(
            serde_json::to_string(&[MergeMode::Clean, MergeMode::Markers]).unwrap(),
            r#"["clean","markers"]"#
        );
    }

    #[test]
    fn a_rewind_record_says_its_kind_and_whether_it_was_partial() {
        let r = RewindRecord {
            id: 7,
            created_ns: 1,
            state: RewindState::Applied,
            turn: 2,
            turns: vec![2, 3],
            redoes: Some(5),
            scope: vec![rel("src")],
            left: vec![],
            changed: 4,
        };
        let json = r#"{"id":7,"created_ns":1,"kind":"redo","state":"applied","turn":2,"turns":[2,3],"redoes":5,"partial":true,"scope":["src"],"left":[],"changed":4}"#;
        assert_eq!(serde_json::to_string(&r).unwrap(), json);
        assert_eq!(serde_json::from_str::<RewindRecord>(json).unwrap(), r);
        let whole = RewindRecord {
            redoes: None,
            scope: vec![],
            state: RewindState::Pending,
            ..r
        };
        let json = r#"{"id":7,"created_ns":1,"kind":"rewind","state":"pending","turn":2,"turns":[2,3],"partial":false,"scope":[],"left":[],"changed":4}"#;
        assert_eq!(serde_json::to_string(&whole).unwrap(), json);
        let newer = json.replace("pending", "paused");
        assert_eq!(
            serde_json::from_str::<RewindRecord>(&newer).unwrap().state,
            RewindState::Other
        );
    }
}
