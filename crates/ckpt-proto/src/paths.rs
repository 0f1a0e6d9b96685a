//! Where the daemon's socket and data live by default. Shared so that the
//! client, when it starts a daemon itself, points it at the same places.

use std::path::{Path, PathBuf};

/// `$XDG_RUNTIME_DIR/ckpt/ckptd.sock`; without `XDG_RUNTIME_DIR`,
/// `/run/user/<uid>/ckpt/ckptd.sock` when that runtime dir exists and is
/// ours (a stripped environment, as Codex gives its MCP servers, still
/// finds the daemon a login session started); else (macOS, a bare
/// session) `<temp dir>/ckpt-<uid>/ckptd.sock` (the daemon creates that
/// directory 0700 and checks its owner). The daemon and the client both
/// take their default from here, so they agree.
pub fn default_socket() -> PathBuf {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    let runtime = directories::BaseDirs::new()
        .and_then(|b| b.runtime_dir().map(|p| p.to_path_buf()))
        .or_else(|| own_dir(&Path::new("/run/user").join(uid.to_string()), uid));
    match runtime {
        Some(dir) => dir.join("ckpt").join("ckptd.sock"),
        None => std::env::temp_dir()
            .join(format!("ckpt-{uid}"))
            .join("ckptd.sock"),
    }
}

/// `dir` if it is a directory (not a link) owned by `uid` that nobody else
/// may write to, as a login session's runtime dir is.
fn own_dir(dir: &Path, uid: u32) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::symlink_metadata(dir).ok()?;
    (m.is_dir() && m.uid() == uid && m.mode() & 0o022 == 0).then(|| dir.to_path_buf())
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
    fn a_runtime_dir_is_used_only_when_it_is_ours_alone() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        // SAFETY: geteuid has no preconditions.
        let uid = unsafe { libc::geteuid() };
        let dir = t.path().join("run");
        assert_eq!(own_dir(&dir, uid), None, "missing");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert_eq!(own_dir(&dir, uid), Some(dir.clone()));
        assert_eq!(own_dir(&dir, uid + 1), None, "another user's");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert_eq!(own_dir(&dir, uid), None, "writable by others");
        let link = t.path().join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert_eq!(own_dir(&link, uid), None, "a symlink");
    }

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
