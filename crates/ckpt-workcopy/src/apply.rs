//! Applying a work copy: the paths an apply writes, and, when an apply (or
//! a crash) left the state `applying`, what happened, judged from the
//! original itself rather than by repeating anything.

use std::path::Path;

use super::fingerprint;
use super::preview::{Original, Preview};
use super::state::AppliedPath;

pub use ckpt_agents::workcopy_turn::{is_apply, session, AGENT};

/// The paths an apply writes: those the copy changed that the original
/// still holds as at the base (one already as in the copy needs nothing).
/// Call only on a preview without conflicts.
pub fn paths(p: &Preview) -> Vec<AppliedPath> {
    p.changes
        .iter()
        .filter(|c| c.original == Original::AsBase)
        .map(|c| AppliedPath {
            path: c.path.clone(),
            before: c.base.clone(),
            after: c.copy.clone(),
        })
        .collect()
}

/// What the original shows of an apply.
#[derive(Debug, PartialEq, Eq)]
pub enum Found {
    /// Every path as the apply writes it.
    Applied,
    /// Every path as before the apply.
    NotApplied,
    /// Neither: these paths are not as the apply writes them (changed
    /// since, or an apply cut short and not yet finished by the daemon).
    Neither(Vec<String>),
}

pub fn inspect(original: &Path, paths: &[AppliedPath]) -> anyhow::Result<Found> {
    let mut not_after = Vec::new();
    let mut all_before = true;
    for p in paths {
        let now = fingerprint::entry_of(&original.join(&p.path))?;
        if now != p.after {
            not_after.push(p.path.clone());
        }
        all_before &= now == p.before;
    }
    Ok(if not_after.is_empty() {
        Found::Applied
    } else if all_before {
        Found::NotApplied
    } else {
        Found::Neither(not_after)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fingerprint::entry_of;

    #[test]
    fn inspect_tells_applied_from_not_applied_from_neither() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
        std::fs::write(&a, "before").unwrap();
        let before = entry_of(&a).unwrap();
        std::fs::write(&a, "after").unwrap();
        let after = entry_of(&a).unwrap();
        let paths = vec![
            AppliedPath {
                path: "a".into(),
                before: before.clone(),
                after: after.clone(),
            },
            AppliedPath {
                path: "b".into(),
                before: None,
                after: after.clone(),
            },
        ];
        // a applied, b not yet: neither.
        assert_eq!(
            inspect(tmp.path(), &paths).unwrap(),
            Found::Neither(vec!["b".into()])
        );
        std::fs::write(&b, "after").unwrap();
        assert_eq!(inspect(tmp.path(), &paths).unwrap(), Found::Applied);
        std::fs::write(&a, "before").unwrap();
        std::fs::remove_file(&b).unwrap();
        assert_eq!(inspect(tmp.path(), &paths).unwrap(), Found::NotApplied);
    }
}
