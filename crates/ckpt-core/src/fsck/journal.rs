//! fsck of the history: turns, their entries, the rewind journal and its
//! actions, read through `history` with statuses as stored, so a status
//! ckpt never writes is reported.

use std::collections::BTreeMap;

use super::{lossy, Checker, FindingKind};
use crate::error::Result;
use crate::history::{self, RewindStatus};
use crate::model::TurnStatus;

/// Known statuses; at most one open turn per session; a turn is marked rewound exactly
/// when a rewind that marks turns names it; tool calls run only in an open turn.
pub(super) fn turns(c: &mut Checker) -> Result<()> {
    // Open turns by session: several sessions each keep one open.
    let mut open: BTreeMap<Option<String>, Vec<i64>> = BTreeMap::new();
    history::audit_turns(c.conn, |t| {
        let subject = format!("turn {}", t.id);
        let Some(status) = TurnStatus::parse(&t.status) else {
            let why = format!("unknown status {:?}", t.status);
            c.problem(FindingKind::BadTurn, subject, why);
            return;
        };
        if status == TurnStatus::Open {
            open.entry(t.session.clone()).or_default().push(t.id);
        }
        let marks = |s: &str| RewindStatus::parse(s).is_some_and(RewindStatus::marks_turns);
        let why = match (
            status == TurnStatus::Rewound,
            t.rewound_by,
            t.rewinder_status,
        ) {
            (true, None, _) => Some("it is marked rewound, by no rewind".to_string()),
            (true, Some(by), None) => Some(format!(
                "it is marked rewound by rewind {by}, which is not in the journal"
            )),
            (true, Some(by), Some(s)) if !marks(&s) => Some(format!(
                "it is marked rewound by rewind {by}, whose status is {s:?}"
            )),
            (false, Some(by), _) => Some(format!(
                "it is {} but names rewind {by} as having rewound it",
                t.status
            )),
            _ => None,
        };
        if let Some(why) = why {
            c.problem(FindingKind::BadTurn, subject.clone(), why);
        }
        if let Some(why) = tool_window_problem(status, t.tools) {
            c.problem(FindingKind::BadTurn, subject, why);
        }
    })?;
    for (session, turns) in open.into_iter().filter(|(_, t)| t.len() > 1) {
        let whose = match session {
            Some(s) => format!("session {s:?}"),
            None => "the default session".to_string(),
        };
        c.problem(
            FindingKind::BadTurn,
            format!("turns {turns:?}"),
            format!("more than one turn of {whose} is open"),
        );
    }
    Ok(())
}

/// A persisted tool window that no open turn explains: a count on a turn
/// that is not open (closing a turn clears it), or a negative count.
fn tool_window_problem(status: TurnStatus, tools: i64) -> Option<String> {
    if tools < 0 {
        return Some(format!("it records {tools} running tool calls"));
    }
    (tools > 0 && status != TurnStatus::Open).then(|| {
        format!(
            "it is {} but records {tools} running tool call(s)",
            status.as_str()
        )
    })
}

/// Every entry belongs to a turn, has a valid path, and its pre- and
/// post-images decode and name stored blobs (only an open turn's entries
/// may lack a post-image: those recorded by a version that kept none
/// until `turn_end`).
pub(super) fn turn_entries(c: &mut Checker) -> Result<()> {
    let open = TurnStatus::Open.as_str();
    history::audit_entries(c.conn, |e| {
        c.report.checked.turn_entries += 1;
        let subject = format!("turn {} {}", e.turn, lossy(&e.path));
        c.row_path(&subject, &e.path);
        c.named_state(&subject, "pre-image", e.pre.as_ref(), e.pre_missing);
        if let Some((post, missing)) = &e.post {
            c.named_state(&subject, "post-image", post.as_ref(), *missing);
        } else if e.turn_status.as_deref().is_some_and(|s| s != open) {
            c.problem(
                FindingKind::BadTurn,
                subject.clone(),
                "its turn has ended but it has no post-image".into(),
            );
        }
        if e.turn_status.is_none() {
            c.problem(
                FindingKind::BadTurn,
                subject,
                format!("an entry of turn {}, which is not there", e.turn),
            );
        }
    })
}

/// Known statuses, a turn list that decodes, and at most one rewind left
/// unfinished.
pub(super) fn rewinds(c: &mut Checker) -> Result<()> {
    let mut unfinished = Vec::new();
    history::audit_rewinds(c.conn, |r| {
        let subject = format!("rewind {}", r.id);
        let status = RewindStatus::parse(&r.status);
        // An applied redo left the rewind it undid redone.
        match (r.redoes, r.undone_status.as_deref(), status) {
            (Some(u), None, _) => c.problem(
                FindingKind::BadJournal,
                subject.clone(),
                format!("it redoes rewind {u}, which is not there"),
            ),
            (Some(u), Some(s), Some(RewindStatus::Applied))
                if RewindStatus::parse(s) != Some(RewindStatus::Redone) =>
            {
                c.problem(
                    FindingKind::BadJournal,
                    subject.clone(),
                    format!("an applied redo of rewind {u}, whose status is {s:?}"),
                )
            }
            _ => {}
        }
        match status {
            None => c.problem(
                FindingKind::BadJournal,
                subject.clone(),
                format!("unknown status {:?}", r.status),
            ),
            Some(s) if s.is_unfinished() => unfinished.push(r.id),
            Some(_) => {}
        }
        if let Err(e) = serde_json::from_str::<Vec<i64>>(&r.turns) {
            c.problem(
                FindingKind::UndecodableRow,
                subject,
                format!("its list of turns {:?} does not decode: {e}", r.turns),
            );
        }
    })?;
    if unfinished.len() > 1 {
        c.problem(
            FindingKind::BadJournal,
            format!("rewinds {unfinished:?}"),
            "more than one rewind is unfinished (pending or redoing); recovery finishes one".into(),
        );
    }
    Ok(())
}

/// Every action belongs to a rewind, has a valid path, and its current and
/// target states decode and name stored blobs.
pub(super) fn actions(c: &mut Checker) -> Result<()> {
    history::audit_actions(c.conn, |a| {
        c.report.checked.rewind_actions += 1;
        let subject = format!("rewind {} action {} {}", a.rewind, a.seq, lossy(&a.path));
        c.row_path(&subject, &a.path);
        c.named_state(
            &subject,
            "current state",
            a.current.as_ref(),
            a.current_missing,
        );
        c.named_state(
            &subject,
            "target state",
            a.target.as_ref(),
            a.target_missing,
        );
        if a.orphan {
            c.problem(
                FindingKind::BadJournal,
                subject,
                format!(
                    "an action of rewind {}, which is not in the journal",
                    a.rewind
                ),
            );
        }
    })
}
