//! Unified diffs of a turn's changes.

use rusqlite::Connection;

use crate::cache;
use crate::error::{Error, Result};
use crate::model::{ChangeKind, FileDiff, TurnDetail};
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
        let mut out = Vec::new();
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
            out.push(self.diff_one(e.path, &e.pre, &post)?);
        }
        Ok(out)
    }

    fn diff_one(&self, path: RelPath, pre: &State, post: &State) -> Result<FileDiff> {
        let kind = ChangeKind::between(pre, post);
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
            });
        };
        if is_binary(&old) || is_binary(&new) {
            let note = format!("binary file ({} -> {} bytes)", old.len(), new.len());
            return Ok(FileDiff {
                path,
                kind,
                unified: None,
                note: Some(note),
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
        let mode_note = match (pre, post) {
            (State::File { mode: m1, .. }, State::File { mode: m2, .. }) if m1 != m2 => {
                Some(format!("mode {:o} → {:o}", m1 & 0o7777, m2 & 0o7777))
            }
            _ => None,
        };
        let unified = similar::TextDiff::from_lines(old.as_ref(), new.as_ref())
            .unified_diff()
            .context_radius(3)
            .header(&a, &b)
            .to_string();
        Ok(FileDiff {
            path,
            kind,
            unified: Some(unified),
            note: mode_note,
        })
    }
}
