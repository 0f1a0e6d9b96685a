//! What applying a work copy would change in the original, and which of
//! those paths the original no longer has as they were at the base
//! (conflicts). Reads only: nothing is written anywhere.

use std::collections::BTreeSet;

use serde::Serialize;

use super::fingerprint::{self, Entry, Kind, Manifest};
use super::state::WorkCopy;
use super::symlinks;

#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    Added,
    Modified,
    Deleted,
}

/// Where the original stands at a path the copy changed.
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Original {
    /// As it was at the base: applying is safe.
    AsBase,
    /// Already as in the copy: applying changes nothing there.
    AsCopy,
    /// Changed since the base: a conflict.
    Conflict,
}

#[derive(Serialize, Clone, Debug)]
pub struct PathChange {
    pub path: String,
    pub change: Change,
    pub original: Original,
    pub base: Option<Entry>,
    pub copy: Option<Entry>,
    /// The copy's symlink here points out of the tree (its target): apply
    /// refuses it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leaves_tree: Option<String>,
}

#[derive(Serialize, Clone, Debug)]
pub struct Preview {
    pub changes: Vec<PathChange>,
    pub conflicts: usize,
    /// Changes whose symlink leaves the tree.
    pub leaving_symlinks: usize,
    /// The fingerprint of the copy's tree now.
    pub copy_fingerprint: String,
    /// The original's HEAD now, when it differs from the base commit (not a
    /// conflict by itself: paths are compared by content).
    pub head_moved_to: Option<String>,
}

impl Preview {
    /// How many changed paths the original has in state `o`.
    pub fn count(&self, o: Original) -> usize {
        self.changes.iter().filter(|c| c.original == o).count()
    }

    /// Every changed path is in the original as it was at the base (after
    /// an apply it is not: those paths hold the copy's version).
    pub fn original_matches_base(&self) -> bool {
        self.count(Original::AsBase) == self.changes.len()
    }
}

/// The copy's paths that differ from the base manifest, in byte order.
pub fn changed(base: &Manifest, now: &Manifest) -> Vec<(String, Option<Entry>, Option<Entry>)> {
    let paths: BTreeSet<&String> = base.keys().chain(now.keys()).collect();
    paths
        .into_iter()
        .filter_map(|p| {
            let (b, c) = (base.get(p), now.get(p));
            (b != c).then(|| (p.clone(), b.cloned(), c.cloned()))
        })
        .collect()
}

pub fn preview(wc: &WorkCopy, base: &Manifest) -> anyhow::Result<Preview> {
    preview_of(wc, base, fingerprint::manifest(&wc.copy)?)
}

/// [`preview`] of the copy's manifest `now`, read by the caller.
pub fn preview_of(wc: &WorkCopy, base: &Manifest, now: Manifest) -> anyhow::Result<Preview> {
    let mut changes = Vec::new();
    for (path, b, c) in changed(base, &now) {
        let change = match (&b, &c) {
            (None, _) => Change::Added,
            (_, None) => Change::Deleted,
            _ => Change::Modified,
        };
        let there = fingerprint::entry_of(&wc.original.join(&path))?;
        let original = if there == b {
            Original::AsBase
        } else if there == c {
            Original::AsCopy
        } else {
            Original::Conflict
        };
        let leaves_tree = match &c {
            Some(e) if e.kind == Kind::Symlink => {
                symlinks::leaves_tree(&wc.copy, &path)?.map(|t| symlinks::show(&t))
            }
            _ => None,
        };
        changes.push(PathChange {
            path,
            change,
            original,
            base: b,
            copy: c,
            leaves_tree,
        });
    }
    Ok(Preview {
        conflicts: changes
            .iter()
            .filter(|c| c.original == Original::Conflict)
            .count(),
        leaving_symlinks: changes.iter().filter(|c| c.leaves_tree.is_some()).count(),
        changes,
        copy_fingerprint: fingerprint::of_manifest(&now),
        head_moved_to: match (&wc.base_commit, super::git::head(&wc.original)) {
            (Some(base), Some(now)) if *base != now => Some(now),
            _ => None,
        },
    })
}
