//! The batched writer a rewind applies through: each directory is walked to
//! once and its handle kept, files are staged under temp names and put into
//! place (a replaced file kept as a spare, `spares.rs`), and the directories
//! changed are synced at the end.

use std::ffi::OsStr;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{AtFlags, Mode, OFlags};

use super::durability::{parallel_fsync, WholeFs};
use super::root::{not_dir, Root, Stat, StatKind};
use super::spares::{open_regular, recyclable, rewrite, NewFile, Spare, Spares};
use crate::model::{FreeRemoved, TEMP_PREFIX};
use crate::relpath::RelPath;

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

fn temp_name() -> Vec<u8> {
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{TEMP_PREFIX}{}-{n}", std::process::id()).into_bytes()
}

/// Directory handles kept open for one batch of operations (a rewind), so
/// each directory is walked to once (one component at a time, never through
/// a symlink, as `Root` does) instead of once per operation per file.
///
/// A handle names the directory it was opened as; a directory removed or
/// replaced during the batch is dropped from the map (`forget`).
pub(crate) struct Dirs<'a> {
    root: std::marker::PhantomData<&'a Root>,
    /// Relative directory path (`""` for the root) → its handle.
    open: std::collections::HashMap<Vec<u8>, OwnedFd>,
    /// Directories whose entries this batch changed: synced at the end.
    touched: std::collections::HashSet<Vec<u8>>,
    /// Files this batch replaced, kept to be rewritten with later files'
    /// content (see `harvest`).
    spares: Spares,
    /// Whether replaced files are swapped out and recycled: Linux only, and
    /// off once the filesystem refuses an exchange.
    recycle: bool,
    /// Removed files and directories, still open, to be closed (and so
    /// freed) by `free_removed` (`doom`).
    doomed: Vec<OwnedFd>,
    /// Who closes them; `None`: this thread, at the end of the batch.
    free_removed: Option<FreeRemoved>,
    /// Directory → what a new file in it gets (`new_file`).
    new_file: std::collections::HashMap<Vec<u8>, NewFile>,
    /// This process's effective user, who must own a file to recycle it.
    euid: u32,
}

/// A file written under a temp name, not yet renamed into place.
pub(crate) struct Staged {
    pub path: RelPath,
    /// The directory the temp name is in: `path`'s, or a spare's.
    dir: Vec<u8>,
    tmp: Vec<u8>,
    /// A regular file was at `path` when it was staged: it is swapped out
    /// (and may become a spare) rather than renamed over.
    replaces_file: bool,
    /// The device the file is on (its directory's, known from staging).
    pub dev: u64,
}

fn dir_key(comps: &[&OsStr]) -> Vec<u8> {
    let mut key = Vec::new();
    for (i, c) in comps.iter().enumerate() {
        if i > 0 {
            key.push(b'/');
        }
        key.extend_from_slice(c.as_bytes());
    }
    key
}

fn parent_comps(path: &RelPath) -> Vec<&OsStr> {
    let mut comps: Vec<&OsStr> = path.components().collect();
    comps.pop();
    comps
}

fn open_child_dir(parent: &OwnedFd, name: &OsStr) -> rustix::io::Result<OwnedFd> {
    rustix::fs::openat(
        parent,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

impl<'a> Dirs<'a> {
    pub fn new(root: &'a Root, free_removed: Option<FreeRemoved>) -> io::Result<Dirs<'a>> {
        let mut open = std::collections::HashMap::new();
        open.insert(Vec::new(), rustix::io::dup(&root.fd)?);
        Ok(Dirs {
            root: std::marker::PhantomData,
            open,
            touched: Default::default(),
            spares: Spares::default(),
            recycle: cfg!(target_os = "linux"),
            doomed: Vec::new(),
            free_removed,
            new_file: Default::default(),
            euid: rustix::process::geteuid().as_raw(),
        })
    }

    /// The handle of directory `comps`, opened from its nearest open
    /// ancestor; missing directories are created (mode 0755) when `create`.
    /// `Ok(None)` when it is missing (and not created) or not a real
    /// directory.
    fn dir(&mut self, comps: &[&OsStr], create: bool) -> io::Result<Option<&OwnedFd>> {
        let key = dir_key(comps);
        if !self.open.contains_key(&key) {
            let mut have = comps.len();
            while have > 0 && !self.open.contains_key(&dir_key(&comps[..have])) {
                have -= 1;
            }
            for i in have..comps.len() {
                let parent = &self.open[&dir_key(&comps[..i])];
                let mut res = open_child_dir(parent, comps[i]);
                if create && matches!(res, Err(rustix::io::Errno::NOENT)) {
                    match rustix::fs::mkdirat(parent, comps[i], Mode::from_raw_mode(0o755)) {
                        Ok(()) => {
                            self.touched.insert(dir_key(&comps[..i]));
                        }
                        Err(rustix::io::Errno::EXIST) => {}
                        Err(e) => return Err(e.into()),
                    }
                    res = open_child_dir(parent, comps[i]);
                }
                match res {
                    Ok(fd) => {
                        self.open.insert(dir_key(&comps[..=i]), fd);
                    }
                    Err(rustix::io::Errno::NOTDIR) | Err(rustix::io::Errno::LOOP) if create => {
                        return Err(io::Error::other(format!(
                            "{}: not a directory (or a symlink); refusing to follow it",
                            String::from_utf8_lossy(&dir_key(&comps[..=i]))
                        )))
                    }
                    Err(rustix::io::Errno::NOENT)
                    | Err(rustix::io::Errno::NOTDIR)
                    | Err(rustix::io::Errno::LOOP) => return Ok(None),
                    Err(e) => return Err(e.into()),
                }
            }
        }
        Ok(self.open.get(&key))
    }

    fn parent(&mut self, path: &RelPath) -> io::Result<Option<&OwnedFd>> {
        self.dir(&parent_comps(path), false)
    }

    /// `path`'s parent, its missing ancestors created.
    fn parent_made(&mut self, path: &RelPath) -> io::Result<&OwnedFd> {
        self.dir(&parent_comps(path), true)?
            .ok_or_else(|| not_dir(path))
    }

    /// Drops the handles of `path` and everything below it (it was removed
    /// or replaced).
    fn forget(&mut self, path: &RelPath) {
        let key = path.as_bytes();
        let gone = |k: &Vec<u8>| {
            k.as_slice() == key || (k.starts_with(key) && k.get(key.len()) == Some(&b'/'))
        };
        self.open.retain(|k, _| !gone(k));
        self.new_file.retain(|k, _| !gone(k));
    }

    /// `lstat`; `None` if nothing is there.
    pub fn lstat(&mut self, path: &RelPath) -> io::Result<Option<Stat>> {
        let Some(dir) = self.parent(path)? else {
            return Ok(None);
        };
        match rustix::fs::statat(dir, path.file_name(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(Stat::from_rustix(&st))),
            Err(rustix::io::Errno::NOENT) | Err(rustix::io::Errno::NOTDIR) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Removes whatever is at `path` (an empty directory, a file, a link),
    /// whose kind `now` was just read. Nothing there is fine.
    pub fn remove(&mut self, path: &RelPath, now: Option<Stat>) -> io::Result<()> {
        let Some(now) = now else {
            return Ok(());
        };
        let is_dir = now.kind == StatKind::Dir;
        if is_dir {
            self.forget(path);
        }
        let Some(dir) = self.parent(path)? else {
            return Ok(());
        };
        let flags = if is_dir {
            AtFlags::REMOVEDIR
        } else {
            AtFlags::empty()
        };
        // Held open, what is removed is freed when `Dirs` is dropped.
        let held: Option<OwnedFd> = match now.kind {
            StatKind::File => {
                open_regular(dir, path.file_name(), OFlags::RDONLY).map(|(file, _)| file.into())
            }
            StatKind::Dir => open_child_dir(dir, path.file_name()).ok(),
            _ => None,
        };
        match rustix::fs::unlinkat(dir, path.file_name(), flags) {
            Ok(()) => {
                self.touch(path);
                if let Some(fd) = held {
                    self.doom(fd);
                }
                Ok(())
            }
            Err(rustix::io::Errno::NOENT) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    fn touch(&mut self, path: &RelPath) {
        self.touched.insert(dir_key(&parent_comps(path)));
    }

    /// Creates the directory `path` (and missing parents), or sets its mode
    /// if it is one already.
    pub fn make_dir(&mut self, path: &RelPath, mode: u32) -> io::Result<()> {
        let comps: Vec<&OsStr> = path.components().collect();
        let fd = self.dir(&comps, true)?.ok_or_else(|| not_dir(path))?;
        rustix::fs::fchmod(fd, Mode::from_raw_mode(mode as _))?;
        // Its own mode is made durable with the changed directories.
        self.touched.insert(dir_key(&comps));
        Ok(())
    }

    /// Creates a symlink at `path` (temp name, then renamed into place).
    pub fn symlink(&mut self, path: &RelPath, target: &[u8]) -> io::Result<()> {
        let dir = self.parent_made(path)?;
        let tmp = temp_name();
        rustix::fs::symlinkat(OsStr::from_bytes(target), dir, OsStr::from_bytes(&tmp))?;
        rustix::fs::renameat(dir, OsStr::from_bytes(&tmp), dir, path.file_name()).inspect_err(
            |_| {
                let _ = rustix::fs::unlinkat(dir, OsStr::from_bytes(&tmp), AtFlags::empty());
            },
        )?;
        self.touch(path);
        Ok(())
    }

    /// Writes `data` with `mode` to a temp file: a spare if there is one,
    /// else a new file in `path`'s directory (missing parents created).
    /// `replaces_file`: a regular file is at `path` now. Returns the staged
    /// file and its open handle (to sync); `commit` puts it into place.
    pub fn stage(
        &mut self,
        path: &RelPath,
        data: &[u8],
        mode: u32,
        replaces_file: bool,
    ) -> io::Result<(Staged, std::fs::File)> {
        let key = dir_key(&parent_comps(path));
        let new_file = self.new_file(path)?;
        if let Some(spare) = self.spares.take(new_file, data.len() as u64) {
            #[cfg(test)]
            SPARES_CUT
                .with(|n| n.set(n.get() + usize::from(spare.needs_freeing(data.len() as u64))));
            match rewrite(&spare.file, (spare.len, spare.mode), data, mode) {
                Ok(()) => {
                    let staged = Staged {
                        path: path.clone(),
                        dir: spare.dir,
                        tmp: spare.tmp,
                        replaces_file,
                        dev: new_file.dev,
                    };
                    return Ok((staged, spare.file));
                }
                Err(e) => {
                    tracing::debug!("rewriting a spare file failed ({e}); using a new one");
                    self.let_go(spare);
                }
            }
        }
        let dir = self.parent_made(path)?;
        let tmp = temp_name();
        let fd = rustix::fs::openat(
            dir,
            OsStr::from_bytes(&tmp),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )?;
        let file = std::fs::File::from(fd);
        match rewrite(&file, (0, 0o600), data, mode) {
            Ok(()) => Ok((
                Staged {
                    path: path.clone(),
                    dir: key,
                    tmp,
                    replaces_file,
                    dev: new_file.dev,
                },
                file,
            )),
            Err(e) => {
                let _ = rustix::fs::unlinkat(dir, OsStr::from_bytes(&tmp), AtFlags::empty());
                Err(e)
            }
        }
    }

    /// Puts a staged file into place. A regular file there is swapped out
    /// with it in one atomic exchange and kept as a spare (`harvest`);
    /// anything else (a link, nothing) is renamed over.
    pub fn commit(&mut self, staged: &Staged) -> io::Result<()> {
        self.parent(&staged.path)?
            .ok_or_else(|| not_dir(&staged.path))?;
        let to = &self.open[&dir_key(&parent_comps(&staged.path))];
        let from = self
            .open
            .get(&staged.dir)
            .ok_or_else(|| io::Error::other("a staged file's directory is gone"))?;
        let tmp = OsStr::from_bytes(&staged.tmp);
        let name = staged.path.file_name();
        let mut swapped = false;
        if self.recycle && staged.replaces_file {
            match rustix::fs::renameat_with(from, tmp, to, name, rustix::fs::RenameFlags::EXCHANGE)
            {
                Ok(()) => swapped = true,
                // Nothing there any more: a plain rename below.
                Err(rustix::io::Errno::NOENT) => {}
                Err(rustix::io::Errno::INVAL | rustix::io::Errno::NOSYS) => self.recycle = false,
                Err(e) => return Err(e.into()),
            }
        }
        if !swapped {
            rustix::fs::renameat(from, tmp, to, name)?;
        }
        self.touch(&staged.path);
        self.touched.insert(staged.dir.clone());
        if swapped {
            self.harvest(&staged.path, staged.dir.clone(), staged.tmp.clone())?;
        }
        Ok(())
    }

    /// What a new file in `path`'s directory (made if missing) gets.
    #[allow(clippy::unnecessary_cast)] // stat field types differ across platforms
    fn new_file(&mut self, path: &RelPath) -> io::Result<NewFile> {
        let key = dir_key(&parent_comps(path));
        if let Some(found) = self.new_file.get(&key) {
            return Ok(*found);
        }
        let st = rustix::fs::fstat(self.parent_made(path)?)?;
        let gid = if st.st_mode as u32 & 0o2000 != 0 {
            st.st_gid as u32
        } else {
            rustix::process::getegid().as_raw()
        };
        let found = NewFile {
            gid,
            dev: st.st_dev as u64,
        };
        self.new_file.insert(key, found);
        Ok(found)
    }

    /// Keeps `spare`; with the pool full, lets go of the largest one (the
    /// least likely to fit), to be freed off this thread.
    fn keep_spare(&mut self, spare: Spare) {
        if let Some(gone) = self.spares.keep(spare) {
            self.let_go(gone);
        }
    }

    /// Removes a spare's temp name and frees it off this thread.
    fn let_go(&mut self, spare: Spare) {
        self.let_go_of(&spare.dir, &spare.tmp, Some(spare.file));
    }

    /// Removes temp name `tmp` in `dir`; its file, if held open, is freed
    /// off this thread (see `doom`).
    fn let_go_of(&mut self, dir: &[u8], tmp: &[u8], held: Option<std::fs::File>) {
        self.unlink_temp(dir, tmp);
        if let Some(file) = held {
            self.doom(file.into());
        }
    }

    /// After an exchange put `path`'s old file at temp name `tmp`: keeps it
    /// as a spare if it is safe to rewrite, else removes it. Rewriting a
    /// replaced file instead of freeing it and creating a new one spares the
    /// filesystem an inode and its blocks per file (on ext4 with `discard`,
    /// most of a full-tree rewind's time). Safe means: a regular file we
    /// own, with no other name, no extended attributes, and open nowhere
    /// else (a write lease is granted only then), so no process can see it
    /// change. Taking the lease can send this process SIGIO if someone opens
    /// the file meanwhile; the daemon ignores SIGIO.
    #[allow(clippy::unnecessary_cast)] // stat field types differ across platforms
    fn harvest(&mut self, path: &RelPath, dir: Vec<u8>, tmp: Vec<u8>) -> io::Result<()> {
        let fd = &self.open[&dir];
        let name = OsStr::from_bytes(&tmp);
        // Opening it for writing tells a regular file (with its stat); the
        // kind is looked up only when that fails, to put a directory back.
        let found = recyclable(fd, name, self.euid);
        if matches!(found, Err(None)) {
            let st = rustix::fs::statat(fd, name, AtFlags::SYMLINK_NOFOLLOW)?;
            let kind = rustix::fs::FileType::from_raw_mode(st.st_mode as _);
            if kind == rustix::fs::FileType::Directory {
                // Became a directory since it was looked at: put it back.
                let to = &self.open[&dir_key(&parent_comps(path))];
                let flags = rustix::fs::RenameFlags::EXCHANGE;
                rustix::fs::renameat_with(fd, name, to, path.file_name(), flags)?;
                return Err(io::Error::other(format!(
                    "{path}: became a directory during the rewind"
                )));
            }
        }
        match found {
            Ok((file, st)) => self.keep_spare(Spare {
                dir,
                tmp,
                file,
                new_file: NewFile {
                    gid: st.st_gid as u32,
                    dev: st.st_dev as u64,
                },
                len: st.st_size as u64,
                mode: st.st_mode as u32 & 0o7777,
                block: (st.st_blksize as u64).max(512),
            }),
            Err(opened) => {
                // Held open (read-only if it could not be opened for
                // writing), so that it is freed off this thread.
                let held =
                    opened.or_else(|| open_regular(fd, name, OFlags::RDONLY).map(|(f, _)| f));
                self.let_go_of(&dir, &tmp, held);
            }
        }
        Ok(())
    }

    fn unlink_temp(&mut self, dir: &[u8], tmp: &[u8]) {
        if let Some(fd) = self.open.get(dir) {
            let _ = rustix::fs::unlinkat(fd, OsStr::from_bytes(tmp), AtFlags::empty());
            self.touched.insert(dir.to_vec());
        }
    }

    /// Removes the spares left over (before the directories are synced, so
    /// no temp file survives a crash after the rewind is recorded).
    pub fn drop_spares(&mut self) {
        for spare in self.spares.take_all() {
            self.let_go(spare);
        }
    }

    /// Frees the spares and the removed files held so far on this thread,
    /// now: a failed batch's rollback comes next and, on a full disk, needs
    /// the room they hold (files already handed to a closing thread are
    /// not waited for).
    pub fn free_now(&mut self) {
        self.drop_spares();
        drop(std::mem::take(&mut self.doomed));
    }

    /// Keeps `fd`, a removed file or directory, to be closed when the
    /// batch is done, by `free_removed` if given (the last close frees an
    /// inode and its blocks, which on ext4 with `discard` waits for the
    /// device, and the rewind need not). Every `DOOMED` are handed over at
    /// once, so that a large removal cannot run out of descriptors.
    fn doom(&mut self, fd: OwnedFd) {
        const DOOMED: usize = 64;
        self.doomed.push(fd);
        if self.doomed.len() >= DOOMED {
            self.close_doomed();
        }
    }

    /// Hands the removed files held to `free_removed`; without one, they
    /// are closed here and now.
    fn close_doomed(&mut self) {
        let fds = std::mem::take(&mut self.doomed);
        match &self.free_removed {
            Some(free) if !fds.is_empty() => (free.0)(fds),
            _ => drop(fds),
        }
    }

    /// Removes a staged file that will not be committed.
    pub fn discard(&mut self, staged: &Staged) {
        self.unlink_temp(&staged.dir, &staged.tmp);
    }

    /// Makes this batch's changes to directory entries (renames, creations,
    /// removals) durable: an fsync of each changed directory, from up to
    /// `threads` threads (concurrent fsyncs share journal commits), except
    /// those on `whole`'s filesystem, which its caller syncs at once.
    pub fn sync_touched(&self, threads: usize, whole: Option<&WholeFs>) -> io::Result<()> {
        let mut fds: Vec<&OwnedFd> = Vec::new();
        for fd in self.touched.iter().filter_map(|k| self.open.get(k)) {
            if !whole.map_or(Ok(false), |w| w.holds(fd))? {
                fds.push(fd);
            }
        }
        parallel_fsync(fds.len(), threads, |i| {
            rustix::fs::fsync(fds[i]).map_err(Into::into)
        })
    }
}

impl Drop for Dirs<'_> {
    fn drop(&mut self) {
        self.drop_spares();
        self.close_doomed();
    }
}

#[cfg(test)]
thread_local! {
    /// Spares rewritten with content that needs fewer blocks (so cut,
    /// freeing blocks on the writing thread).
    pub(crate) static SPARES_CUT: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}
