//! Solid packs: small whole blobs compressed together (table `packs`), so
//! the many small files of a tree share one compression context (on crate
//! sources a quarter fewer bytes than one frame per file).
//!
//! A capture batch with a pack's worth of new small files compresses them
//! together on its workers ([`BlobStore::prepare_pack`]); otherwise each
//! starts as a pack of its own (a fast zstd frame), and once [`PACK_TARGET`]
//! raw bytes of those have gathered the writer compresses them together and
//! points their rows into the new pack. Reading a packed blob decodes its
//! pack up to the blob's end; the last few packs read are kept, and a second
//! read of a kept pack that needs more decodes all of it.

use std::collections::VecDeque;
use std::io::Read;
use std::sync::Arc;

use rusqlite::types::Value;
use rusqlite::{params, Connection, OptionalExtension};

use super::compress::compress;
use super::{freshen, now_ns, BlobStore, Prepared};
use crate::error::{Error, Result};
use crate::state::{Hash, HashOf};

/// Whole blobs smaller than this are packed.
pub const PACK_BLOB_MAX: usize = 256 << 10;

/// Raw bytes gathered before a pack is compressed: bounds what reading one
/// packed blob decodes (a few ms) while the baseline store stays under its
/// 20%-of-the-tree target (1 MiB packs: 19.8%).
/// (Small in tests, so a test batch fills packs.)
pub const PACK_TARGET: usize = if cfg!(test) { 16 << 10 } else { 2 << 20 };

/// Blobs gathered before a pack is compressed, however few their bytes: a
/// single pack's row costs ~40 bytes more than its blob's place in a pack,
/// which for a tree of tiny files is more than the file.
pub const PACK_COUNT: usize = if cfg!(test) { 64 } else { 1024 };

/// zstd level of a to-be-packed blob's own frame.
pub(super) const PENDING_LEVEL: i32 = 1;

/// How many decoded packs [`BlobStore`] keeps (each up to [`PACK_TARGET`]
/// raw bytes): a full-tree rewind needs the pack of many batches' small
/// rests all through its reads; 8 instead of 4 made it ~6% faster.
const RECENT_PACKS: usize = 8;

/// The raw content of the packs read last, most recent first: a rewind
/// reads its blobs in path order, which is mostly pack order, with blobs
/// from other packs in between.
pub(super) type RecentPacks = VecDeque<(i64, Arc<Vec<u8>>)>;

/// Small blobs inserted but not packed yet, in insertion order.
#[derive(Default)]
pub(super) struct Pending {
    /// (blob, its single pack, its frame): a quarter of the raw bytes to
    /// hold, and decompressing is cheap next to compressing the pack.
    blobs: Vec<(Hash, i64, Vec<u8>)>,
    bytes: usize,
}

/// Small blobs compressed together by [`BlobStore::prepare_pack`], ready to
/// be inserted by the writer.
pub struct PreparedPack {
    raw_len: usize,
    compressed: Vec<u8>,
    /// Each blob's hash, size and offset in the raw bytes.
    blobs: Vec<(Hash, u64, usize)>,
}

impl PreparedPack {
    /// The raw bytes of its blobs.
    pub fn raw_len(&self) -> usize {
        self.raw_len
    }
}

/// How much of a pack to decode for a blob in it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Decode {
    /// Up to the blob's end: one blob read alone.
    Prefix,
    /// All of it: one of many blobs read together.
    Whole,
}

impl BlobStore {
    /// Compresses small whole blobs (each under [`PACK_BLOB_MAX`]) together,
    /// as one pack: a capture that has a pack's worth of new small files
    /// packs them on its workers rather than have the writer repack them.
    pub fn prepare_pack(&self, blobs: &[(Hash, Vec<u8>)]) -> PreparedPack {
        let mut raw = Vec::with_capacity(blobs.iter().map(|(_, b)| b.len()).sum());
        let mut placed = Vec::with_capacity(blobs.len());
        for (hash, data) in blobs {
            placed.push((*hash, data.len() as u64, raw.len()));
            raw.extend_from_slice(data);
        }
        PreparedPack {
            raw_len: raw.len(),
            compressed: compress(self.level, &raw),
            blobs: placed,
        }
    }

    /// Stores a prepared pack (call inside the writer's transaction): its
    /// blobs not stored yet point into it. A blob already stored stays as
    /// it is (its bytes here are dead), except one whose object file has
    /// gone missing, which is pointed here instead.
    pub fn insert_pack(&self, conn: &Connection, pack: &PreparedPack) -> Result<()> {
        let now = now_ns();
        // The workers left out what the store had, so nearly every blob is
        // new: inserted outright, and only one already there is looked up
        // (a lookup per blob first was a tenth of a first watch's writer).
        let id = self.add_pack_row(conn, pack.raw_len, &pack.compressed)?;
        // Created with its pack (a NULL `created_ns`).
        let mut insert = conn.prepare_cached(
            "INSERT INTO blobs (hash, size, csize, depth, pack, pack_offset)
             VALUES (?1, ?2, 0, 0, ?3, ?4) ON CONFLICT (hash) DO NOTHING",
        )?;
        let mut point = conn.prepare_cached(
            "UPDATE blobs SET csize = 0, created_ns = ?2, data = NULL, base = NULL, depth = 0,
                 pack = ?3, pack_offset = ?4 WHERE hash = ?1",
        )?;
        let mut used = false;
        for (hash, size, offset) in &pack.blobs {
            if insert.execute(params![&hash.0[..], *size as i64, id, *offset as i64])? == 1 {
                used = true;
            } else if self.stored_as_file(conn, hash)? == Some(true) && self.object_missing(hash)? {
                point.execute(params![&hash.0[..], now, id, *offset as i64])?;
                used = true;
            } else {
                freshen(conn, hash, now)?;
            }
        }
        if !used {
            conn.prepare_cached("DELETE FROM packs WHERE id = ?1")?
                .execute([id])?;
        }
        Ok(())
    }

    /// A new row in `packs`; its id.
    pub(super) fn add_pack_row(
        &self,
        conn: &Connection,
        size: usize,
        compressed: &[u8],
    ) -> Result<i64> {
        conn.prepare_cached(
            "INSERT INTO packs (size, csize, created_ns, data) VALUES (?1, ?2, ?3, ?4)",
        )?
        .execute(params![
            size as i64,
            compressed.len() as i64,
            now_ns(),
            compressed
        ])?;
        Ok(conn.last_insert_rowid())
    }

    /// Compresses `pending` into one pack, points the blobs that are still
    /// in their single packs at it, and drops those single packs. A blob
    /// whose row is gone (its transaction rolled back, or gc) just leaves
    /// dead bytes in the pack.
    fn write_pack(&self, conn: &Connection, pending: Pending) -> Result<()> {
        let mut raw = Vec::with_capacity(pending.bytes);
        let mut offsets = Vec::with_capacity(pending.blobs.len());
        // One context for the pack's blobs: making one per blob cost more
        // than decoding a small frame.
        let mut dctx = zstd::bulk::Decompressor::new()
            .map_err(|e| Error::Invariant(format!("zstd context: {e}")))?;
        for (hash, single, frame) in &pending.blobs {
            // Decoded in place, at its own size: a buffer of the largest
            // size per blob was a mapping made and unmade for each of a
            // pack's 1,024 blobs. A frame that does not decompress (it
            // cannot: we made it) stays in its single pack.
            let start = raw.len();
            let size = match zstd::zstd_safe::get_frame_content_size(frame) {
                Ok(Some(n)) if n <= PACK_BLOB_MAX as u64 => n as usize,
                _ => continue,
            };
            raw.resize(start + size, 0);
            match dctx.decompress_to_buffer(frame, &mut raw[start..]) {
                Ok(n) if n == size => offsets.push((*hash, *single, start)),
                _ => raw.truncate(start),
            }
        }
        drop(pending);
        let compressed = zstd::bulk::compress(&raw, self.level)
            .map_err(|e| Error::Invariant(format!("compress pack: {e}")))?;
        let pack = self.add_pack_row(conn, raw.len(), &compressed)?;
        // A single pack's blob starts at 0 and is its whole raw content.
        let mut point = conn.prepare_cached(
            "UPDATE blobs SET pack = ?3, pack_offset = ?4
             WHERE hash = ?1 AND pack = ?2 AND pack_offset = 0
             RETURNING size",
        )?;
        // The pack the blob left is dropped if nothing else is in it: the
        // blobs of a pack lie in disjoint ranges of its raw bytes, so one
        // that spans them all is alone there, but for the one empty
        // content (found by its name; no index finds a pack's blobs). The
        // id is checked so, not trusted: after a rolled-back transaction
        // it may name a newer pack.
        let mut drop_left = conn.prepare_cached(
            "DELETE FROM packs WHERE id = ?1 AND size = ?2
             AND NOT EXISTS (SELECT 1 FROM blobs WHERE hash = ?3 AND pack = ?1)",
        )?;
        let empty = Hash::of(b"");
        for (hash, single, offset) in offsets {
            let moved: Option<i64> = point
                .query_row(params![&hash.0[..], single, pack, offset as i64], |r| {
                    r.get(0)
                })
                .optional()?;
            if let Some(size) = moved {
                drop_left.execute(params![single, size, &empty.0[..]])?;
            }
        }
        Ok(())
    }

    /// Adds `blob`, just inserted as single pack `id`, to the blobs waiting
    /// to be packed, and packs them once [`PACK_TARGET`] raw bytes wait.
    pub(super) fn gather(&self, conn: &Connection, blob: &Prepared, id: i64) -> Result<()> {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        pending.bytes += blob.size as usize;
        pending.blobs.push((blob.hash, id, blob.compressed.clone()));
        if pending.bytes >= PACK_TARGET || pending.blobs.len() >= PACK_COUNT {
            let full = std::mem::take(&mut *pending);
            drop(pending);
            self.write_pack(conn, full)?;
        }
        Ok(())
    }

    /// The first `end` raw bytes of pack `id` (or more), for blob `hash`
    /// (named in errors). A first read of a pack stops decoding there (one
    /// blob early in a pack costs less than one at its end); a second read
    /// of the same pack that needs more decodes all of it, so reading a
    /// pack's blobs in order decodes it at most twice, not once per blob.
    /// With `Decode::Whole`, a first read decodes all of it.
    pub(super) fn pack(
        &self,
        conn: &Connection,
        id: i64,
        hash: &Hash,
        end: usize,
        decode: Decode,
    ) -> Result<Arc<Vec<u8>>> {
        let mut recent = self.recent_packs.lock().unwrap_or_else(|e| e.into_inner());
        let mut whole = decode == Decode::Whole;
        if let Some(i) = recent.iter().position(|(cached, _)| *cached == id) {
            let (_, raw) = recent.remove(i).expect("found above");
            if raw.len() >= end {
                recent.push_front((id, Arc::clone(&raw)));
                return Ok(raw);
            }
            whole = true;
        }
        let corrupt = |reason: String| Error::CorruptBlob {
            hash: hash.to_hex(),
            reason,
        };
        let row: Option<(i64, Value)> = conn
            .prepare_cached("SELECT size, data FROM packs WHERE id = ?1")?
            .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        let Some((size, Value::Blob(compressed))) = row else {
            return Err(corrupt(format!("pack {id} is missing or not a blob")));
        };
        match zstd::zstd_safe::get_frame_content_size(&compressed) {
            Ok(Some(n)) if i64::try_from(n) == Ok(size) => {}
            _ => return Err(corrupt(format!("pack {id}: frame size does not match"))),
        }
        if i64::try_from(end).map_or(true, |end| end > size) {
            return Err(corrupt(format!("not inside pack {id}")));
        }
        let end = if whole { size as usize } else { end };
        #[cfg(test)]
        super::tests::PACK_DECODES.with(|n| n.set(n.get() + 1));
        let raw = if whole {
            zstd::bulk::decompress(&compressed, end)
        } else {
            let mut raw = Vec::with_capacity(end);
            zstd::stream::read::Decoder::with_buffer(&compressed[..])
                .and_then(|d| d.take(end as u64).read_to_end(&mut raw))
                .map(|_| raw)
        }
        .map_err(|e| corrupt(format!("decompress pack {id}: {e}")))?;
        if raw.len() < end {
            return Err(corrupt(format!("pack {id} ends early")));
        }
        let raw = Arc::new(raw);
        recent.push_front((id, Arc::clone(&raw)));
        recent.truncate(RECENT_PACKS);
        Ok(raw)
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use rusqlite::params;

    use super::*;
    use crate::state::HashOf;
    use crate::store::tests::{
        blob_is, count, fill_a_pack, fixture, put, source_file, PACK_DECODES,
    };

    #[test]
    fn small_blobs_are_packed_once_enough_are_gathered() {
        let f = fixture(64 << 10);
        let first = b"fn first() {}\n".to_vec();
        let h0 = put(&f, &first);
        assert_eq!(
            count(&f, "SELECT count(*) FROM packs"),
            1,
            "a pack of its own until enough have gathered"
        );

        let mut blobs = fill_a_pack(&f);
        blobs.push((h0, first.clone()));
        assert_eq!(
            count(&f, "SELECT count(*) FROM packs"),
            1,
            "singles dropped"
        );
        assert_eq!(
            count(
                &f,
                "SELECT count(*) FROM blobs WHERE pack = (SELECT id FROM packs) AND data IS NULL"
            ),
            blobs.len() as i64,
            "every gathered blob points into the pack"
        );
        let pack_size = count(&f, "SELECT size FROM packs") as usize;
        assert_eq!(pack_size, blobs.iter().map(|b| b.1.len()).sum::<usize>());
        let (n, packed_bytes) = f.store.usage(&f.conn).unwrap();
        assert_eq!(n, blobs.len() as u64);
        let one_frame_each: usize = blobs
            .iter()
            .map(|(_, d)| zstd::bulk::compress(d, 3).unwrap().len())
            .sum();
        assert!(
            (packed_bytes as usize) < one_frame_each / 2,
            "a pack is far smaller than one frame per blob: {packed_bytes} vs {one_frame_each}"
        );
        // Read back forwards and backwards: the first read of the pack
        // decodes up to its blob, the first that needs more decodes it all,
        // the others come from the cache. A rewind of a whole tree must not
        // decode a pack once per blob.
        let forwards = BlobStore::open(&f.objects, 3, 64 << 10).unwrap();
        let backwards = BlobStore::open(&f.objects, 3, 64 << 10).unwrap();
        PACK_DECODES.with(|n| n.set(0));
        for (h, data) in &blobs {
            assert_eq!(&forwards.get(&f.conn, h).unwrap(), data);
        }
        assert!(PACK_DECODES.with(|n| n.get()) <= 2, "decoded per blob");
        PACK_DECODES.with(|n| n.set(0));
        for (h, data) in blobs.iter().rev() {
            assert_eq!(&backwards.get(&f.conn, h).unwrap(), data);
        }
        assert!(PACK_DECODES.with(|n| n.get()) <= 2, "decoded per blob");
        // Read together, in any order, the pack is decoded once.
        let together = BlobStore::open(&f.objects, 3, 64 << 10).unwrap();
        PACK_DECODES.with(|n| n.set(0));
        let hashes: Vec<Hash> = blobs.iter().map(|b| b.0).collect();
        for (got, (_, data)) in together.get_many(&f.conn, &hashes).into_iter().zip(&blobs) {
            assert_eq!(&got.unwrap(), data);
        }
        assert_eq!(PACK_DECODES.with(|n| n.get()), 1, "decoded once");
        // Storing a packed blob again writes nothing: no object file, no pack.
        put(&f, &first);
        assert_eq!(count(&f, "SELECT count(*) FROM packs"), 1);
        assert!(
            !f.objects.read_dir().unwrap().any(|_| true),
            "no object files"
        );
        assert_eq!(f.store.get(&f.conn, &h0).unwrap(), first);
    }

    #[test]
    fn a_prepared_pack_stores_its_new_blobs_and_leaves_stored_ones() {
        let f = fixture(0); // every blob `put` stores is an object file
        let stored = b"stored as a file".to_vec();
        let lost = b"its file went missing".to_vec();
        let (h_stored, h_lost) = (put(&f, &stored), put(&f, &lost));
        let hex = h_lost.to_hex();
        fs::remove_file(f.objects.join(&hex[..2]).join(&hex[2..])).unwrap();
        let mut blobs = vec![(h_stored, stored), (h_lost, lost)];
        blobs.extend((0..3).map(|i| (Hash::of(&source_file(i)), source_file(i))));
        let pack = f.store.prepare_pack(&blobs);
        assert_eq!(
            pack.raw_len(),
            blobs.iter().map(|b| b.1.len()).sum::<usize>()
        );
        f.store.insert_pack(&f.conn, &pack).unwrap();
        for (h, data) in &blobs {
            assert_eq!(&f.store.get(&f.conn, h).unwrap(), data);
        }
        let in_pack = |h: &Hash| blob_is(&f, h, "pack IS NOT NULL");
        assert!(!in_pack(&h_stored), "a stored blob stays where it is");
        assert!(in_pack(&h_lost), "a blob whose file is gone is repaired");
        assert!(blobs[2..].iter().all(|(h, _)| in_pack(h)));
        assert_eq!(count(&f, "SELECT count(*) FROM packs"), 1);
        assert_eq!(f.store.usage(&f.conn).unwrap().0, 5);
        // A pack whose blobs are all stored adds nothing.
        f.store.insert_pack(&f.conn, &pack).unwrap();
        assert_eq!(count(&f, "SELECT count(*) FROM packs"), 1);
    }

    #[test]
    fn a_rolled_back_pack_leaves_its_blobs_as_they_were() {
        let f = fixture(64 << 10);
        let kept = put(&f, b"committed before");
        f.conn.execute_batch("BEGIN").unwrap();
        let blobs = fill_a_pack(&f);
        f.conn.execute_batch("ROLLBACK").unwrap();
        assert_eq!(count(&f, "SELECT count(*) FROM packs"), 1, "kept's own");
        assert_eq!(f.store.get(&f.conn, &kept).unwrap(), b"committed before");
        assert!(matches!(
            f.store.get(&f.conn, &blobs[0].0),
            Err(Error::MissingBlob(_))
        ));
        // The blobs gathered in the rolled-back transaction were dropped
        // from the pending list with the pack; storing them again works.
        let blobs = fill_a_pack(&f);
        for (h, data) in &blobs {
            assert_eq!(&f.store.get(&f.conn, h).unwrap(), data);
        }
    }

    #[test]
    fn a_stale_pending_blob_never_drops_the_pack_that_took_its_id() {
        // A blob gathered in a rolled-back transaction names a single pack
        // whose id a later pack gets; packing the gathered blobs moves the
        // blob but must leave that pack, which holds others.
        for others in [vec![b"".to_vec()], vec![b"another blob".to_vec()]] {
            let f = fixture(64 << 10);
            let x = b"gathered, then rolled back".to_vec();
            f.conn.execute_batch("BEGIN").unwrap();
            let hx = put(&f, &x);
            let single = count(&f, "SELECT max(id) FROM packs");
            f.conn.execute_batch("ROLLBACK").unwrap();
            let mut blobs: Vec<(Hash, Vec<u8>)> =
                others.iter().map(|d| (Hash::of(d), d.clone())).collect();
            // The empty blob lies at offset 0 beside x; another lies after.
            let at = usize::from(others[0].is_empty());
            blobs.insert(at, (hx, x.clone()));
            f.store
                .insert_pack(&f.conn, &f.store.prepare_pack(&blobs))
                .unwrap();
            assert_eq!(count(&f, "SELECT max(id) FROM packs"), single, "id reused");
            fill_a_pack(&f);
            for (h, data) in &blobs {
                assert_eq!(&f.store.get(&f.conn, h).unwrap(), data);
            }
        }
    }

    #[test]
    fn corrupt_pack_is_detected() {
        let f = fixture(64 << 10);
        let blobs = fill_a_pack(&f);
        let (h, _) = &blobs[blobs.len() / 2];
        let raw_len: i64 = count(&f, "SELECT size FROM packs");
        let expect_corrupt = |what: &str, want: &str| {
            let store = BlobStore::open(&f.objects, 3, 64 << 10).unwrap();
            match store.get(&f.conn, h) {
                Err(Error::CorruptBlob { reason, .. }) => {
                    assert!(reason.contains(want), "{what}: {reason}")
                }
                other => panic!(
                    "{what}: expected CorruptBlob, got {:?}",
                    other.map(|d| d.len())
                ),
            }
        };
        // A valid frame of other bytes of the same length: only the hash
        // of the blob's slice can tell.
        let evil = zstd::bulk::compress(&vec![b'x'; raw_len as usize], 3).unwrap();
        f.conn
            .execute("UPDATE packs SET data = ?1", [&evil])
            .unwrap();
        expect_corrupt("other content", "hashes to");
        f.conn
            .execute("UPDATE packs SET data = x'00112233'", [])
            .unwrap();
        expect_corrupt("garbage", "frame size");
        let good = zstd::bulk::compress(&vec![b'x'; raw_len as usize], 3).unwrap();
        f.conn
            .execute("UPDATE packs SET data = ?1", [&good])
            .unwrap();
        f.conn
            .execute(
                "UPDATE blobs SET pack_offset = ?1 WHERE hash = ?2",
                params![raw_len - 1, &h.0[..]],
            )
            .unwrap();
        expect_corrupt("offset past the end", "not inside pack");
        f.conn.execute("DELETE FROM packs", []).unwrap();
        expect_corrupt("pack gone", "missing");
    }
}
