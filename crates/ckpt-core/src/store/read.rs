//! Reading blobs: from a pack, an inline row or an object file, through
//! their delta bases, each verified against its hash (a blob whose hash
//! does not match is never written into a project).

use crate::state::HashOf;
use std::fs;
use std::io::ErrorKind;

use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension};

use super::compress::decompress_delta;
use super::pack::Decode;
use super::{BlobStore, MAX_DELTA_DEPTH};
use crate::error::{Error, IoContext, Result};
use crate::state::Hash;

impl BlobStore {
    /// The raw bytes of `hash`, verified against it.
    pub fn get(&self, conn: &Connection, hash: &Hash) -> Result<Vec<u8>> {
        let data = self.load(conn, hash, Decode::Prefix)?;
        verified(hash, Hash::of(&data), data)
    }

    /// The raw bytes of each of `hashes`, in order, each verified against
    /// its hash; hashed together, which is faster ([`Hash::of_many`]).
    /// For reading many blobs: each pack is decoded whole the first time,
    /// since the next blobs are likely to be in it too.
    pub fn get_many(&self, conn: &Connection, hashes: &[Hash]) -> Vec<Result<Vec<u8>>> {
        let loaded: Vec<Result<Vec<u8>>> = hashes
            .iter()
            .map(|h| self.load(conn, h, Decode::Whole))
            .collect();
        let datas: Vec<&[u8]> = loaded
            .iter()
            .map(|r| r.as_deref().unwrap_or_default())
            .collect();
        let actual = Hash::of_many(&datas);
        hashes
            .iter()
            .zip(actual)
            .zip(loaded)
            .map(|((hash, actual), data)| verified(hash, actual, data?))
            .collect()
    }

    /// The raw bytes of `hash` to encode a delta against, not verified: a
    /// reader decodes the delta with the same bytes, whatever they are, and
    /// verifies what comes out.
    pub fn delta_base(&self, conn: &Connection, hash: &Hash) -> Result<Vec<u8>> {
        self.load(conn, hash, Decode::Prefix)
    }

    /// The raw bytes of `hash`, not verified: a delta's bases are read with
    /// this, since the hash of the final content covers the whole chain.
    fn load(&self, conn: &Connection, hash: &Hash, decode: Decode) -> Result<Vec<u8>> {
        self.load_chain(conn, hash, decode, MAX_DELTA_DEPTH)
    }

    /// [`Self::load`], following at most `links` more delta bases: a
    /// damaged store whose chain loops must fail, not overflow the stack.
    fn load_chain(
        &self,
        conn: &Connection,
        hash: &Hash,
        decode: Decode,
        links: i64,
    ) -> Result<Vec<u8>> {
        let corrupt = |reason: String| Error::CorruptBlob {
            hash: hash.to_hex(),
            reason,
        };
        type Row = (i64, Value, Option<Vec<u8>>, Option<i64>, Option<i64>);
        let row: Option<Row> = conn
            .prepare_cached(
                "SELECT size, data, base, pack, pack_offset FROM blobs WHERE hash = ?1",
            )?
            .query_row([&hash.0[..]], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
            })
            .optional()?;
        let Some((size, data, base, pack, offset)) = row else {
            return Err(Error::MissingBlob(hash.to_hex()));
        };
        if let Some(pack) = pack {
            let range = usize::try_from(offset.unwrap_or(-1))
                .ok()
                .zip(usize::try_from(size).ok())
                .and_then(|(start, len)| Some(start..start.checked_add(len)?))
                .ok_or_else(|| corrupt(format!("not inside pack {pack}")))?;
            let raw = self.pack(conn, pack, hash, range.end, decode)?;
            return Ok(raw[range].to_vec());
        }
        let compressed = match data {
            Value::Blob(data) => data,
            Value::Null => {
                let path = self.object_path(hash);
                match fs::read(&path) {
                    Ok(data) => data,
                    Err(e) if e.kind() == ErrorKind::NotFound => {
                        return Err(Error::MissingBlob(hash.to_hex()))
                    }
                    Err(e) => return Err(e).ctx("read blob", path),
                }
            }
            other => {
                return Err(corrupt(format!(
                    "stored data is {:?}, not a blob",
                    other.data_type()
                )))
            }
        };
        // The frame header must agree with the row before we size a buffer
        // from either: a damaged header must not make us allocate wildly.
        match zstd::zstd_safe::get_frame_content_size(&compressed) {
            Ok(Some(n)) if i64::try_from(n) == Ok(size) => {}
            Ok(Some(n)) => return Err(corrupt(format!("frame says {n} bytes, row says {size}"))),
            Ok(None) | Err(_) => return Err(corrupt("unreadable zstd frame header".into())),
        }
        Ok(match base {
            None => zstd::bulk::decompress(&compressed, size as usize)
                .map_err(|e| corrupt(format!("decompress: {e}")))?,
            Some(base) => {
                let base =
                    Hash::from_slice(&base).ok_or_else(|| corrupt("bad delta base".into()))?;
                if links == 0 {
                    let why = format!("its delta chain is longer than {MAX_DELTA_DEPTH} links");
                    return Err(corrupt(why));
                }
                let prefix = self.load_chain(conn, &base, decode, links - 1)?;
                decompress_delta(&compressed, &prefix, size as usize)
                    .map_err(|code| corrupt(format!("decompress delta: zstd error {code}")))?
            }
        })
    }
}

/// `data` if its hash `actual` is the `expected` one it was stored under.
fn verified(expected: &Hash, actual: Hash, data: Vec<u8>) -> Result<Vec<u8>> {
    #[cfg(test)]
    super::tests::HASHED.with(|n| n.set(n.get() + 1));
    if actual != *expected {
        return Err(Error::CorruptBlob {
            hash: expected.to_hex(),
            reason: format!("content hashes to {actual}"),
        });
    }
    Ok(data)
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;
    use crate::store::tests::{count, fixture, is_inline, noise, put, HASHED};

    #[test]
    fn corrupt_inline_row_is_detected() {
        let f = fixture(1 << 20);
        let data = noise(2000, 3);
        let h = put(&f, &data);
        assert!(is_inline(&f, &h));
        let stored = |h: &Hash| -> Vec<u8> {
            f.conn
                .query_row(
                    "SELECT data FROM packs WHERE id = (SELECT pack FROM blobs WHERE hash = ?1)",
                    [&h.0[..]],
                    |r| r.get(0),
                )
                .unwrap()
        };
        let before = stored(&h);
        // Flip one byte in the middle of the compressed payload (past the
        // frame header, so only the re-hash can notice), with SQL alone.
        f.conn
            .execute(
                "UPDATE packs SET data = CAST(
                     substr(data, 1, length(data) / 2 - 1)
                     || CASE WHEN substr(data, length(data) / 2, 1) = x'00' THEN x'01' ELSE x'00' END
                     || substr(data, length(data) / 2 + 1) AS BLOB)
                 WHERE id = (SELECT pack FROM blobs WHERE hash = ?1)",
                [&h.0[..]],
            )
            .unwrap();
        let after = stored(&h);
        assert_eq!(after.len(), before.len());
        assert_eq!(before.iter().zip(&after).filter(|(a, b)| a != b).count(), 1);
        match f.store.get(&f.conn, &h) {
            Err(Error::CorruptBlob { reason, .. }) => {
                assert!(reason.contains("hashes to"), "{reason}")
            }
            other => panic!("expected CorruptBlob, got {other:?}"),
        }
        // Read with others, it is refused alone; every other blob is whole
        // (few enough not to be packed with it, which would mend it).
        let good: Vec<(Hash, Vec<u8>)> = (0..10)
            .map(|i| noise(400 + i, 100 + i as u64))
            .map(|d| (put(&f, &d), d))
            .collect();
        let mut asked: Vec<Hash> = good.iter().map(|(h, _)| *h).collect();
        asked.insert(7, h);
        asked.insert(3, Hash::of(b"never stored"));
        let got = f.store.get_many(&f.conn, &asked);
        assert_eq!(got.len(), asked.len());
        for (i, r) in got.into_iter().enumerate() {
            match (i, r) {
                (3, Err(Error::MissingBlob(_))) => {}
                (8, Err(Error::CorruptBlob { reason, .. })) => {
                    assert!(reason.contains("hashes to"))
                }
                (i, Ok(data)) => {
                    let Some((hash, want)) = good.iter().find(|(h, _)| *h == asked[i]) else {
                        panic!("#{i} read back")
                    };
                    assert_eq!(&data, want, "blob #{i} ({hash})");
                }
                (i, Err(e)) => panic!("blob #{i}: {e}"),
            }
        }

        // A damaged frame header, and data that is no longer a blob at all.
        let h2 = put(
            &f,
            b"second inline blob, compressible compressible compressible",
        );
        f.conn
            .execute(
                "UPDATE packs SET data = CAST(x'00' || substr(data, 2) AS BLOB)
                 WHERE id = (SELECT pack FROM blobs WHERE hash = ?1)",
                [&h2.0[..]],
            )
            .unwrap();
        assert!(matches!(
            f.store.get(&f.conn, &h2),
            Err(Error::CorruptBlob { .. })
        ));
        f.conn
            .execute(
                "UPDATE packs SET data = 'text' WHERE id = (SELECT pack FROM blobs WHERE hash = ?1)",
                [&h2.0[..]],
            )
            .unwrap();
        assert!(matches!(
            f.store.get(&f.conn, &h2),
            Err(Error::CorruptBlob { .. })
        ));
    }

    #[test]
    fn corrupt_file_blob_is_detected() {
        let f = fixture(0);
        let h = put(&f, b"original content");
        let hex = h.to_hex();
        let path = f.objects.join(&hex[..2]).join(&hex[2..]);
        // A valid zstd frame of other bytes of the same length: only the
        // re-hash can catch this.
        let other = zstd::bulk::compress(b"tampered content", 3).unwrap();
        fs::write(&path, other).unwrap();
        match f.store.get(&f.conn, &h) {
            Err(Error::CorruptBlob { hash, reason }) => {
                assert_eq!(hash, hex);
                assert!(reason.contains("hashes to"), "{reason}");
            }
            other => panic!("expected CorruptBlob, got {other:?}"),
        }
        // Garbage that is not zstd at all.
        fs::write(&path, b"garbage").unwrap();
        assert!(matches!(
            f.store.get(&f.conn, &h),
            Err(Error::CorruptBlob { .. })
        ));
    }

    #[test]
    fn missing_blob_row_and_missing_file() {
        let f = fixture(0);
        let nowhere = Hash::of(b"never stored");
        assert!(!f.store.contains(&f.conn, &nowhere).unwrap());
        assert!(
            matches!(f.store.get(&f.conn, &nowhere), Err(Error::MissingBlob(h)) if h == nowhere.to_hex())
        );

        let h = put(&f, b"file blob");
        let hex = h.to_hex();
        fs::remove_file(f.objects.join(&hex[..2]).join(&hex[2..])).unwrap();
        assert!(matches!(
            f.store.get(&f.conn, &h),
            Err(Error::MissingBlob(_))
        ));
    }

    #[test]
    fn reading_a_delta_chain_hashes_only_the_final_content() {
        let f = fixture(64 << 10);
        let mut version = b"a line of a long log\n".repeat(10_000);
        let mut prev = put(&f, &version);
        for turn in 0..5 {
            version.extend_from_slice(format!("turn {turn}\n").as_bytes());
            let base = f.store.get(&f.conn, &prev).unwrap();
            let blob = f
                .store
                .prepare_delta(Hash::of(&version), &version, prev, &base);
            f.store.insert(&f.conn, &blob).unwrap();
            prev = blob.hash;
        }
        assert_eq!(count(&f, "SELECT max(depth) FROM blobs"), 5);
        HASHED.with(|n| n.set(0));
        assert_eq!(f.store.get(&f.conn, &prev).unwrap(), version);
        assert_eq!(HASHED.with(|n| n.get()), 1, "bases are not re-hashed");
    }
}
