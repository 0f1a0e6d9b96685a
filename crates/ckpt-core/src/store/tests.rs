//! The store's test fixture and counters (used by the crate's other tests
//! too), and tests of the [`BlobStore`] API as a whole.

use crate::state::HashOf;
use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

use rusqlite::{params, Connection};

use super::*;

pub(super) const HOUR: i64 = 3_600_000_000_000;

thread_local! {
    /// Contents hashed by `get` on this thread.
    pub(crate) static HASHED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// Packs decoded (wholly or in part) by `get` on this thread.
    pub(super) static PACK_DECODES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Source-like small files, alike but each different.
pub(super) fn source_file(i: usize) -> Vec<u8> {
    (0..40 + i % 50)
        .map(|l| format!("    let value_{l} = compute(input_{i}, {l}); // line {l} of file {i}\n"))
        .collect::<String>()
        .into_bytes()
}

/// Puts small files until one pack has been written; their hashes.
pub(super) fn fill_a_pack(f: &Fixture) -> Vec<(Hash, Vec<u8>)> {
    let mut out = Vec::new();
    let mut bytes = 0;
    while bytes < PACK_TARGET {
        let data = source_file(out.len());
        bytes += data.len();
        out.push((put(f, &data), data));
    }
    out
}

pub(super) fn count(f: &Fixture, sql: &str) -> i64 {
    f.conn.query_row(sql, [], |r| r.get(0)).unwrap()
}

pub(crate) struct Fixture {
    _dir: tempfile::TempDir,
    pub(crate) db: PathBuf,
    pub(crate) conn: Connection,
    pub(crate) store: BlobStore,
    pub(super) objects: PathBuf,
}

/// A store with its database in a temp dir.
pub(crate) fn fixture(inline_max: usize) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    let conn = crate::db::open(&db).unwrap();
    let objects = dir.path().join("objects");
    let store = BlobStore::open(&objects, 3, inline_max).unwrap();
    Fixture {
        _dir: dir,
        db,
        conn,
        store,
        objects,
    }
}

/// Bytes that zstd cannot shrink much (so a size picks inline vs file).
pub(super) fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

pub(super) fn put(f: &Fixture, data: &[u8]) -> Hash {
    let p = f.store.prepare(data);
    assert_eq!(p.hash, Hash::of(data));
    assert_eq!(p.size, data.len() as u64);
    f.store.insert(&f.conn, &p).unwrap();
    p.hash
}

pub(super) fn is_inline(f: &Fixture, hash: &Hash) -> bool {
    blob_is(f, hash, "data IS NOT NULL OR pack IS NOT NULL")
}

/// `condition` on the row of blob `hash`.
pub(super) fn blob_is(f: &Fixture, hash: &Hash, condition: &str) -> bool {
    let sql = format!("SELECT {condition} FROM blobs WHERE hash = ?1");
    f.conn.query_row(&sql, [&hash.0[..]], |r| r.get(0)).unwrap()
}

pub(super) fn object_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for fan in fs::read_dir(dir).unwrap() {
        for e in fs::read_dir(fan.unwrap().path()).unwrap() {
            out.push(e.unwrap().path());
        }
    }
    out
}

#[test]
fn round_trip_empty_small_and_large() {
    let f = fixture(1024);
    let empty = put(&f, b"");
    let small = put(&f, b"fn main() {}\n");
    let large_data = noise(64 << 10, 1);
    let large = put(&f, &large_data);

    assert!(is_inline(&f, &empty));
    assert!(is_inline(&f, &small));
    assert!(!is_inline(&f, &large));
    assert_eq!(f.store.get(&f.conn, &empty).unwrap(), b"");
    assert_eq!(f.store.get(&f.conn, &small).unwrap(), b"fn main() {}\n");
    assert_eq!(f.store.get(&f.conn, &large).unwrap(), large_data);
    assert!(f.store.contains(&f.conn, &large).unwrap());

    // The large one is a file at <dir>/<2 hex>/<62 hex>, and the only one.
    let hex = large.to_hex();
    let path = f.objects.join(&hex[..2]).join(&hex[2..]);
    assert!(path.is_file());
    assert_eq!(object_files(&f.objects), vec![path]);

    let (count, bytes) = f.store.usage(&f.conn).unwrap();
    assert_eq!(count, 3);
    let csum: i64 = f
        .conn
        .query_row(
            "SELECT sum(csize) + (SELECT sum(csize) FROM packs) FROM blobs",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(bytes, csum as u64);
    assert!(bytes > 64 << 10, "noise does not compress");
}

#[test]
fn inline_max_zero_puts_even_the_empty_blob_in_a_file() {
    let f = fixture(0);
    let h = put(&f, b"");
    assert!(!is_inline(&f, &h));
    assert_eq!(f.store.get(&f.conn, &h).unwrap(), b"");
}

#[test]
fn second_insert_adds_nothing() {
    let f = fixture(1024);
    let big = noise(10_000, 2);
    put(&f, b"same");
    put(&f, &big);
    let before = f.store.usage(&f.conn).unwrap();
    let files_before = object_files(&f.objects);
    let hex = Hash::of(&big).to_hex();
    let path = f.objects.join(&hex[..2]).join(&hex[2..]);
    let mtime = fs::metadata(&path).unwrap().modified().unwrap();

    put(&f, b"same");
    put(&f, &big);
    assert_eq!(f.store.usage(&f.conn).unwrap(), before);
    assert_eq!(before.0, 2);
    assert_eq!(object_files(&f.objects), files_before);
    assert_eq!(
        fs::metadata(&path).unwrap().modified().unwrap(),
        mtime,
        "file not rewritten"
    );
}

#[test]
fn open_rejects_a_bad_level() {
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(
        BlobStore::open(dir.path(), 1000, 0),
        Err(Error::BadInput(_))
    ));
}

#[test]
fn deltas_round_trip_cap_their_chain_and_keep_their_bases_through_gc() {
    let fx = fixture(64 << 10);
    let (conn, store) = (&fx.conn, &fx.store);
    let mut version: Vec<u8> = (0..200_000u32)
        .flat_map(|i| format!("line {i}\n").into_bytes())
        .collect();
    let first = store.prepare(&version);
    store.insert(conn, &first).unwrap();
    let mut hashes = vec![first.hash];
    for turn in 0..12 {
        let prev = *hashes.last().unwrap();
        version.extend_from_slice(format!("appended in turn {turn}\n").as_bytes());
        let hash = Hash::of(&version);
        let blob = if store.delta_base_ok(conn, &prev).unwrap() {
            let base = store.get(conn, &prev).unwrap();
            store.prepare_delta(hash, &version, prev, &base)
        } else {
            store.prepare_hashed(hash, &version)
        };
        if blob.base.is_some() {
            assert!(
                blob.compressed.len() < 1000,
                "a delta of one line: {} bytes",
                blob.compressed.len()
            );
        }
        store.insert(conn, &blob).unwrap();
        hashes.push(hash);
        assert_eq!(store.get(conn, &hash).unwrap(), version);
    }
    let max_depth: i64 = conn
        .query_row("SELECT max(depth) FROM blobs", [], |r| r.get(0))
        .unwrap();
    assert_eq!(
        max_depth, MAX_DELTA_DEPTH,
        "chains stop at the cap, then start whole again"
    );
    // Only the newest is referenced: gc keeps its whole chain.
    let last = *hashes.last().unwrap();
    let referenced: HashSet<Hash> = [last].into_iter().collect();
    store.gc(conn, &referenced, 0, i64::MAX).unwrap();
    assert_eq!(store.get(conn, &last).unwrap(), version);
    // A damaged base makes its deltas unreadable, never wrong.
    let fx = fixture(64 << 10);
    let (conn, store) = (&fx.conn, &fx.store);
    let a = b"base content ".repeat(10_000);
    let b = [&a[..], b"and more"].concat();
    let pa = store.prepare(&a);
    store.insert(conn, &pa).unwrap();
    let pb = store.prepare_delta(Hash::of(&b), &b, pa.hash, &a);
    store.insert(conn, &pb).unwrap();
    conn.execute(
        "UPDATE packs SET data = ?1, size = 1 WHERE id = (SELECT pack FROM blobs WHERE hash = ?2)",
        params![store.prepare(b"x").compressed, &pa.hash.0[..]],
    )
    .unwrap();
    assert!(store.get(conn, &pb.hash).is_err());
}
