//! Per-file preparation, on the workers: read and hash a share of a batch,
//! then compress what the store does not have yet (a large file as a delta
//! from its previous version, new small files together in packs).

use crate::state::HashOf;
use std::collections::HashSet;
use std::io;
use std::path::Path;
use std::sync::Mutex;

use rusqlite::{Connection, OpenFlags};

use super::{Captured, Seen};
use crate::confined::{Root, Stat, StatKind};
use crate::error::Result;
use crate::par::{par_map, par_shares};
use crate::state::{Hash, State};
use crate::store::{
    BlobStore, Prepared, PreparedPack, DELTA_MIN, PACK_BLOB_MAX, PACK_COUNT, PACK_TARGET,
};

/// Read-only connections to a project's database for the capture workers'
/// store lookups, kept from one batch to the next while a burst or a full
/// scan lasts: one opened per batch starts with a cold page cache and
/// reads each page it needs from the file (those lookups were 11% of a
/// 50,000-file turn's capture).
#[derive(Default)]
pub(crate) struct Readers(Mutex<Vec<Connection>>);

impl Readers {
    /// Closes the idle connections, and so frees their page caches.
    pub(crate) fn close(&self) {
        self.0.lock().expect("readers poisoned").clear();
    }
}

/// How a capture worker reads the store: through the writer's connection
/// on the caller's thread, else through a read-only connection of its own,
/// an idle one of `idle` or one opened when first needed, given back to
/// `idle` when the worker is done.
pub(super) enum Reader<'a> {
    Shared(&'a Connection),
    Own {
        path: Option<&'a Path>,
        idle: &'a Readers,
        conn: Option<Box<Connection>>,
    },
}

impl Drop for Reader<'_> {
    fn drop(&mut self) {
        if let Reader::Own { idle, conn, .. } = self {
            if let (Some(conn), Ok(mut idle)) = (conn.take(), idle.0.lock()) {
                idle.push(*conn);
            }
        }
    }
}

impl Reader<'_> {
    pub(super) fn conn(&mut self) -> Result<&Connection> {
        match self {
            Reader::Shared(conn) => Ok(conn),
            Reader::Own { path, idle, conn } => {
                if conn.is_none() {
                    *conn = idle.0.lock().expect("readers poisoned").pop().map(Box::new);
                }
                if conn.is_none() {
                    let path = path.ok_or_else(|| {
                        crate::Error::Invariant("the store database has no path".into())
                    })?;
                    let c = Connection::open_with_flags(
                        path,
                        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
                    )?;
                    c.busy_timeout(std::time::Duration::from_secs(10))?;
                    *conn = Some(Box::new(c));
                }
                Ok(conn.as_ref().expect("opened just above"))
            }
        }
    }
}

/// When a read path's content is new to the store, compresses it (as a
/// delta from the path's previous version when that is large).
pub(super) fn prepare_one(
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

/// Files, and bytes, that are worth a thread of their own in [`pack_small`].
const PAR_FILES: usize = 8;
const PAR_BYTES: usize = 64 << 10;

/// Compresses the new small contents that [`prepare_one`] left in
/// `captured`, on the workers: together, a pack per [`PACK_TARGET`] raw
/// bytes, or each alone to be packed later by the writer with others
/// (see [`group_for_packs`]). Files big enough to be stored as deltas later
/// get packs of their own, even a small one: reading one as a delta base
/// decodes its pack up to it, and small files packed in between would be
/// decoded for nothing (about three times the bytes of the bases).
pub(super) fn pack_small(
    store: &BlobStore,
    captured: &mut [Captured],
    threads: usize,
) -> Vec<PreparedPack> {
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
    let bytes: usize = jobs
        .iter()
        .map(|j| match j {
            Job::Pack(blobs) => blobs.iter().map(|(_, d)| d.len()).sum(),
            Job::Alone(_, (_, d)) => d.len(),
        })
        .sum();
    // A thread costs what compressing ~3 small files or ~30 KB does
    // (35 µs to start and join, 10-15 µs per file up to 4 KiB, 835 MB/s
    // past that): the few files of an agent's turn stay on this one.
    let threads = threads.min((jobs.len() / PAR_FILES).max(bytes / PAR_BYTES).max(1));
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
/// [`PACK_TARGET`] bytes or [`PACK_COUNT`] files (a rest under half of
/// that joins the last group); with less than half a pack's worth, leaves
/// them all alone.
fn group_for_packs(files: &[(usize, usize)]) -> (Vec<Vec<usize>>, Vec<usize>) {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let (mut group, mut bytes) = (Vec::new(), 0);
    for &(i, len) in files {
        bytes += len;
        group.push(i);
        if bytes >= PACK_TARGET || group.len() >= PACK_COUNT {
            groups.push(std::mem::take(&mut group));
            bytes = 0;
        }
    }
    let alone = match groups.last_mut() {
        _ if bytes >= PACK_TARGET / 2 || group.len() >= PACK_COUNT / 2 => {
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
pub(super) fn read_batch(
    root: &Root,
    batch: Vec<Seen>,
    threads: usize,
    max_size: u64,
) -> Vec<Captured> {
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
        StatKind::File if stat.size > max_size => over_cap(max_size, stat.size),
        // One byte past the cap shows a file that grew past it after the
        // stat that let it in (the soak caught a 16.8 MB file stored so).
        StatKind::File => match root.read_file_upto(&out.path, max_size.saturating_add(1)) {
            Ok((data, st)) => {
                let size = data.len() as u64;
                if size > max_size {
                    // At least what was read; the next change re-reads it.
                    let size = st.size.max(size);
                    out.new = Some((over_cap(max_size, size), Stat { size, ..st }));
                    return (out, None);
                }
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

/// How a skip reason for a file over the size cap starts.
const OVER_CAP: &str = "larger than the";

/// A file over the size cap. The exact size is in the reason, which is
/// part of the state, so a size change changes it.
fn over_cap(max_size: u64, size: u64) -> State {
    State::Skipped {
        reason: format!("{OVER_CAP} {} cap ({size} bytes)", mib(max_size)),
    }
}

/// Why a skipped path is a gap in a turn's capture: over the size cap, or
/// unreadable (anything else ckpt cannot capture), read from the reason
/// written above.
pub(crate) fn gap_of(reason: &str) -> crate::model::GapKind {
    if reason.starts_with(OVER_CAP) {
        crate::model::GapKind::SizeCap
    } else {
        crate::model::GapKind::Unreadable
    }
}

/// `16 MiB`, `16.2 MiB`: the cap in a skip reason as people read it.
fn mib(n: u64) -> String {
    let m = n as f64 / f64::from(1 << 20);
    if n.is_multiple_of(1 << 20) {
        format!("{m} MiB")
    } else {
        format!("{m:.1} MiB")
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::super::tests::{large_text, setup};
    use super::PACK_COUNT;
    use crate::project::Project;
    use crate::relpath::RelPath;

    #[test]
    fn a_file_that_grew_past_the_cap_after_its_stat_is_skipped_not_stored() {
        let (_tmp, root, p) = setup();
        let path = RelPath::new("grows.bin").unwrap();
        fs::write(root.join("grows.bin"), b"small").unwrap();
        let stat = p.root_fs.lstat(&path).unwrap();
        fs::write(root.join("grows.bin"), vec![b'x'; 64]).unwrap();
        let seen = super::super::Seen {
            path,
            stat,
            old: None,
        };
        let (c, read) = super::read_one(&p.root_fs, seen, 16);
        assert!(c.content.is_none() && read.is_none(), "nothing to store");
        match c.new {
            Some((crate::state::State::Skipped { reason }, st)) => {
                assert_eq!(reason, "larger than the 0.0 MiB cap (64 bytes)");
                assert_eq!(st.size, 64, "the stat of the file as opened");
            }
            other => panic!("expected a skip, got {other:?}"),
        }
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
        // 20 files of 3 KiB, cut into batches of `BATCH_PATHS`: each
        // batch's files packed together, none left alone to be repacked
        // later.
        let mut paths = Vec::new();
        for i in 0..20 {
            let name = format!("s{i}.rs");
            let text = format!("// file {i}\n").repeat(3 << 10)[..3 << 10].to_string();
            fs::write(root.join(&name), text).unwrap();
            paths.push(RelPath::new(name).unwrap());
        }
        assert_eq!(p.check_paths(paths.clone()).unwrap().changed, 20);
        let after = packs(&p);
        let batches = 20usize.div_ceil(crate::capture::BATCH_PATHS);
        assert_eq!(after.len() - before, batches, "{after:?}");
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
    fn a_batch_of_many_tiny_files_is_packed_by_count() {
        // Far under a pack's bytes, but no tiny file keeps a pack (and its
        // row's ~40 bytes) to itself: a worker's batch is cut by count...
        let tiny: Vec<(usize, usize)> = (0..PACK_COUNT * 3).map(|i| (i, 10)).collect();
        let (groups, alone) = super::group_for_packs(&tiny);
        assert_eq!(groups.len(), 3);
        assert!(groups.iter().all(|g| g.len() == PACK_COUNT));
        assert!(alone.is_empty());
        // ...and so are the writer's pending blobs, which is where files
        // land that come in batches too small to pack (`BATCH_PATHS` is 4
        // in tests): at most a pack's count of them wait alone.
        let (_tmp, root, mut p) = setup();
        p.reconcile().unwrap();
        let n = PACK_COUNT * 3;
        let paths: Vec<RelPath> = (0..n)
            .map(|i| {
                fs::write(root.join(format!("t{i}")), format!("tiny {i}\n")).unwrap();
                RelPath::new(format!("t{i}")).unwrap()
            })
            .collect();
        assert_eq!(p.check_paths(paths.clone()).unwrap().changed, n as u64);
        let alone = paths
            .iter()
            .filter(|path| {
                let hash = crate::cache::state(&p.conn, path).unwrap().hash().unwrap();
                let in_its_pack: i64 = p
                    .conn
                    .query_row(
                        "SELECT count(*) FROM blobs WHERE pack = (SELECT pack FROM blobs WHERE hash = ?1)",
                        [&hash.0[..]],
                        |r| r.get(0),
                    )
                    .unwrap();
                in_its_pack == 1
            })
            .count();
        assert!(
            alone < PACK_COUNT,
            "{alone} of {n} tiny files alone in their pack"
        );
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
}
