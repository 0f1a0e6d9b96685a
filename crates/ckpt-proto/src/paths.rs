//! Where the daemon's socket and data live by default. Shared so that the
//! client, when it starts a daemon itself, points it at the same places.

use std::path::{Path, PathBuf};

/// `$XDG_RUNTIME_DIR/ckpt/ckptd.sock`; without a runtime dir (macOS, a bare
/// session), `<temp dir>/ckpt-<uid>/ckptd.sock` (the daemon creates that
/// directory 0700 and checks its owner).
pub fn default_socket() -> PathBuf {
    let runtime =
        directories::BaseDirs::new().and_then(|b| b.runtime_dir().map(|p| p.to_path_buf()));
    match runtime {
        Some(dir) => dir.join("ckpt").join("ckptd.sock"),
        None => {
            // SAFETY: geteuid has no preconditions and cannot fail.
            let uid = unsafe { libc::geteuid() };
            std::env::temp_dir()
                .join(format!("ckpt-{uid}"))
                .join("ckptd.sock")
        }
    }
}

/// The `directories` data dir joined with `ckpt` (`$XDG_DATA_HOME/ckpt` on
/// Linux, `~/Library/Application Support/ckpt` on macOS).
pub fn default_data_dir() -> Option<PathBuf> {
    directories::BaseDirs::new().map(|b| b.data_dir().join("ckpt"))
}

/// Walks up from `dir` to the nearest directory holding `.git` (a git
/// top-level or worktree); `dir` itself if there is none. Only the presence
/// of `.git` is checked, nothing in it is read.
pub fn discover_root(dir: &Path) -> PathBuf {
    let mut cur = Some(dir);
    while let Some(d) = cur {
        if std::fs::symlink_metadata(d.join(".git")).is_ok() {
            return d.to_path_buf();
        }
        cur = d.parent();
    }
    dir.to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discover_finds_git_toplevel() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("repo/.git")).unwrap();
        std::fs::create_dir_all(t.path().join("repo/src/deep")).unwrap();
        assert_eq!(
            discover_root(&t.path().join("repo/src/deep")),
            t.path().join("repo")
        );
        std::fs::create_dir_all(t.path().join("plain/x")).unwrap();
        assert_eq!(
            discover_root(&t.path().join("plain/x")),
            t.path().join("plain/x")
        );
    }
}
