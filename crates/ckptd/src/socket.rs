//! The listening socket: a private directory, a stale socket reclaimed, a
//! live one never stolen, only our own user served. The socket itself is an
//! `interprocess` local socket, named by its file path.

use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::path::Path;

use anyhow::{bail, Context};
use interprocess::local_socket::{prelude::*, GenericFilePath, Listener, ListenerOptions, Stream};

/// The longest socket path `sockaddr_un` holds (minus the NUL).
const MAX_SOCKET_PATH: usize = 103;

pub fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Creates `dir` 0700 if needed, then checks that it is a real directory
/// owned by us that nobody else can enter.
pub fn prepare_private_dir(dir: &Path) -> anyhow::Result<()> {
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .with_context(|| format!("creating socket directory {}", dir.display()))?;
    }
    let meta = std::fs::symlink_metadata(dir)
        .with_context(|| format!("checking socket directory {}", dir.display()))?;
    if !meta.is_dir() {
        bail!("socket directory {} is not a directory", dir.display());
    }
    if meta.uid() != euid() {
        bail!(
            "socket directory {} belongs to uid {}, not to us (uid {}); choose another --socket",
            dir.display(),
            meta.uid(),
            euid()
        );
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        bail!(
            "socket directory {} has mode {:03o}; it must be private (chmod 700 {})",
            dir.display(),
            mode,
            dir.display()
        );
    }
    Ok(())
}

/// Removes a socket file nobody listens on. Refuses when a daemon answers
/// or when the path is something other than a socket.
fn reclaim_stale(path: &Path) -> anyhow::Result<()> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("checking {}", path.display())),
    };
    if !meta.file_type().is_socket() {
        bail!(
            "{} exists and is not a socket; not touching it",
            path.display()
        );
    }
    match connect(path) {
        Ok(_) => bail!(
            "a daemon is already listening on {}; not taking over its socket",
            path.display()
        ),
        Err(e) => {
            tracing::info!(socket = %path.display(), error = %e, "reclaiming stale socket");
            std::fs::remove_file(path)
                .with_context(|| format!("removing stale socket {}", path.display()))?;
        }
    }
    Ok(())
}

/// Checks what `bind` would reject with a less helpful message.
pub fn check_path_length(path: &Path) -> anyhow::Result<()> {
    let len = path.as_os_str().len();
    if len > MAX_SOCKET_PATH {
        bail!(
            "socket path {} is {len} bytes long; Unix sockets allow at most {MAX_SOCKET_PATH}",
            path.display()
        );
    }
    Ok(())
}

/// Restricts the socket file itself to its owner.
fn restrict(path: &Path) -> anyhow::Result<()> {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .with_context(|| format!("setting permissions of {}", path.display()))
}

/// Listens on `path` (in a directory [`prepare_private_dir`] checked),
/// after reclaiming a stale socket there; the file is left for the daemon
/// to remove when it stops.
pub fn listen(path: &Path) -> anyhow::Result<Listener> {
    reclaim_stale(path)?;
    let listener = ListenerOptions::new()
        .name(name(path)?)
        .reclaim_name(false)
        .create_sync()
        .with_context(|| format!("listening on {}", path.display()))?;
    restrict(path)?;
    Ok(listener)
}

/// Connects to the socket at `path`.
pub fn connect(path: &Path) -> std::io::Result<Stream> {
    Stream::connect(name(path)?)
}

fn name(path: &Path) -> std::io::Result<interprocess::local_socket::Name<'_>> {
    path.to_fs_name::<GenericFilePath>()
}

/// Whether the process at the other end of `stream` runs as our user.
pub fn peer_is_us(stream: &Stream) -> std::io::Result<bool> {
    Ok(stream.peer_creds()?.euid() == Some(euid()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loose_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("s");
        prepare_private_dir(&sub).unwrap();
        std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o755)).unwrap();
        let err = prepare_private_dir(&sub).unwrap_err().to_string();
        assert!(err.contains("chmod 700"), "{err}");
    }

    #[test]
    fn a_live_socket_is_not_reclaimed_and_a_stale_one_is() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sock");
        let listener = listen(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let client = connect(&path).unwrap();
        let served = listener.accept().unwrap();
        assert!(peer_is_us(&served).unwrap());
        assert!(peer_is_us(&client).unwrap());
        let err = listen(&path).unwrap_err().to_string();
        assert!(err.contains("already listening"), "{err}");
        drop((listener, client, served));
        assert!(path.exists(), "the file is the daemon's to remove");
        let _again = listen(&path).unwrap();
    }

    #[test]
    fn regular_file_is_not_reclaimed() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("sock");
        std::fs::write(&f, b"x").unwrap();
        assert!(reclaim_stale(&f).is_err());
        assert!(f.exists());
    }
}
