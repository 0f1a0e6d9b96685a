//! The benchmark's project trees: real source code (by default the crate
//! sources cargo downloaded for this workspace) copied into a temporary git
//! repository with one commit, a user's uncommitted edit, an untracked file
//! and a gitignored `.env`.

use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::cmd::git;

/// The file the "user" edited without committing (relative to the root).
pub const USER_EDIT_MARK: &str = "\n// the user's own uncommitted edit\n";
pub const UNTRACKED: &str = "NOTES.local.md";
pub const DOTENV: &str = ".env";

/// Where the source files come from.
pub struct Source {
    /// Directories whose contents are copied, in order.
    pub dirs: Vec<PathBuf>,
    /// Human description for the report.
    pub describe: String,
    /// Names of the source dirs (for the record).
    pub names: Vec<String>,
    /// Copy the single dir's contents as the root (`--tree DIR`) instead of
    /// one top-level directory per source dir (registry crates).
    pub as_root: bool,
}

/// A user-given tree (`--tree DIR`), copied without its `.git`.
pub fn dir_source(dir: &Path) -> Result<Source> {
    if !dir.is_dir() {
        bail!("--tree {} is not a directory", dir.display());
    }
    Ok(Source {
        dirs: vec![dir.to_path_buf()],
        describe: format!("{} ({} files)", dir.display(), count_files(dir)?),
        names: vec![dir.display().to_string()],
        as_root: true,
    })
}

fn count_files(dir: &Path) -> Result<usize> {
    let mut n = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for de in fs::read_dir(&d).with_context(|| format!("listing {}", d.display()))? {
            let de = de?;
            let ft = de.file_type()?;
            if ft.is_dir() {
                if de.file_name() != ".git" {
                    stack.push(de.path());
                }
            } else {
                n += 1;
            }
        }
    }
    Ok(n)
}

/// Crate directories from `$CARGO_HOME/registry/src/*/`, sorted by name,
/// taken whole until at least `max_files` files are selected.
pub fn registry_source(max_files: usize) -> Result<Source> {
    let cargo_home = match std::env::var_os("CARGO_HOME") {
        Some(h) if !h.is_empty() => PathBuf::from(h),
        _ => PathBuf::from(std::env::var_os("HOME").context("neither CARGO_HOME nor HOME is set")?)
            .join(".cargo"),
    };
    let reg = cargo_home.join("registry").join("src");
    let mut crates = Vec::new();
    for idx in fs::read_dir(&reg).with_context(|| format!("listing {}", reg.display()))? {
        let idx = idx?.path();
        if !idx.is_dir() {
            continue;
        }
        for c in fs::read_dir(&idx).with_context(|| format!("listing {}", idx.display()))? {
            let c = c?;
            if c.file_type()?.is_dir() {
                crates.push((c.file_name(), c.path()));
            }
        }
    }
    crates.sort();
    let mut dirs = Vec::new();
    let mut n = 0;
    for (_, path) in crates {
        if n >= max_files {
            break;
        }
        n += count_files(&path)?;
        dirs.push(path);
    }
    if dirs.is_empty() {
        bail!(
            "no crate sources under {}; build the workspace once or pass --tree DIR",
            reg.display()
        );
    }
    Ok(Source {
        describe: format!(
            "{} crate source dirs from {} (~{} files)",
            dirs.len(),
            reg.display(),
            n
        ),
        names: dirs
            .iter()
            .filter_map(|d| d.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .collect(),
        dirs,
        as_root: false,
    })
}

/// Copies `src` into `dst` (created), symlinks as symlinks, skipping `.git`
/// directories when `skip_git`. Permissions are normalised to 0644/0755 (and
/// 0755 for directories) so every system can reproduce them.
pub fn copy_tree(src: &Path, dst: &Path, skip_git: bool) -> Result<()> {
    fs::create_dir_all(dst).with_context(|| format!("creating {}", dst.display()))?;
    for de in fs::read_dir(src).with_context(|| format!("listing {}", src.display()))? {
        let de = de?;
        if skip_git && de.file_name() == ".git" {
            continue;
        }
        let from = de.path();
        let to = dst.join(de.file_name());
        let md = fs::symlink_metadata(&from)?;
        let ft = md.file_type();
        if ft.is_dir() {
            copy_tree(&from, &to, skip_git)?;
            fs::set_permissions(&to, fs::Permissions::from_mode(0o755))?;
        } else if ft.is_symlink() {
            symlink(fs::read_link(&from)?, &to)
                .with_context(|| format!("symlink {}", to.display()))?;
        } else if ft.is_file() {
            fs::copy(&from, &to)
                .with_context(|| format!("copying {} to {}", from.display(), to.display()))?;
            let mode = if md.permissions().mode() & 0o111 != 0 {
                0o755
            } else {
                0o644
            };
            fs::set_permissions(&to, fs::Permissions::from_mode(mode))?;
        }
    }
    Ok(())
}

/// Copies a whole tree including `.git` verbatim (for per-system copies of
/// one prepared repository).
pub fn clone_tree(src: &Path, dst: &Path) -> Result<()> {
    copy_tree(src, dst, false)
}

/// Builds a prepared repository at `dst` from `source`, `copies` times over
/// (`copies > 1` puts each copy under `part-N/`).
pub fn build_repo(source: &Source, dst: &Path, copies: usize) -> Result<()> {
    for i in 0..copies {
        let into = if copies == 1 {
            dst.to_path_buf()
        } else {
            dst.join(format!("part-{i}"))
        };
        for d in &source.dirs {
            let name = d.file_name().context("source dir without a name")?;
            // A --tree DIR is copied as the root itself; registry crates
            // each become a top-level directory.
            let to = if source.as_root {
                into.clone()
            } else {
                into.join(name)
            };
            copy_tree(d, &to, true)?;
        }
    }
    fs::write(dst.join(".gitignore"), ".env\n/target/\n")?;
    let run = |args: &[&str]| -> Result<()> {
        let st = git()
            .current_dir(dst)
            .args(args)
            .status()
            .with_context(|| format!("running git {}", args.join(" ")))?;
        if !st.success() {
            bail!("git {} failed in {}", args.join(" "), dst.display());
        }
        Ok(())
    };
    run(&["init", "-q", "-b", "main"])?;
    run(&["add", "-A"])?;
    run(&["commit", "-q", "-m", "initial import"])?;
    run(&["repack", "-a", "-d", "-q"])?;
    run(&["prune-packed", "-q"])?;
    // The user's own state, which no rewind may disturb.
    let edit = user_edit_target(dst)?;
    let mut text = fs::read(&edit)?;
    text.extend_from_slice(USER_EDIT_MARK.as_bytes());
    fs::write(&edit, text)?;
    fs::write(
        dst.join(UNTRACKED),
        "# my notes\nnot committed, not ignored\n",
    )?;
    fs::write(
        dst.join(DOTENV),
        "API_KEY=sk-user-0000000000000000\nDATABASE_URL=postgres://localhost/app\n",
    )?;
    Ok(())
}

/// The tracked file the user edits: the first `.rs` file (sorted) below the top level.
pub fn user_edit_target(root: &Path) -> Result<PathBuf> {
    let mut stack = vec![root.to_path_buf()];
    let mut best: Option<PathBuf> = None;
    while let Some(d) = stack.pop() {
        for de in fs::read_dir(&d)? {
            let de = de?;
            let p = de.path();
            if de.file_type()?.is_dir() {
                if de.file_name() != ".git" {
                    stack.push(p);
                }
            } else if d != root
                && p.extension().is_some_and(|e| e == "rs")
                && best.as_ref().is_none_or(|b| p < *b)
            {
                best = Some(p);
            }
        }
    }
    // A tree without Rust files: edit any file below the top level, or the ignore file.
    Ok(best.unwrap_or_else(|| root.join(".gitignore")))
}

/// Puts `dst`'s work tree back to `base`'s (everything but `.git`), used
/// after a system left a tree wrong so later scenarios start clean.
pub fn resync(base: &Path, dst: &Path) -> Result<()> {
    for de in fs::read_dir(dst)? {
        let de = de?;
        if de.file_name() == ".git" {
            continue;
        }
        let p = de.path();
        if de.file_type()?.is_dir() {
            fs::remove_dir_all(&p)
        } else {
            fs::remove_file(&p)
        }
        .with_context(|| format!("removing {}", p.display()))?;
    }
    copy_tree(base, dst, true)
}

/// Apparent size of every file under `dir` (0 if it does not exist).
pub fn dir_bytes(dir: &Path, skip: &dyn Fn(&Path) -> bool) -> u64 {
    let mut n = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = fs::read_dir(&d) else { continue };
        for de in rd.flatten() {
            let p = de.path();
            let Ok(md) = fs::symlink_metadata(&p) else {
                continue;
            };
            if md.is_dir() {
                stack.push(p);
            } else if md.is_file() && !skip(&p) {
                n += md.len();
            }
        }
    }
    n
}

/// File `i`'s text in one version: a few hundred bytes, as source files
/// are (the large-tree scenarios' files).
pub fn small_file(i: usize, version: &str) -> Vec<u8> {
    format!(
        "// file {i}, {version}\n{}",
        "let x = 1; // padding\n".repeat(12)
    )
    .into_bytes()
}
