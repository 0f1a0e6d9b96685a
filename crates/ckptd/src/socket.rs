//! The listening socket: a private directory, a stale socket reclaimed, a
//! live one never stolen, only our own user served. The socket itself is an
//! `interprocess` local socket, named by its file path.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::path::Path;

use anyhow::{bail, Context};
use interprocess::local_socket::{prelude::*, GenericFilePath, Listener, ListenerOptions, Stream};

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

/// The user the process at the other end of `stream` runs as.
pub fn peer_uid(stream: &Stream) -> std::io::Result<u32> {
    let Stream::UdSocket(s) = stream;
    peer_euid(s.inner().as_fd())
}

/// Whether `stream` has bytes (or its end) to read within `timeout`.
pub fn wait_readable(stream: &Stream, timeout: std::time::Duration) -> std::io::Result<bool> {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let Stream::UdSocket(s) = stream;
    let mut fds = [PollFd::new(s.inner(), PollFlags::IN)];
    let timeout = Timespec::try_from(timeout).map_err(std::io::Error::other)?;
    loop {
        match poll(&mut fds, Some(&timeout)) {
            Ok(n) => return Ok(n > 0),
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// A connection waiting on the runtime's IO driver for its next request.
pub struct Parked(pub Stream);

impl AsRawFd for Parked {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        let Stream::UdSocket(s) = &self.0;
        s.inner().as_raw_fd()
    }
}

/// A second handle on `stream`'s socket, for writing progress frames
/// while the request runs (the stream itself is busy with the request).
pub fn duplicate(stream: &Stream) -> std::io::Result<std::os::unix::net::UnixStream> {
    let Stream::UdSocket(s) = stream;
    Ok(s.inner().as_fd().try_clone_to_owned()?.into())
}

/// The effective uid of the process at the other end of a connected Unix
/// socket: `SO_PEERCRED` on Linux.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub fn peer_euid(fd: BorrowedFd<'_>) -> std::io::Result<u32> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are valid for writes of the size given.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&raw mut cred).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(cred.uid)
}

/// The effective uid of the process at the other end of a connected Unix
/// socket: `getpeereid` (`LOCAL_PEERCRED` underneath) on macOS and the BSDs.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub fn peer_euid(fd: BorrowedFd<'_>) -> std::io::Result<u32> {
    let (mut uid, mut gid): (libc::uid_t, libc::gid_t) = (0, 0);
    // SAFETY: `uid` and `gid` are valid for writes.
    if unsafe { libc::getpeereid(fd.as_raw_fd(), &mut uid, &mut gid) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(uid)
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
        assert_eq!(peer_uid(&served).unwrap(), euid());
        assert_eq!(peer_uid(&client).unwrap(), euid());
        let err = listen(&path).unwrap_err().to_string();
        assert!(err.contains("already listening"), "{err}");
        drop((listener, client, served));
        assert!(path.exists(), "the file is the daemon's to remove");
        let _again = listen(&path).unwrap();
    }

    #[test]
    fn peer_credentials_name_the_other_end() {
        let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        assert_eq!(peer_euid(a.as_fd()).unwrap(), euid());
        assert_eq!(peer_euid(b.as_fd()).unwrap(), euid());
        let file = std::fs::File::open("/").unwrap();
        assert!(peer_euid(file.as_fd()).is_err(), "not a socket");
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
