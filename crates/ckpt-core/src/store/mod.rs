//! Content-addressed blob store: SHA-256 of the raw bytes names a blob; the
//! bytes are kept zstd-compressed, deduplicated, and verified on every read.
//!
//! A blob is always written before the row that names it, and only ever
//! found through that row. Where its bytes live:
//!
//! - whole blobs under [`PACK_BLOB_MAX`] that compress within `inline_max`:
//!   in solid packs in the database ([`pack`]), so a turn that rewrites
//!   thousands of small files costs one transaction commit, not one fsync
//!   per file;
//! - other blobs up to `inline_max` compressed: inline in their `blobs` row;
//! - larger ones: object files under the object directory ([`objects`]).
//!
//! Files of [`DELTA_MIN`] and more are stored as a zstd delta from their
//! previous version when there is one ([`mod@compress`]).
//!
//! Reading is in [`read`], garbage collection in [`gc`].

mod compress;
mod gc;
mod objects;
mod pack;
mod read;
#[cfg(test)]
pub(crate) mod tests;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Mutex;

use ckpt_types::now_ns;
use rusqlite::{params, Connection, OptionalExtension};

use crate::error::{Error, IoContext, Result};
use crate::state::Hash;

use compress::{compress, compress_delta};
pub(crate) use gc::{keep_selected, start_keep};
use objects::sync_dir;
pub(crate) use objects::{hex_hash, is_hex, TMP_PREFIX};
use pack::{Pending, RecentPacks, PENDING_LEVEL};
pub use pack::{PreparedPack, PACK_BLOB_MAX, PACK_COUNT, PACK_TARGET};

/// A blob hashed and compressed, ready to be inserted by the writer. Making
/// one needs no database, so it can happen on any thread.
pub struct Prepared {
    pub hash: Hash,
    pub size: u64,
    pub(crate) compressed: Vec<u8>,
    /// The blob whose raw bytes the frame was compressed against (a zstd
    /// "prefix"): `compressed` is then a delta from it.
    pub(crate) base: Option<Hash>,
}

/// Files at least this large are stored as a delta from their previous
/// version when there is one: an agent that appends a line to a 2 MiB log
/// then costs the store a few KiB per turn, not a whole compressed copy.
pub const DELTA_MIN: usize = 64 << 10;

/// Longest chain of deltas before a version is stored whole again; bounds
/// the work of reading one blob.
pub(crate) const MAX_DELTA_DEPTH: i64 = 8;

pub struct BlobStore {
    dir: PathBuf,
    level: i32,
    inline_max: usize,
    /// Fan-out directories known to exist durably (indexed by the hash's
    /// first byte), so each is created and its parent synced at most once
    /// per process.
    fan_ready: [AtomicBool; 256],
    /// Makes temp file names unique within this process.
    tmp_seq: AtomicU64,
    pending: Mutex<Pending>,
    recent_packs: Mutex<RecentPacks>,
}

impl BlobStore {
    /// Opens (creating) the object directory `dir`.
    pub fn open(dir: &Path, level: i32, inline_max: usize) -> Result<BlobStore> {
        let range = zstd::compression_level_range();
        if !range.contains(&level) {
            return Err(Error::BadInput(format!(
                "zstd level {level} is outside {}..={}",
                range.start(),
                range.end()
            )));
        }
        let existed = dir.is_dir();
        std::fs::create_dir_all(dir).ctx("create object dir", dir)?;
        if !existed {
            if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
                sync_dir(parent)?;
            }
        }
        Ok(BlobStore {
            level,
            inline_max,
            ..BlobStore::reader(dir)
        })
    }

    /// A store over an existing object directory `dir`, for reading only:
    /// nothing is created (fsck must not write, even a missing directory).
    pub(crate) fn reader(dir: &Path) -> BlobStore {
        BlobStore {
            dir: dir.to_path_buf(),
            level: 3,
            inline_max: 0,
            fan_ready: std::array::from_fn(|_| AtomicBool::new(false)),
            tmp_seq: AtomicU64::new(0),
            pending: Mutex::new(Pending::default()),
            recent_packs: Mutex::new(RecentPacks::new()),
        }
    }

    /// Hashes and compresses `data`.
    #[cfg(test)]
    pub(crate) fn prepare(&self, data: &[u8]) -> Prepared {
        use crate::state::HashOf;
        self.prepare_hashed(Hash::of(data), data)
    }

    /// Compresses `data` as a delta from `base` (the raw bytes of blob
    /// `base_hash`, an earlier version of the same file).
    pub fn prepare_delta(&self, hash: Hash, data: &[u8], base_hash: Hash, base: &[u8]) -> Prepared {
        match compress_delta(self.level, data, base) {
            Ok((compressed, _)) => Prepared {
                hash,
                size: data.len() as u64,
                compressed,
                base: Some(base_hash),
            },
            Err(code) => {
                tracing::warn!("delta compression failed ({code}); storing whole");
                self.prepare_hashed(hash, data)
            }
        }
    }

    /// Compresses `data`, whose hash the caller already knows.
    pub fn prepare_hashed(&self, hash: Hash, data: &[u8]) -> Prepared {
        // A blob that will be packed is compressed again with its pack: its
        // own frame only has to hold it until then, so it is made fast.
        let level = if data.len() < PACK_BLOB_MAX {
            PENDING_LEVEL.min(self.level)
        } else {
            self.level
        };
        Prepared {
            hash,
            size: data.len() as u64,
            compressed: compress(level, data),
            base: None,
        }
    }

    /// Whether a new version may be stored as a delta from `base`: it is
    /// stored, and its chain is not too long already.
    pub fn delta_base_ok(&self, conn: &Connection, base: &Hash) -> Result<bool> {
        let depth: Option<i64> = conn
            .prepare_cached("SELECT depth FROM blobs WHERE hash = ?1")?
            .query_row([&base.0[..]], |r| r.get(0))
            .optional()?;
        Ok(depth.is_some_and(|d| d < MAX_DELTA_DEPTH))
    }

    /// Stores a prepared blob unless it is already stored. Call inside the
    /// writer's transaction; a large blob's file is durable before this returns.
    ///
    /// When the blob is already stored nothing is written, except that its
    /// `created_ns` is moved to now (so a blob that is being referenced again
    /// gets a fresh grace period against a concurrent [`BlobStore::gc`], as
    /// git "freshens" objects) and a file blob whose file has gone missing is
    /// written again.
    pub fn insert(&self, conn: &Connection, blob: &Prepared) -> Result<()> {
        let now = now_ns();
        if let Some(is_file) = self.stored_as_file(conn, &blob.hash)? {
            if is_file && self.object_missing(&blob.hash)? {
                self.write_object(&blob.hash, &blob.compressed)?;
            }
            freshen(conn, &blob.hash, now)?;
            return Ok(());
        }
        let inline = blob.compressed.len() <= self.inline_max;
        if !inline {
            // Object first, the row that names it last.
            self.write_object(&blob.hash, &blob.compressed)?;
        }
        let depth: i64 = match &blob.base {
            Some(base) => conn
                .prepare_cached("SELECT depth + 1 FROM blobs WHERE hash = ?1")?
                .query_row([&base.0[..]], |r| r.get(0))
                .optional()?
                .ok_or_else(|| {
                    Error::MissingBlob(format!("{base} (delta base of {})", blob.hash))
                })?,
            None => 0,
        };
        // A small whole blob starts as a pack of its own (one row in
        // `packs`) until enough have gathered to be packed together: its
        // `blobs` row is small from the start. Had it carried the frame and
        // lost it later, the table's pages would stay mostly empty.
        let single = if inline && blob.base.is_none() && blob.size < PACK_BLOB_MAX as u64 {
            Some(self.add_pack_row(conn, blob.size as usize, &blob.compressed)?)
        } else {
            None
        };
        conn.prepare_cached(
            "INSERT INTO blobs (hash, size, csize, created_ns, data, base, depth, pack, pack_offset)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        )?
        .execute(params![
            &blob.hash.0[..],
            blob.size as i64,
            // A packed blob's bytes are counted once, in its pack's row.
            if single.is_some() { 0 } else { blob.compressed.len() as i64 },
            // A packed blob is as old as its pack (NULL: 8 bytes less a row).
            single.is_none().then_some(now),
            (inline && single.is_none()).then_some(&blob.compressed[..]),
            blob.base.map(|b| b.0.to_vec()),
            depth,
            single,
            single.map(|_| 0i64),
        ])?;
        if let Some(id) = single {
            self.gather(conn, blob, id)?;
        }
        Ok(())
    }

    /// Whether `hash` is stored, and if so whether as an object file.
    fn stored_as_file(&self, conn: &Connection, hash: &Hash) -> Result<Option<bool>> {
        Ok(conn
            .prepare_cached("SELECT data IS NULL AND pack IS NULL FROM blobs WHERE hash = ?1")?
            .query_row([&hash.0[..]], |r| r.get(0))
            .optional()?)
    }

    pub fn contains(&self, conn: &Connection, hash: &Hash) -> Result<bool> {
        Ok(conn
            .prepare_cached("SELECT 1 FROM blobs WHERE hash = ?1")?
            .query_row([&hash.0[..]], |_| Ok(()))
            .optional()?
            .is_some())
    }

    /// (blob count, compressed bytes stored).
    pub fn usage(&self, conn: &Connection) -> Result<(u64, u64)> {
        let (count, bytes): (i64, i64) = conn.query_row(
            "SELECT count(*), coalesce(sum(csize), 0)
                 + (SELECT coalesce(sum(csize), 0) FROM packs) FROM blobs",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        Ok((count as u64, bytes as u64))
    }
}

/// Gives a blob that is referenced again a fresh grace period against gc.
fn freshen(conn: &Connection, hash: &Hash, now: i64) -> Result<()> {
    conn.prepare_cached(&format!(
        "UPDATE blobs SET created_ns = ?2 WHERE hash = ?1 AND {CREATED} < ?2"
    ))?
    .execute(params![&hash.0[..], now])?;
    Ok(())
}

/// A blob row's creation time (of `blobs`, unaliased): a packed blob's
/// NULL `created_ns` is its pack's.
pub(crate) const CREATED: &str =
    "coalesce(created_ns, (SELECT p.created_ns FROM packs p WHERE p.id = blobs.pack))";
