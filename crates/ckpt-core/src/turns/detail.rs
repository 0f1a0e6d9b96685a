//! A turn's detail gathered in one pass over its entries: what each
//! entry adds to the counts, the capture gaps and the partial rewinds is
//! taken as it is read, and only the entries a client lists are kept, so
//! a turn of 50,000 files costs its listing, not its size.

use std::collections::HashMap;

use rusqlite::Connection;

use crate::cache;
use crate::error::Result;
use crate::history;
use crate::model::{
    ChangeKind, Counts, Gap, GapKind, Integrity, PartialRewind, RewindRecord, TurnEntry, TurnStatus,
};
use crate::relpath::RelPath;
use crate::state::State;

/// The state `e` ends in: its post-image, or while its turn is open, the
/// path's state now.
pub(super) fn post_of(conn: &Connection, e: &TurnEntry) -> Result<State> {
    match &e.post {
        Some(p) => Ok(p.clone()),
        None => cache::state(conn, &e.path),
    }
}

/// Counts one entry that went from `pre` to `post`.
pub(super) fn count(c: &mut Counts, pre: &State, post: &State) {
    if post == pre {
        return;
    }
    match ChangeKind::between(pre, post) {
        ChangeKind::Added => c.added += 1,
        // `between` never says renamed; only a diff pairs paths.
        ChangeKind::Modified | ChangeKind::Renamed => c.modified += 1,
        ChangeKind::Deleted => c.deleted += 1,
        ChangeKind::Skipped => c.skipped += 1,
    }
}

/// A turn's capture gaps, gathered entry by entry: what the daemon noted
/// while it was open, and each path whose state on either side could not
/// be captured (it cannot be restored to, or from).
pub(super) struct Gaps {
    rescans: u32,
    gaps: Vec<Gap>,
}

impl Gaps {
    /// The gaps the capture noted on `turn` (overflows, rescans).
    pub(super) fn noted(conn: &Connection, turn: i64) -> Result<Gaps> {
        let mut rescans = 0;
        let mut gaps = Vec::new();
        for (kind, detail, times) in history::capture_notes(conn, turn)? {
            match GapKind::parse(&kind) {
                Some(kind) => gaps.push(Gap {
                    kind,
                    path: None,
                    detail,
                }),
                None if kind == history::RESCANNED => rescans = times,
                None => {}
            }
        }
        Ok(Gaps { rescans, gaps })
    }

    /// A gap for `e` (which ends in `post`) if its content before or
    /// after was not captured.
    pub(super) fn add(&mut self, e: &TurnEntry, post: &State) {
        let skipped = [&e.pre, post].into_iter().find_map(|s| match s {
            State::Skipped { reason } => Some(reason.clone()),
            _ => None,
        });
        if let Some(reason) = skipped {
            self.gaps.push(Gap {
                kind: crate::capture::gap_of(&reason),
                path: Some(e.path.clone()),
                detail: reason,
            });
        }
    }

    pub(super) fn integrity(self) -> Integrity {
        Integrity::of(self.rescans, self.gaps)
    }
}

/// What applied rewinds did to one turn in part, gathered entry by entry:
/// a live turn some of whose paths a rewind limited by `--path` restored,
/// or a rewound one whose rewind left some of its paths as they were.
pub(super) struct PartlyRewound {
    /// The partial rewinds that name the turn (few), oldest first.
    rewinds: Vec<RewindRecord>,
    /// Per rewind: whether its scope holds one of the turn's paths.
    restored_any: Vec<bool>,
    /// Per rewind, per path it left: whether the turn touched it.
    left_mine: Vec<Vec<bool>>,
    /// Where each left path is in `left_mine`: a rewind may leave
    /// thousands, and each entry looks its path up once.
    left_at: HashMap<RelPath, Vec<(usize, usize)>>,
    rewound: Vec<RelPath>,
}

impl PartlyRewound {
    /// The partial rewinds that bear on `turn` (in `status`).
    pub(super) fn of(conn: &Connection, turn: i64, status: TurnStatus) -> Result<PartlyRewound> {
        let rewinds: Vec<RewindRecord> = history::partial_rewinds(conn, turn)?
            .into_iter()
            // A turn rewound whole since a `--path` rewind is rewound, not
            // partly.
            .filter(|r| r.scope.is_empty() || status != TurnStatus::Rewound)
            .collect();
        let mut left_at: HashMap<RelPath, Vec<(usize, usize)>> = HashMap::new();
        for (i, r) in rewinds.iter().enumerate() {
            for (j, s) in r.left.iter().enumerate() {
                left_at.entry(s.path.clone()).or_default().push((i, j));
            }
        }
        Ok(PartlyRewound {
            restored_any: vec![false; rewinds.len()],
            left_mine: rewinds.iter().map(|r| vec![false; r.left.len()]).collect(),
            rewinds,
            left_at,
            rewound: Vec::new(),
        })
    }

    /// Notes the turn's entry for `path`.
    pub(super) fn add(&mut self, path: &RelPath) {
        for (i, r) in self.rewinds.iter().enumerate() {
            if r.scope.iter().any(|s| path.starts_with(s)) {
                self.rewound.push(path.clone());
                self.restored_any[i] = true;
            }
        }
        for &(i, j) in self.left_at.get(path).into_iter().flatten() {
            self.left_mine[i][j] = true;
        }
    }

    /// The rewinds that restored or left one of the turn's paths, with
    /// those paths (`rewound` sorted, once each; `left` in each rewind's
    /// order); `None` when no rewind did.
    pub(super) fn finish(self) -> Option<PartialRewind> {
        let mut out = PartialRewind::default();
        for ((r, restored), mine) in self
            .rewinds
            .into_iter()
            .zip(self.restored_any)
            .zip(self.left_mine)
        {
            let before = out.left.len();
            out.left.extend(
                r.left
                    .into_iter()
                    .zip(mine)
                    .filter_map(|(s, m)| m.then_some(s)),
            );
            if restored || out.left.len() != before {
                out.rewinds.push(r.id);
            }
        }
        out.rewound = self.rewound;
        out.rewound.sort();
        out.rewound.dedup();
        (!out.rewinds.is_empty()).then_some(out)
    }
}
