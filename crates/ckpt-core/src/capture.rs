//! Capture: compare what is on disk with the hash cache, store new content,
//! update the cache, and record pre-images for the open turn.

use std::collections::{BTreeMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::{Connection, OpenFlags};

use crate::cache::{self, CacheRow};
use crate::confined::{Root, Stat, StatKind};
use crate::db;
use crate::error::Result;
use crate::model::ScanReport;
use crate::project::{now_ns, Project};
use crate::relpath::RelPath;
use crate::scan::{self, Excludes, CACHE_TAG, IGNORE_FILE};
use crate::state::{Hash, State};
use crate::store::{BlobStore, Prepared, PreparedPack, DELTA_MIN, PACK_BLOB_MAX, PACK_TARGET};
use crate::turns;

/// Raw bytes read per write batch: bounds the daemon's memory on big trees
/// (a batch is held compressed, two at once, and its new small files raw
/// until they are packed; tiny in tests, so they cross batch boundaries).
const BATCH_BYTES: u64 = if cfg!(test) { 64 << 10 } else { 8 << 20 };

/// Most paths per write batch, whatever their size (a removal weighs
/// nothing): bounds a full scan's memory when much changed.
/// (Tiny in tests, so they cross batch and page boundaries.)
const BATCH_PATHS: usize = if cfg!(test) { 4 } else { 4096 };

/// Cache rows read per query while a full scan merges the cache with the walk.
const CACHE_PAGE: usize = if cfg!(test) { 3 } else { 1024 };

/// Reads the cache in path order, a page at a time.
#[derive(Default)]
struct CacheCursor {
    /// The current page, reversed (`pop` gives the next row).
    page: Vec<(RelPath, CacheRow)>,
    /// The key of the last row read.
    after: Vec<u8>,
    done: bool,
}

impl CacheCursor {
    /// The next row. The merge only writes rows at or before the one it
    /// compares, so rows read ahead stay valid and the next page (keys after
    /// the last row read) sees none of its writes.
    fn next(&mut self, conn: &Connection) -> Result<Option<(RelPath, CacheRow)>> {
        while self.page.is_empty() && !self.done {
            match cache::page(conn, &self.after, CACHE_PAGE, &mut self.page)? {
                Some(last) => self.after = last,
                None => self.done = true,
            }
            self.page.reverse();
        }
        Ok(self.page.pop())
    }
}

/// A path to re-examine: its current stat (`None`: nothing there) and the
/// cache row it is compared with.
struct Seen {
    path: RelPath,
    stat: Option<Stat>,
    old: Option<CacheRow>,
}

/// The captured result for one path.
struct Captured {
    path: RelPath,
    old: Option<CacheRow>,
    new: Option<(State, Stat)>,
    /// The bytes read; kept past [`prepare_one`] only when they are new and
    /// small, for [`pack_small`].
    content: Option<Vec<u8>>,
    blob: Option<Prepared>,
}

impl Project {
    /// Full stat-compare scan of the tree against the hash cache; captures
    /// every change. The first call is the baseline.
    ///
    /// The walk and the cache are both read in path order and merged, and
    /// what changed is captured batch by batch as the merge goes, so memory
    /// does not grow with the size of the tree.
    pub fn reconcile(&mut self) -> Result<ScanReport> {
        use std::cmp::Ordering;
        let scan_start = now_ns();
        self.excludes = Excludes::load(&self.root, &self.opts.extra_excludes);
        let mut walk = scan::SortedWalk::new(&self.root, None, &self.excludes);
        let mut cached = CacheCursor::default();
        let mut report = ScanReport::default();
        let mut seen = Vec::new();
        let mut seen_bytes = 0;
        // Rows of paths that are excluded now: they simply leave the cache
        // (they were not deleted).
        let mut gone = Vec::new();
        let mut disk = walk.next();
        let mut row = cached.next(&self.conn)?;
        loop {
            let ord = match (&disk, &row) {
                (None, None) => break,
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (Some((d, _)), Some((c, _))) => d.cmp(c),
            };
            if ord == Ordering::Greater {
                // In the cache, not found by the walk: gone, unless it lies
                // in a directory we could not read (which the walk, being in
                // the same order, has tried to read by now), or is excluded.
                let (path, old) = row.take().expect("compared above");
                row = cached.next(&self.conn)?;
                if walk
                    .unreadable
                    .iter()
                    .any(|(d, _)| path.starts_with(d) && &path != d)
                {
                    continue;
                }
                if self.excludes.is_excluded(&path, old.state.is_dir()) {
                    gone.push(path);
                } else {
                    seen.push(Seen {
                        path,
                        stat: None,
                        old: Some(old),
                    });
                }
            } else {
                let (path, stat) = disk.take().expect("compared above");
                disk = walk.next();
                report.entries += 1;
                let old = match ord {
                    Ordering::Equal => {
                        let old = row.take().map(|(_, r)| r);
                        row = cached.next(&self.conn)?;
                        old
                    }
                    _ => None,
                };
                if old.as_ref().is_none_or(|o| !o.unchanged(&stat)) {
                    seen_bytes += stat.size;
                    seen.push(Seen {
                        path,
                        stat: Some(stat),
                        old,
                    });
                }
            }
            if seen_bytes >= BATCH_BYTES || seen.len() + gone.len() >= BATCH_PATHS {
                let (s, g) = (std::mem::take(&mut seen), std::mem::take(&mut gone));
                self.capture(s, g, scan_start, &mut report)?;
                seen_bytes = 0;
            }
        }
        self.capture(seen, gone, scan_start, &mut report)?;
        report.skipped.splice(0..0, walk.unreadable);
        Ok(report)
    }

    /// Re-checks these paths (and, for a new, replaced or removed directory,
    /// everything below it); captures what changed. Excluded paths are
    /// ignored.
    pub fn check_paths(&mut self, paths: impl IntoIterator<Item = RelPath>) -> Result<ScanReport> {
        let scan_start = now_ns();
        let paths: Vec<RelPath> = {
            let mut v: Vec<RelPath> = paths.into_iter().collect();
            v.sort();
            v.dedup();
            v
        };
        if paths.iter().any(|p| p.as_bytes() == IGNORE_FILE.as_bytes()) {
            self.excludes = Excludes::load(&self.root, &self.opts.extra_excludes);
        }
        let mut report = ScanReport::default();
        let mut seen: BTreeMap<RelPath, Seen> = BTreeMap::new();
        let add = |seen: &mut BTreeMap<RelPath, Seen>, s: Seen| {
            seen.entry(s.path.clone()).or_insert(s);
        };
        let mut done: HashSet<RelPath> = HashSet::new();
        // Directories the cache has as directories: most paths share one.
        let mut cached_dirs: HashSet<RelPath> = HashSet::new();
        let mut work = paths;
        let (conn, root_fs, root, excludes) =
            (&self.conn, &self.root_fs, &self.root, &mut self.excludes);
        // One read transaction for the lookups (thousands after a rewind).
        db::reading(conn, || {
            while let Some(path) = work.pop() {
                if !done.insert(path.clone()) {
                    continue;
                }
                let stat = root_fs
                    .lstat(&path)
                    .map_err(|e| io_err("stat", root_fs, &path, e))?;
                if path.file_name() == CACHE_TAG && stat.is_some_and(|s| s.kind == StatKind::File) {
                    if let Some(dir) = path.parent() {
                        excludes.note_tagged(&dir);
                        // Tagged now: its contents leave the cache (not deleted).
                        cache::remove_below(conn, &dir)?;
                    }
                }
                let is_dir = stat.is_some_and(|s| s.kind == StatKind::Dir);
                if excludes.is_excluded(&path, is_dir) {
                    continue;
                }
                report.entries += 1;
                // A path in a directory the cache does not know yet: that
                // directory is new too (its own event may never come, if it was
                // created before a watch could be added), so check it as well.
                if let (Some(_), Some(parent)) = (stat, path.parent()) {
                    if !done.contains(&parent) && !cached_dirs.contains(&parent) {
                        if cache::state(conn, &parent)?.is_dir() {
                            cached_dirs.insert(parent);
                        } else {
                            work.push(parent);
                        }
                    }
                }
                let old = cache::get(conn, &path)?;
                let was_dir = old.as_ref().is_some_and(|o| o.stat.kind == StatKind::Dir);
                let same_dir = was_dir
                    && is_dir
                    && old
                        .as_ref()
                        .zip(stat)
                        .is_some_and(|(o, s)| o.stat.ino == s.ino);
                if same_dir
                    && old
                        .as_ref()
                        .zip(stat)
                        .is_some_and(|(o, s)| !o.unchanged(&s))
                {
                    // Same directory (or a new one that got the old inode number
                    // back): compare its entries with the cache's, one level.
                    let on_disk: HashSet<Vec<u8>> = root_fs
                        .list_dir(&path)
                        .map_err(|e| io_err("list", root_fs, &path, e))?
                        .into_iter()
                        .collect();
                    let cached = cache::children(conn, &path)?;
                    for child in &cached {
                        if !on_disk.contains(child.file_name().as_encoded_bytes()) {
                            work.push(child.clone());
                        }
                    }
                    let cached: HashSet<&[u8]> = cached
                        .iter()
                        .map(|c| c.file_name().as_encoded_bytes())
                        .collect();
                    for name in on_disk.iter().filter(|n| !cached.contains(n.as_slice())) {
                        work.extend(path.join(name).ok());
                    }
                }
                if was_dir && !same_dir {
                    // The directory went away or was replaced: so did its contents.
                    for (p, row) in cache::below(conn, &path)? {
                        add(
                            &mut seen,
                            Seen {
                                path: p,
                                stat: None,
                                old: Some(row),
                            },
                        );
                    }
                }
                if is_dir && !same_dir && root.join(path.as_path()).join(CACHE_TAG).is_file() {
                    excludes.note_tagged(&path);
                    continue;
                }
                if is_dir && !same_dir {
                    // A new directory: files created in it before we could watch
                    // it produce no events, so scan it.
                    let walk = scan::walk(root, Some(&path), excludes);
                    report.entries += walk.entries.len() as u64;
                    report.skipped.extend(walk.unreadable);
                    for (p, st) in walk.entries {
                        let old = cache::get(conn, &p)?;
                        done.insert(p.clone());
                        seen.insert(
                            p.clone(),
                            Seen {
                                path: p,
                                stat: Some(st),
                                old,
                            },
                        );
                    }
                }
                match (&stat, &old) {
                    (None, None) => {}
                    (Some(st), Some(o)) if o.unchanged(st) => {}
                    _ => {
                        seen.insert(path.clone(), Seen { path, stat, old });
                    }
                }
            }
            Ok(())
        })?;
        let seen = seen.into_values().filter(|s| match (&s.stat, &s.old) {
            (None, None) => false,
            (Some(st), Some(o)) => !o.unchanged(st),
            _ => true,
        });
        self.capture(seen.collect(), Vec::new(), scan_start, &mut report)?;
        Ok(report)
    }

    /// Reads and stores what changed, in batches, each one transaction;
    /// `gone` leave the cache (in the first batch) without counting as
    /// changes.
    fn capture(
        &mut self,
        mut seen: Vec<Seen>,
        gone: Vec<RelPath>,
        scan_start: i64,
        report: &mut ScanReport,
    ) -> Result<()> {
        let conn = &mut self.conn;
        if seen.is_empty() {
            if !gone.is_empty() {
                write_batch(
                    conn,
                    &self.store,
                    Batch::default(),
                    gone,
                    scan_start,
                    report,
                )?;
            }
            return Ok(());
        }
        seen.sort_by(|a, b| a.path.cmp(&b.path));
        let mut batches = Vec::new();
        while !seen.is_empty() {
            let mut end = 0;
            let mut bytes = 0;
            while end < seen.len() && (end == 0 || bytes < BATCH_BYTES) {
                bytes += seen[end].stat.map_or(0, |s| s.size);
                end += 1;
            }
            batches.push(seen.drain(..end).collect::<Vec<Seen>>());
        }
        let (fs, store) = (&self.root_fs, &self.store);
        let (max, threads) = (self.opts.max_file_size, self.opts.threads);
        let db_path = conn.path().map(PathBuf::from);
        // Everything but the write runs on the workers (reading and hashing
        // a share of the batch each, then looking up and compressing file
        // by file), so no serial step (store lookups, reading a delta base)
        // leaves a core idle between reading and compressing. Each worker reads the
        // store through a read-only connection of its own (the writer's
        // cannot be shared across threads); when its batch is prepared while
        // the previous one is being written, it may not see that batch's
        // blobs yet and compresses a duplicate for nothing, which the
        // writer then finds stored.
        let prepare = |batch: Vec<Seen>, writer: Option<&Connection>| -> Result<Batch> {
            // Hashes being compressed in this batch: identical new content
            // is compressed once.
            let claimed = Mutex::new(HashSet::new());
            let own = || Reader::Own(db_path.as_deref(), None);
            let local = writer.map_or_else(own, Reader::Shared);
            let read = read_batch(fs, batch, threads, max);
            let mut captured = par_map(read, threads, 8, local, own, |db, c| {
                prepare_one(store, db, &claimed, c)
            })
            .into_iter()
            .collect::<Result<Vec<_>>>()?;
            let packs = pack_small(store, &mut captured, threads);
            Ok(Batch { captured, packs })
        };
        let mut batches = batches.into_iter();
        let first = batches.next().expect("seen is not empty");
        let mut ready = prepare(first, Some(conn))?;
        let mut gone = Some(gone);
        for next in batches {
            // Write one batch while the workers prepare the next.
            let (written, prepared) = std::thread::scope(|scope| {
                let worker = scope.spawn(|| prepare(next, None));
                let ready = std::mem::take(&mut ready);
                let gone = gone.take().unwrap_or_default();
                let written = write_batch(conn, store, ready, gone, scan_start, report);
                (written, worker.join().expect("capture worker panicked"))
            });
            written?;
            ready = prepared?;
        }
        let gone = gone.take().unwrap_or_default();
        write_batch(conn, store, ready, gone, scan_start, report)
    }
}

/// One batch of paths, read and compressed, ready for the writer.
#[derive(Default)]
struct Batch {
    captured: Vec<Captured>,
    /// The batch's new small contents, compressed together.
    packs: Vec<PreparedPack>,
}

/// Writes one prepared batch (blobs, cache rows, pre-images) in one
/// transaction.
fn write_batch(
    conn: &mut Connection,
    store: &BlobStore,
    batch: Batch,
    gone: Vec<RelPath>,
    scan_start: i64,
    report: &mut ScanReport,
) -> Result<()> {
    let tx = conn.transaction()?;
    for path in &gone {
        cache::remove(&tx, path)?;
    }
    let turn = turns::open_turn(&tx)?;
    for pack in &batch.packs {
        store.insert_pack(&tx, pack)?;
        report.bytes_hashed += pack.raw_len() as u64;
    }
    for c in batch.captured {
        if let Some(blob) = &c.blob {
            store.insert(&tx, blob)?;
            report.bytes_hashed += blob.size;
        }
        let old_state = c.old.as_ref().map_or(State::Absent, |o| o.state.clone());
        let new_state = c.new.as_ref().map_or(State::Absent, |(s, _)| s.clone());
        match &c.new {
            Some((state, stat)) => {
                if let State::Skipped { reason } = state {
                    report.skipped.push((c.path.clone(), reason.clone()));
                }
                cache::put(&tx, &c.path, state, stat, scan_start)?;
            }
            None => cache::remove(&tx, &c.path)?,
        }
        if old_state != new_state {
            report.changed += 1;
            if let Some(turn) = turn {
                turns::record_pre(&tx, turn, &c.path, &old_state)?;
            }
        }
    }
    tx.commit()?;
    Ok(())
}

/// `items.map(f)` on up to `threads` scoped threads, at least `per_thread`
/// items each, keeping the order. Each thread gets its own state from
/// `make`; on the caller's thread alone (few items, or one thread) `local`
/// is used instead.
fn par_map<T: Send, R: Send, S>(
    items: Vec<T>,
    threads: usize,
    per_thread: usize,
    local: S,
    make: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, T) -> R + Sync,
) -> Vec<R> {
    par_shares(items, threads, per_thread, local, make, |state, share| {
        share.into_iter().map(|t| f(state, t)).collect()
    })
}

/// Like [`par_map`], but `f` gets each thread's whole share of `items`
/// (every `threads`-th item, in order) and returns one result per item of
/// it, in the same order.
fn par_shares<T: Send, R: Send, S>(
    items: Vec<T>,
    threads: usize,
    per_thread: usize,
    mut local: S,
    make: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, Vec<T>) -> Vec<R> + Sync,
) -> Vec<R> {
    let threads = threads
        .clamp(1, 16)
        .min(items.len().div_ceil(per_thread.max(1)).max(1));
    if threads == 1 {
        return f(&mut local, items);
    }
    let n = items.len();
    let mut shares: Vec<Vec<T>> = (0..threads).map(|_| Vec::new()).collect();
    for (i, item) in items.into_iter().enumerate() {
        shares[i % threads].push(item);
    }
    let (f, make) = (&f, &make);
    let mut done: Vec<std::vec::IntoIter<R>> = std::thread::scope(|scope| {
        let handles: Vec<_> = shares
            .into_iter()
            .map(|share| scope.spawn(move || f(&mut make(), share)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("capture worker panicked").into_iter())
            .collect()
    });
    // Dealt round-robin: taken back the same way.
    (0..n)
        .map(|i| done[i % threads].next().expect("one result per item"))
        .collect()
}

/// How a capture worker reads the store: through the writer's connection
/// on the caller's thread, else through a read-only connection of its own,
/// opened when first needed.
enum Reader<'a> {
    Shared(&'a Connection),
    Own(Option<&'a Path>, Option<Connection>),
}

impl Reader<'_> {
    fn conn(&mut self) -> Result<&Connection> {
        match self {
            Reader::Shared(conn) => Ok(conn),
            Reader::Own(path, conn) => {
                if conn.is_none() {
                    let path = path.ok_or_else(|| {
                        crate::Error::Invalid("the store database has no path".into())
                    })?;
                    let c = Connection::open_with_flags(
                        path,
                        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
                    )?;
                    c.busy_timeout(std::time::Duration::from_secs(10))?;
                    *conn = Some(c);
                }
                Ok(conn.as_ref().expect("opened just above"))
            }
        }
    }
}

/// When a read path's content is new to the store, compresses it (as a
/// delta from the path's previous version when that is large).
fn prepare_one(
    store: &BlobStore,
    db: &mut Reader,
    claimed: &Mutex<HashSet<Hash>>,
    mut c: Captured,
) -> Result<Captured> {
    let (Some(data), Some((State::File { hash, .. }, _))) = (c.content.take(), &c.new) else {
        return Ok(c);
    };
    let hash = *hash;
    // Compress only content the store does not have yet: touching,
    // rewinding and redoing mostly produce known blobs.
    if store.contains(db.conn()?, &hash)? {
        return Ok(c);
    }
    if !claimed.lock().expect("claim set poisoned").insert(hash) {
        return Ok(c);
    }
    // A large file's previous version makes a good delta base.
    let base = match c.old.as_ref().and_then(|o| o.state.hash()) {
        Some(old) if data.len() >= DELTA_MIN && store.delta_base_ok(db.conn()?, &old)? => {
            Some((old, store.delta_base(db.conn()?, &old)?))
        }
        _ => None,
    };
    c.blob = Some(match base {
        Some((base_hash, base)) => store.prepare_delta(hash, &data, base_hash, &base),
        None if data.len() < PACK_BLOB_MAX => {
            c.content = Some(data);
            return Ok(c);
        }
        None => store.prepare_hashed(hash, &data),
    });
    Ok(c)
}

/// Compresses the new small contents that [`prepare_one`] left in
/// `captured`, on the workers: together, a pack per [`PACK_TARGET`] raw
/// bytes, or each alone to be packed later by the writer with others
/// (see [`group_for_packs`]). Files big enough to be stored as deltas later
/// get packs of their own, even a small one: reading one as a delta base
/// decodes its pack up to it, and small files packed in between would be
/// decoded for nothing (a full-tree capture of the bench tree decoded
/// 78-84 MB of packs for 27 MB of bases).
fn pack_small(store: &BlobStore, captured: &mut [Captured], threads: usize) -> Vec<PreparedPack> {
    let (mut groups, mut alone) = (Vec::new(), Vec::new());
    for delta_sized in [false, true] {
        let class: Vec<(usize, usize)> = (0..captured.len())
            .filter_map(|i| Some((i, captured[i].content.as_ref()?.len())))
            .filter(|&(_, len)| (len >= DELTA_MIN) == delta_sized)
            .collect();
        let (g, a) = group_for_packs(&class);
        groups.extend(g);
        // Left alone, they would be packed later with other batches' rests,
        // in a pack that a rewind's reads come back to across the tree.
        match delta_sized {
            true if !a.is_empty() => groups.push(a),
            _ => alone.extend(a),
        }
    }
    let mut take = |i: usize| {
        let c = &mut captured[i];
        let hash = match &c.new {
            Some((State::File { hash, .. }, _)) => *hash,
            _ => unreachable!("prepare_one keeps content only for a file"),
        };
        (hash, c.content.take().expect("chosen for its content"))
    };
    enum Job {
        Pack(Vec<(Hash, Vec<u8>)>),
        Alone(usize, (Hash, Vec<u8>)),
    }
    enum Done {
        Pack(PreparedPack),
        Alone(usize, Prepared),
    }
    let mut jobs: Vec<Job> = Vec::new();
    for g in groups {
        jobs.push(Job::Pack(g.into_iter().map(&mut take).collect()));
    }
    jobs.extend(alone.into_iter().map(|i| Job::Alone(i, take(i))));
    let done = par_map(
        jobs,
        threads,
        1,
        (),
        || (),
        |_, job| match job {
            Job::Pack(blobs) => Done::Pack(store.prepare_pack(&blobs)),
            Job::Alone(i, (hash, data)) => Done::Alone(i, store.prepare_hashed(hash, &data)),
        },
    );
    let mut packs = Vec::new();
    for d in done {
        match d {
            Done::Pack(pack) => packs.push(pack),
            Done::Alone(i, blob) => captured[i].blob = Some(blob),
        }
    }
    packs
}

/// Splits `(index, size)` pairs, in order, into groups of about
/// [`PACK_TARGET`] bytes (a rest under half of that joins the last group);
/// with less than half a pack's worth, leaves them all alone.
fn group_for_packs(files: &[(usize, usize)]) -> (Vec<Vec<usize>>, Vec<usize>) {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let (mut group, mut bytes) = (Vec::new(), 0);
    for &(i, len) in files {
        bytes += len;
        group.push(i);
        if bytes >= PACK_TARGET {
            groups.push(std::mem::take(&mut group));
            bytes = 0;
        }
    }
    let alone = match groups.last_mut() {
        _ if bytes >= PACK_TARGET / 2 => {
            groups.push(group);
            Vec::new()
        }
        Some(last) => {
            last.append(&mut group);
            Vec::new()
        }
        None => group,
    };
    (groups, alone)
}

/// Reads `batch`, in order, on up to `threads` threads, a share each,
/// whose files' contents are hashed together ([`Hash::of_many`]).
fn read_batch(root: &Root, batch: Vec<Seen>, threads: usize, max_size: u64) -> Vec<Captured> {
    par_shares(
        batch,
        threads,
        8,
        (),
        || (),
        |_, share| read_share(root, share, max_size),
    )
}

fn read_share(root: &Root, share: Vec<Seen>, max_size: u64) -> Vec<Captured> {
    let read: Vec<(Captured, Option<Stat>)> = share
        .into_iter()
        .map(|seen| read_one(root, seen, max_size))
        .collect();
    // (Only a file read has content.)
    let contents: Vec<&[u8]> = read
        .iter()
        .filter_map(|(c, _)| c.content.as_deref())
        .collect();
    let mut hashes = Hash::of_many(&contents).into_iter();
    read.into_iter()
        .map(|(mut c, file)| {
            if let (Some(stat), Some(data)) = (file, &c.content) {
                let hash = hashes.next().expect("one hash per file read");
                let size = data.len() as u64;
                c.new = Some((
                    State::File {
                        hash,
                        size,
                        mode: stat.mode,
                    },
                    stat,
                ));
            }
            c
        })
        .collect()
}

/// Reads one path: what it is now, and a regular file's bytes, returned
/// with the stat of the file read (its state waits for the hash).
fn read_one(root: &Root, seen: Seen, max_size: u64) -> (Captured, Option<Stat>) {
    let Seen { path, stat, old } = seen;
    let mut out = Captured {
        path,
        old,
        new: None,
        content: None,
        blob: None,
    };
    let Some(stat) = stat else {
        return (out, None);
    };
    let skipped = |reason: String| State::Skipped { reason };
    let state = match stat.kind {
        StatKind::Dir => State::Dir { mode: stat.mode },
        StatKind::Other => skipped("not a regular file, directory or symlink".into()),
        StatKind::Symlink => match root.read_link(&out.path) {
            Ok(target) => State::Symlink { target },
            Err(e) if e.kind() == io::ErrorKind::NotFound => return (out, None),
            Err(e) => skipped(format!("unreadable link: {e}")),
        },
        StatKind::File if stat.size > max_size => skipped(format!(
            "larger than the {} byte cap ({} bytes)",
            max_size, stat.size
        )),
        StatKind::File => match root.read_file(&out.path) {
            Ok((data, st)) => {
                let size = data.len() as u64;
                out.content = Some(data);
                // The stat of the file we read, so a change made while we
                // read it is seen next time.
                return (out, Some(Stat { size, ..st }));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => return (out, None),
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return (out, None),
            Err(e) => skipped(format!("unreadable: {e}")),
        },
    };
    out.new = Some((state, stat));
    (out, None)
}

fn io_err(action: &'static str, root: &Root, path: &RelPath, source: io::Error) -> crate::Error {
    crate::Error::Io {
        action,
        path: root.path().join(path.as_path()),
        source,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::fs;
    use std::path::Path;

    use crate::model::{Options, TurnMeta};
    use crate::project::Project;
    use crate::relpath::RelPath;
    use crate::state::State;

    fn setup() -> (tempfile::TempDir, std::path::PathBuf, Project) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("proj");
        fs::create_dir_all(root.join("src/target")).unwrap();
        fs::write(root.join("src/target/x.rs"), "source, not build output").unwrap();
        fs::create_dir_all(root.join("target/debug")).unwrap();
        fs::write(
            root.join("target/CACHEDIR.TAG"),
            "Signature: 8a477f597d28d172789f06886806bc55",
        )
        .unwrap();
        fs::write(root.join("target/debug/bin"), "built").unwrap();
        fs::create_dir_all(root.join("node_modules/x")).unwrap();
        fs::write(root.join("node_modules/x/i.js"), "dep").unwrap();
        fs::write(root.join(".ckptignore"), "*.log\n/scratch/\n").unwrap();
        fs::write(root.join("a.log"), "log").unwrap();
        fs::create_dir_all(root.join("scratch")).unwrap();
        fs::write(root.join("scratch/s"), "s").unwrap();
        fs::write(root.join(".env"), "SECRET=1").unwrap();
        let p = Project::open(&tmp.path().join("store"), &root, Options::default()).unwrap();
        (tmp, root, p)
    }

    /// Ends the open turn; the paths it recorded.
    fn ended_paths(p: &mut Project) -> Vec<String> {
        let ended = p.turn_end().unwrap();
        ended.entries.iter().map(|e| e.path.display()).collect()
    }

    fn cached(p: &Project) -> Vec<String> {
        let mut v: Vec<String> = crate::cache::all(&p.conn)
            .unwrap()
            .into_keys()
            .map(|k| k.display())
            .collect();
        v.sort();
        v
    }

    /// Every cache row: path and state.
    fn states(p: &Project) -> BTreeMap<String, State> {
        crate::cache::all(&p.conn)
            .unwrap()
            .into_iter()
            .map(|(k, r)| (k.display(), r.state))
            .collect()
    }

    /// Names whose byte order interleaves a directory's own entry, its
    /// siblings and its contents (`a` < `a-b` < `a.rs` < `a/x` < `a0`), more
    /// of them than one page of the cache or one batch holds.
    fn tricky_tree(root: &Path) {
        for d in ["a/x/y", "a/x-y", "a0/q", "b/c"] {
            fs::create_dir_all(root.join(d)).unwrap();
        }
        for f in [
            "a-b", "a.rs", "a/x/y/1", "a/x/z", "a/x/z-", "a/x.txt", "a/x-y/1", "a0/q/2", "b/c/d",
            "b0",
        ] {
            fs::write(root.join(f), f).unwrap();
        }
    }

    #[test]
    fn reconcile_finds_what_a_fresh_baseline_finds_and_records_each_change_once() {
        let (tmp, root, mut p) = setup();
        tricky_tree(&root);
        p.reconcile().unwrap();
        let before = states(&p);
        assert!(before.contains_key("a/x/z-") && before.contains_key("b/c/d"));
        p.turn_start(TurnMeta::default()).unwrap();
        // Changes on both sides of every interleaving: a directory replaced
        // by a file, removals, an edit, a renamed directory, additions
        // before, between and after cached paths, and a cached directory
        // that is excluded now (it leaves the cache; it was not deleted).
        fs::remove_dir_all(root.join("a/x")).unwrap();
        fs::write(root.join("a/x"), "now a file").unwrap();
        fs::remove_file(root.join("a-b")).unwrap();
        fs::write(root.join("a.rs"), "edited").unwrap();
        fs::rename(root.join("a0"), root.join("a1")).unwrap();
        fs::write(root.join("a+"), "new").unwrap();
        fs::write(root.join("0"), "new").unwrap();
        fs::create_dir_all(root.join("zz/new")).unwrap();
        fs::write(root.join("zz/new/f"), "new").unwrap();
        fs::write(root.join(".ckptignore"), "*.log\n/scratch/\n/b/\n").unwrap();
        let report = p.reconcile().unwrap();
        let after = states(&p);

        let mut fresh =
            Project::open(&tmp.path().join("store2"), &root, Options::default()).unwrap();
        fresh.reconcile().unwrap();
        assert_eq!(after, states(&fresh));
        assert!(!after.contains_key("b") && !after.contains_key("b/c/d"));

        let mut want = BTreeMap::new();
        for path in before.keys().chain(after.keys()) {
            let rel = RelPath::new(path.as_str()).unwrap();
            let is_dir = before.get(path).is_some_and(|s| s.is_dir());
            if before.get(path) != after.get(path) && !p.is_excluded(&rel, is_dir) {
                want.insert(
                    path.clone(),
                    before.get(path).cloned().unwrap_or(State::Absent),
                );
            }
        }
        assert!(want.contains_key("a/x/y/1") && want.contains_key("a1/q/2"));
        assert_eq!(report.changed, want.len() as u64);
        let got: BTreeMap<String, State> = p
            .turn_end()
            .unwrap()
            .entries
            .into_iter()
            .map(|e| (e.path.display(), e.pre))
            .collect();
        assert_eq!(got, want);
    }

    /// Text large enough to be stored as a delta from its previous version.
    fn large_text() -> Vec<u8> {
        let big: Vec<u8> = (0..20_000u32)
            .flat_map(|i| format!("line {i}\n").into_bytes())
            .collect();
        assert!(big.len() >= crate::store::DELTA_MIN);
        big
    }

    #[test]
    fn a_new_version_of_a_large_file_is_captured_without_hashing_its_base() {
        let (_tmp, root, mut p) = setup();
        let big = large_text();
        fs::write(root.join("big.txt"), &big).unwrap();
        p.reconcile().unwrap();
        let mut big2 = big.clone();
        big2.extend_from_slice(b"appended\n");
        fs::write(root.join("big.txt"), &big2).unwrap();
        // One path: prepared on this thread, where the counter is.
        crate::store::tests::HASHED.with(|n| n.set(0));
        let path = RelPath::new("big.txt").unwrap();
        assert_eq!(p.check_paths([path.clone()]).unwrap().changed, 1);
        assert_eq!(
            crate::store::tests::HASHED.with(|n| n.get()),
            0,
            "the delta base was read and verified"
        );
        let hash = crate::cache::state(&p.conn, &path).unwrap().hash().unwrap();
        assert_eq!(p.read_blob(&hash).unwrap(), big2);
    }

    #[test]
    fn a_parallel_batch_stores_new_content_once_and_a_large_file_as_a_delta() {
        let (_tmp, root, mut p) = setup();
        let big = large_text();
        fs::write(root.join("big.txt"), &big).unwrap();
        p.reconcile().unwrap();
        p.turn_start(TurnMeta::default()).unwrap();
        let mut paths = vec![RelPath::new("big.txt").unwrap()];
        for i in 0..20 {
            let name = format!("f{i}");
            let text = if i % 2 == 0 {
                "same".to_string()
            } else {
                format!("own {i}")
            };
            fs::write(root.join(&name), text).unwrap();
            paths.push(RelPath::new(name).unwrap());
        }
        let mut big2 = big.clone();
        big2.extend_from_slice(b"appended\n");
        fs::write(root.join("big.txt"), &big2).unwrap();
        assert_eq!(p.check_paths(paths.clone()).unwrap().changed, 21);
        for path in &paths {
            let hash = crate::cache::state(&p.conn, path).unwrap().hash().unwrap();
            let on_disk = fs::read(root.join(path.as_path())).unwrap();
            assert_eq!(p.read_blob(&hash).unwrap(), on_disk, "{path}");
        }
        let big_hash = crate::state::Hash::of(&big2);
        let is_delta: bool = p
            .conn
            .query_row(
                "SELECT base IS NOT NULL FROM blobs WHERE hash = ?1",
                [&big_hash.0[..]],
                |r| r.get(0),
            )
            .unwrap();
        assert!(is_delta, "stored as a delta from its previous version");
        assert_eq!(p.turn_end().unwrap().entries.len(), 21);
    }

    #[test]
    fn a_batch_of_new_small_files_is_packed_whole_by_the_workers() {
        let (_tmp, root, mut p) = setup();
        p.reconcile().unwrap();
        let packs = |p: &Project| -> Vec<i64> {
            let mut stmt = p
                .conn
                .prepare("SELECT count(*) FROM blobs WHERE pack IS NOT NULL GROUP BY pack")
                .unwrap();
            stmt.query_map([], |r| r.get(0))
                .unwrap()
                .map(|r| r.unwrap())
                .collect()
        };
        let before = packs(&p).len();
        // 20 files of 3 KiB in one batch: three packs' worth (and a rest
        // that joins the last), none left alone to be repacked later.
        let mut paths = Vec::new();
        for i in 0..20 {
            let name = format!("s{i}.rs");
            let text = format!("// file {i}\n").repeat(3 << 10)[..3 << 10].to_string();
            fs::write(root.join(&name), text).unwrap();
            paths.push(RelPath::new(name).unwrap());
        }
        assert_eq!(p.check_paths(paths.clone()).unwrap().changed, 20);
        let after = packs(&p);
        assert_eq!(after.len() - before, 3, "{after:?}");
        assert!(after[before..].iter().all(|&n| n > 1), "{after:?}");
        for path in &paths {
            let hash = crate::cache::state(&p.conn, path).unwrap().hash().unwrap();
            assert_eq!(
                p.read_blob(&hash).unwrap(),
                fs::read(root.join(path.as_path())).unwrap()
            );
        }
    }

    #[test]
    fn files_big_enough_for_deltas_are_packed_apart_from_small_ones() {
        let (_tmp, root, mut p) = setup();
        p.reconcile().unwrap();
        // In path order the two big files fall between small ones.
        let mut paths = Vec::new();
        for (name, len) in [("a.rs", 6 << 10), ("b.rs", 6 << 10), ("c.big", 70 << 10)]
            .into_iter()
            .chain([("d.rs", 6 << 10), ("e.big", 70 << 10), ("f.rs", 6 << 10)])
        {
            let text = format!("// {name}\n").repeat(len)[..len].to_string();
            fs::write(root.join(name), text).unwrap();
            paths.push(RelPath::new(name).unwrap());
        }
        assert_eq!(p.check_paths(paths).unwrap().changed, 6);
        let count = |sql: &str| -> i64 { p.conn.query_row(sql, [], |r| r.get(0)).unwrap() };
        let min = crate::store::DELTA_MIN;
        assert_eq!(
            count(&format!(
                "SELECT count(*) FROM blobs WHERE pack IS NOT NULL AND size >= {min}"
            )),
            2,
            "the big files are packed"
        );
        assert_eq!(
            count(&format!(
                "SELECT count(*) FROM (SELECT pack FROM blobs WHERE pack IS NOT NULL \
                 GROUP BY pack HAVING min(size) < {min} AND max(size) >= {min})"
            )),
            0,
            "no pack mixes the two"
        );
    }

    #[test]
    fn excludes_tagged_build_dirs_dependencies_and_ckptignore_but_not_dotenv() {
        let (_tmp, _root, mut p) = setup();
        p.reconcile().unwrap();
        assert_eq!(
            cached(&p),
            [
                ".ckptignore",
                ".env",
                "src",
                "src/target",
                "src/target/x.rs"
            ],
        );
        for (path, dir) in [
            ("target/debug/bin", false),
            ("node_modules/x", true),
            ("a.log", false),
            ("scratch/s", false),
        ] {
            assert!(p.is_excluded(&RelPath::new(path).unwrap(), dir), "{path}");
        }
        assert!(!p.is_excluded(&RelPath::new("src/target/x.rs").unwrap(), false));
    }

    #[test]
    fn a_dir_tagged_later_leaves_the_cache_without_counting_as_deleted() {
        let (_tmp, root, mut p) = setup();
        p.reconcile().unwrap();
        let turn = p.turn_start(TurnMeta::default()).unwrap();
        fs::write(
            root.join("src/target/CACHEDIR.TAG"),
            "Signature: 8a477f597d28d172789f06886806bc55",
        )
        .unwrap();
        p.check_paths([RelPath::new("src/target/CACHEDIR.TAG").unwrap()])
            .unwrap();
        assert_eq!(cached(&p), [".ckptignore", ".env", "src", "src/target"]);
        assert!(p.turn_end().unwrap().entries.is_empty());
        assert!(p.show(turn).unwrap().entries.is_empty());
    }

    #[test]
    fn events_for_a_new_directory_capture_its_whole_subtree() {
        let (_tmp, root, mut p) = setup();
        p.reconcile().unwrap();
        p.turn_start(TurnMeta::default()).unwrap();
        fs::create_dir_all(root.join("new/a/b")).unwrap();
        fs::write(root.join("new/a/b/f"), "x").unwrap();
        // Only the top directory's event arrives (the rest were created
        // before a watch could be added).
        p.check_paths([RelPath::new("new").unwrap()]).unwrap();
        let paths = ended_paths(&mut p);
        assert_eq!(paths, ["new", "new/a", "new/a/b", "new/a/b/f"]);
    }

    #[test]
    fn an_event_deep_in_new_directories_captures_the_whole_new_chain() {
        let (_tmp, root, mut p) = setup();
        p.reconcile().unwrap();
        p.turn_start(TurnMeta::default()).unwrap();
        fs::create_dir_all(root.join("a/b/c")).unwrap();
        fs::write(root.join("a/b/c/f"), "x").unwrap();
        fs::write(root.join("a/b/sibling"), "y").unwrap();
        // Only the deepest file's event arrives.
        p.check_paths([RelPath::new("a/b/c/f").unwrap()]).unwrap();
        let paths = ended_paths(&mut p);
        assert_eq!(paths, ["a", "a/b", "a/b/c", "a/b/c/f", "a/b/sibling"]);
    }
}
