//! Reading a rewind's blobs on other threads.
//!
//! Restoring many files is bound by reading their blobs (SQLite, zstd,
//! SHA-256 verification), not by writing them; each reader thread has its
//! own read-only connection (WAL lets readers run beside the writer), so
//! reads use every core while the caller writes files in order. Readers
//! take the blobs in batches, verified together ([`BlobStore::get_many`]).

use std::ops::Range;
use std::sync::mpsc::{sync_channel, Receiver};

use rusqlite::{Connection, OpenFlags};

use crate::error::{Error, Result};
use crate::state::Hash;
use crate::store::BlobStore;

/// Most blobs in a batch: enough to fill the hashing lanes with contents
/// of similar lengths.
pub(crate) const BATCH_BLOBS: usize = if cfg!(test) { 3 } else { 256 };

/// Most raw bytes in a batch (bounds memory, with one batch queued per
/// reader, one being read and one being written).
const BATCH_BYTES: u64 = if cfg!(test) { 4 << 10 } else { 2 << 20 };

/// Calls `work` with a function that returns the next blob of `items`
/// (`blob_of` an item: its hash and size, if it has a blob), in order,
/// read by `threads` threads with their own connections to the database
/// at `db`. `work` must ask for them in the order of `items`. The blobs
/// are not listed apart (40 B a file, 20 MB of a 500,000-file rewind).
pub(crate) fn with_blobs<T: Sync, R>(
    store: &BlobStore,
    db: &str,
    items: &[T],
    blob_of: impl Fn(&T) -> Option<(Hash, u64)> + Sync,
    threads: usize,
    work: impl FnOnce(&mut dyn FnMut(&Hash) -> Result<Vec<u8>>) -> R,
) -> R {
    let blob_of = &blob_of;
    let batches = batches(items, blob_of);
    let threads = threads.clamp(1, batches.len().max(1));
    std::thread::scope(|s| {
        let mut queues: Vec<Receiver<Vec<Result<Vec<u8>>>>> = Vec::new();
        for t in 0..threads {
            let (tx, rx) = sync_channel(1);
            queues.push(rx);
            let batches = &batches;
            s.spawn(move || {
                let fail = |e: Error| {
                    let _ = tx.send(vec![Err(e)]);
                };
                let conn = match Connection::open_with_flags(
                    db,
                    OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
                ) {
                    Ok(c) => c,
                    Err(e) => return fail(e.into()),
                };
                // One read transaction for all of them: a statement on its
                // own takes and drops SQLite's locks.
                if let Err(e) = conn.execute_batch("BEGIN") {
                    return fail(e.into());
                }
                for batch in batches.iter().skip(t).step_by(threads) {
                    let hashes: Vec<Hash> = items[batch.clone()]
                        .iter()
                        .filter_map(|i| blob_of(i).map(|(hash, _)| hash))
                        .collect();
                    // A closed queue means the writer stopped: so do we.
                    if tx.send(store.get_many(&conn, &hashes)).is_err() {
                        return;
                    }
                }
            });
        }
        let mut next = 0;
        let mut batch_no = 0;
        let mut current = Vec::new().into_iter();
        let mut get = |hash: &Hash| -> Result<Vec<u8>> {
            while items.get(next).is_some_and(|i| blob_of(i).is_none()) {
                next += 1;
            }
            if items.get(next).and_then(blob_of).map(|b| b.0) != Some(*hash) {
                return Err(Error::Invariant(format!(
                    "blob {hash} asked for out of order (expected #{next})"
                )));
            }
            next += 1;
            if current.len() == 0 {
                let got = queues[batch_no % threads].recv();
                batch_no += 1;
                current = got.unwrap_or_default().into_iter();
            }
            current.next().unwrap_or_else(|| {
                Err(Error::Invariant(format!(
                    "the reader of blob {hash} stopped"
                )))
            })
        };
        let r = work(&mut get);
        // Readers blocked on a full queue stop once their queue is gone.
        drop(queues);
        r
    })
}

/// The blobs of `items` cut, in order, into batches of at most
/// [`BATCH_BLOBS`] blobs and [`BATCH_BYTES`] bytes (a bigger blob alone),
/// as ranges of `items`: no second copy of every hash.
fn batches<T>(items: &[T], blob_of: impl Fn(&T) -> Option<(Hash, u64)>) -> Vec<Range<usize>> {
    let mut out: Vec<Range<usize>> = Vec::new();
    let (mut count, mut bytes) = (0, 0);
    for (i, item) in items.iter().enumerate() {
        let Some((_, size)) = blob_of(item) else {
            continue;
        };
        match out.last_mut() {
            Some(b) if count < BATCH_BLOBS && bytes + size <= BATCH_BYTES => {
                b.end = i + 1;
                count += 1;
                bytes += size;
            }
            _ => {
                out.push(i..i + 1);
                (count, bytes) = (1, size);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blobs_come_back_in_order_from_batches_read_on_several_threads() {
        let f = crate::store::tests::fixture(1 << 20);
        let (conn, store) = (&f.conn, &f.store);
        // Sizes that cut batches by count, by bytes, and one alone.
        let datas: Vec<Vec<u8>> = (0..40)
            .map(|i| format!("blob {i}\n").repeat(if i == 17 { 900 } else { 1 + i * 7 }))
            .map(String::into_bytes)
            .collect();
        // Items without a blob among them (a rewind's removals and
        // directories), a run of them at the start.
        let mut items = vec![None, None];
        for (i, d) in datas.iter().enumerate() {
            let p = store.prepare(d);
            store.insert(conn, &p).unwrap();
            items.push(Some((p.hash, d.len() as u64)));
            if i % 3 == 0 {
                items.push(None);
            }
        }
        let blob_of = |i: &Option<(Hash, u64)>| *i;
        let n = batches(&items, blob_of).len();
        assert!(n > 13, "{n} batches");
        let db = f.db.to_str().unwrap();
        let read = with_blobs(store, db, &items, blob_of, 3, |get| {
            items
                .iter()
                .flatten()
                .map(|(h, _)| get(h).unwrap())
                .collect::<Vec<_>>()
        });
        assert_eq!(read, datas);
        let second = items.iter().flatten().nth(1).unwrap().0;
        let skipped = with_blobs(store, db, &items, blob_of, 2, |get| {
            get(&second).map(|_| ())
        });
        assert!(matches!(skipped, Err(Error::Invariant(m)) if m.contains("out of order")));
    }
}
