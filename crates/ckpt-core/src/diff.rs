//! Unified diffs of a turn's changes.

use rusqlite::Connection;

use crate::cache;
use crate::error::{Error, Result};
use crate::model::{ChangeKind, FileDiff, ModeChange, RenamedFrom, TurnDetail};
use crate::relpath::RelPath;
use crate::state::State;
use crate::store::BlobStore;

/// Content that is not shown as text: has a NUL byte early on, or is not UTF-8.
pub(crate) fn is_binary(data: &[u8]) -> bool {
    data[..data.len().min(8000)].contains(&0) || std::str::from_utf8(data).is_err()
}

/// Unified diffs of the turn `detail` shows (see [`crate::Project::diff`]).
pub(crate) fn diff(
    conn: &Connection,
    store: &BlobStore,
    detail: TurnDetail,
    paths: &[RelPath],
) -> Result<Vec<FileDiff>> {
    let reader = Reader { conn, store };
    reader.diff(detail, paths)
}

/// What a diff reads: the hash cache and blob contents.
struct Reader<'a> {
    conn: &'a Connection,
    store: &'a BlobStore,
}

impl Reader<'_> {
    fn diff(&self, detail: TurnDetail, paths: &[RelPath]) -> Result<Vec<FileDiff>> {
        let turn = detail.info.id;
        // A path the turn never touched is a mistake to name, not "no diff".
        let untouched: Vec<String> = paths
            .iter()
            .filter(|p| !detail.entries.iter().any(|e| e.path.starts_with(p)))
            .map(|p| p.display())
            .collect();
        if !untouched.is_empty() {
            return Err(Error::BadInput(format!(
                "turn {turn} did not touch {} (`ckptctl show {turn}` lists its paths)",
                untouched.join(", ")
            )));
        }
        let mut changes = Vec::new();
        for e in detail.entries {
            if !paths.is_empty() && !paths.iter().any(|p| e.path.starts_with(p)) {
                continue;
            }
            let post = match e.post {
                Some(p) => p,
                None => cache::state(self.conn, &e.path)?,
            };
            if post == e.pre {
                continue;
            }
            changes.push(Change {
                path: e.path,
                pre: e.pre,
                post,
            });
        }
        let renames = self.renames(&changes)?;
        let mut out = Vec::new();
        for (i, c) in changes.iter().enumerate() {
            if renames.iter().any(|r| r.deleted == i) {
                continue;
            }
            match renames.iter().find(|r| r.added == i) {
                Some(r) => out.push(self.diff_renamed(&changes[r.deleted], c, r.similarity)?),
                None => out.push(self.diff_one(c.path.clone(), &c.pre, &c.post)?),
            }
        }
        Ok(out)
    }

    /// Deleted files paired with added ones, as git finds renames: the same
    /// bytes first, then the most similar text at or above
    /// [`RENAME_SIMILARITY`]. Inexact pairing reads both sides, so it runs
    /// only while candidates × candidates stays under [`RENAME_LIMIT`].
    fn renames(&self, changes: &[Change]) -> Result<Vec<Rename>> {
        let file_hash = |s: &State| match s {
            State::File { hash, .. } => Some(*hash),
            _ => None,
        };
        let deleted: Vec<usize> = (0..changes.len())
            .filter(|&i| changes[i].post.is_absent() && file_hash(&changes[i].pre).is_some())
            .collect();
        let mut added: Vec<usize> = (0..changes.len())
            .filter(|&i| changes[i].pre.is_absent() && file_hash(&changes[i].post).is_some())
            .collect();
        let mut out = Vec::new();
        let mut left = Vec::new();
        for d in deleted {
            let hash = file_hash(&changes[d].pre);
            match added
                .iter()
                .position(|&a| file_hash(&changes[a].post) == hash)
            {
                Some(k) => out.push(Rename {
                    deleted: d,
                    added: added.remove(k),
                    similarity: 100,
                }),
                None => left.push(d),
            }
        }
        if left.is_empty() || added.is_empty() || left.len() * added.len() > RENAME_LIMIT {
            return Ok(out);
        }
        let text = |s: &State| -> Result<Option<String>> {
            match s {
                State::File { hash, size, .. } if *size <= RENAME_MAX_BYTES => {
                    let data = self.store.get(self.conn, hash)?;
                    Ok((!is_binary(&data)).then(|| String::from_utf8_lossy(&data).into_owned()))
                }
                _ => Ok(None),
            }
        };
        let mut new_texts = Vec::new();
        for &a in &added {
            new_texts.push(text(&changes[a].post)?);
        }
        for d in left {
            let Some(old) = text(&changes[d].pre)? else {
                continue;
            };
            let best = added
                .iter()
                .zip(&new_texts)
                .enumerate()
                .filter_map(|(k, (_, new))| {
                    let new = new.as_deref()?;
                    let ratio = similar::TextDiff::from_lines(old.as_str(), new).ratio();
                    Some((k, (ratio * 100.0).floor() as u8))
                })
                .filter(|&(_, sim)| sim >= RENAME_SIMILARITY)
                .max_by_key(|&(k, sim)| (sim, std::cmp::Reverse(k)));
            if let Some((k, similarity)) = best {
                new_texts.remove(k);
                out.push(Rename {
                    deleted: d,
                    added: added.remove(k),
                    similarity: similarity.min(99),
                });
            }
        }
        Ok(out)
    }

    /// The diff of `added` as `deleted` moved (and perhaps edited).
    fn diff_renamed(&self, deleted: &Change, added: &Change, similarity: u8) -> Result<FileDiff> {
        let mut d = self.diff_one(added.path.clone(), &deleted.pre, &added.post)?;
        d.kind = ChangeKind::Renamed;
        d.from = Some(RenamedFrom {
            path: deleted.path.clone(),
            similarity,
        });
        // The text diff runs from the old name to the new.
        d.unified = d.unified.map(|u| match similarity {
            100 => String::new(),
            _ => u.replacen(
                &format!("--- a/{}\n", added.path.display()),
                &format!("--- a/{}\n", deleted.path.display()),
                1,
            ),
        });
        Ok(d)
    }

    fn diff_one(&self, path: RelPath, pre: &State, post: &State) -> Result<FileDiff> {
        let kind = ChangeKind::between(pre, post);
        let mode = match (pre, post) {
            (State::File { mode: old, .. }, State::File { mode: new, .. }) if old != new => {
                Some(ModeChange {
                    old: *old,
                    new: *new,
                })
            }
            _ => None,
        };
        let text = |s: &State| -> Result<Option<Vec<u8>>> {
            Ok(match s {
                State::Absent | State::Dir { .. } => Some(Vec::new()),
                State::File { hash, .. } => Some(self.store.get(self.conn, hash)?),
                State::Symlink { target } => {
                    let mut t = b"-> ".to_vec();
                    t.extend_from_slice(target);
                    t.push(b'\n');
                    Some(t)
                }
                State::Skipped { .. } => None,
            })
        };
        let (Some(old), Some(new)) = (text(pre)?, text(post)?) else {
            return Ok(FileDiff {
                path,
                kind,
                unified: None,
                note: Some("content not captured".into()),
                from: None,
                mode,
            });
        };
        if is_binary(&old) || is_binary(&new) {
            let note = format!("binary file ({} -> {} bytes)", old.len(), new.len());
            return Ok(FileDiff {
                path,
                kind,
                unified: None,
                note: Some(note),
                from: None,
                mode,
            });
        }
        let (old, new) = (String::from_utf8_lossy(&old), String::from_utf8_lossy(&new));
        let name = path.display();
        let (a, b) = (
            if pre.is_absent() {
                "/dev/null".to_string()
            } else {
                format!("a/{name}")
            },
            if post.is_absent() {
                "/dev/null".to_string()
            } else {
                format!("b/{name}")
            },
        );
        let unified = similar::TextDiff::from_lines(old.as_ref(), new.as_ref())
            .unified_diff()
            .context_radius(3)
            .header(&a, &b)
            .to_string();
        Ok(FileDiff {
            path,
            kind,
            unified: Some(unified),
            note: None,
            from: None,
            mode,
        })
    }
}

/// git's default: a pair at least half similar is a rename.
const RENAME_SIMILARITY: u8 = 50;
/// Deleted × added files compared by content at most (git's
/// `diff.renameLimit` counts 1,000 of each; reading both sides of each
/// pair here is dearer, so fewer).
const RENAME_LIMIT: usize = 100 * 100;
/// Larger files are paired only when their bytes are the same.
const RENAME_MAX_BYTES: u64 = 1 << 20;

/// One changed path of the turn.
struct Change {
    path: RelPath,
    pre: State,
    post: State,
}

/// Indexes into the changes: `deleted`'s content moved to `added`.
struct Rename {
    deleted: usize,
    added: usize,
    similarity: u8,
}
