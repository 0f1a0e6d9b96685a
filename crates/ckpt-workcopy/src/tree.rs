//! The git tree an apply gives, computed apart: in a temporary index
//! (`GIT_INDEX_FILE` in a temporary directory) of the copy's own
//! repository, `read-tree` of the base, `apply --cached` of the patch,
//! `write-tree`. Neither the original's `.git` nor the copy's index,
//! files or refs are touched; the blobs written go to the copy's object
//! store.
//!
//! After an apply the same is done from the original's files instead of
//! the patch ([`of_original`]): the two ids are equal exactly when the
//! original holds, at every changed path, what the previewed patch gives.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use anyhow::Context;

use super::fingerprint::{self, Entry, Kind};
use super::git;
use super::state::{BaseKind, Store, WorkCopy};

/// A changed path with its entry at the base and in the copy.
pub type Changed = (String, Option<Entry>, Option<Entry>);

/// [`expected`], or `None` with a warning on stderr when git cannot
/// compute it (`git apply --cached` refuses some file-to-directory
/// patches): the tree is a check on the apply, never a reason to refuse it.
pub fn expected_or_warn(
    store: &Store,
    wc: &WorkCopy,
    changed: &[Changed],
    patch: &[u8],
) -> Option<String> {
    expected(store, wc, changed, patch).unwrap_or_else(|e| {
        eprintln!("ckptctl: warning: no expected git tree: {e:#}");
        None
    })
}

/// The tree id of the base with `patch` applied (`None` outside git).
pub fn expected(
    store: &Store,
    wc: &WorkCopy,
    changed: &[Changed],
    patch: &[u8],
) -> anyhow::Result<Option<String>> {
    let Some(ix) = TempIndex::new(wc)? else {
        return Ok(None);
    };
    if wc.base == BaseKind::Current {
        // The base is the original's tree, not its HEAD: its content at
        // the changed paths goes in first, as the patch's pre-image.
        let objects = store.objects(&wc.name);
        let staged = changed
            .iter()
            .map(|(p, b, _)| (p.as_str(), b.as_ref().map(|e| (e, objects.join(&e.sha256)))))
            .collect::<Vec<_>>();
        ix.stage(&staged, |_, kept| Ok(Source::File(kept.clone())))?;
    }
    if !patch.is_empty() {
        ix.run(&["apply", "--cached", "--whitespace=nowarn", "-"], patch)
            .context("applying the patch to the base in a temporary index")?;
    }
    ix.write_tree().map(Some)
}

/// The tree id of the base with the original's entries at `changed`'s
/// paths (`None` outside git): after an apply, [`expected`]'s id.
pub fn of_original(wc: &WorkCopy, changed: &[Changed]) -> anyhow::Result<Option<String>> {
    let Some(ix) = TempIndex::new(wc)? else {
        return Ok(None);
    };
    let mut now = Vec::new();
    for (p, _, _) in changed {
        now.push((p.as_str(), fingerprint::entry_of(&wc.original.join(p))?));
    }
    let staged = now
        .iter()
        .map(|(p, e)| (*p, e.as_ref().map(|e| (e, wc.original.join(p)))))
        .collect::<Vec<_>>();
    ix.stage(&staged, |e, abs| {
        Ok(match e.kind {
            Kind::Symlink => Source::Bytes(
                std::fs::read_link(abs)
                    .with_context(|| format!("reading {}", abs.display()))?
                    .into_os_string()
                    .into_encoded_bytes(),
            ),
            _ => Source::File(abs.clone()),
        })
    })?;
    ix.write_tree().map(Some)
}

/// Where a blob's bytes are.
enum Source {
    /// In this file (for a symlink's entry, a file holding its target).
    File(PathBuf),
    /// These bytes (a symlink's target).
    Bytes(Vec<u8>),
}

struct TempIndex {
    dir: tempfile::TempDir,
    copy: PathBuf,
}

impl TempIndex {
    /// `None` when the copy has no base commit (an original outside git).
    fn new(wc: &WorkCopy) -> anyhow::Result<Option<TempIndex>> {
        let Some(base) = &wc.base_commit else {
            return Ok(None);
        };
        let dir = tempfile::Builder::new()
            .prefix("ckpt-tree-")
            .tempdir()
            .context("creating a temporary directory for the index")?;
        let ix = TempIndex {
            dir,
            copy: wc.copy.clone(),
        };
        ix.run(&["read-tree", base.as_str()], &[])
            .context("reading the base commit into a temporary index")?;
        Ok(Some(ix))
    }

    fn git(&self) -> Command {
        let mut c = git::cmd(&self.copy);
        c.env("GIT_INDEX_FILE", self.dir.path().join("index"))
            // What the base commit names, not what a replace ref says.
            .env("GIT_NO_REPLACE_OBJECTS", "1");
        c
    }

    fn run(&self, args: &[&str], input: &[u8]) -> anyhow::Result<Vec<u8>> {
        let mut c = self.git();
        c.args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c
            .spawn()
            .with_context(|| format!("running git {}", args.join(" ")))?;
        let mut stdin = child.stdin.take().context("git's stdin")?;
        let input = input.to_vec();
        // From a thread: git may fill its output pipe before reading all.
        let writer = std::thread::spawn(move || stdin.write_all(&input));
        let out = child.wait_with_output().context("waiting for git")?;
        let _ = writer.join();
        anyhow::ensure!(
            out.status.success(),
            "git {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
        Ok(out.stdout)
    }

    /// Sets each path's index entry to its entry's content (`None`, or a
    /// directory, which git does not record: no entry), removals first so
    /// a file may replace a directory and the other way round.
    fn stage<T>(
        &self,
        paths: &[(&str, Option<(&Entry, T)>)],
        source: impl Fn(&Entry, &T) -> anyhow::Result<Source>,
    ) -> anyhow::Result<()> {
        let mut lines = Vec::new();
        let mut blobs = Vec::new();
        for (path, e) in paths {
            match e {
                Some((e, t)) if e.kind != Kind::Dir => blobs.push((*path, *e, source(e, t)?)),
                _ => {
                    lines.extend_from_slice(b"0 0000000000000000000000000000000000000000\t");
                    lines.extend_from_slice(path.as_bytes());
                    lines.push(0);
                }
            }
        }
        // One hash-object for every blob: files by path, the rest written
        // into the temporary directory first.
        let mut files = Vec::new();
        for (i, (_, _, s)) in blobs.iter().enumerate() {
            let tmp = self.dir.path().join(format!("blob-{i}"));
            let file = match s {
                // --stdin-paths reads one path a line.
                Source::File(p) if p.to_str().is_some_and(|n| !n.contains('\n')) => p.clone(),
                Source::File(p) => {
                    std::fs::copy(p, &tmp).with_context(|| format!("reading {}", p.display()))?;
                    tmp
                }
                Source::Bytes(b) => {
                    std::fs::write(&tmp, b)
                        .with_context(|| format!("writing {}", tmp.display()))?;
                    tmp
                }
            };
            let name = file
                .to_str()
                .filter(|n| !n.contains('\n'))
                .with_context(|| format!("{}: git needs a one-line UTF-8 path", file.display()))?
                .to_string();
            files.push(name);
        }
        if !blobs.is_empty() {
            let mut input = files.join("\n").into_bytes();
            input.push(b'\n');
            let out = self.run(
                &["hash-object", "-w", "--no-filters", "--stdin-paths"],
                &input,
            )?;
            let ids: Vec<&str> = std::str::from_utf8(&out)
                .context("git hash-object's output")?
                .lines()
                .collect();
            anyhow::ensure!(
                ids.len() == blobs.len(),
                "git hash-object gave {} ids for {} files",
                ids.len(),
                blobs.len()
            );
            for ((path, e, _), id) in blobs.iter().zip(ids) {
                let mode = match e.kind {
                    Kind::Symlink => "120000",
                    _ if e.mode & 0o111 != 0 => "100755",
                    _ => "100644",
                };
                lines.extend_from_slice(format!("{mode} {id}\t{path}").as_bytes());
                lines.push(0);
            }
        }
        if !lines.is_empty() {
            self.run(&["update-index", "-z", "--index-info"], &lines)?;
        }
        Ok(())
    }

    fn write_tree(&self) -> anyhow::Result<String> {
        let out = self.run(&["write-tree"], &[])?;
        Ok(String::from_utf8_lossy(&out).trim().to_string())
    }
}
