//! Recycling and freeing what a batch replaces: a replaced file is kept,
//! under a temp name, to be rewritten with a later file's content; what is
//! let go of is closed (and so freed) by the caller's `FreeRemoved`.

use std::ffi::OsStr;
use std::io;
use std::os::fd::OwnedFd;

use rustix::fs::{Mode, OFlags};

/// What a file created in a directory gets: the group (the directory's if
/// it is setgid) and the device (a spare is only used on its own).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct NewFile {
    pub(super) gid: u32,
    pub(super) dev: u64,
}

/// A replaced file's inode under a temp name, open for writing, that no one
/// else has open and no other name links to.
pub(super) struct Spare {
    pub(super) dir: Vec<u8>,
    pub(super) tmp: Vec<u8>,
    pub(super) file: std::fs::File,
    pub(super) new_file: NewFile,
    pub(super) len: u64,
    pub(super) mode: u32,
    /// The filesystem's block size for it.
    pub(super) block: u64,
}

impl Spare {
    /// Whether rewriting it with `len` bytes would free blocks (cut it).
    pub(super) fn needs_freeing(&self, len: u64) -> bool {
        self.len.div_ceil(self.block) > len.div_ceil(self.block)
    }
}

/// Spares kept at most: a rewind ends by freeing those left.
const MAX_SPARES: usize = 32;

/// The spares a batch holds.
#[derive(Default)]
pub(super) struct Spares(Vec<Spare>);

impl Spares {
    /// The spare to write `len` bytes into: the one with the most blocks
    /// that still needs none freed, or `None` to make a new file. Never one
    /// to cut short: on ext4 with `discard`, freeing blocks waits for the
    /// device, the longer the more is freed (9 s of one 42,416-file rewind).
    pub(super) fn take(&mut self, new_file: NewFile, len: u64) -> Option<Spare> {
        let best = self.0.iter().enumerate();
        let best = best.filter(|(_, s)| s.new_file == new_file && !s.needs_freeing(len));
        let (i, _) = best.max_by_key(|(_, s)| s.len)?;
        Some(self.0.swap_remove(i))
    }

    /// Keeps `spare`; with the pool full, hands back the largest one (the
    /// least likely to fit) to be let go of.
    pub(super) fn keep(&mut self, spare: Spare) -> Option<Spare> {
        self.0.push(spare);
        if self.0.len() > MAX_SPARES {
            let largest = self.0.iter().enumerate().max_by_key(|(_, s)| s.len);
            if let Some((i, _)) = largest {
                return Some(self.0.swap_remove(i));
            }
        }
        None
    }

    /// Every spare held, leaving none.
    pub(super) fn take_all(&mut self) -> Vec<Spare> {
        std::mem::take(&mut self.0)
    }
}

/// Writes `data` over `file` (now `len` bytes long with mode `was`) from
/// the start, reusing its blocks, cuts it to length, and sets `mode`.
pub(super) fn rewrite(
    file: &std::fs::File,
    (len, was): (u64, u32),
    data: &[u8],
    mode: u32,
) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    file.write_all_at(data, 0)?;
    if len > data.len() as u64 {
        file.set_len(data.len() as u64)?;
    }
    // A write clears set-user/group-ID bits, so those are always set again.
    if was != mode || mode & 0o6000 != 0 {
        rustix::fs::fchmod(file, Mode::from_raw_mode(mode as _))?;
    }
    Ok(())
}

/// `name` in `dir` opened with `access`, if it is a regular file. Callers
/// only open what `lstat` just showed to be one; `NONBLOCK` keeps a FIFO
/// swapped in meanwhile from blocking, and fails rather than waits on
/// someone else's lease.
pub(super) fn open_regular(
    dir: &OwnedFd,
    name: &OsStr,
    access: OFlags,
) -> Option<(std::fs::File, rustix::fs::Stat)> {
    let flags = access | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(dir, name, flags, Mode::empty()).ok()?;
    let st = rustix::fs::fstat(&fd).ok()?;
    (rustix::fs::FileType::from_raw_mode(st.st_mode as _) == rustix::fs::FileType::RegularFile)
        .then(|| (std::fs::File::from(fd), st))
}

/// `name` in `dir` opened for writing, and its stat, if it can be rewritten
/// without anyone noticing (see `Dirs::harvest`): a regular file owned by
/// `euid`; else the file if it could be opened (`Err(None)`: it is no
/// regular file, or could not be opened for writing).
#[cfg(target_os = "linux")]
#[allow(clippy::unnecessary_cast)] // stat field types differ across platforms
pub(super) fn recyclable(
    dir: &OwnedFd,
    name: &OsStr,
    euid: u32,
) -> Result<(std::fs::File, rustix::fs::Stat), Option<std::fs::File>> {
    use std::os::fd::AsRawFd;
    let (file, st) = open_regular(dir, name, OFlags::WRONLY).ok_or(None)?;
    if st.st_nlink != 1 || st.st_uid as u32 != euid {
        return Err(Some(file));
    }
    if !matches!(rustix::fs::flistxattr_query(&file), Ok(0)) {
        return Err(Some(file));
    }
    // SAFETY: plain fcntl calls on a descriptor we own.
    let leased = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETLEASE, libc::F_WRLCK) } == 0;
    if !leased {
        return Err(Some(file));
    }
    // SAFETY: as above.
    if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETLEASE, libc::F_UNLCK) } != 0 {
        return Err(Some(file));
    }
    Ok((file, st))
}

#[cfg(not(target_os = "linux"))]
pub(super) fn recyclable(
    _dir: &OwnedFd,
    _name: &OsStr,
    _euid: u32,
) -> Result<(std::fs::File, rustix::fs::Stat), Option<std::fs::File>> {
    Err(None)
}
