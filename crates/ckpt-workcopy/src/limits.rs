//! What a work copy may grow to, and how long its checks and previews last.
//!
//! A copy's result (every file and symlink ckpt captures in it) is counted
//! and summed by `lstat` alone, before anything is read or hashed, so a
//! copy an agent filled with gigabytes is refused in the time of a walk.

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use serde::Serialize;

/// Files (and symlinks) a copy's result may hold.
pub const MAX_FILES: u64 = 10_000;
/// Total size of the files of a copy's result.
pub const MAX_BYTES: u64 = 256 * 1024 * 1024;
/// How long `workcopy run` lets a check run before it kills its group
/// (Agent Hub's figure).
pub const RUN_TIMEOUT: Duration = Duration::from_secs(5 * 60);
/// How long a preview's token lets `workcopy apply` go ahead.
pub const PREVIEW_LIFETIME: Duration = Duration::from_secs(10 * 60);

/// The limits a copy is held to.
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub max_files: u64,
    pub max_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_files: MAX_FILES,
            max_bytes: MAX_BYTES,
        }
    }
}

/// What a copy's result holds.
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Usage {
    pub files: u64,
    pub bytes: u64,
}

impl Usage {
    /// What is over `l`, in words; `None` within.
    pub fn over(&self, l: &Limits) -> Option<String> {
        let mut over = Vec::new();
        if self.files > l.max_files {
            over.push(format!(
                "{} files, over the limit of {}",
                self.files, l.max_files
            ));
        }
        if self.bytes > l.max_bytes {
            over.push(format!(
                "{}, over the limit of {}",
                ckptctl::output::bytes(self.bytes),
                ckptctl::output::bytes(l.max_bytes)
            ));
        }
        (!over.is_empty()).then(|| over.join(" and "))
    }
}

/// Counts the files and symlinks ckpt captures below `root` and sums their
/// sizes.
pub fn measure(root: &Path) -> anyhow::Result<Usage> {
    let (paths, unreadable) = ckpt_core::captured_paths(root, &[]);
    if let Some(s) = unreadable.first() {
        anyhow::bail!(
            "cannot read {}: {}",
            root.join(s.path.as_path()).display(),
            s.reason
        );
    }
    let mut u = Usage { files: 0, bytes: 0 };
    for rel in paths {
        let abs = root.join(rel.as_path());
        let md = std::fs::symlink_metadata(&abs)
            .with_context(|| format!("reading {}", abs.display()))?;
        if md.is_file() || md.is_symlink() {
            u.files += 1;
            u.bytes += md.len();
        }
    }
    Ok(u)
}

/// [`measure`], refused beyond `l` with what is over and what `what` (the
/// command) therefore does not do.
pub fn check(root: &Path, l: &Limits, what: &str) -> anyhow::Result<Usage> {
    let u = measure(root)?;
    if let Some(over) = u.over(l) {
        anyhow::bail!(
            "the copy {} holds {over}; {what} refused (remove what the result should not hold)",
            root.display()
        );
    }
    Ok(u)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_counts_files_and_symlinks_and_says_what_is_over() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("d")).unwrap();
        std::fs::write(tmp.path().join("d/a"), vec![0u8; 1000]).unwrap();
        std::fs::write(tmp.path().join("b"), b"xy").unwrap();
        std::os::unix::fs::symlink("b", tmp.path().join("l")).unwrap();
        let u = measure(tmp.path()).unwrap();
        assert_eq!(
            u,
            Usage {
                files: 3,
                bytes: 1003
            }
        );
        assert_eq!(u.over(&Limits::default()), None);
        let small = Limits {
            max_files: 2,
            max_bytes: 1000,
        };
        let over = u.over(&small).unwrap();
        assert!(over.contains("3 files, over the limit of 2"), "{over}");
        assert!(over.contains("over the limit of 1000 B"), "{over}");
        let e = check(tmp.path(), &small, "preview").unwrap_err();
        assert!(e.to_string().contains("preview refused"), "{e}");
    }
}
