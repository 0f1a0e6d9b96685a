//! Writing another tree's content into the project as one new turn (a work
//! copy's apply), through the rewind's path: planned exactly or not at all
//! (as a redo is), journaled with the turn it makes, written by the one
//! confined tree writer, and recorded as that turn's entries once applied,
//! so `rewind` undoes it and `redo` brings it back. A crash part way is
//! finished (or rolled back) by `recover` like any rewind.

use crate::state::HashOf;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use crate::confined::{Root, StatKind};
use crate::db;
use crate::error::{Error, IoContext, Result};
use crate::export::state_holds;
use crate::model::{Action, CopyConflict, RewindOptions, Skipped, TurnMeta};
use crate::parts::Parts;
use crate::relpath::RelPath;
use crate::state::{Entry, Hash, State};
use crate::store::{BlobStore, Prepared};

use super::apply::apply;
use super::journal::Journaled;
use super::plan::{self, Kind, Wanted};
use super::{current_states, recover, tree, writer, Side};

/// One path to bring over from the source tree.
#[derive(Clone, Debug)]
pub struct CopyPath {
    pub path: RelPath,
    /// What the project must hold there now (`None`: nothing).
    pub base: Option<Entry>,
    /// What the source holds there (`None`: nothing), as the caller saw
    /// it; read again and checked.
    pub copy: Option<Entry>,
}

#[derive(Clone, Debug)]
pub enum CopyOutcome {
    /// Nothing was written.
    Refused {
        conflicts: Vec<CopyConflict>,
        /// Paths that cannot be written exactly, with why.
        blocked: Vec<Skipped>,
    },
    Applied {
        turn: i64,
        rewind_id: i64,
        actions: Vec<Action>,
    },
}

/// Writes each of `paths` as `source` (a directory outside the project)
/// holds it, as one new turn made by `meta`, if the project still holds
/// every path as its `base` says (a path already as in the source is
/// left alone). Other turns stay open: the new turn is closed once
/// written. Call after a barrier.
pub(crate) fn copy_in(
    parts: &mut Parts<'_>,
    source: &Path,
    meta: TurnMeta,
    paths: Vec<CopyPath>,
    mut opts: RewindOptions,
) -> Result<CopyOutcome> {
    recover(parts)?;
    let src = Root::open(source).ctx("open", source)?;
    let mut blobs = Vec::new();
    let mut targets = BTreeMap::new();
    let mut blocked = Vec::new();
    for cp in &paths {
        let is_dir = |e: &Option<Entry>| e.as_ref().is_some_and(|e| e.is_dir());
        if parts
            .excludes
            .is_excluded(&cp.path, is_dir(&cp.copy) || is_dir(&cp.base))
        {
            let why = "excluded from capture here, so writing it could not be rewound";
            blocked.push(Skipped::new(cp.path.clone(), why));
            continue;
        }
        let target = read_source(parts.store, &src, &cp.path, &mut blobs)?;
        if !state_holds(&target, cp.copy.as_ref()) {
            return Err(Error::BadInput(format!(
                "{} changed at {} since it was read for this; nothing was written",
                source.display(),
                cp.path
            )));
        }
        targets.insert(cp.path.clone(), target);
    }
    if !blocked.is_empty() {
        return Ok(CopyOutcome::Refused {
            conflicts: Vec::new(),
            blocked,
        });
    }
    let mut dirs = writer(parts)?;
    let states = current_states(parts, targets.keys(), opts.after_barrier)?;
    let mut current: HashMap<RelPath, State> = targets.keys().cloned().zip(states).collect();
    let mut conflicts = Vec::new();
    let mut wanted = Vec::new();
    for cp in paths {
        let (Some(now), Some(target)) = (current.remove(&cp.path), targets.remove(&cp.path)) else {
            return Err(Error::BadInput(format!("{} is listed twice", cp.path)));
        };
        if now != target && !state_holds(&now, cp.base.as_ref()) {
            conflicts.push(CopyConflict {
                path: cp.path,
                base: cp.base,
                current: now,
            });
            continue;
        }
        wanted.push(Wanted {
            path: cp.path,
            expected: now.clone(),
            current: now,
            target,
        });
    }
    if !conflicts.is_empty() {
        return Ok(CopyOutcome::Refused {
            conflicts,
            blocked: Vec::new(),
        });
    }
    let spill = &parts.spill();
    let planned = db::reading(parts.conn, || {
        plan::plan(
            &tree(parts),
            Kind::Redo,
            0,
            Vec::new(),
            wanted,
            false,
            spill,
        )
    })?;
    let actions = planned.actions;
    if !planned.plan.blocked.is_empty() {
        return Ok(CopyOutcome::Refused {
            conflicts: Vec::new(),
            blocked: planned.plan.blocked,
        });
    }
    if actions.is_empty() {
        return Err(Error::BadInput(
            "nothing to write: the project already holds every path as the source does".into(),
        ));
    }
    let store = parts.store;
    let journaled = Journaled::write_new_turn(parts.conn, &meta, &actions, |tx| {
        blobs.iter().try_for_each(|b| store.insert(tx, b))
    })?;
    drop(blobs);
    apply(
        parts,
        &mut dirs,
        &journaled,
        &actions,
        Side::Target,
        true,
        &mut opts.take_hook(),
    )?;
    Ok(CopyOutcome::Applied {
        turn: journaled.applies.expect("journaled as a new turn"),
        rewind_id: journaled.id,
        actions: actions.to_vec()?,
    })
}

/// The state of `path` in `src` (never through a symlink), with a
/// file's content compressed into `blobs` for storing.
fn read_source(
    store: &BlobStore,
    src: &Root,
    path: &RelPath,
    blobs: &mut Vec<Prepared>,
) -> Result<State> {
    let (root, rel) = (src.path(), path.as_path());
    let Some(st) = src.lstat(path).ctx_in("stat", root, rel)? else {
        return Ok(State::Absent);
    };
    Ok(match st.kind {
        StatKind::File => {
            let (data, st) = src.read_file(path).ctx_in("read", root, rel)?;
            let hash = Hash::of(&data);
            blobs.push(store.prepare_hashed(hash, &data));
            State::File {
                hash,
                size: data.len() as u64,
                mode: st.mode,
            }
        }
        StatKind::Dir => State::Dir { mode: st.mode },
        StatKind::Symlink => State::Symlink {
            target: src.read_link(path).ctx_in("read link", root, rel)?,
        },
        StatKind::Other => {
            return Err(Error::BadInput(format!(
                "{}: neither a file, a directory nor a symlink",
                root.join(rel).display()
            )))
        }
    })
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::os::unix::fs::{symlink, PermissionsExt};
    use std::path::Path;

    use super::*;
    use crate::error::Error;
    use crate::export::entry_of;
    use crate::model::{RewindOutcome, TurnStatus};
    use crate::project::tests::reconciled;
    use crate::rewind::tests::snapshot;

    /// The entry of what is at `abs`, from the file system itself.
    fn entry_at(abs: &Path) -> Option<Entry> {
        let md = fs::symlink_metadata(abs).ok()?;
        let state = if md.is_symlink() {
            State::Symlink {
                target: fs::read_link(abs)
                    .unwrap()
                    .into_os_string()
                    .into_encoded_bytes(),
            }
        } else if md.is_dir() {
            State::Dir {
                mode: md.permissions().mode() & 0o7777,
            }
        } else {
            let data = fs::read(abs).unwrap();
            State::File {
                hash: Hash::of(&data),
                size: data.len() as u64,
                mode: md.permissions().mode() & 0o7777,
            }
        };
        entry_of(&state)
    }

    /// A copy of `root` at `<tmp>/copy`, changed by `edit`; returns it with
    /// the paths to bring over (every path `edit` named).
    fn changed_copy(
        tmp: &Path,
        root: &Path,
        touched: &[&str],
        edit: impl FnOnce(&Path),
    ) -> (std::path::PathBuf, Vec<CopyPath>) {
        let copy = tmp.join("copy");
        let status = std::process::Command::new("cp")
            .arg("-a")
            .arg(root)
            .arg(&copy)
            .status()
            .unwrap();
        assert!(status.success());
        let base: Vec<_> = touched.iter().map(|p| entry_at(&root.join(p))).collect();
        edit(&copy);
        let paths = touched
            .iter()
            .zip(base)
            .map(|(p, base)| CopyPath {
                path: RelPath::new(*p).unwrap(),
                base,
                copy: entry_at(&copy.join(p)),
            })
            .collect();
        (copy, paths)
    }

    const TOUCHED: [&str; 6] = ["a.txt", "gone.txt", "run.sh", "new", "new/f", "link"];

    fn agent_edit(copy: &Path) {
        fs::write(copy.join("a.txt"), "two\n").unwrap();
        fs::remove_file(copy.join("gone.txt")).unwrap();
        fs::set_permissions(copy.join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
        fs::create_dir(copy.join("new")).unwrap();
        fs::write(copy.join("new/f"), [0u8, 1, 2, 255]).unwrap();
        symlink("a.txt", copy.join("link")).unwrap();
    }

    fn files() -> [(&'static str, &'static str); 3] {
        [
            ("a.txt", "one\n"),
            ("gone.txt", "bye\n"),
            ("run.sh", "echo\n"),
        ]
    }

    fn meta() -> TurnMeta {
        TurnMeta {
            label: Some("apply".into()),
            ..TurnMeta::default()
        }
    }

    #[test]
    fn a_copy_in_is_one_turn_that_rewinds_and_redoes() {
        let (tmp, root, mut p) = reconciled(&files());
        let before = snapshot(&root);
        let (copy, paths) = changed_copy(tmp.path(), &root, &TOUCHED, agent_edit);
        let out = p
            .copy_in(&copy, meta(), paths, RewindOptions::default())
            .unwrap();
        let CopyOutcome::Applied { turn, actions, .. } = out else {
            panic!("not applied: {out:?}");
        };
        assert_eq!(actions.len(), 6, "{actions:?}");
        assert_eq!(snapshot(&root), snapshot(&copy));
        let detail = p.show(turn).unwrap();
        assert_eq!(detail.info.status, TurnStatus::Closed);
        assert!(detail.info.ended_ns.is_some());
        assert_eq!(detail.info.label.as_deref(), Some("apply"));
        let c = detail.info.counts;
        assert_eq!((c.added, c.modified, c.deleted), (3, 2, 1), "{c:?}");
        // An apply is not a rewind: there is nothing to redo yet.
        assert!(matches!(
            p.redo(RewindOptions::default()),
            Err(Error::NothingToRedo)
        ));

        p.reconcile().unwrap();
        let out = p.rewind(turn, RewindOptions::default()).unwrap();
        assert!(matches!(out, RewindOutcome::Applied { .. }), "{out:?}");
        assert_eq!(snapshot(&root), before);
        p.reconcile().unwrap();
        let out = p.redo(RewindOptions::default()).unwrap();
        assert!(matches!(out, RewindOutcome::Applied { .. }), "{out:?}");
        assert_eq!(snapshot(&root), snapshot(&copy));
    }

    #[test]
    fn a_path_changed_since_the_base_refuses_the_whole_copy_in() {
        let (tmp, root, mut p) = reconciled(&files());
        let (copy, paths) = changed_copy(tmp.path(), &root, &TOUCHED, agent_edit);
        fs::write(root.join("a.txt"), "the user's edit\n").unwrap();
        let before = snapshot(&root);
        let turns = p.log(10).unwrap().len();
        let out = p
            .copy_in(&copy, meta(), paths, RewindOptions::default())
            .unwrap();
        let CopyOutcome::Refused { conflicts, blocked } = out else {
            panic!("not refused: {out:?}");
        };
        let paths: Vec<String> = conflicts.iter().map(|c| c.path.to_string()).collect();
        assert_eq!(paths, ["a.txt"]);
        assert!(blocked.is_empty());
        assert_eq!(snapshot(&root), before);
        assert_eq!(p.log(10).unwrap().len(), turns);
    }

    #[test]
    fn a_source_changed_since_it_was_read_is_an_error_and_writes_nothing() {
        let (tmp, root, mut p) = reconciled(&files());
        let (copy, paths) = changed_copy(tmp.path(), &root, &TOUCHED, agent_edit);
        fs::write(copy.join("new/f"), "later\n").unwrap();
        let before = snapshot(&root);
        let err = p
            .copy_in(&copy, meta(), paths, RewindOptions::default())
            .unwrap_err();
        assert!(err.to_string().contains("changed at new/f"), "{err}");
        assert_eq!(snapshot(&root), before);
        assert!(p.log(10).unwrap().is_empty());
    }

    #[test]
    fn a_copy_in_cut_short_is_finished_by_recovery_as_its_turn() {
        let (tmp, root, mut p) = reconciled(&files());
        let (copy, paths) = changed_copy(tmp.path(), &root, &TOUCHED, agent_edit);
        let opts = RewindOptions {
            before_op: Some(Box::new(|i| {
                if i == 2 {
                    Err(Error::Injected(i))
                } else {
                    Ok(())
                }
            })),
            ..RewindOptions::default()
        };
        let err = p.copy_in(&copy, meta(), paths, opts).unwrap_err();
        assert!(matches!(err, Error::Injected(2)), "{err}");
        assert_ne!(snapshot(&root), snapshot(&copy));
        let report = p.recover().unwrap().expect("a pending journal");
        assert!(!report.redo);
        assert_eq!(snapshot(&root), snapshot(&copy));
        let log = p.log(10).unwrap();
        assert_eq!(log.len(), 1);
        assert_eq!(log[0].counts.added + log[0].counts.modified, 5);
        assert!(log[0].ended_ns.is_some());
    }

    #[test]
    fn a_path_listed_twice_is_an_error_and_writes_nothing() {
        let (tmp, root, mut p) = reconciled(&files());
        let (copy, mut paths) = changed_copy(tmp.path(), &root, &TOUCHED, agent_edit);
        paths.push(paths[0].clone());
        let before = snapshot(&root);
        let err = p
            .copy_in(&copy, meta(), paths, RewindOptions::default())
            .unwrap_err();
        assert!(err.to_string().contains("a.txt is listed twice"), "{err}");
        assert_eq!(snapshot(&root), before);
        assert!(p.log(10).unwrap().is_empty());
    }

    #[test]
    fn a_path_the_project_excludes_blocks_the_copy_in() {
        let (tmp, root, mut p) = reconciled(&[("a.txt", "one\n"), (".ckptignore", "*.log\n")]);
        let (copy, paths) = changed_copy(tmp.path(), &root, &["a.txt", "x.log"], |c| {
            fs::write(c.join("a.txt"), "two\n").unwrap();
            fs::write(c.join("x.log"), "log\n").unwrap();
        });
        let before = snapshot(&root);
        let out = p
            .copy_in(&copy, meta(), paths, RewindOptions::default())
            .unwrap();
        let CopyOutcome::Refused { blocked, .. } = out else {
            panic!("not refused: {out:?}");
        };
        assert_eq!(blocked.len(), 1, "{blocked:?}");
        assert_eq!(blocked[0].path.to_string(), "x.log");
        assert_eq!(snapshot(&root), before);
    }
}
