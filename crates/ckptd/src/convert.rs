//! Core types to wire types. The protocol crate does not know the core, so
//! the daemon translates at the edge.

use std::path::Path;

use ckpt_core as core;
use ckpt_proto as proto;
use ckpt_proto::WirePath;

pub fn rel(p: &core::RelPath) -> WirePath {
    WirePath(p.as_bytes().to_vec())
}

pub fn abs(p: &Path) -> WirePath {
    WirePath::from(p)
}

pub fn state(s: &core::State) -> proto::State {
    match s {
        core::State::Absent => proto::State::Absent,
        core::State::File { hash, size, mode } => proto::State::File {
            hash: hash.to_hex(),
            size: *size,
            mode: *mode,
        },
        core::State::Dir { mode } => proto::State::Dir { mode: *mode },
        core::State::Symlink { target } => proto::State::Symlink {
            target: WirePath(target.clone()),
        },
        core::State::Skipped { reason } => proto::State::Skipped {
            reason: reason.clone(),
        },
    }
}

pub fn change(k: core::ChangeKind) -> proto::ChangeKind {
    match k {
        core::ChangeKind::Added => proto::ChangeKind::Added,
        core::ChangeKind::Modified => proto::ChangeKind::Modified,
        core::ChangeKind::Deleted => proto::ChangeKind::Deleted,
        core::ChangeKind::Skipped => proto::ChangeKind::Skipped,
    }
}

pub fn turn_info(t: &core::TurnInfo) -> proto::TurnInfo {
    proto::TurnInfo {
        id: t.id,
        started_ns: t.started_ns,
        ended_ns: t.ended_ns,
        label: t.meta.label.clone(),
        agent: t.meta.agent.clone(),
        session: t.meta.session.clone(),
        transcript: t.meta.transcript.clone(),
        status: match t.status {
            core::TurnStatus::Open => proto::TurnStatus::Open,
            core::TurnStatus::Closed => proto::TurnStatus::Closed,
            core::TurnStatus::Rewound => proto::TurnStatus::Rewound,
        },
        counts: proto::Counts {
            added: t.counts.added,
            modified: t.counts.modified,
            deleted: t.counts.deleted,
            skipped: t.counts.skipped,
        },
        ledger_entries: t.ledger_entries,
        // Stored as the adapter's JSON text; shown as the object it is.
        conversation: t.meta.conversation.as_deref().map(|c| {
            serde_json::from_str(c).unwrap_or_else(|_| serde_json::Value::String(c.to_string()))
        }),
        partial: t.partial.as_ref().map(|p| proto::PartialRewind {
            rewinds: p.rewinds.clone(),
            rewound: p.rewound.iter().map(rel).collect(),
            left: skipped(&p.left),
        }),
    }
}

pub fn rewind_record(r: &core::RewindRecord) -> proto::RewindRecord {
    proto::RewindRecord {
        id: r.id,
        created_ns: r.created_ns,
        kind: match r.redoes {
            Some(_) => proto::RewindKind::Redo,
            None => proto::RewindKind::Rewind,
        },
        state: match r.state {
            core::RewindState::Pending => proto::RewindState::Pending,
            core::RewindState::Applied => proto::RewindState::Applied,
            core::RewindState::Failed => proto::RewindState::Failed,
            core::RewindState::Redone => proto::RewindState::Redone,
        },
        turn: r.turn,
        turns: r.turns.clone(),
        redoes: r.redoes,
        partial: r.partial(),
        scope: r.scope.iter().map(rel).collect(),
        left: skipped(&r.left),
        changed: r.changed,
    }
}

pub fn turn_detail(d: &core::TurnDetail) -> proto::TurnDetail {
    proto::TurnDetail {
        info: turn_info(&d.info),
        entries: d
            .entries
            .iter()
            .map(|e| proto::TurnEntry {
                path: rel(&e.path),
                change: e
                    .post
                    .as_ref()
                    .map(|post| change(core::ChangeKind::between(&e.pre, post))),
                pre: state(&e.pre),
                post: e.post.as_ref().map(state),
                shared: e.shared,
            })
            .collect(),
    }
}

pub fn skipped(list: &[(core::RelPath, String)]) -> Vec<proto::Skipped> {
    list.iter()
        .map(|(p, r)| proto::Skipped {
            path: rel(p),
            reason: r.clone(),
        })
        .collect()
}

pub fn scan(r: &core::ScanReport) -> proto::ScanSummary {
    proto::ScanSummary {
        entries: r.entries,
        changed: r.changed,
        bytes_hashed: r.bytes_hashed,
        skipped: skipped(&r.skipped),
        unreadable: skipped(&r.unreadable),
    }
}

pub fn action(a: &core::Action) -> proto::Action {
    let kind = if a.target.is_absent() {
        proto::ActionKind::Delete
    } else if a.current.is_absent() {
        proto::ActionKind::Recreate
    } else {
        proto::ActionKind::Restore
    };
    proto::Action {
        path: rel(&a.path),
        action: kind,
        current: state(&a.current),
        target: state(&a.target),
    }
}

pub fn conflict(c: &core::Conflict) -> proto::Conflict {
    proto::Conflict {
        path: rel(&c.path),
        expected: state(&c.expected),
        current: state(&c.current),
        other_turn: c.other.as_ref().map(|o| o.turn),
        other_session: c.other.as_ref().and_then(|o| o.session.clone()),
        not_mergeable: c.not_mergeable.clone(),
    }
}

pub fn merged(m: &core::Merged) -> proto::MergedFile {
    proto::MergedFile {
        path: rel(&m.path),
        outcome: match m.outcome {
            core::MergeOutcome::Clean => proto::MergeOutcome::Clean,
            core::MergeOutcome::Markers => proto::MergeOutcome::Markers,
            core::MergeOutcome::Overlapping => proto::MergeOutcome::Overlapping,
        },
        content: m.content.clone(),
        hunks: m.hunks.clone(),
    }
}

pub fn file_diff(f: &core::FileDiff) -> proto::FileDiff {
    proto::FileDiff {
        path: rel(&f.path),
        kind: change(f.kind),
        unified: f.unified.clone(),
        note: f.note.clone(),
    }
}

/// Splits a rewind outcome into (outcome, rewind id, plan).
pub fn continued(c: &core::Continued) -> proto::ContinuedTurn {
    proto::ContinuedTurn {
        ended: c.ended,
        session: c.session.clone(),
        opened: c.opened,
    }
}

pub fn outcome(o: &core::RewindOutcome) -> (proto::Outcome, Option<i64>, &core::RewindPlan) {
    match o {
        core::RewindOutcome::DryRun(plan) => (proto::Outcome::DryRun, None, plan),
        core::RewindOutcome::Refused(plan) => (proto::Outcome::Refused, None, plan),
        core::RewindOutcome::Applied { rewind_id, plan } => {
            (proto::Outcome::Applied, Some(*rewind_id), plan)
        }
    }
}
