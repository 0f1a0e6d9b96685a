//! One daemon per socket and per data dir: an exclusive `flock` on a lock
//! file that also records the holder's pid, so a second daemon can say who
//! is running.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

/// A held lock; released when dropped (the file itself stays, so that no
/// second daemon can lock a file that is about to be unlinked).
#[derive(Debug)]
pub struct LockFile {
    _file: File,
    path: PathBuf,
}

impl LockFile {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Takes the lock at `path` or fails naming the pid that holds it.
    pub fn acquire(path: &Path) -> anyhow::Result<LockFile> {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)
            .with_context(|| format!("opening lock file {}", path.display()))?;
        // SAFETY: the fd is valid for the lifetime of `file`.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc != 0 {
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
                let mut text = String::new();
                let _ = file.read_to_string(&mut text);
                let holder = match text.trim().parse::<u32>() {
                    Ok(pid) => format!("pid {pid}"),
                    Err(_) => "another process".to_string(),
                };
                bail!(
                    "another ckptd is already running ({holder} holds {})",
                    path.display()
                );
            }
            return Err(err).with_context(|| format!("locking {}", path.display()));
        }
        file.set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| writeln!(file, "{}", std::process::id()))
            .and_then(|()| file.flush())
            .with_context(|| format!("writing pid to {}", path.display()))?;
        Ok(LockFile {
            _file: file,
            path: path.to_path_buf(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_lock_names_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.lock");
        let first = LockFile::acquire(&path).unwrap();
        let err = LockFile::acquire(&path).unwrap_err().to_string();
        assert!(
            err.contains(&format!("pid {}", std::process::id())),
            "{err}"
        );
        drop(first);
        LockFile::acquire(&path).unwrap();
    }
}
