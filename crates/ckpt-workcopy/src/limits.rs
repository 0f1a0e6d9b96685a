//! What a work copy may grow to, and how long its checks and previews last.
//!
//! A copy's result (every file and symlink ckpt captures in it) is counted
//! and summed by `lstat` alone, before anything is read or hashed, so a
//! copy an agent filled with gigabytes is refused in the time of a walk.

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use serde::Serialize;

/// How long a preview's token lets `workcopy apply` go ahead.
pub const PREVIEW_LIFETIME: Duration = Duration::from_secs(10 * 60);

/// The settings for copies of `original` (the user's and the project's
/// `config.toml`, `CKPT_<KEY>`); a bad file is said on stderr and the
/// defaults hold, as the daemon keeps going on a bad file.
pub fn settings(original: &Path) -> ckpt_settings::Settings {
    ckpt_settings::load(Some(original)).unwrap_or_else(|e| {
        eprintln!("ckptctl: warning: {e}; the work-copy limits are the defaults");
        ckpt_settings::resolve(&[])
    })
}

/// The limits a copy is held to (`workcopy.max_files`, `workcopy.max_mib`).
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub max_files: u64,
    pub max_bytes: u64,
}

impl Limits {
    /// The limits for copies of `original`.
    pub fn of(original: &Path) -> Limits {
        let s = settings(original);
        Limits {
            max_files: s.workcopy_max_files(),
            max_bytes: s.workcopy_max_bytes(),
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
        assert_eq!(
            u.over(&Limits {
                max_files: 3,
                max_bytes: 1003
            }),
            None
        );
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
