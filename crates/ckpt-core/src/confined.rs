//! Filesystem access confined to a project root.
//!
//! Every operation walks from the root's directory handle one component at a
//! time with `O_NOFOLLOW | O_DIRECTORY`, so a symlink anywhere on the way
//! (say an agent planted `src -> /etc`) is refused instead of followed, and
//! the final name is then acted on relative to its parent's handle. Paths are
//! `RelPath`s, which cannot hold `..`, absolute parts or `.git`. A rewind
//! walks to each directory once and keeps its handle (`Dirs`).

use std::ffi::OsStr;
use std::io::{self, Read, Write};
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
}

/// A file written under a temp name in its directory, not yet renamed into
/// place.
pub(crate) struct Staged {
    pub path: RelPath,
    tmp: Vec<u8>,
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
    pub fn new(root: &'a Root) -> io::Result<Dirs<'a>> {
        let mut open = std::collections::HashMap::new();
        open.insert(Vec::new(), rustix::io::dup(&root.fd)?);
        Ok(Dirs {
            root: std::marker::PhantomData,
            open,
            touched: Default::default(),
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
        self.open.retain(|k, _| {
            !(k.as_slice() == key || (k.starts_with(key) && k.get(key.len()) == Some(&b'/')))
        });
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
        match rustix::fs::unlinkat(dir, path.file_name(), flags) {
            Ok(()) => {
                self.touch(path);
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

    /// Writes `data` with `mode` to a temp file in `path`'s directory
    /// (missing parents created). Returns it and its open handle (to
    /// sync); `commit` renames it into place.
    pub fn stage(
        &mut self,
        path: &RelPath,
        data: &[u8],
        mode: u32,
    ) -> io::Result<(Staged, std::fs::File)> {
        let dir = self.parent_made(path)?;
        let tmp = temp_name();
        let fd = rustix::fs::openat(
            dir,
            OsStr::from_bytes(&tmp),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )?;
        let result = (|| {
            rustix::fs::fchmod(&fd, Mode::from_raw_mode(mode as _))?;
            let mut file = std::fs::File::from(fd);
            file.write_all(data)?;
            Ok(file)
        })();
        match result {
            Ok(file) => Ok((
                Staged {
                    path: path.clone(),
                    tmp,
                },
                file,
            )),
            Err(e) => {
                let _ = rustix::fs::unlinkat(dir, OsStr::from_bytes(&tmp), AtFlags::empty());
                Err(e)
            }
        }
    }

    /// Renames a staged file into place, over whatever file or link is
    /// there.
    pub fn commit(&mut self, staged: &Staged) -> io::Result<()> {
        let dir = self
            .parent(&staged.path)?
            .ok_or_else(|| not_dir(&staged.path))?;
        rustix::fs::renameat(
            dir,
            OsStr::from_bytes(&staged.tmp),
            dir,
            staged.path.file_name(),
        )?;
        self.touch(&staged.path);
        Ok(())
    }

    /// Removes a staged file that will not be committed.
    pub fn discard(&mut self, staged: &Staged) {
        if let Ok(Some(dir)) = self.parent(&staged.path) {
            let _ = rustix::fs::unlinkat(dir, OsStr::from_bytes(&staged.tmp), AtFlags::empty());
        }
    }

    /// Makes this batch's changes to directory entries (renames, creations,
    /// removals) durable: an fsync of each changed directory, from up to
    /// `threads` threads (concurrent fsyncs share journal commits).
    pub fn sync_touched(&self, threads: usize) -> io::Result<()> {
        let fds: Vec<&OwnedFd> = self
            .touched
            .iter()
            .filter_map(|k| self.open.get(k))
            .collect();
        parallel_fsync(fds.len(), threads, |i| {
            rustix::fs::fsync(fds[i]).map_err(Into::into)
        })
    }
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

/// Where written files go to be made durable (`sync_while`).
pub(crate) struct SyncQueue {
    tx: std::sync::mpsc::SyncSender<std::fs::File>,
}

impl SyncQueue {
    /// fsyncs and closes `file` on a sync thread.
    pub fn push(&self, file: std::fs::File) {
        if let Err(std::sync::mpsc::SendError(file)) = self.tx.send(file) {
            // Unreachable while `sync_while` runs; sync here rather than lose it.
            let _ = file.sync_all();
        }
    }
}

/// Runs `work` while `threads` threads fsync the files it pushes, so writing
/// and syncing overlap (and concurrent fsyncs share the device's flushes).
/// Returns `work`'s result and the first sync error, after every pushed
/// file is synced.
pub(crate) fn sync_while<R>(
    threads: usize,
    work: impl FnOnce(&SyncQueue) -> R,
) -> (R, io::Result<()>) {
    // Bounds the open handles waiting for a sync thread.
    const QUEUE: usize = 256;
    let (tx, rx) = std::sync::mpsc::sync_channel::<std::fs::File>(QUEUE);
    let rx = std::sync::Mutex::new(rx);
    let failed: std::sync::Mutex<Option<io::Error>> = std::sync::Mutex::new(None);
    let r = std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| loop {
                let next = rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
                let Ok(file) = next else { return };
                // All metadata too: a restore may change only the mode.
                if let Err(e) = file.sync_all() {
                    failed
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .get_or_insert(e);
                }
            });
        }
        let queue = SyncQueue { tx };
        let r = work(&queue);
        drop(queue);
        r
    });
    let failed = failed.into_inner().unwrap_or_else(|e| e.into_inner());
    (r, failed.map_or(Ok(()), Err))
}
