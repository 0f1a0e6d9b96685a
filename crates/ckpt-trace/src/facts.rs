//! What the daemon knows, asked for over the socket as `ckptctl` asks it:
//! the turns with who made them, the blame of a file (as it is now or as
//! committed), the lines a turn deleted.

use std::collections::BTreeMap;
use std::path::Path;

use ckpt_proto::{BlameAt, BlameReply, Request, TurnInfo, TurnStatus};
use ckptctl::commands::Ctx;
use sha2::{Digest, Sha256};

use crate::model;

/// A turn and the model its agent's transcript names.
pub struct TurnFacts {
    pub info: TurnInfo,
    /// `provider/model` when it can be told, else the model as named.
    pub model: Option<String>,
}

/// Every turn of the project.
pub struct Turns {
    /// The project's root, absolute.
    pub root: String,
    pub by_id: BTreeMap<i64, TurnFacts>,
}

impl Turns {
    pub fn read(ctx: &Ctx) -> anyhow::Result<Turns> {
        // The newest `limit`: every turn there is.
        let log = ckptctl::commands::log::query(ctx, i64::MAX as usize, None)?;
        let mut models: BTreeMap<String, Option<String>> = BTreeMap::new();
        let by_id = log
            .body
            .turns
            .into_iter()
            .map(|info| {
                let model = info.transcript.as_ref().and_then(|t| {
                    models
                        .entry(t.clone())
                        .or_insert_with(|| {
                            model::from_transcript(Path::new(t))
                                .map(|m| model::model_id(&m).unwrap_or(m))
                        })
                        .clone()
                });
                (info.id, TurnFacts { info, model })
            })
            .collect();
        Ok(Turns {
            root: log.project.display(),
            by_id,
        })
    }

    /// The live turns from `from` to `to` (both included).
    pub fn live_in(&self, from: i64, to: i64) -> Vec<i64> {
        self.by_id
            .range(from..=to)
            .filter(|(_, t)| t.info.status != TurnStatus::Rewound)
            .map(|(&id, _)| id)
            .collect()
    }
}

/// The blame of `path` (absolute) as it is now, or of the version `at`.
pub fn blame(ctx: &Ctx, path: &Path, at: Option<BlameAt>) -> anyhow::Result<BlameReply> {
    ctx.reply(&Request::Blame {
        dir: ctx.wire_dir(),
        path: ctx.wire_path(path)?,
        at,
    })
}

/// Lines a turn deleted from a file, numbered as in the turn's pre-image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deletion {
    pub path: String,
    pub turn: i64,
    pub start_line: u64,
    pub end_line: u64,
    pub content_hash: String,
}

/// The lines each file lost in `turn`, from its unified diffs.
pub fn deletions(ctx: &Ctx, turn: i64) -> anyhow::Result<Vec<Deletion>> {
    let d = ckptctl::commands::diff::query(ctx, turn, Vec::new())?;
    let mut out = Vec::new();
    for f in &d.files {
        let Some(unified) = &f.unified else { continue };
        for (start, lines) in deleted_runs(unified) {
            out.push(Deletion {
                path: f.path.display(),
                turn,
                start_line: start,
                end_line: start + lines.len() as u64 - 1,
                content_hash: content_hash(&lines),
            });
        }
    }
    Ok(out)
}

/// Runs of `-` lines of a unified diff: the first one's number in the old
/// file, and their text.
fn deleted_runs(unified: &str) -> Vec<(u64, Vec<&str>)> {
    let mut runs: Vec<(u64, Vec<&str>)> = Vec::new();
    let mut old = 0u64;
    let mut in_run = false;
    for l in unified.lines() {
        if let Some(rest) = l.strip_prefix("@@ -") {
            let start = rest
                .split([',', ' '])
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            old = start;
            in_run = false;
        } else if l.starts_with("---") || l.starts_with("+++") {
            continue;
        } else if let Some(text) = l.strip_prefix('-') {
            match runs.last_mut() {
                Some((_, lines)) if in_run => lines.push(text),
                _ => runs.push((old, vec![text])),
            }
            in_run = true;
            old += 1;
        } else if l.starts_with(' ') {
            in_run = false;
            old += 1;
        } else if l.starts_with('+') {
            // An added line neither ends a run of deletions nor moves the old numbering.
        } else {
            in_run = false;
        }
    }
    runs
}

/// The hash a range's text is tracked by wherever it moves: SHA-256 of its
/// lines, each ended by `\n`.
pub fn content_hash<S: AsRef<str>>(lines: &[S]) -> String {
    let mut h = Sha256::new();
    for l in lines {
        h.update(l.as_ref().as_bytes());
        h.update(b"\n");
    }
    format!("sha256:{}", hex::encode(h.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deleted_lines_are_numbered_in_the_old_file() {
        let diff =
            "--- a/f\n+++ b/f\n@@ -1,5 +1,4 @@\n a\n-b\n-c\n+C\n d\n-e\n@@ -10,2 +9,1 @@\n x\n-y\n";
        let runs = deleted_runs(diff);
        assert_eq!(runs, [(2, vec!["b", "c"]), (5, vec!["e"]), (11, vec!["y"])]);
        assert_eq!(
            content_hash(&["a"]),
            // `printf 'a\n' | sha256sum`
            "sha256:87428fc522803d31065e7bce3cf03fe475096631e5e07bbd7a0fde60c4cf25c7"
        );
    }
}
