//! Making a work copy: an independent copy of the original at a recorded
//! base, refused when it could not be faithful.
//!
//! `--base HEAD`: `git clone --no-local --no-hardlinks` (objects copied,
//! none shared, no alternates), origin removed, detached at the commit read
//! before the clone; HEAD is read again after the clone and the clone made
//! again if it moved. `--base current`: every path ckpt captures, copied
//! (never linked); when the original is a git repository with a commit, the
//! copy gets an independent clone of it as `.git`, detached at the
//! original's HEAD with its index at that commit, so `git status` in the copy
//! shows the original's uncommitted changes as changes.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::Context;

use super::fingerprint::{self, Kind, Manifest};
use super::git;
use super::state::{now_secs, valid_name, BaseKind, Phase, Store, WorkCopy, STATE_VERSION};
use super::symlinks;

/// The ref that keeps the base commit alive in the copy.
pub const BASE_REF: &str = "refs/ckpt/base";

/// How often the clone is made again when the original's HEAD moves meanwhile.
const CLONE_ATTEMPTS: usize = 3;

pub struct Options {
    pub base: BaseKind,
    pub name: Option<String>,
    pub path: Option<PathBuf>,
}

/// Makes the copy and records it (state `ready`); on failure, leaves nothing.
pub fn create(store: &Store, original: &Path, opts: Options) -> anyhow::Result<WorkCopy> {
    let original = original
        .canonicalize()
        .with_context(|| format!("resolving {}", original.display()))?;
    let name = match opts.name {
        Some(n) => n,
        None => default_name(store, &original),
    };
    valid_name(&name)?;
    anyhow::ensure!(
        !store.state_file(&name).exists() && !store.files(&name).exists(),
        "a work copy named '{name}' exists already (`ckptctl workcopy remove {name}`)"
    );
    let copy = match &opts.path {
        Some(p) => ckptctl::commands::absolute(p)?,
        None => store.default_copy(&name),
    };
    // Checked before anything is created: the original is never written.
    let copy = resolve(&copy)?;
    let data = resolve(&store.data_dir)?;
    for (other, what) in [
        (&original, "the original"),
        (&data, "ckpt's data directory"),
    ] {
        anyhow::ensure!(
            !copy.starts_with(other) && !other.starts_with(&copy),
            "the copy {} and {what} {} would overlap; give --path a directory outside both",
            copy.display(),
            other.display()
        );
    }
    if let Ok(mut listing) = std::fs::read_dir(&copy) {
        anyhow::ensure!(
            listing.next().is_none(),
            "{} exists and is not empty; give --path a new directory",
            copy.display()
        );
    }
    std::fs::create_dir_all(&copy).with_context(|| format!("creating {}", copy.display()))?;
    let made = make(store, &name, &original, &copy, opts.base);
    if made.is_err() {
        let _ = std::fs::remove_dir_all(&copy);
        let _ = std::fs::remove_dir_all(store.files(&name));
    }
    made
}

fn make(
    store: &Store,
    name: &str,
    original: &Path,
    copy: &Path,
    base: BaseKind,
) -> anyhow::Result<WorkCopy> {
    let in_git = git::toplevel(original).is_some();
    let mut left_out = Vec::new();
    let head = if in_git { git::head(original) } else { None };
    let base_commit = match base {
        BaseKind::Head => {
            let head = head.with_context(|| {
                format!(
                    "--base HEAD needs a git repository with a commit; {} has none (use --base current)",
                    original.display()
                )
            })?;
            refuse_submodules(original, Some(&head))?;
            refuse_uncommitted(original)?;
            Some(clone_at_head(original, copy, head)?)
        }
        BaseKind::Current => {
            if in_git {
                refuse_submodules(original, head.as_deref())?;
            }
            if std::path::Path::new(&original.join(".gitmodules")).exists() {
                anyhow::bail!(
                    "{} has submodules (.gitmodules): a work copy cannot copy them faithfully",
                    original.display()
                );
            }
            if let Some(head) = &head {
                clone_git_dir(original, copy, head)?;
                carry_info_exclude(original, copy)?;
            }
            left_out = copy_tree(original, copy)?;
            head
        }
    };
    let alternates = copy.join(".git/objects/info/alternates");
    anyhow::ensure!(
        !alternates.exists(),
        "{} exists: the copy would share objects with the original",
        alternates.display()
    );
    refuse_hard_links(&copy.join(".git"))?;
    let manifest = fingerprint::manifest(copy)?;
    refuse_escaping_symlinks(copy, &manifest)?;
    if base == BaseKind::Current {
        keep_base_objects(&store.objects(name), copy, &manifest)?;
    }
    store.save_manifest(name, &manifest)?;
    let wc = WorkCopy {
        version: STATE_VERSION,
        name: name.to_string(),
        original: original.to_path_buf(),
        copy: copy.to_path_buf(),
        base,
        base_commit,
        base_fingerprint: fingerprint::of_manifest(&manifest),
        state: Phase::Ready,
        created: now_secs(),
        runs: Vec::new(),
        apply: None,
        commit: None,
        preview: None,
        push: None,
        left_out,
    };
    store.save(&wc)?;
    Ok(wc)
}

/// `p` with its longest existing ancestor canonicalized (symlinks and `..`
/// resolved there), the rest appended as given.
fn resolve(p: &Path) -> anyhow::Result<PathBuf> {
    let mut rest = Vec::new();
    let mut cur = p;
    loop {
        if let Ok(real) = cur.canonicalize() {
            return Ok(rest.iter().rev().fold(real, |acc, c| acc.join(c)));
        }
        match (cur.parent(), cur.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                cur = parent;
            }
            _ => anyhow::bail!("cannot resolve {}", p.display()),
        }
    }
}

/// `<original's name>-<n>`, the first n free.
fn default_name(store: &Store, original: &Path) -> String {
    let stem: String = original
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    let stem = stem.trim_start_matches('.');
    let stem = if stem.is_empty() { "wc" } else { stem };
    (1..)
        .map(|n| format!("{stem}-{n}"))
        .find(|n| !store.state_file(n).exists() && !store.files(n).exists())
        .expect("some number is free")
}

fn refuse_uncommitted(original: &Path) -> anyhow::Result<()> {
    let status = git::text(
        original,
        &[
            "status",
            "--porcelain",
            "--untracked-files=all",
            "--ignore-submodules=none",
        ],
    )?;
    if status.is_empty() {
        return Ok(());
    }
    let shown: Vec<&str> = status.lines().take(10).collect();
    anyhow::bail!(
        "{} has uncommitted changes, which a copy of HEAD would silently lose:\n  {}{}\ncommit or stash them, or use --base current to copy the tree as it is",
        original.display(),
        shown.join("\n  "),
        if status.lines().count() > 10 { "\n  …" } else { "" }
    )
}

/// Refuses `.gitmodules` and gitlinks, in the commit and in the index.
fn refuse_submodules(original: &Path, head: Option<&str>) -> anyhow::Result<()> {
    let mut listings = vec![git::text(original, &["ls-files", "-s"])?];
    if let Some(head) = head {
        listings.push(git::text(original, &["ls-tree", "-r", head])?);
    }
    for listing in &listings {
        for line in listing.lines() {
            let path = line.split('\t').nth(1).unwrap_or_default();
            if line.starts_with("160000") || path == ".gitmodules" {
                anyhow::bail!(
                    "{} has a submodule ({path}): a work copy cannot copy it faithfully",
                    original.display()
                );
            }
        }
    }
    Ok(())
}

/// Clones the original's HEAD into `copy`, detached; again if HEAD moved
/// during the clone. Returns the commit.
fn clone_at_head(original: &Path, copy: &Path, mut head: String) -> anyhow::Result<String> {
    for _ in 0..CLONE_ATTEMPTS {
        clone_no_checkout(original, copy)?;
        let after = git::head(original).context("the original's HEAD vanished during the clone")?;
        if after == head {
            git::out(copy, &["checkout", "-q", "--detach", &head])?;
            keep_base_ref(copy, &head)?;
            return Ok(head);
        }
        std::fs::remove_dir_all(copy.join(".git")).context("removing a stale clone")?;
        head = after;
    }
    anyhow::bail!(
        "the original's HEAD moved during each of {CLONE_ATTEMPTS} clones; try again when it is still"
    )
}

/// `copy/.git` as an independent clone at `head`, index at `head`, the
/// working tree left empty.
fn clone_git_dir(original: &Path, copy: &Path, head: &str) -> anyhow::Result<()> {
    clone_no_checkout(original, copy)?;
    git::out(copy, &["update-ref", "--no-deref", "HEAD", head])?;
    git::out(copy, &["read-tree", head])?;
    keep_base_ref(copy, head)
}

/// `refs/ckpt/base` in the copy: the base commit stays reachable (for
/// `diff`) whatever the agent does to HEAD and branches there.
fn keep_base_ref(copy: &Path, head: &str) -> anyhow::Result<()> {
    git::out(copy, &["update-ref", BASE_REF, head]).map(drop)
}

fn clone_no_checkout(original: &Path, copy: &Path) -> anyhow::Result<()> {
    let (Some(o), Some(c)) = (original.to_str(), copy.to_str()) else {
        anyhow::bail!("a work copy needs UTF-8 paths for git");
    };
    git::out(
        copy,
        &[
            "clone",
            "-q",
            "--no-local",
            "--no-hardlinks",
            "--no-checkout",
            "--",
            o,
            c,
        ],
    )?;
    git::out(copy, &["remote", "remove", "origin"])?;
    Ok(())
}

/// The original's `.git/info/exclude` (read through git's own path for it)
/// into the copy's, so what git ignores there it ignores in the copy.
fn carry_info_exclude(original: &Path, copy: &Path) -> anyhow::Result<()> {
    let rel = git::text(original, &["rev-parse", "--git-path", "info/exclude"])?;
    let from = original.join(rel);
    let Ok(text) = std::fs::read(&from) else {
        return Ok(());
    };
    let to = copy.join(".git/info/exclude");
    if let Some(dir) = to.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(&to, text).with_context(|| format!("writing {}", to.display()))
}

/// Copies every path ckpt captures below `from` into `to` (bytes copied,
/// never linked); directory modes are set last so read-only ones fill.
/// Files over ckpt's size cap are not captured, so not copied: returned
/// with why. The cap and the excludes are `from`'s settings, as the daemon
/// captures it.
fn copy_tree(from: &Path, to: &Path) -> anyhow::Result<Vec<(String, String)>> {
    let settings = crate::limits::settings(from);
    let cap = settings.max_file_bytes();
    let mut left_out = Vec::new();
    let (paths, unreadable) = ckpt_core::captured_paths(from, settings.excludes());
    if let Some(ckpt_core::Skipped {
        path: p,
        reason: why,
    }) = unreadable.first()
    {
        anyhow::bail!("cannot read {}: {why}", from.join(p.as_path()).display());
    }
    let mut dirs = Vec::new();
    for rel in paths {
        let (src, dst) = (from.join(rel.as_path()), to.join(rel.as_path()));
        let md = std::fs::symlink_metadata(&src)
            .with_context(|| format!("reading {}", src.display()))?;
        let ft = md.file_type();
        if ft.is_dir() {
            std::fs::create_dir(&dst).with_context(|| format!("creating {}", dst.display()))?;
            dirs.push((dst, md.permissions()));
        } else if ft.is_symlink() {
            let target =
                std::fs::read_link(&src).with_context(|| format!("reading {}", src.display()))?;
            std::os::unix::fs::symlink(&target, &dst)
                .with_context(|| format!("creating {}", dst.display()))?;
        } else if ft.is_file() && md.len() > cap {
            left_out.push((
                rel.to_string(),
                format!(
                    "{} is over ckpt's {} size cap",
                    ckptctl::output::bytes(md.len()),
                    ckptctl::output::bytes(cap)
                ),
            ));
        } else if ft.is_file() {
            std::fs::copy(&src, &dst)
                .with_context(|| format!("copying {} to {}", src.display(), dst.display()))?;
        }
    }
    for (dir, perms) in dirs.into_iter().rev() {
        std::fs::set_permissions(&dir, perms)
            .with_context(|| format!("setting the mode of {}", dir.display()))?;
    }
    Ok(left_out)
}

/// Refuses a file below `dir` with more than one link: git was asked for
/// copies (`--no-hardlinks`), and this checks it kept its word.
fn refuse_hard_links(dir: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let Ok(listing) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for entry in listing {
        let path = entry
            .with_context(|| format!("listing {}", dir.display()))?
            .path();
        let md = std::fs::symlink_metadata(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        if md.is_dir() {
            refuse_hard_links(&path)?;
        } else {
            anyhow::ensure!(
                md.nlink() == 1,
                "{} has {} links: the copy would share it",
                path.display(),
                md.nlink()
            );
        }
    }
    Ok(())
}

/// Refuses a symlink that leaves the tree: in the copy it would reach the
/// original, or outside both.
fn refuse_escaping_symlinks(copy: &Path, m: &Manifest) -> anyhow::Result<()> {
    for (path, e) in m {
        if e.kind != Kind::Symlink {
            continue;
        }
        if let Some(target) = symlinks::leaves_tree(copy, path)? {
            anyhow::bail!(
                "the symlink {path} -> {} leaves the tree: a work copy cannot copy it faithfully",
                symlinks::show(&target)
            );
        }
    }
    Ok(())
}

/// Keeps the base's file contents and symlink targets by SHA-256, for
/// `diff` of a `--base current` copy.
fn keep_base_objects(dir: &Path, copy: &Path, m: &Manifest) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for (path, e) in m {
        let dst = dir.join(&e.sha256);
        if e.kind == Kind::Dir || dst.exists() {
            continue;
        }
        let src = copy.join(path);
        let kept = match e.kind {
            Kind::Symlink => std::fs::read_link(&src)
                .and_then(|t| std::fs::write(&dst, t.as_os_str().as_encoded_bytes())),
            _ => std::fs::copy(&src, &dst).map(drop),
        };
        kept.and_then(|()| std::fs::set_permissions(&dst, std::fs::Permissions::from_mode(0o444)))
            .with_context(|| format!("keeping the base of {path} in {}", dst.display()))?;
    }
    Ok(())
}

/// Reads the base's bytes of the copy's paths: from the copy's git objects
/// through one `git cat-file --batch` for `--base HEAD` (a git process per
/// file made 1,000 changed files cost seconds), from the kept objects for
/// `--base current`.
pub struct BaseReader<'a> {
    store: &'a Store,
    wc: &'a WorkCopy,
    batch: Option<Batch>,
}

struct Batch {
    child: std::process::Child,
    input: std::process::ChildStdin,
    output: std::io::BufReader<std::process::ChildStdout>,
}

impl<'a> BaseReader<'a> {
    pub fn new(store: &'a Store, wc: &'a WorkCopy) -> Self {
        BaseReader {
            store,
            wc,
            batch: None,
        }
    }

    pub fn bytes(&mut self, path: &str, e: &fingerprint::Entry) -> anyhow::Result<Vec<u8>> {
        match e.kind {
            Kind::Dir => Ok(Vec::new()),
            Kind::Symlink | Kind::File if self.wc.base == BaseKind::Head => {
                let commit = self
                    .wc
                    .base_commit
                    .as_deref()
                    .context("a HEAD base has a commit")?;
                anyhow::ensure!(!path.contains('\n'), "{path:?}: a path with a newline");
                self.cat(&format!("{commit}:{path}"))
                    .with_context(|| format!("reading {path} of the base commit in the copy"))
            }
            Kind::Symlink | Kind::File => {
                let p = self.store.objects(&self.wc.name).join(&e.sha256);
                std::fs::read(&p).with_context(|| format!("reading {}", p.display()))
            }
        }
    }

    fn cat(&mut self, object: &str) -> anyhow::Result<Vec<u8>> {
        use std::io::{BufRead, Read, Write};
        if self.batch.is_none() {
            let mut child = git::cmd(&self.wc.copy)
                .args(["cat-file", "--batch"])
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .context("running git cat-file --batch in the copy")?;
            let input = child.stdin.take().context("git's stdin")?;
            let output = std::io::BufReader::new(child.stdout.take().context("git's stdout")?);
            self.batch = Some(Batch {
                child,
                input,
                output,
            });
        }
        let b = self.batch.as_mut().expect("started above");
        writeln!(b.input, "{object}")?;
        b.input.flush()?;
        let mut header = String::new();
        b.output.read_line(&mut header)?;
        let fields: Vec<&str> = header.split_whitespace().collect();
        let size: usize = match fields.as_slice() {
            [_, "blob", size] => size.parse().context("git cat-file's size")?,
            _ => anyhow::bail!("git cat-file: {}", header.trim()),
        };
        let mut data = vec![0u8; size + 1];
        b.output.read_exact(&mut data)?;
        data.pop();
        Ok(data)
    }
}

impl Drop for BaseReader<'_> {
    fn drop(&mut self) {
        if let Some(b) = self.batch.take() {
            drop(b.input);
            let mut child = b.child;
            let _ = child.wait();
        }
    }
}
