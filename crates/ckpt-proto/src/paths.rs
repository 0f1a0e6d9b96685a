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
    socket_in(runtime, &std::env::temp_dir(), uid)
}

/// The default socket in a runtime dir, or without one in the temp dir.
/// macOS has no runtime dir (`directories` gives none): its per-user
/// `$TMPDIR` (`/var/folders/…/T`, private, emptied at boot) is the
/// nearest thing, and short enough for a socket address.
fn socket_in(runtime: Option<PathBuf>, temp: &Path, uid: u32) -> PathBuf {
    match runtime {
        Some(dir) => dir.join("ckpt").join("ckptd.sock"),
        None => temp.join(format!("ckpt-{uid}")).join("ckptd.sock"),
    }
}

/// The longest path a Unix socket address holds here: `sun_path` less its
/// NUL (103 bytes on macOS, 107 on Linux).
pub const MAX_SOCKET_PATH: usize = std::mem::size_of::<libc::sockaddr_un>()
    - std::mem::offset_of!(libc::sockaddr_un, sun_path)
    - 1;

/// Where the socket named `path` is bound and connected to: `path` itself
/// when it fits a socket address, else a short stand-in that the daemon
/// and every client derive alike (a deep data dir under
/// `~/Library/Application Support` easily passes macOS's 103 bytes).
pub fn socket_address(path: &Path) -> PathBuf {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    socket_address_within(path, MAX_SOCKET_PATH, &std::env::temp_dir(), uid)
}

/// [`socket_address`] for a given limit, temp dir and user: the stand-in
/// is `<temp>/ckpt-<uid>/<hash of path>.sock`, or under `/tmp` when even
/// that is too long.
fn socket_address_within(path: &Path, max: usize, temp: &Path, uid: u32) -> PathBuf {
    if path.as_os_str().len() <= max {
        return path.to_path_buf();
    }
    let name = format!("{:016x}.sock", fnv1a(path.as_os_str().as_encoded_bytes()));
    let within = |dir: &Path| dir.join(format!("ckpt-{uid}")).join(&name);
    let short = within(temp);
    if short.as_os_str().len() <= max {
        short
    } else {
        within(Path::new("/tmp"))
    }
}

/// FNV-1a, 64 bits: a name for a path that every build derives alike (std's
/// hasher may change between Rust releases, and the client and the daemon
/// need not come from the same one).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
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
    fn a_socket_path_too_long_for_the_address_gets_a_short_stand_in() {
        #[cfg(target_os = "linux")]
        assert_eq!(MAX_SOCKET_PATH, 107);
        #[cfg(target_os = "macos")]
        assert_eq!(MAX_SOCKET_PATH, 103);
        // macOS's limit, on any platform: its data dir is deep.
        let mac = 103;
        let home = "/Users/someone/Library/Application Support/ckpt";
        let fits = PathBuf::from(format!("{home}/run/ckptd.sock"));
        assert_eq!(
            socket_address_within(&fits, mac, Path::new("/t"), 501),
            fits
        );
        let long = PathBuf::from(format!("{home}/{}/ckptd.sock", "d".repeat(60)));
        assert!(long.as_os_str().len() > mac);
        let temp = Path::new("/var/folders/zz/zyxvpxvq6csfxvn_n0000000000000/T");
        let short = socket_address_within(&long, mac, temp, 501);
        assert!(short.starts_with(temp.join("ckpt-501")), "{short:?}");
        assert!(short.as_os_str().len() <= mac);
        assert_eq!(
            short,
            socket_address_within(&long, mac, temp, 501),
            "stable"
        );
        let other = long.with_file_name("other.sock");
        assert_ne!(short, socket_address_within(&other, mac, temp, 501));
        // A temp dir too deep for it falls back to /tmp.
        let deep = PathBuf::from("/x".repeat(60));
        let tmp = socket_address_within(&long, mac, &deep, 501);
        assert!(tmp.starts_with("/tmp/ckpt-501"), "{tmp:?}");
    }

    #[test]
    fn the_socket_lives_in_the_runtime_dir_or_else_the_temp_dir() {
        let run = PathBuf::from("/run/user/1000");
        let temp = Path::new("/var/folders/zz/zyxvpxvq6csfxvn_n0000000000000/T");
        assert_eq!(
            socket_in(Some(run), temp, 1000),
            Path::new("/run/user/1000/ckpt/ckptd.sock")
        );
        let mac = socket_in(None, temp, 501);
        assert_eq!(mac, temp.join("ckpt-501/ckptd.sock"));
        assert!(mac.as_os_str().len() <= 103, "fits macOS's sun_path");
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
