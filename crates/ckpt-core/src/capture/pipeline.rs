//! The batch pipeline: what changed is cut into batches of about
//! `BATCH_BYTES`; the workers prepare one batch (`prepare.rs`) while this
//! thread writes the previous one, each batch in one transaction.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Mutex;

use rusqlite::Connection;

use super::prepare::{pack_small, prepare_one, read_batch, Reader};
use super::{Captured, Seen, BATCH_BYTES, BATCH_PATHS};
use crate::cache;
use crate::error::Result;
use crate::model::ScanSummary;
use crate::par::par_map;
use crate::parts::Parts;
use crate::relpath::RelPath;
use crate::state::State;
use crate::store::{BlobStore, PreparedPack};
use crate::turns::{self, Recipients, Turns};

/// Reads and stores what changed, in batches, each one transaction;
/// `gone` leave the cache (in the first batch) without counting as
/// changes.
pub(super) fn capture(
    parts: &mut Parts<'_>,
    mut seen: Vec<Seen>,
    gone: Vec<RelPath>,
    scan_start: i64,
    report: &mut ScanSummary,
) -> Result<()> {
    let to = Turns {
        conn: parts.conn,
        root: parts.root,
    }
    .recipients()?;
    let conn = &mut *parts.conn;
    if seen.is_empty() {
        if !gone.is_empty() {
            write_batch(
                conn,
                parts.store,
                Batch::default(),
                gone,
                &to,
                scan_start,
                report,
            )?;
        }
        return Ok(());
    }
    seen.sort_by(|a, b| a.path.cmp(&b.path));
    // Cut as they are taken, so only the batches in flight are copies; at
    // most `BATCH_PATHS` each, or thousands of small files' contents, blobs
    // and rows would make one batch.
    let mut rest = seen.into_iter();
    let mut batches = std::iter::from_fn(|| {
        let mut batch = Vec::new();
        let mut bytes = 0;
        while batch.len() < BATCH_PATHS && (batch.is_empty() || bytes < BATCH_BYTES) {
            let Some(s) = rest.next() else { break };
            bytes += s.stat.map_or(0, |s| s.size);
            batch.push(s);
        }
        (!batch.is_empty()).then_some(batch)
    });
    let (fs, store, readers) = (parts.root_fs, parts.store, parts.readers);
    let (max, threads) = (parts.opts.max_file_size, parts.opts.threads);
    let db_path = conn.path().map(PathBuf::from);
    // Everything but the write runs on the workers, so no serial step (a
    // store lookup, reading a delta base) idles a core between reading
    // and compressing. Each worker reads the store through a read-only
    // connection of its own (the writer's cannot cross threads); one
    // preparing while the previous batch is written may miss that
    // batch's blobs and compress a duplicate, which the writer finds
    // stored.
    let prepare = |batch: Vec<Seen>, writer: Option<&Connection>| -> Result<Batch> {
        // Hashes being compressed in this batch: identical new content
        // is compressed once.
        let claimed = Mutex::new(HashSet::new());
        let own = || Reader::Own {
            path: db_path.as_deref(),
            idle: readers,
            conn: None,
        };
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
    let first = batches.next().expect("seen is not empty");
    let mut ready = prepare(first, Some(conn))?;
    let mut gone = Some(gone);
    for next in batches {
        // Write one batch while the workers prepare the next.
        let (written, prepared) = std::thread::scope(|scope| {
            let worker = scope.spawn(|| prepare(next, None));
            let ready = std::mem::take(&mut ready);
            let gone = gone.take().unwrap_or_default();
            let written = write_batch(conn, store, ready, gone, &to, scan_start, report);
            (written, worker.join().expect("capture worker panicked"))
        });
        written?;
        ready = prepared?;
    }
    let gone = gone.take().unwrap_or_default();
    write_batch(conn, store, ready, gone, &to, scan_start, report)
}

/// One batch of paths, read and compressed, ready for the writer.
#[derive(Default)]
struct Batch {
    captured: Vec<Captured>,
    /// The batch's new small contents, compressed together.
    packs: Vec<PreparedPack>,
}

/// Writes one prepared batch (blobs, cache rows, turn entries) in one
/// transaction; a change goes to the turns `to` names (and is shared when
/// they are several: which session made it is not known), and every open
/// turn's entry for its path gets its state now.
fn write_batch(
    conn: &mut Connection,
    store: &BlobStore,
    batch: Batch,
    gone: Vec<RelPath>,
    to: &Recipients,
    scan_start: i64,
    report: &mut ScanSummary,
) -> Result<()> {
    let tx = conn.transaction()?;
    for path in &gone {
        cache::remove(&tx, path)?;
    }
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
        let new_state = match &c.new {
            Some((state, stat)) => {
                if let State::Skipped { reason } = state {
                    report
                        .skipped
                        .push(crate::model::Skipped::new(c.path.clone(), reason.clone()));
                }
                cache::put(&tx, &c.path, state, stat, scan_start)?;
                cache::stored(state, stat)
            }
            None => {
                cache::remove(&tx, &c.path)?;
                State::Absent
            }
        };
        if old_state != new_state || skipped_and_rewritten(&c) {
            report.changed += 1;
            for &turn in &to.to {
                turns::record_change(&tx, turn, &c.path, &old_state, &new_state, to.shared)?;
            }
            turns::set_post(&tx, &to.others, &c.path, &new_state)?;
        }
    }
    if !gone.is_empty() {
        crate::history::resync_open_posts(&tx)?;
    }
    tx.commit()?;
    Ok(())
}

/// A path ckpt cannot capture (over the size cap, unreadable) keeps its
/// state when rewritten at the same size: only its stat tells the change.
fn skipped_and_rewritten(c: &Captured) -> bool {
    match (&c.old, &c.new) {
        (Some(old), Some((State::Skipped { .. }, stat))) => {
            matches!(old.state, State::Skipped { .. }) && !old.same_stat(stat)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use crate::state::HashOf;
    use std::fs;

    use super::super::tests::{large_text, setup};
    use crate::model::TurnMeta;
    use crate::relpath::RelPath;

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
}
