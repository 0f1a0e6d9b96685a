//! Filesystem access confined to a project root.
//!
//! Every operation walks from the root's directory handle one component at a
//! time with `O_NOFOLLOW | O_DIRECTORY`, so a symlink anywhere on the way
//! (say an agent planted `src -> /etc`) is refused instead of followed, and
//! the final name is then acted on relative to its parent's handle. Paths are
//! `RelPath`s, which cannot hold `..`, absolute parts or `.git`. A rewind
//! walks to each directory once and keeps its handle (`Dirs`).

use std::ffi::OsStr;
use std::io::{self, Read};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{AtFlags, Mode, OFlags};

use crate::model::TEMP_PREFIX;
use crate::relpath::RelPath;

/// An open project root.
pub(crate) struct Root {
    path: PathBuf,
    fd: OwnedFd,
}

/// What `lstat` says about a path, reduced to what the hash cache compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stat {
    pub kind: StatKind,
    /// Permission bits (`0o7777`).
    pub mode: u32,
    pub size: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
    pub ino: u64,
    pub dev: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StatKind {
    File,
    Dir,
    Symlink,
    /// fifo, socket, device: never captured.
    Other,
}

impl Stat {
    pub fn from_std(md: &std::fs::Metadata) -> Stat {
        use std::os::unix::fs::MetadataExt;
        let ft = md.file_type();
        let kind = if ft.is_file() {
            StatKind::File
        } else if ft.is_dir() {
            StatKind::Dir
        } else if ft.is_symlink() {
            StatKind::Symlink
        } else {
            StatKind::Other
        };
        Stat {
            kind,
            mode: md.mode() & 0o7777,
            size: md.size(),
            mtime_ns: md.mtime() * 1_000_000_000 + md.mtime_nsec(),
            ctime_ns: md.ctime() * 1_000_000_000 + md.ctime_nsec(),
            ino: md.ino(),
            dev: md.dev(),
        }
    }

    #[allow(clippy::unnecessary_cast)] // field types differ across platforms
    pub fn from_rustix(st: &rustix::fs::Stat) -> Stat {
        let fmt = rustix::fs::FileType::from_raw_mode(st.st_mode as _);
        let kind = match fmt {
            rustix::fs::FileType::RegularFile => StatKind::File,
            rustix::fs::FileType::Directory => StatKind::Dir,
            rustix::fs::FileType::Symlink => StatKind::Symlink,
            _ => StatKind::Other,
        };
        Stat {
            kind,
            mode: (st.st_mode as u32) & 0o7777,
            size: st.st_size as u64,
            mtime_ns: st.st_mtime as i64 * 1_000_000_000 + st.st_mtime_nsec as i64,
            ctime_ns: st.st_ctime as i64 * 1_000_000_000 + st.st_ctime_nsec as i64,
            ino: st.st_ino as u64,
            dev: st.st_dev as u64,
        }
    }
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

fn temp_name() -> Vec<u8> {
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{TEMP_PREFIX}{}-{n}", std::process::id()).into_bytes()
}

fn not_dir(path: &RelPath) -> io::Error {
    io::Error::other(format!(
        "{path}: a parent is not a directory (or is a symlink); refusing to follow it"
    ))
}

impl Root {
    pub fn open(path: &Path) -> io::Result<Root> {
        let fd = rustix::fs::open(
            path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Root {
            path: path.to_path_buf(),
            fd,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opens the directory `path` (relative, never through a symlink).
    fn open_dir(&self, comps: &[&OsStr]) -> rustix::io::Result<OwnedFd> {
        let mut fd = rustix::io::dup(&self.fd)?;
        for comp in comps {
            fd = rustix::fs::openat(
                &fd,
                *comp,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
        }
        Ok(fd)
    }

    /// The handle of `path`'s parent directory. `Ok(None)` when a parent is
    /// missing or is not a real directory: then `path` cannot exist in the
    /// tree as far as ckpt is concerned.
    fn parent(&self, path: &RelPath) -> io::Result<Option<OwnedFd>> {
        let comps: Vec<&OsStr> = path.components().collect();
        match self.open_dir(&comps[..comps.len() - 1]) {
            Ok(fd) => Ok(Some(fd)),
            Err(e)
                if e == rustix::io::Errno::NOENT
                    || e == rustix::io::Errno::NOTDIR
                    || e == rustix::io::Errno::LOOP =>
            {
                Ok(None)
            }
            Err(e) => Err(e.into()),
        }
    }

    fn parent_required(&self, path: &RelPath) -> io::Result<OwnedFd> {
        self.parent(path)?.ok_or_else(|| not_dir(path))
    }

    /// `lstat`; `None` if nothing is there.
    pub fn lstat(&self, path: &RelPath) -> io::Result<Option<Stat>> {
        let Some(dir) = self.parent(path)? else {
            return Ok(None);
        };
        match rustix::fs::statat(&dir, path.file_name(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(Stat::from_rustix(&st))),
            Err(rustix::io::Errno::NOENT) | Err(rustix::io::Errno::NOTDIR) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Reads a regular file (never through a symlink), returning its bytes
    /// and the stat of the open file taken before reading.
    pub fn read_file(&self, path: &RelPath) -> io::Result<(Vec<u8>, Stat)> {
        let dir = self.parent_required(path)?;
        let fd = rustix::fs::openat(
            &dir,
            path.file_name(),
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK,
            Mode::empty(),
        )?;
        let st = Stat::from_rustix(&rustix::fs::fstat(&fd)?);
        let mut file = std::fs::File::from(fd);
        let mut buf = Vec::with_capacity(st.size as usize);
        file.read_to_end(&mut buf)?;
        Ok((buf, st))
    }

    pub fn read_link(&self, path: &RelPath) -> io::Result<Vec<u8>> {
        let dir = self.parent_required(path)?;
        Ok(rustix::fs::readlinkat(&dir, path.file_name(), Vec::new())?.into_bytes())
    }

    /// Removes whatever is at `path` (an empty directory, a file, a link).
    /// Nothing there is fine.
    pub fn remove(&self, path: &RelPath) -> io::Result<()> {
        let Some(dir) = self.parent(path)? else {
            return Ok(());
        };
        let name = path.file_name();
        let st = match rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Stat::from_rustix(&st),
            Err(rustix::io::Errno::NOENT) => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        let flags = if st.kind == StatKind::Dir {
            AtFlags::REMOVEDIR
        } else {
            AtFlags::empty()
        };
        match rustix::fs::unlinkat(&dir, name, flags) {
            Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// The names in directory `path` (the root when `None`), never through
    /// a symlink. A missing directory has none.
    pub fn list_dir_at(&self, path: Option<&RelPath>) -> io::Result<Vec<Vec<u8>>> {
        let comps: Vec<&OsStr> = path.map(|p| p.components().collect()).unwrap_or_default();
        let fd = match self.open_dir(&comps) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT) | Err(rustix::io::Errno::NOTDIR) => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        let mut names = Vec::new();
        for entry in rustix::fs::Dir::read_from(&fd)? {
            let name = entry?.file_name().to_bytes().to_vec();
            if name != b"." && name != b".." {
                names.push(name);
            }
        }
        Ok(names)
    }

    pub fn list_dir(&self, path: &RelPath) -> io::Result<Vec<Vec<u8>>> {
        self.list_dir_at(Some(path))
    }

    /// Removes ckpt's own temp files (a write cut short by a crash) from
    /// directory `dir` (the root when `None`).
    pub fn remove_temp_files(&self, dir: Option<&RelPath>) -> io::Result<()> {
        for name in self.list_dir_at(dir)? {
            if name.starts_with(TEMP_PREFIX.as_bytes()) {
                let rel = match dir {
                    Some(d) => d.join(&name),
                    None => RelPath::new(name),
                };
                if let Ok(rel) = rel {
                    self.remove(&rel)?;
                }
            }
        }
        Ok(())
    }
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
    spares: Vec<Spare>,
    /// Whether replaced files are swapped out and recycled: Linux only, and
    /// off once the filesystem refuses an exchange.
    recycle: bool,
    /// Removed files and directories, still open, to be closed (and so
    /// freed) on a thread of their own (`doom`).
    doomed: Vec<OwnedFd>,
    /// Directory → what a new file in it gets (`new_file`).
    new_file: std::collections::HashMap<Vec<u8>, NewFile>,
}

/// What a file created in a directory gets: the group (the directory's if
/// it is setgid) and the device (a spare is only used on its own).
#[derive(Clone, Copy, PartialEq, Eq)]
struct NewFile {
    gid: u32,
    dev: u64,
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

/// A replaced file's inode under a temp name, open for writing, that no one
/// else has open and no other name links to.
struct Spare {
    dir: Vec<u8>,
    tmp: Vec<u8>,
    file: std::fs::File,
    new_file: NewFile,
    len: u64,
    mode: u32,
    /// The filesystem's block size for it.
    block: u64,
}

impl Spare {
    /// Whether rewriting it with `len` bytes would free blocks (cut it).
    fn needs_freeing(&self, len: u64) -> bool {
        self.len.div_ceil(self.block) > len.div_ceil(self.block)
    }
}

/// Spares kept at most: a rewind ends by freeing those left.
const MAX_SPARES: usize = 32;

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
    pub fn new(root: &'a Root) -> io::Result<Dirs<'a>> {
        let mut open = std::collections::HashMap::new();
        open.insert(Vec::new(), rustix::io::dup(&root.fd)?);
        Ok(Dirs {
            root: std::marker::PhantomData,
            open,
            touched: Default::default(),
            spares: Vec::new(),
            recycle: cfg!(target_os = "linux"),
            doomed: Vec::new(),
            new_file: Default::default(),
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
        if let Some(spare) = self.take_spare(new_file, data.len() as u64) {
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

    /// The spare to write `len` bytes into: the one with the most blocks
    /// that still needs none freed, or `None` to make a new file. Never one
    /// to cut short: on ext4 with `discard`, freeing blocks waits for the
    /// device, the longer the more is freed (in a rewind of 42,416 files,
    /// 8,603 such cuts took 9 s of its 12–20 s).
    fn take_spare(&mut self, new_file: NewFile, len: u64) -> Option<Spare> {
        let best = self.spares.iter().enumerate();
        let best = best.filter(|(_, s)| s.new_file == new_file && !s.needs_freeing(len));
        let (i, _) = best.max_by_key(|(_, s)| s.len)?;
        Some(self.spares.swap_remove(i))
    }

    /// Keeps `spare`; with the pool full, lets go of the largest one (the
    /// least likely to fit), to be freed off this thread.
    fn keep_spare(&mut self, spare: Spare) {
        self.spares.push(spare);
        if self.spares.len() > MAX_SPARES {
            let largest = self.spares.iter().enumerate().max_by_key(|(_, s)| s.len);
            if let Some((i, _)) = largest {
                let gone = self.spares.swap_remove(i);
                self.let_go(gone);
            }
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
        let found = match kind {
            rustix::fs::FileType::RegularFile => recyclable(fd, name),
            _ => Err(None),
        };
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
        for spare in std::mem::take(&mut self.spares) {
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

    /// Keeps `fd`, a removed file or directory, to be closed on a thread
    /// of its own when the batch is done: the last close frees an inode and
    /// its blocks, which on ext4 with `discard` waits for the device (~0.8 ms
    /// per block run), and the rewind need not; nor should the freeing run
    /// beside it. Every `DOOMED` are handed over at once, so that a large
    /// removal cannot run out of descriptors.
    fn doom(&mut self, fd: OwnedFd) {
        const DOOMED: usize = 64;
        self.doomed.push(fd);
        if self.doomed.len() >= DOOMED {
            close_later(std::mem::take(&mut self.doomed));
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
        close_later(std::mem::take(&mut self.doomed));
    }
}

/// Closes `fds` on a thread of its own (or here, if none can be started).
/// ckpt-bench waits for threads of this name before timing another system.
fn close_later(fds: Vec<OwnedFd>) {
    if fds.is_empty() {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("ckpt-free".into())
        .spawn(move || drop(fds));
    if let Err(e) = spawned {
        tracing::debug!("closed removed files inline: {e}");
    }
}

/// Writes `data` over `file` (now `len` bytes long with mode `was`) from
/// the start, reusing its blocks, cuts it to length, and sets `mode`.
fn rewrite(file: &std::fs::File, (len, was): (u64, u32), data: &[u8], mode: u32) -> io::Result<()> {
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
fn open_regular(
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
/// without anyone noticing (see `Dirs::harvest`); else the file if it could
/// be opened.
#[cfg(target_os = "linux")]
#[allow(clippy::unnecessary_cast)] // stat field types differ across platforms
fn recyclable(
    dir: &OwnedFd,
    name: &OsStr,
) -> Result<(std::fs::File, rustix::fs::Stat), Option<std::fs::File>> {
    use std::os::fd::AsRawFd;
    let (file, st) = open_regular(dir, name, OFlags::WRONLY).ok_or(None)?;
    if st.st_nlink != 1 || st.st_uid as u32 != rustix::process::geteuid().as_raw() {
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
fn recyclable(
    _dir: &OwnedFd,
    _name: &OsStr,
) -> Result<(std::fs::File, rustix::fs::Stat), Option<std::fs::File>> {
    Err(None)
}

/// Runs `sync(i)` for every `i < n` on up to `threads` threads; the first
/// error wins.
pub(crate) fn parallel_fsync(
    n: usize,
    threads: usize,
    sync: impl Fn(usize) -> io::Result<()> + Sync,
) -> io::Result<()> {
    let threads = threads.clamp(1, n.max(1));
    if threads == 1 {
        return (0..n).try_for_each(sync);
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        return Ok(());
                    }
                    sync(i)?;
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("an fsync worker does not panic"))
            .collect::<io::Result<Vec<()>>>()
            .map(|_| ())
    })
}

#[cfg(test)]
thread_local! {
    /// Calls of `WholeFs::sync`, and files handed to a sync thread, on
    /// this thread (for tests of which way a batch is synced).
    pub(crate) static SYNCFS_CALLS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    pub(crate) static FILE_FSYNCS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// Spares rewritten with content that needs fewer blocks (so cut,
    /// freeing blocks on the writing thread).
    pub(crate) static SPARES_CUT: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// A filesystem made durable with one `syncfs` instead of an fsync per file
/// and directory. For a batch of thousands of files this spares an inode
/// write and a device flush per file: 20% of a full-tree rewind's CPU went
/// to those fsyncs. Linux only; elsewhere there is no `WholeFs`.
pub(crate) struct WholeFs {
    fd: OwnedFd,
    dev: u64,
}

impl WholeFs {
    /// The filesystem of `root`, through a handle opened now: `syncfs`
    /// reports the write errors its filesystem had since its handle was
    /// opened, so these are this batch's, not older ones.
    pub fn open(root: &Root) -> io::Result<Option<WholeFs>> {
        if !cfg!(target_os = "linux") {
            return Ok(None);
        }
        let fd = rustix::fs::openat(
            &root.fd,
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        let dev = rustix::fs::fstat(&fd)?.st_dev as u64;
        Ok(Some(WholeFs { fd, dev }))
    }

    /// Whether `fd` is on this filesystem (else it needs its own fsync: a
    /// directory under the root can be another mount).
    #[allow(clippy::unnecessary_cast)] // st_dev's type differs across platforms
    pub fn holds(&self, fd: impl std::os::fd::AsFd) -> io::Result<bool> {
        Ok(rustix::fs::fstat(fd)?.st_dev as u64 == self.dev)
    }

    /// Starts writing `file`'s data out without waiting, so that `sync`
    /// has less left to wait for.
    fn start_writeback(file: &std::fs::File) -> io::Result<()> {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            // SAFETY: a plain syscall on a descriptor `file` keeps open.
            let r = unsafe {
                libc::sync_file_range(file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE)
            };
            if r != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        let _ = file;
        Ok(())
    }

    /// Writes out everything the filesystem has pending and flushes the
    /// device.
    pub fn sync(&self) -> io::Result<()> {
        #[cfg(test)]
        SYNCFS_CALLS.with(|n| n.set(n.get() + 1));
        #[cfg(target_os = "linux")]
        return rustix::fs::syncfs(&self.fd).map_err(Into::into);
        #[cfg(not(target_os = "linux"))]
        unreachable!("no WholeFs outside Linux");
    }
}

/// Where written files go to be made durable (`sync_while`).
pub(crate) struct SyncQueue<'w> {
    /// A file, and whether to fsync it (else only start its writeback).
    tx: std::sync::mpsc::SyncSender<(std::fs::File, bool)>,
    whole: Option<&'w WholeFs>,
}

impl SyncQueue<'_> {
    /// fsyncs and closes `file`, on device `dev` (`Staged::dev`), on a sync
    /// thread; on the filesystem synced whole, only starts writing it out.
    pub fn push(&self, file: std::fs::File, dev: u64) -> io::Result<()> {
        let fsync = self.whole.is_none_or(|whole| whole.dev != dev);
        #[cfg(test)]
        FILE_FSYNCS.with(|n| n.set(n.get() + usize::from(fsync)));
        match self.tx.send((file, fsync)) {
            Ok(()) => Ok(()),
            // Unreachable while `sync_while` runs; sync here rather than lose it.
            Err(std::sync::mpsc::SendError((file, _))) => file.sync_all(),
        }
    }
}

/// Runs `work` while `threads` threads fsync the files it pushes, so writing
/// and syncing overlap (and concurrent fsyncs share the device's flushes).
/// Files on `whole`'s filesystem are only written out, and left to its
/// caller's `syncfs`.
/// Returns `work`'s result and the first sync error, after every pushed
/// file is synced.
pub(crate) fn sync_while<R>(
    threads: usize,
    whole: Option<&WholeFs>,
    work: impl FnOnce(&SyncQueue) -> R,
) -> (R, io::Result<()>) {
    // Bounds the open handles waiting for a sync thread.
    const QUEUE: usize = 256;
    let (tx, rx) = std::sync::mpsc::sync_channel::<(std::fs::File, bool)>(QUEUE);
    let rx = std::sync::Mutex::new(rx);
    let failed: std::sync::Mutex<Option<io::Error>> = std::sync::Mutex::new(None);
    let r = std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| loop {
                let next = rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
                let Ok((file, fsync)) = next else { return };
                // All metadata too: a restore may change only the mode.
                let synced = if fsync {
                    file.sync_all()
                } else {
                    WholeFs::start_writeback(&file)
                };
                if let Err(e) = synced {
                    failed
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .get_or_insert(e);
                }
            });
        }
        let queue = SyncQueue { tx, whole };
        let r = work(&queue);
        drop(queue);
        r
    });
    let failed = failed.into_inner().unwrap_or_else(|e| e.into_inner());
    (r, failed.map_or(Ok(()), Err))
}
