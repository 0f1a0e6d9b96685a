//! The contract of `rewind N --merge[=markers]`, computed independently of
//! ckpt's code: `git merge-file` is the three-way merge oracle.
//!
//! A conflict is merged when the rewind writes a file there, the path is a
//! text file in all three states (base = what the newest rewound turn left,
//! ours = the file now, theirs = the rewind's target) and it was edited
//! since (ours ≠ base). A clean merge is written; an overlapping one is
//! written with conflict markers (`markers`) or left as it is; anything
//! else stays a conflict, and a conflict left refuses the rewind.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context};
use ckpt_proto::MergeOutcome;

use crate::rules::{self, Expect, Turn};
use crate::tree::{Node, Tree};

/// What the merge does to one path, as the reply's `merged` must say it,
/// and the text it writes.
pub type Merged = BTreeMap<Vec<u8>, (MergeOutcome, Option<Vec<u8>>)>;

/// `rewind n --merge` (`markers`: `--merge=markers`) on `tree`; `tmp` is a
/// scratch directory for the oracle's files.
pub fn rewind_merge(
    tree: &Tree,
    turns: &[Turn],
    n: i64,
    markers: bool,
    tmp: &Path,
) -> anyhow::Result<(Expect, Merged)> {
    let mut e = rules::rewind(tree, turns, n, false);
    let items = rules::rewound_items(turns, n);
    // The sides as ckpt names them: the file now, what the agent left, the
    // file before the rewound turns.
    let agent = match e.turns.iter().max() {
        Some(&last) if last != n => format!("agent (turns {n}-{last})"),
        _ => format!("agent (turn {n})"),
    };
    let labels = ["current".to_string(), agent, format!("before turn {n}")];
    let mut outcomes = BTreeMap::new();
    let mut still = std::collections::BTreeSet::new();
    for p in std::mem::take(&mut e.conflicts) {
        let ours = tree.get(&p).cloned();
        let target = e.changed.get(&p).and_then(|c| c.1.clone());
        let base = items.get(&p).map_or(ours.clone(), |c| c.1.clone());
        let (
            Some(Node::File {
                bytes: b,
                mode: base_mode,
            }),
            Some(Node::File {
                bytes: o,
                mode: ours_mode,
            }),
            Some(Node::File {
                bytes: t,
                mode: theirs_mode,
            }),
        ) = (&base, &ours, &target)
        else {
            still.insert(p);
            continue;
        };
        if base == ours || ![&b[..], &o[..], &t[..]].iter().all(|x| is_text(x)) {
            still.insert(p);
            continue;
        }
        let mode = if ours_mode != base_mode {
            *ours_mode
        } else {
            *theirs_mode
        };
        let (text, clean) = merge_file(tmp, b, o, t, &labels)?;
        let outcome = match (clean, markers) {
            (true, _) => MergeOutcome::Clean,
            (false, true) => MergeOutcome::Markers,
            (false, false) => MergeOutcome::Overlapping,
        };
        if outcome == MergeOutcome::Overlapping {
            // Left as it is.
            e.changed.remove(&p);
            if let Some(n) = &ours {
                e.result.insert(p.clone(), n.clone());
            }
            outcomes.insert(p, (outcome, None));
        } else {
            let merged = Node::file(&text, mode);
            e.changed
                .insert(p.clone(), (ours.clone(), Some(merged.clone())));
            e.result.insert(p.clone(), merged);
            outcomes.insert(p, (outcome, Some(text)));
        }
    }
    e.refused = !still.is_empty();
    e.conflicts = still;
    Ok((e, outcomes))
}

/// Text as ckpt (and git) tell it: UTF-8 without a NUL in the first 8,000
/// bytes.
fn is_text(b: &[u8]) -> bool {
    !b[..b.len().min(8000)].contains(&0) && std::str::from_utf8(b).is_ok()
}

/// `git merge-file -p --diff3` of ours against base and theirs, with the
/// labels ckpt writes: the merged text and whether it merged cleanly.
fn merge_file(
    tmp: &Path,
    base: &[u8],
    ours: &[u8],
    theirs: &[u8],
    labels: &[String; 3],
) -> anyhow::Result<(Vec<u8>, bool)> {
    let (b, o, t) = (tmp.join("base"), tmp.join("ours"), tmp.join("theirs"));
    std::fs::write(&b, base).context("merge base")?;
    std::fs::write(&o, ours).context("merge ours")?;
    std::fs::write(&t, theirs).context("merge theirs")?;
    let out = Command::new("git")
        .args(["merge-file", "-p", "--diff3"])
        .args(["-L", &labels[0], "-L", &labels[1], "-L", &labels[2]])
        .arg(&o)
        .arg(&b)
        .arg(&t)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .context("running git merge-file")?;
    match out.status.code() {
        Some(0) => Ok((out.stdout, true)),
        Some(c) if c > 0 && c < 128 => Ok((out.stdout, false)),
        _ => bail!(
            "git merge-file failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}
