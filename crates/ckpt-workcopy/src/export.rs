//! `workcopy export`: the copy's changes against its base, frozen as the
//! four files of a turn export (docs/export.md): `changes.patch` (which
//! `git apply` takes on the base), `files.zip` (the changed paths as the
//! copy holds them), `report.md` and `manifest.json`, with the work copy's
//! state and its checks (`workcopy run`) in the report and the manifest.

use ckpt_core::HashOf;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context;
use ckpt_core::{Hash, ManifestPath, RangePath, RelPath, SkippedPath, State};
use serde::Serialize;

use super::create::BaseReader;
use super::fingerprint::{self, Entry, Kind, Manifest};
use super::preview;
use super::state::{Phase, RunRecord, Store, WorkCopy};
use super::tree::Changed;

/// `manifest.json` of a work copy's export.
#[derive(Serialize, Debug)]
pub struct WorkcopyManifest {
    pub tool: String,
    pub tool_version: String,
    pub workcopy: String,
    pub original: String,
    pub copy: String,
    pub base: String,
    pub base_commit: Option<String>,
    pub state: Phase,
    /// The changed paths, sorted by path bytes: `pre` as at the base, `post`
    /// as in the copy.
    pub paths: Vec<ManifestPath>,
    pub base_fingerprint: String,
    pub result_fingerprint: String,
    pub patch_sha256: String,
    pub zip_sha256: String,
    /// A live fact: whether the original still holds every changed path as
    /// at the base (applying would not conflict).
    pub original_matches_base: bool,
    pub skipped: Vec<SkippedPath>,
    pub runs: Vec<RunRecord>,
    /// The apply's turn in the original, once applied.
    pub applied_turn: Option<i64>,
    pub commit: Option<String>,
}

/// The copy's changes against its base, frozen: each changed path's states
/// and entries, with every file's bytes, from which the patch, the ZIP and
/// the expected git tree are made.
pub struct Frozen {
    pub paths: Vec<RangePath>,
    pub blobs: HashMap<Hash, Vec<u8>>,
    pub changed: Vec<Changed>,
}

impl Frozen {
    /// The patch alone: preview and apply need no ZIP (it costs as much
    /// again).
    pub fn patch(&self) -> Vec<u8> {
        ckpt_core::frozen_patch(&self.paths, &self.blobs).0
    }

    /// The patch and the ZIP, for an export.
    pub fn files(&self) -> anyhow::Result<ckpt_core::ExportFiles> {
        Ok(ckpt_core::frozen_files(&self.paths, &self.blobs)?)
    }
}

pub fn sha256(bytes: &[u8]) -> String {
    Hash::of(bytes).to_hex()
}

/// Freezes the changes from `base` to `now` (the copy's manifest): every
/// changed path's bytes are read and checked against `now`, so the patch
/// is exactly the tree the manifest names.
pub fn freeze(
    store: &Store,
    wc: &WorkCopy,
    base: &Manifest,
    now: &Manifest,
) -> anyhow::Result<Frozen> {
    let mut blobs: HashMap<Hash, Vec<u8>> = HashMap::new();
    let mut paths = Vec::new();
    let changed = preview::changed(base, now);
    let mut reader = BaseReader::new(store, wc);
    for (path, b, c) in &changed {
        let pre = match b {
            Some(e) => state_of(e, reader.bytes(path, e)?, &mut blobs),
            None => State::Absent,
        };
        let post = match c {
            Some(e) => state_of(e, copy_bytes(&wc.copy, path, e)?, &mut blobs),
            None => State::Absent,
        };
        for (s, e) in [(&pre, b), (&post, c)] {
            anyhow::ensure!(
                ckpt_core::state_holds(s, e.as_ref()),
                "{} changed while it was read; try again",
                wc.copy.join(path).display()
            );
        }
        let path = RelPath::new(path.as_str()).map_err(|e| anyhow::anyhow!("{path}: {e}"))?;
        paths.push(RangePath { path, pre, post });
    }
    Ok(Frozen {
        paths,
        blobs,
        changed,
    })
}

/// Writes the export of `wc` into `out`, an existing empty directory
/// outside the original and the copy.
pub fn export(store: &Store, wc: &WorkCopy, out: &Path) -> anyhow::Result<WorkcopyManifest> {
    ckpt_core::check_out_dir(
        out,
        &[("the original", &wc.original), ("the work copy", &wc.copy)],
    )?;
    let base = store.load_manifest(&wc.name)?;
    let now = fingerprint::manifest(&wc.copy)?;
    let frozen = freeze(store, wc, &base, &now)?;
    let (paths, files) = (&frozen.paths, frozen.files()?);
    let p = preview::preview_of(wc, &base, now)?;
    let m = WorkcopyManifest {
        tool: "ckpt".into(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        workcopy: wc.name.clone(),
        original: wc.original.display().to_string(),
        copy: wc.copy.display().to_string(),
        base: wc.base.as_str().into(),
        base_commit: wc.base_commit.clone(),
        state: wc.state,
        paths: paths
            .iter()
            .map(|rp| ManifestPath {
                path: rp.path.display(),
                pre: ckpt_core::manifest_state(&rp.pre),
                post: ckpt_core::manifest_state(&rp.post),
            })
            .collect(),
        base_fingerprint: ckpt_core::fingerprint(paths.iter().map(|rp| (&rp.path, &rp.pre))),
        result_fingerprint: ckpt_core::fingerprint(paths.iter().map(|rp| (&rp.path, &rp.post))),
        patch_sha256: Hash::of(&files.patch).to_hex(),
        zip_sha256: Hash::of(&files.zip).to_hex(),
        original_matches_base: p.original_matches_base(),
        skipped: files.skipped.clone(),
        runs: wc.runs.clone(),
        applied_turn: wc.apply.as_ref().and_then(|a| a.turn),
        commit: wc.commit.as_ref().and_then(|c| c.commit.clone()),
    };
    let json = serde_json::to_vec_pretty(&m).context("encoding the manifest")?;
    let logs = m.runs.iter().map(|r| log_text(&r.log)).collect::<Vec<_>>();
    let report = report(&m, &logs);
    ckpt_core::write_new_files(
        out,
        &[
            (ckpt_core::PATCH_FILE, &files.patch[..]),
            (ckpt_core::ZIP_FILE, &files.zip[..]),
            (ckpt_core::REPORT_FILE, report.as_bytes()),
            (ckpt_core::MANIFEST_FILE, &json[..]),
        ],
    )?;
    Ok(m)
}

/// The state an entry names, with a file's bytes kept in `blobs`.
fn state_of(e: &Entry, bytes: Vec<u8>, blobs: &mut HashMap<Hash, Vec<u8>>) -> State {
    match e.kind {
        Kind::Dir => State::Dir { mode: e.mode },
        Kind::Symlink => State::Symlink { target: bytes },
        Kind::File => {
            let hash = Hash::of(&bytes);
            let size = bytes.len() as u64;
            blobs.insert(hash, bytes);
            State::File {
                hash,
                size,
                mode: e.mode,
            }
        }
    }
}

fn copy_bytes(copy: &Path, path: &str, e: &Entry) -> anyhow::Result<Vec<u8>> {
    let abs = copy.join(path);
    let read = match e.kind {
        Kind::Dir => return Ok(Vec::new()),
        Kind::File => std::fs::read(&abs),
        Kind::Symlink => std::fs::read_link(&abs).map(|t| t.into_os_string().into_encoded_bytes()),
    };
    read.with_context(|| format!("reading {}", abs.display()))
}

/// The end of a run's log kept in the report: a runaway check's output
/// must not make the report itself unreadable.
const LOG_TAIL: usize = 64 * 1024;

/// A run's log as the report shows it: its last [`LOG_TAIL`] bytes, as
/// text, saying what was left out or why it cannot be read.
fn log_text(path: &Path) -> String {
    match std::fs::read(path) {
        Ok(bytes) if bytes.len() > LOG_TAIL => {
            let cut = bytes.len() - LOG_TAIL;
            format!(
                "[the first {cut} bytes left out]\n{}",
                String::from_utf8_lossy(&bytes[cut..])
            )
        }
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) => format!("[the log {} cannot be read: {e}]", path.display()),
    }
}

/// A fenced block that `text` cannot close: more backticks than its
/// longest run (CommonMark).
fn fenced(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let nl = if text.ends_with('\n') || text.is_empty() {
        ""
    } else {
        "\n"
    };
    format!("{fence}text\n{text}{nl}{fence}\n")
}

fn report(m: &WorkcopyManifest, logs: &[String]) -> String {
    let mut r = String::new();
    let _ = writeln!(r, "# Work copy `{}`\n", m.workcopy);
    let _ = writeln!(r, "- Original: `{}`", m.original);
    let _ = writeln!(r, "- Copy: `{}`", m.copy);
    let commit = m
        .base_commit
        .as_deref()
        .map(|c| format!(" `{c}`"))
        .unwrap_or_default();
    let _ = writeln!(r, "- Base: {}{commit}", m.base);
    let _ = writeln!(r, "- State: {}", m.state.as_str());
    if let Some(t) = m.applied_turn {
        let _ = writeln!(r, "- Applied as turn {t} in the original");
    }
    if let Some(c) = &m.commit {
        let _ = writeln!(r, "- Committed as `{c}`");
    }
    let matches = if m.original_matches_base {
        "yes"
    } else {
        "no: applying would conflict"
    };
    let _ = writeln!(r, "- Original still as at the base: {matches}");
    let _ = writeln!(r, "- Base fingerprint: `{}`", m.base_fingerprint);
    let _ = writeln!(r, "- Result fingerprint: `{}`\n", m.result_fingerprint);
    let _ = writeln!(r, "## Paths ({})\n", m.paths.len());
    let _ = writeln!(r, "| Path | Change | Base | Copy |\n|---|---|---|---|");
    for p in &m.paths {
        let side = |s: &Option<ckpt_core::ManifestState>| match s {
            None => "absent".to_string(),
            Some(s) => format!("{} {}", s.kind, s.mode.as_deref().unwrap_or("")),
        };
        let change = match (&p.pre, &p.post) {
            (None, _) => "added",
            (_, None) => "deleted",
            _ => "modified",
        };
        let _ = writeln!(
            r,
            "| `{}` | {change} | {} | {} |",
            p.path,
            side(&p.pre),
            side(&p.post)
        );
    }
    if !m.skipped.is_empty() {
        let _ = writeln!(r, "\n## Not in the patch\n");
        for s in &m.skipped {
            let _ = writeln!(r, "- `{}`: {}", s.path, s.reason);
        }
    }
    let _ = writeln!(r, "\n## Checks run ({})\n", m.runs.len());
    if !m.runs.is_empty() {
        let _ = writeln!(r, "| Command | Result | Seconds | Log |\n|---|---|---|---|");
        for run in &m.runs {
            let result = run.outcome();
            let _ = writeln!(
                r,
                "| `{}` | {result} | {:.1} | `{}` |",
                run.command.join(" "),
                run.duration_ms as f64 / 1000.0,
                run.log.display()
            );
        }
        for (i, (run, log)) in m.runs.iter().zip(logs).enumerate() {
            let _ = writeln!(
                r,
                "\n### Run {}: `{}` ({})\n",
                i + 1,
                run.command.join(" "),
                run.outcome()
            );
            r.push_str(&fenced(log));
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_is_fenced_so_its_backticks_cannot_end_the_block() {
        let f = fenced("a ``` b\n````\n");
        assert!(f.starts_with("`````text\n"), "{f}");
        assert!(f.ends_with("\n`````\n"), "{f}");
        assert_eq!(fenced(""), "```text\n```\n");
    }

    #[test]
    fn a_long_log_keeps_its_end_and_says_what_was_left_out() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("log");
        let mut text = "x".repeat(LOG_TAIL);
        text.push_str("THE END\n");
        std::fs::write(&p, &text).unwrap();
        let shown = log_text(&p);
        assert!(
            shown.starts_with("[the first 8 bytes left out]\n"),
            "{}",
            &shown[..40]
        );
        assert!(shown.ends_with("THE END\n"));
        assert!(log_text(&tmp.path().join("gone")).contains("cannot be read"));
    }
}
