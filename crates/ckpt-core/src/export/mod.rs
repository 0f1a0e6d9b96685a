//! Frozen exports of a range of turns: a git patch, a ZIP of the files, a
//! report and a manifest, all read from the store.
//!
//! Invariant: an export depends only on recorded history — the pre-image of
//! the first turn in the range that touched each path and the post-image of
//! the last — never on the tree, which may change meanwhile; the one live
//! fact, `live_matches_result`, is labelled as such. Every turn of the range
//! must be closed and live, so the range has one meaning for good.
//!
//! ```no_run
//! # fn main() -> ckpt_core::Result<()> {
//! # let p: ckpt_core::Project = todo!();
//! let manifest = p.export(3, 5, "/tmp/export-3-5".as_ref())?;
//! println!("{}", manifest.result_fingerprint);
//! # Ok(()) }
//! ```

mod archive;
mod binary;
mod fingerprint;
mod patch;
mod report;

use crate::state::HashOf;
use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::Path;

use rusqlite::Connection;
use serde::{Deserialize, Serialize};

use crate::cache;
use crate::error::{Error, IoContext, Result};
use crate::ledger::{Ledger, LedgerEntry, LedgerFilter};
use crate::model::{TurnInfo, TurnStatus};
use crate::relpath::RelPath;
use crate::state::{Hash, State};
use crate::store::BlobStore;
use crate::turns::Turns;

pub use fingerprint::{entry_of, fingerprint, fingerprint_lines, state_holds, FingerprintLine};
pub use report::utc_fields;

/// The four files an export writes, in the order they are written (the
/// manifest, which names the others' hashes, last).
pub const PATCH_FILE: &str = "changes.patch";
pub const ZIP_FILE: &str = "files.zip";
pub const REPORT_FILE: &str = "report.md";
pub const MANIFEST_FILE: &str = "manifest.json";

/// `manifest.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ExportManifest {
    pub tool: String,
    pub tool_version: String,
    pub project: String,
    pub from: i64,
    pub to: i64,
    pub turns: Vec<i64>,
    pub paths: Vec<ManifestPath>,
    pub base_fingerprint: String,
    pub result_fingerprint: String,
    pub patch_sha256: String,
    pub zip_sha256: String,
    /// Whether the tree, as the hash cache last saw it, still has every
    /// touched path in its post state.
    pub live_matches_result: bool,
    /// Paths the patch could not carry, with why.
    pub skipped: Vec<SkippedPath>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ManifestPath {
    pub path: String,
    pub pre: Option<ManifestState>,
    pub post: Option<ManifestState>,
}

/// A present path: `kind` is `file`, `dir`, `symlink`, or `skipped` (its
/// content was not captured: `mode` and `sha256` are null).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestState {
    pub kind: String,
    /// Octal permission bits (`777` for a symlink).
    pub mode: Option<String>,
    /// SHA-256 hex of the content (of the target for a symlink, empty for
    /// a directory).
    pub sha256: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SkippedPath {
    pub path: String,
    pub reason: String,
}

/// What a range of turns did: each touched path's first pre-image and last
/// post-image, with the turns themselves.
#[derive(Clone, Debug)]
pub struct ExportRange {
    pub turns: Vec<TurnInfo>,
    /// Sorted by path bytes.
    pub paths: Vec<RangePath>,
    /// Paths changed between two turns of the range outside any turn: the
    /// export includes that change. (path, turn before, turn after)
    pub between: Vec<(RelPath, i64, i64)>,
    pub ledger: Vec<LedgerEntry>,
}

#[derive(Clone, Debug)]
pub struct RangePath {
    pub path: RelPath,
    pub pre: State,
    pub post: State,
}

/// The touched paths of turns `from..=to`, each closed and not rewound.
pub(crate) fn export_range(
    turns: &Turns<'_>,
    ledger: &Ledger<'_>,
    from: i64,
    to: i64,
) -> Result<ExportRange> {
    if from > to {
        return Err(Error::BadInput(format!(
            "bad range {from}..{to}: the first turn comes after the last"
        )));
    }
    let mut infos = Vec::new();
    let mut paths: BTreeMap<RelPath, (State, State, i64)> = BTreeMap::new();
    let mut between = Vec::new();
    for id in from..=to {
        let detail = turns.show(id)?;
        match detail.info.status {
            TurnStatus::Open => {
                return Err(Error::BadInput(format!(
                    "turn {id} is still open: end it (`ckptctl turn-end`) before exporting it"
                )))
            }
            TurnStatus::Rewound => return Err(Error::TurnRewound(id)),
            TurnStatus::Closed => {}
        }
        for e in detail.entries {
            let post = e.post.ok_or_else(|| {
                Error::Corrupt(format!(
                    "turn {id} is closed but {} has no post-image",
                    e.path.display()
                ))
            })?;
            match paths.get_mut(&e.path) {
                Some((_, last, last_turn)) => {
                    if *last != e.pre {
                        between.push((e.path.clone(), *last_turn, id));
                    }
                    *last = post;
                    *last_turn = id;
                }
                None => {
                    paths.insert(e.path, (e.pre, post, id));
                }
            }
        }
        infos.push(detail.info);
    }
    let mut entries = Vec::new();
    for id in from..=to {
        let filter = LedgerFilter {
            turn: Some(id),
            ..LedgerFilter::default()
        };
        entries.extend(ledger.list(&filter)?);
    }
    Ok(ExportRange {
        turns: infos,
        paths: paths
            .into_iter()
            .map(|(path, (pre, post, _))| RangePath { path, pre, post })
            .collect(),
        between,
        ledger: entries,
    })
}

/// Writes `changes.patch`, `files.zip`, `report.md` and `manifest.json`
/// for `range` of the project at `root` into `out`, an existing empty
/// directory outside the project.
pub(crate) fn export(
    conn: &Connection,
    store: &BlobStore,
    root: &Path,
    range: ExportRange,
    out: &Path,
) -> Result<ExportManifest> {
    check_out_dir(out, &[("the project", root)])?;
    let files = export_files(&range, |hash| store.get(conn, hash))?;
    let mut live = true;
    for p in &range.paths {
        if cache::state(conn, &p.path)? != p.post {
            live = false;
        }
    }
    let manifest = manifest(root, &range, &files, live);
    let report = report::render(root, &range, &manifest);
    let json = serde_json::to_vec_pretty(&manifest)
        .map_err(|e| Error::Invariant(format!("manifest does not serialize: {e}")))?;
    write_new_files(
        out,
        &[
            (PATCH_FILE, &files.patch[..]),
            (ZIP_FILE, &files.zip[..]),
            (REPORT_FILE, report.as_bytes()),
            (MANIFEST_FILE, &json[..]),
        ],
    )?;
    Ok(manifest)
}

/// The patch and the ZIP of a range, in memory.
pub struct ExportFiles {
    pub patch: Vec<u8>,
    pub zip: Vec<u8>,
    pub skipped: Vec<SkippedPath>,
}

/// Builds the patch and the ZIP from the store (`read_blob`: a stored
/// blob's bytes).
pub fn export_files(
    range: &ExportRange,
    mut read_blob: impl FnMut(&Hash) -> Result<Vec<u8>>,
) -> Result<ExportFiles> {
    let mut blobs: HashMap<Hash, Vec<u8>> = HashMap::new();
    for rp in &range.paths {
        for s in [&rp.pre, &rp.post] {
            if let State::File { hash, .. } = s {
                if !blobs.contains_key(hash) {
                    blobs.insert(*hash, read_blob(hash)?);
                }
            }
        }
    }
    frozen_files(&range.paths, &blobs)
}

/// Builds the patch and the ZIP of `paths` (sorted by path bytes), with
/// every file's content in `blobs`: what a work copy's export uses.
pub fn frozen_files(paths: &[RangePath], blobs: &HashMap<Hash, Vec<u8>>) -> Result<ExportFiles> {
    let (patch, skipped) = frozen_patch(paths, blobs);
    let zip = archive::zip(paths, blobs)?;
    Ok(ExportFiles {
        patch,
        zip,
        skipped,
    })
}

/// The patch of [`frozen_files`] alone, with the paths it leaves out: what
/// a work copy's preview and apply need (the ZIP costs as much again).
pub fn frozen_patch(
    paths: &[RangePath],
    blobs: &HashMap<Hash, Vec<u8>>,
) -> (Vec<u8>, Vec<SkippedPath>) {
    let mut patch_text = Vec::new();
    let mut skipped = Vec::new();
    for rp in paths {
        let name = rp.path.display();
        let reason = match (&rp.pre, &rp.post) {
            (State::Skipped { reason }, _) => {
                Some(format!("content before was not captured: {reason}"))
            }
            (_, State::Skipped { reason }) => {
                Some(format!("content after was not captured: {reason}"))
            }
            _ => None,
        };
        if let Some(reason) = reason {
            skipped.push(SkippedPath { path: name, reason });
            continue;
        }
        patch::write(
            &mut patch_text,
            rp.path.as_bytes(),
            git_blob(&rp.pre, blobs),
            git_blob(&rp.post, blobs),
        );
    }
    for rp in paths {
        // Git patches carry no directories: one made with files in it
        // comes with them, an empty one does not.
        let has_files = |d: &RelPath| {
            paths
                .iter()
                .any(|o| o.path != *d && o.path.starts_with(d) && !o.post.is_absent())
        };
        if rp.post.is_dir() && !rp.pre.is_dir() && !has_files(&rp.path) {
            skipped.push(SkippedPath {
                path: rp.path.display(),
                reason: "an empty directory created: git patches carry no directories".into(),
            });
        }
    }
    (patch_text, skipped)
}

/// A state as git sees it: files and symlinks; `None` for anything else.
fn git_blob<'a>(s: &'a State, blobs: &'a HashMap<Hash, Vec<u8>>) -> Option<patch::Blob<'a>> {
    match s {
        State::File { hash, mode, .. } => Some(patch::Blob {
            mode: patch::file_mode(*mode),
            data: &blobs[hash],
        }),
        State::Symlink { target } => Some(patch::Blob {
            mode: patch::SYMLINK_MODE,
            data: target,
        }),
        _ => None,
    }
}

/// A state as `manifest.json` gives it; `None` for an absent path.
pub fn manifest_state(s: &State) -> Option<ManifestState> {
    if s.is_absent() {
        return None;
    }
    Some(ManifestState {
        kind: fingerprint::kind_name(s).to_string(),
        mode: fingerprint::mode_of(s).map(|m| format!("{m:o}")),
        sha256: fingerprint::content_sha256(s),
    })
}

fn manifest(root: &Path, range: &ExportRange, files: &ExportFiles, live: bool) -> ExportManifest {
    let (from, to) = (
        range.turns.first().map_or(0, |t| t.id),
        range.turns.last().map_or(0, |t| t.id),
    );
    ExportManifest {
        tool: "ckpt".into(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        project: root.display().to_string(),
        from,
        to,
        turns: range.turns.iter().map(|t| t.id).collect(),
        paths: range
            .paths
            .iter()
            .map(|rp| ManifestPath {
                path: rp.path.display(),
                pre: manifest_state(&rp.pre),
                post: manifest_state(&rp.post),
            })
            .collect(),
        base_fingerprint: fingerprint(range.paths.iter().map(|rp| (&rp.path, &rp.pre))),
        result_fingerprint: fingerprint(range.paths.iter().map(|rp| (&rp.path, &rp.post))),
        patch_sha256: Hash::of(&files.patch).to_hex(),
        zip_sha256: Hash::of(&files.zip).to_hex(),
        live_matches_result: live,
        skipped: files.skipped.clone(),
    }
}

/// The export goes to an existing, empty directory outside each of `trees`
/// (what each is called, and its path): in a watched tree, ckpt would
/// capture its own export as a change.
pub fn check_out_dir(out: &Path, trees: &[(&str, &Path)]) -> Result<()> {
    let canon = out
        .canonicalize()
        .ctx("resolve the export directory", out)?;
    for (what, tree) in trees {
        let tree = tree.canonicalize().ctx("resolve", *tree)?;
        if canon.starts_with(&tree) {
            return Err(Error::BadInput(format!(
                "the export directory {} is inside {what} {}: ckpt would record the export as a change; choose a directory outside it",
                out.display(),
                tree.display()
            )));
        }
    }
    let mut entries = std::fs::read_dir(&canon).ctx("list the export directory", &canon)?;
    if entries.next().is_some() {
        return Err(Error::BadInput(format!(
            "the export directory {} is not empty; choose a new or empty directory",
            out.display()
        )));
    }
    Ok(())
}

/// Writes each of `files` (name, bytes) into `out` as a new file, synced.
pub fn write_new_files(out: &Path, files: &[(&str, &[u8])]) -> Result<()> {
    for (name, data) in files {
        let path = out.join(name);
        let mut f = std::fs::File::create_new(&path).ctx("create", &path)?;
        f.write_all(data).ctx("write", &path)?;
        f.sync_all().ctx("sync", &path)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Options, TurnMeta};
    use crate::project::Project;

    fn rel(s: &str) -> RelPath {
        RelPath::new(s).expect("a valid relative path")
    }

    /// Runs `edit` on the tree as one turn.
    fn turn(p: &mut Project, root: &Path, edit: impl FnOnce(&Path)) -> i64 {
        let id = p.turn_start(TurnMeta::default()).unwrap();
        edit(root);
        p.reconcile().unwrap();
        p.turn_end().unwrap();
        id
    }

    #[test]
    fn a_range_runs_from_the_first_pre_image_to_the_last_post_image() {
        let (_tmp, root, mut p) = crate::project::tests::reconciled(&[("a", "1\n")]);
        let t1 = turn(&mut p, &root, |r| {
            std::fs::write(r.join("a"), "2\n").unwrap()
        });
        // Between turns, outside any turn:
        std::fs::write(root.join("a"), "user\n").unwrap();
        p.reconcile().unwrap();
        let t2 = turn(&mut p, &root, |r| {
            std::fs::write(r.join("a"), "3\n").unwrap()
        });
        let range = p.export_range(t1, t2).unwrap();
        assert_eq!(range.paths.len(), 1);
        let a = &range.paths[0];
        assert_eq!(a.pre.hash(), Some(Hash::of(b"1\n")));
        assert_eq!(a.post.hash(), Some(Hash::of(b"3\n")));
        assert_eq!(range.between, vec![(rel("a"), t1, t2)]);
        let files = export_files(&range, |h| p.read_blob(h)).unwrap();
        let patch = String::from_utf8(files.patch).unwrap();
        assert!(patch.contains("-1\n+3\n"), "{patch}");
    }

    #[test]
    fn an_uncaptured_file_is_skipped_from_the_patch_with_its_reason() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("proj");
        std::fs::create_dir_all(&root).unwrap();
        let opts = Options {
            max_file_size: 8,
            ..Options::default()
        };
        let mut p = Project::open(&tmp.path().join("store"), &root, opts).unwrap();
        p.reconcile().unwrap();
        let t = turn(&mut p, &root, |r| {
            std::fs::write(r.join("big"), "far more than eight bytes\n").unwrap();
            std::fs::write(r.join("small"), "ok\n").unwrap();
        });
        let range = p.export_range(t, t).unwrap();
        let files = export_files(&range, |h| p.read_blob(h)).unwrap();
        assert_eq!(files.skipped.len(), 1, "{:?}", files.skipped);
        assert_eq!(files.skipped[0].path, "big");
        let patch = String::from_utf8(files.patch).unwrap();
        assert!(!patch.contains("big"), "{patch}");
        assert!(patch.contains("+++ b/small"), "{patch}");
    }

    #[test]
    fn an_export_inside_the_project_is_refused() {
        let (_tmp, root, mut p) = crate::project::tests::reconciled(&[("a", "1\n")]);
        let t = turn(&mut p, &root, |r| {
            std::fs::write(r.join("a"), "2\n").unwrap()
        });
        std::fs::create_dir(root.join("out")).unwrap();
        let err = p.export(t, t, &root.join("out")).unwrap_err().to_string();
        assert!(err.contains("inside the project"), "{err}");
    }
}
