//! The single confined operations: each walks from the root's handle to
//! the path's parent, then acts on the last name.

use std::ffi::OsStr;
use std::io::{self, Read};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, Mode, OFlags};

use crate::model::TEMP_PREFIX;
use crate::relpath::RelPath;

/// An open project root.
pub(crate) struct Root {
    path: PathBuf,
    /// Also the start of `Dirs`' walks and `WholeFs`' handle.
    pub(super) fd: OwnedFd,
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
    /// Hard links to it: above 1, a write through another name changes it
    /// too, and inotify reports that under the other name only.
    pub nlink: u64,
}

/// What `stat` says a path is, before anything is read. Not a [`State`]
/// kind: it has `Other` (never captured) and no absent or not-captured
/// path, which capture decides from it.
///
/// [`State`]: crate::State
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
            nlink: md.nlink(),
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
            nlink: st.st_nlink as u64,
        }
    }
}

pub(super) fn not_dir(path: &RelPath) -> io::Error {
    io::Error::other(format!(
        "{path}: a parent is not a directory (or is a symlink); refusing to follow it"
    ))
}

/// The parent directory of the last path [`Root::lstat_kept`] looked at,
/// kept open for its siblings: a check of a 50,000-file turn opened and
/// closed one per path (an `openat2` and a `close`, a tenth of the
/// daemon's time in that turn). Hold one only for one pass over paths:
/// a directory moved away meanwhile is still what it names.
#[derive(Default)]
pub(crate) struct KeptParent(Option<(Option<RelPath>, OwnedFd)>);

/// `lstat` of `path`'s last name in its open parent `dir`.
fn lstat_in(dir: &OwnedFd, path: &RelPath) -> io::Result<Option<Stat>> {
    match rustix::fs::statat(dir, path.file_name(), AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => Ok(Some(Stat::from_rustix(&st))),
        Err(rustix::io::Errno::NOENT) | Err(rustix::io::Errno::NOTDIR) => Ok(None),
        Err(e) => Err(e.into()),
    }
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

    /// The device and inode of the open root directory: the directory at
    /// `path` is another one when they differ.
    pub fn identity(&self) -> io::Result<(u64, u64)> {
        let st = rustix::fs::fstat(&self.fd)?;
        Ok((st.st_dev, st.st_ino))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opens the directory `path` (relative, never through a symlink): in
    /// one call where the kernel can refuse symlinks itself, else a
    /// component at a time.
    fn open_dir(&self, comps: &[&OsStr]) -> rustix::io::Result<OwnedFd> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        if let Some(fd) = self.open_beneath(comps, flags) {
            return Ok(fd);
        }
        let mut fd = rustix::io::dup(&self.fd)?;
        for comp in comps {
            fd = rustix::fs::openat(&fd, *comp, flags, Mode::empty())?;
        }
        Ok(fd)
    }

    /// Opens `comps` below the root in one `openat2` that fails on any
    /// symlink and never leaves the root: the same confinement as a walk
    /// of `openat(O_NOFOLLOW)` per component, without a descriptor per
    /// parent (a capture opened and closed ~5 per file). `None` on any
    /// error, and where `openat2` is missing: the walk then gives the
    /// answer (and the error) callers expect.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    fn open_beneath(&self, comps: &[&OsStr], flags: OFlags) -> Option<OwnedFd> {
        use rustix::fs::ResolveFlags;
        use std::os::unix::ffi::OsStrExt;
        use std::sync::atomic::{AtomicBool, Ordering};
        // Kernels before 5.6 (or a seccomp policy) lack it: asked once.
        static MISSING: AtomicBool = AtomicBool::new(false);
        if comps.is_empty() || MISSING.load(Ordering::Relaxed) {
            return None;
        }
        let mut path = Vec::with_capacity(comps.iter().map(|c| c.len() + 1).sum());
        for comp in comps {
            if !path.is_empty() {
                path.push(b'/');
            }
            path.extend_from_slice(comp.as_bytes());
        }
        let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS;
        match rustix::fs::openat2(&self.fd, path.as_slice(), flags, Mode::empty(), resolve) {
            Ok(fd) => Some(fd),
            Err(rustix::io::Errno::NOSYS) | Err(rustix::io::Errno::PERM) => {
                MISSING.store(true, Ordering::Relaxed);
                None
            }
            Err(_) => None,
        }
    }

    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    fn open_beneath(&self, _comps: &[&OsStr], _flags: OFlags) -> Option<OwnedFd> {
        None
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
        lstat_in(&dir, path)
    }

    /// [`Root::lstat`] through `parents`, which keeps the last parent
    /// opened: siblings checked one after another open it once.
    pub fn lstat_kept(&self, path: &RelPath, parents: &mut KeptParent) -> io::Result<Option<Stat>> {
        let parent = path.parent();
        if !matches!(&parents.0, Some((p, _)) if *p == parent) {
            parents.0 = None;
            #[cfg(test)]
            tests::PARENT_OPENS.with(|n| n.set(n.get() + 1));
            let Some(dir) = self.parent(path)? else {
                return Ok(None);
            };
            parents.0 = Some((parent, dir));
        }
        let (_, dir) = parents.0.as_ref().expect("kept just above");
        lstat_in(dir, path)
    }

    /// [`Root::lstat_kept`] of each of `paths` in turn, each handed to
    /// `f` with its path, on this thread; `f`'s first error ends it. With
    /// many paths the stats are taken on a thread of their own, while `f`
    /// does its part (a rewind's recheck of 50,000 paths spent 0.26-0.34 s
    /// on stats and cache rows one after the other).
    pub fn lstat_each<'p, I>(
        &self,
        paths: I,
        mut f: impl FnMut(&'p RelPath, io::Result<Option<Stat>>) -> crate::Result<()>,
    ) -> crate::Result<()>
    where
        I: Iterator<Item = &'p RelPath> + Clone + Send,
    {
        /// Below this many paths a thread costs more than it saves.
        const BESIDE_MIN: usize = 256;
        const CHUNK: usize = 256;
        let mut parents = KeptParent::default();
        if paths.size_hint().0 < BESIDE_MIN {
            for path in paths {
                f(path, self.lstat_kept(path, &mut parents))?;
            }
            return Ok(());
        }
        std::thread::scope(|s| {
            // A few chunks ahead at most: what waits is bounded.
            let (tx, rx) = std::sync::mpsc::sync_channel(4);
            let ahead = paths.clone();
            s.spawn(move || {
                let mut chunk = Vec::with_capacity(CHUNK);
                for path in ahead {
                    chunk.push(self.lstat_kept(path, &mut parents));
                    if chunk.len() == CHUNK {
                        let full = std::mem::replace(&mut chunk, Vec::with_capacity(CHUNK));
                        if tx.send(full).is_err() {
                            return;
                        }
                    }
                }
                let _ = tx.send(chunk);
            });
            let mut stats = rx.into_iter().flatten();
            for path in paths {
                let stat = stats
                    .next()
                    .unwrap_or_else(|| Err(io::Error::other("the stat thread stopped")));
                f(path, stat)?;
            }
            Ok(())
        })
    }

    /// Reads a regular file (never through a symlink), returning its bytes
    /// and the stat of the open file taken before reading.
    pub fn read_file(&self, path: &RelPath) -> io::Result<(Vec<u8>, Stat)> {
        self.read_file_upto(path, u64::MAX)
    }

    /// [`Root::read_file`], reading at most `max` bytes: a file that grows
    /// while it is read costs no more memory than the cap allows.
    pub fn read_file_upto(&self, path: &RelPath, max: u64) -> io::Result<(Vec<u8>, Stat)> {
        let flags =
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK;
        let comps: Vec<&OsStr> = path.components().collect();
        let fd = match self.open_beneath(&comps, flags) {
            Some(fd) => fd,
            None => {
                let dir = self.parent_required(path)?;
                rustix::fs::openat(&dir, path.file_name(), flags, Mode::empty())?
            }
        };
        let st = Stat::from_rustix(&rustix::fs::fstat(&fd)?);
        let file = std::fs::File::from(fd);
        let mut buf = Vec::with_capacity(st.size.min(max) as usize);
        file.take(max).read_to_end(&mut buf)?;
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

#[cfg(test)]
mod tests {
    use std::fs;
    use std::os::unix::fs::symlink;

    use super::*;

    fn rel(p: &str) -> RelPath {
        RelPath::new(p).unwrap()
    }

    thread_local! {
        /// Parents `Root::lstat_kept` opened on this thread.
        pub(super) static PARENT_OPENS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    /// Siblings checked one after another share one open of their parent,
    /// and each answer is `lstat`'s: other directories, the root's own
    /// entries, a missing parent, a parent that is a symlink (never
    /// followed), a name that is not there.
    #[test]
    fn a_kept_parent_is_opened_once_for_its_siblings_and_answers_as_lstat() {
        let (tmp, root, r) = setup();
        for f in ["a/b/g", "a/b/h", "a/c", "top"] {
            fs::write(root.join(f), f).unwrap();
        }
        symlink(tmp.path().join("outside"), root.join("link")).unwrap();
        let paths = [
            "a/b/f", "a/b/g", "a/b/h", "a/b/none", "a/c", "a/b", "top", "a", "link/b", "link/b/f",
            "gone/x", "gone/y", "top/x",
        ];
        let mut kept = KeptParent::default();
        PARENT_OPENS.with(|n| n.set(0));
        for p in paths {
            let p = rel(p);
            assert_eq!(
                r.lstat_kept(&p, &mut kept).unwrap(),
                r.lstat(&p).unwrap(),
                "{p}"
            );
        }
        // a/b once for four names; a for a/c and a/b; the root for top
        // and a; then link, link/b, gone twice and top: a parent that
        // cannot be opened is not kept.
        assert_eq!(PARENT_OPENS.with(|n| n.get()), 8);
        assert_eq!(r.lstat_kept(&rel("link/b/f"), &mut kept).unwrap(), None);
    }

    /// Each path gets `lstat`'s answer, in order, whether the stats are
    /// taken inline (few paths) or on a thread beside (many, across
    /// chunks); a symlinked parent is not followed there either; the
    /// callback's error ends the pass and is returned.
    #[test]
    fn lstat_each_answers_each_path_in_order_on_either_thread() {
        let (tmp, root, r) = setup();
        symlink(tmp.path().join("outside"), root.join("link")).unwrap();
        for i in 0..600 {
            if i % 3 == 0 {
                fs::write(root.join(format!("a/b/{i}")), "x").unwrap();
            }
        }
        let mut names: Vec<RelPath> = (0..600).map(|i| rel(&format!("a/b/{i}"))).collect();
        names.extend([rel("link/b/f"), rel("a/b/f"), rel("gone/x")]);
        for n in [3, names.len()] {
            let paths = &names[names.len() - n..];
            let mut got = Vec::new();
            r.lstat_each(paths.iter(), |p, st| {
                got.push((p.clone(), st.unwrap()));
                Ok(())
            })
            .unwrap();
            let want: Vec<_> = paths
                .iter()
                .map(|p| (p.clone(), r.lstat(p).unwrap()))
                .collect();
            assert_eq!(got, want, "{n} paths");
            assert_eq!(got[n - 2].1.as_ref().map(|s| s.kind), Some(StatKind::File));
            assert_eq!(got[n - 3].1, None, "link/b/f: not through the symlink");
        }
        let mut seen = 0;
        let err = r.lstat_each(names.iter(), |_, _| {
            seen += 1;
            match seen {
                300 => Err(crate::Error::BadInput("stop".into())),
                _ => Ok(()),
            }
        });
        assert!(err.is_err());
        assert_eq!(seen, 300);
    }

    /// A project beside a directory outside it holding the same names.
    fn setup() -> (tempfile::TempDir, PathBuf, Root) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("project");
        fs::create_dir_all(root.join("a/b")).unwrap();
        fs::write(root.join("a/b/f"), "inside").unwrap();
        fs::create_dir_all(tmp.path().join("outside/b")).unwrap();
        fs::write(tmp.path().join("outside/b/f"), "outside").unwrap();
        let r = Root::open(&root).unwrap();
        (tmp, root, r)
    }

    #[test]
    fn a_parent_swapped_for_a_symlink_out_of_the_root_is_not_followed() {
        let (tmp, root, r) = setup();
        assert_eq!(r.read_file(&rel("a/b/f")).unwrap().0, b"inside");
        assert_eq!(
            r.lstat(&rel("a/b/f")).unwrap().unwrap().kind,
            StatKind::File
        );
        // Between two reads the directory is renamed away and a symlink to
        // a directory outside the root takes its name.
        fs::rename(root.join("a"), root.join("moved")).unwrap();
        symlink(tmp.path().join("outside"), root.join("a")).unwrap();
        let read = r.read_file(&rel("a/b/f"));
        assert!(read.is_err(), "read through the symlink: {read:?}");
        assert_eq!(r.lstat(&rel("a/b/f")).unwrap(), None);
        assert_eq!(r.lstat(&rel("a")).unwrap().unwrap().kind, StatKind::Symlink);
        assert!(r.list_dir(&rel("a/b")).unwrap().is_empty());
        // A deeper parent swapped the same way.
        fs::remove_file(root.join("a")).unwrap();
        fs::rename(root.join("moved"), root.join("a")).unwrap();
        fs::rename(root.join("a/b"), root.join("a/b2")).unwrap();
        symlink(tmp.path().join("outside/b"), root.join("a/b")).unwrap();
        assert!(r.read_file(&rel("a/b/f")).is_err());
        assert_eq!(r.lstat(&rel("a/b/f")).unwrap(), None);
        assert_eq!(r.read_file(&rel("a/b2/f")).unwrap().0, b"inside");
    }

    #[test]
    fn a_file_that_is_a_symlink_is_not_read_and_missing_parents_are_absent() {
        let (tmp, root, r) = setup();
        symlink(tmp.path().join("outside/b/f"), root.join("a/link")).unwrap();
        let err = r.read_file(&rel("a/link")).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ELOOP), "{err}");
        assert_eq!(
            r.read_link(&rel("a/link")).unwrap(),
            tmp.path()
                .join("outside/b/f")
                .as_os_str()
                .as_encoded_bytes()
        );
        assert_eq!(r.lstat(&rel("no/such/f")).unwrap(), None);
        assert_eq!(
            r.read_file(&rel("a/b/none")).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        // A parent that is a file.
        assert_eq!(r.lstat(&rel("a/b/f/g")).unwrap(), None);
    }
}
