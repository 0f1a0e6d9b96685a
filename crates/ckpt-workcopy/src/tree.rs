//! The git tree an apply gives: the base commit's tree with every changed
//! path set to one side's entry. [`expected`] sets the copy's entries
//! (what the apply writes), [`of_original`] the original's entries after
//! the apply; the two ids are equal exactly when the original holds, at
//! every changed path, what the copy held.
//!
//! Both go through [`tree`]: a temporary index (`read-tree` of the base),
//! each changed path staged as an entry with `update-index --index-info`
//! (which drops a file where a directory's entries go and the other way
//! round, so a file replaced by a directory is no special case, as it was
//! for `git apply --cached`), `write-tree`. The blobs come from bytes in
//! memory through `git fast-import`, the very bytes the patch was made of.
//!
//! Nothing is written into any repository: git runs in the copy's
//! repository with a temporary object directory whose alternate is the
//! copy's (`GIT_OBJECT_DIRECTORY`, `GIT_ALTERNATE_OBJECT_DIRECTORIES`), so
//! git itself, in the repository's own hash, names the blobs and trees,
//! and the objects are gone with the temporary directory.

use std::borrow::Cow;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use anyhow::Context;
use ckpt_core::State;

use super::export::Frozen;
use super::fingerprint::Entry;
use super::git;
use super::state::WorkCopy;

/// A changed path with its entry at the base and in the copy.
pub type Changed = (String, Option<Entry>, Option<Entry>);

/// A changed path as a git tree holds it: a blob with its mode (a file or
/// a symlink), or no entry (absent, or a directory, which git records only
/// through its files).
pub struct GitEntry<'a> {
    pub path: &'a str,
    pub blob: Option<(&'static str, Cow<'a, [u8]>)>,
}

/// The git mode of a file with permission bits `mode`.
fn file_mode(mode: u32) -> &'static str {
    if mode & 0o111 != 0 {
        "100755"
    } else {
        "100644"
    }
}

/// The tree id of the base with the copy's entries at the changed paths
/// (`None` outside git): what the apply gives.
pub fn expected(wc: &WorkCopy, frozen: &Frozen) -> anyhow::Result<Option<String>> {
    let mut entries = Vec::with_capacity(frozen.paths.len());
    for (rp, (path, _, _)) in frozen.paths.iter().zip(&frozen.changed) {
        let blob = match &rp.post {
            State::File { hash, mode, .. } => {
                let data = frozen
                    .blobs
                    .get(hash)
                    .with_context(|| format!("{path}: its content was not read"))?;
                Some((file_mode(*mode), Cow::Borrowed(&data[..])))
            }
            State::Symlink { target } => Some(("120000", Cow::Borrowed(&target[..]))),
            State::Absent | State::Dir { .. } => None,
            State::Skipped { reason } => anyhow::bail!("{path}: not read ({reason})"),
        };
        entries.push(GitEntry { path, blob });
    }
    tree(wc, &entries)
}

/// The tree id of the base with the original's entries at `changed`'s
/// paths (`None` outside git): after an apply, [`expected`]'s id.
pub fn of_original(wc: &WorkCopy, changed: &[Changed]) -> anyhow::Result<Option<String>> {
    let mut entries = Vec::with_capacity(changed.len());
    for (path, _, _) in changed {
        let abs = wc.original.join(path);
        let md = match std::fs::symlink_metadata(&abs) {
            Ok(md) => Some(md),
            Err(e) if super::fingerprint::absent(&e) => None,
            Err(e) => return Err(e).with_context(|| format!("reading {}", abs.display())),
        };
        let blob = match md {
            Some(md) if md.file_type().is_symlink() => {
                let target = std::fs::read_link(&abs)
                    .with_context(|| format!("reading {}", abs.display()))?;
                Some(("120000", Cow::Owned(target.as_os_str().as_bytes().to_vec())))
            }
            Some(md) if md.is_file() => {
                use std::os::unix::fs::PermissionsExt;
                let data =
                    std::fs::read(&abs).with_context(|| format!("reading {}", abs.display()))?;
                Some((file_mode(md.permissions().mode()), Cow::Owned(data)))
            }
            _ => None,
        };
        entries.push(GitEntry { path, blob });
    }
    tree(wc, &entries)
}

/// The tree id of the base commit with `entries` staged over it (`None`
/// when the copy has no base commit: an original outside git).
pub fn tree(wc: &WorkCopy, entries: &[GitEntry]) -> anyhow::Result<Option<String>> {
    let Some(base) = &wc.base_commit else {
        return Ok(None);
    };
    let ix = TempIndex::new(wc)?;
    ix.run(&["read-tree", base.as_str()], &[])
        .context("reading the base commit into a temporary index")?;
    let ids = ix.blobs(
        entries
            .iter()
            .filter_map(|e| e.blob.as_ref().map(|b| &b.1[..])),
    )?;
    let mut lines = Vec::new();
    // Removals first, then entries: a path's entry replaces whatever of its
    // parents or children the index holds.
    let zero = "0".repeat(base.len());
    for e in entries.iter().filter(|e| e.blob.is_none()) {
        lines.extend_from_slice(format!("0 {zero}\t{}\0", e.path).as_bytes());
    }
    let blobs = entries
        .iter()
        .filter_map(|e| e.blob.as_ref().map(|b| (e.path, b.0)));
    for ((path, mode), id) in blobs.zip(&ids) {
        lines.extend_from_slice(format!("{mode} {id}\t{path}\0").as_bytes());
    }
    if !lines.is_empty() {
        ix.run(&["update-index", "-z", "--index-info"], &lines)
            .context("staging the changed paths in a temporary index")?;
    }
    let out = ix.run(&["write-tree"], &[])?;
    Ok(Some(String::from_utf8_lossy(&out).trim().to_string()))
}

struct TempIndex {
    dir: tempfile::TempDir,
    copy: PathBuf,
    /// The copy's object directory, absolute.
    objects: PathBuf,
}

impl TempIndex {
    fn new(wc: &WorkCopy) -> anyhow::Result<TempIndex> {
        let dir = tempfile::Builder::new()
            .prefix("ckpt-tree-")
            .tempdir()
            .context("creating a temporary directory for the index")?;
        // git takes a repository whose object directory is missing for none.
        std::fs::create_dir(dir.path().join("objects"))
            .context("creating the temporary object directory")?;
        let objects = git::text(&wc.copy, &["rev-parse", "--git-path", "objects"])?;
        Ok(TempIndex {
            dir,
            copy: wc.copy.clone(),
            objects: wc.copy.join(objects),
        })
    }

    fn git(&self) -> Command {
        let mut c = git::cmd(&self.copy);
        c.env("GIT_INDEX_FILE", self.dir.path().join("index"))
            // Objects written go to the temporary directory; the copy's are
            // read through it.
            .env("GIT_OBJECT_DIRECTORY", self.dir.path().join("objects"))
            .env("GIT_ALTERNATE_OBJECT_DIRECTORIES", &self.objects)
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
        let out = std::thread::scope(|s| {
            // From a thread: git may fill its output pipe before reading all.
            let writer = s.spawn(move || stdin.write_all(input));
            let out = child.wait_with_output();
            let _ = writer.join();
            out
        })
        .context("waiting for git")?;
        anyhow::ensure!(
            out.status.success(),
            "git {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
        Ok(out.stdout)
    }

    /// Writes each of `blobs` into the temporary object directory with one
    /// `git fast-import`; their ids, in order.
    fn blobs<'a>(&self, blobs: impl Iterator<Item = &'a [u8]>) -> anyhow::Result<Vec<String>> {
        let mut stream = Vec::new();
        let mut n = 0;
        for data in blobs {
            n += 1;
            stream.extend_from_slice(format!("blob\nmark :{n}\ndata {}\n", data.len()).as_bytes());
            stream.extend_from_slice(data);
            stream.push(b'\n');
        }
        if n == 0 {
            return Ok(Vec::new());
        }
        stream.extend_from_slice(b"done\n");
        let marks = self.dir.path().join("marks");
        let arg = format!("--export-marks={}", marks.display());
        self.run(&["fast-import", "--quiet", "--done", &arg], &stream)?;
        let text = std::fs::read_to_string(&marks).context("reading git fast-import's marks")?;
        let mut ids = vec![String::new(); n];
        for line in text.lines() {
            let parsed = line
                .strip_prefix(':')
                .and_then(|l| l.split_once(' '))
                .and_then(|(m, id)| Some((m.parse::<usize>().ok()?, id)));
            match parsed {
                Some((m, id)) if (1..=n).contains(&m) => ids[m - 1] = id.to_string(),
                _ => anyhow::bail!("git fast-import's marks: unexpected line {line:?}"),
            }
        }
        anyhow::ensure!(
            ids.iter().all(|id| !id.is_empty()),
            "git fast-import named fewer blobs than the {n} given"
        );
        Ok(ids)
    }
}
