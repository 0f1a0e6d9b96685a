//! Reading a rewind's blobs on other threads.
//!
//! Restoring many files is bound by reading their blobs (SQLite, zstd,
//! SHA-256 verification), not by writing them; each reader thread has its
//! own read-only connection (WAL lets readers run beside the writer), so
//! reads use every core while the caller writes files in order.

use std::sync::mpsc::{sync_channel, Receiver};

use rusqlite::{Connection, OpenFlags};

use crate::error::{Error, Result};
use crate::state::Hash;
use crate::store::BlobStore;

/// Blobs each reader may have read ahead of the writer (bounds memory).
const AHEAD: usize = 16;

/// Calls `work` with a function that returns the next blob of `hashes`, in
/// order, read by `threads` threads with their own connections to the
/// database at `db`. `work` must ask for them in the order of `hashes`.
pub(crate) fn with_blobs<R>(
    store: &BlobStore,
    db: &str,
    hashes: &[Hash],
    threads: usize,
    work: impl FnOnce(&mut dyn FnMut(&Hash) -> Result<Vec<u8>>) -> R,
) -> R {
    let threads = threads.clamp(1, hashes.len().max(1));
    std::thread::scope(|s| {
        let mut queues: Vec<Receiver<Result<Vec<u8>>>> = Vec::new();
        for t in 0..threads {
            let (tx, rx) = sync_channel(AHEAD);
            queues.push(rx);
            s.spawn(move || {
                let conn = match Connection::open_with_flags(
                    db,
                    OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
                ) {
                    Ok(c) => c,
                    Err(e) => {
                        let _ = tx.send(Err(e.into()));
                        return;
                    }
                };
                // One read transaction for all of them: a statement on its
                // own takes and drops SQLite's locks.
                if let Err(e) = conn.execute_batch("BEGIN") {
                    let _ = tx.send(Err(e.into()));
                    return;
                }
                for hash in hashes.iter().skip(t).step_by(threads) {
                    // A closed queue means the writer stopped: so do we.
                    if tx.send(store.get(&conn, hash)).is_err() {
                        return;
                    }
                }
            });
        }
        let mut next = 0;
        let mut get = |hash: &Hash| -> Result<Vec<u8>> {
            if hashes.get(next) != Some(hash) {
                return Err(Error::Invalid(format!(
                    "blob {hash} asked for out of order (expected #{next})"
                )));
            }
            let got = queues[next % threads]
                .recv()
                .map_err(|_| Error::Invalid(format!("the reader of blob {hash} stopped")));
            next += 1;
            got?
        };
        let r = work(&mut get);
        // Readers blocked on a full queue stop once their queue is gone.
        drop(queues);
        r
    })
}
