//! fsck of the blob store: blob rows, packs, blobs outside packs (inline
//! rows, object files, delta chains) and the object directory. Streams:
//! one pack or one blob in memory at a time.

use crate::state::HashOf;
use std::fs;
use std::io::ErrorKind;

use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension};

use super::{Checker, FindingKind, Later};
use crate::error::{Error, IoContext, Result};
use crate::project::OBJECTS_DIR;
use crate::state::Hash;
use crate::store::{hex_hash, is_hex, MAX_DELTA_DEPTH, TMP_PREFIX};

/// Raw size above which a pack row is not decoded: no pack ckpt writes comes
/// near it (about 2 MiB), and a damaged row must not make fsck allocate
/// whatever it claims.
const MAX_PACK_RAW: i64 = 256 << 20;

/// Rows of `blobs` whose name is no SHA-256, and packed blobs whose pack
/// is gone (the pack loop below only sees packs that exist).
pub(super) fn rows(c: &mut Checker) -> Result<()> {
    let mut stmt = c
        .conn
        .prepare("SELECT hash FROM blobs WHERE typeof(hash) != 'blob' OR length(hash) != 32")?;
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        let name = match r.get::<_, Value>(0)? {
            Value::Blob(b) => hex::encode(b),
            other => format!("{other:?}"),
        };
        c.problem(
            FindingKind::BadBlobRow,
            format!("blob row {name}"),
            "its name is not a SHA-256 (32 bytes)".into(),
        );
    }
    let mut stmt = c.conn.prepare(
        "SELECT b.hash, b.pack FROM blobs b WHERE b.pack IS NOT NULL
         AND NOT EXISTS (SELECT 1 FROM packs p WHERE p.id = b.pack)",
    )?;
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        let (hash, pack): (Vec<u8>, i64) = (r.get(0)?, r.get(1)?);
        c.problem(
            FindingKind::MissingPack,
            format!("blob {}", hex::encode(hash)),
            format!("it is stored in pack {pack}, which is not in the store"),
        );
    }
    Ok(())
}

/// Every pack decodes whole; every blob in it lies inside it and hashes
/// to its name.
pub(super) fn packs(c: &mut Checker) -> Result<()> {
    let mut packs = c
        .conn
        .prepare("SELECT id, size, data FROM packs ORDER BY id")?;
    // Every packed blob in pack order, read beside the packs (no index
    // finds one pack's blobs).
    let mut members = c.conn.prepare(
        "SELECT pack, hash, size, pack_offset FROM blobs WHERE pack IS NOT NULL ORDER BY pack",
    )?;
    let mut members = members.query([])?;
    let mut next: Option<(i64, Member)> = None;
    let mut rows = packs.query([])?;
    while let Some(r) = rows.next()? {
        let (id, size, data): (i64, i64, Value) = (r.get(0)?, r.get(1)?, r.get(2)?);
        c.report.checked.packs += 1;
        let mut blobs: Vec<Member> = Vec::new();
        loop {
            if next.is_none() {
                let Some(m) = members.next()? else { break };
                next = Some((m.get(0)?, (m.get(1)?, m.get(2)?, m.get(3)?)));
            }
            match next.take() {
                // Blobs of a pack that is gone are reported by `rows`.
                Some((pack, _)) if pack < id => {}
                Some((pack, member)) if pack == id => blobs.push(member),
                later => {
                    next = later;
                    break;
                }
            }
        }
        c.report.checked.blobs += blobs.len() as u64;
        if blobs.is_empty() {
            c.warning(
                FindingKind::UnusedPack,
                format!("pack {id}"),
                "no blob is stored in it (gc removes it)".into(),
            );
        }
        let raw = match decode_pack(size, data) {
            Ok(raw) => raw,
            Err(why) => {
                c.problem(FindingKind::CorruptPack, format!("pack {id}"), why);
                for (hash, _, _) in &blobs {
                    c.problem(
                        FindingKind::CorruptBlob,
                        format!("blob {}", hex::encode(hash)),
                        format!("it is stored in pack {id}, which does not decode"),
                    );
                }
                continue;
            }
        };
        let mut named = Vec::with_capacity(blobs.len());
        let mut slices: Vec<&[u8]> = Vec::with_capacity(blobs.len());
        for (hash, len, offset) in &blobs {
            let Some(hash) = Hash::from_slice(hash) else {
                continue; // reported by `rows`
            };
            let range = offset
                .and_then(|o| usize::try_from(o).ok())
                .zip(usize::try_from(*len).ok())
                .and_then(|(start, len)| Some(start..start.checked_add(len)?))
                .filter(|r| r.end <= raw.len());
            match range {
                Some(range) => {
                    named.push((hash, range.start));
                    slices.push(&raw[range]);
                }
                None => c.problem(
                    FindingKind::BlobOutsidePack,
                    format!("blob {hash}"),
                    format!(
                        "its {len} bytes at offset {offset:?} lie outside pack {id} ({} bytes)",
                        raw.len()
                    ),
                ),
            }
        }
        for ((hash, offset), actual) in named.iter().zip(Hash::of_many(&slices)) {
            if actual != *hash {
                c.problem(
                    FindingKind::CorruptBlob,
                    format!("blob {hash}"),
                    format!("its bytes at offset {offset} of pack {id} hash to {actual}"),
                );
            }
        }
    }
    Ok(())
}

/// A packed blob's name, size and offset in its pack.
type Member = (Vec<u8>, i64, Option<i64>);

/// The raw content of a pack row, or why it cannot be had.
fn decode_pack(size: i64, data: Value) -> std::result::Result<Vec<u8>, String> {
    let Value::Blob(compressed) = data else {
        return Err(format!("its data is {:?}, not a blob", data.data_type()));
    };
    if !(0..=MAX_PACK_RAW).contains(&size) {
        return Err(format!("it claims {size} raw bytes"));
    }
    match zstd::zstd_safe::get_frame_content_size(&compressed) {
        Ok(Some(n)) if i64::try_from(n) == Ok(size) => {}
        Ok(Some(n)) => return Err(format!("its frame says {n} bytes, its row {size}")),
        Ok(None) | Err(_) => return Err("its zstd frame header is unreadable".into()),
    }
    let raw = zstd::bulk::decompress(&compressed, size as usize)
        .map_err(|e| format!("it does not decompress: {e}"))?;
    if raw.len() as i64 != size {
        return Err(format!("it decodes to {} bytes, not {size}", raw.len()));
    }
    Ok(raw)
}

/// Every blob outside a pack: its delta chain holds together, then the
/// store's own read path decodes and verifies it (inline row, object file,
/// or delta over its bases).
pub(super) fn unpacked(c: &mut Checker) -> Result<()> {
    let mut stmt = c.conn.prepare(
        "SELECT hash, data IS NULL, base, depth FROM blobs
         WHERE pack IS NULL AND typeof(hash) = 'blob' AND length(hash) = 32",
    )?;
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        let raw: Vec<u8> = r.get(0)?;
        let hash = Hash::from_slice(&raw).expect("the query keeps 32-byte names only");
        let is_file: bool = r.get(1)?;
        let (base, depth): (Option<Vec<u8>>, i64) = (r.get(2)?, r.get(3)?);
        c.report.checked.blobs += 1;
        c.report.checked.objects += u64::from(is_file);
        let subject = format!("blob {hash}");
        if let Some(why) = broken_chain(c.conn, hash, base, depth)? {
            c.problem(FindingKind::BrokenDelta, subject, why);
            continue;
        }
        let me = hash.to_hex();
        match c.store.get(c.conn, &hash) {
            Ok(_) => {}
            Err(Error::MissingBlob(h)) if h == me => {
                let path = c.store.object_path(&hash);
                let f = super::Finding {
                    kind: FindingKind::MissingObject,
                    subject,
                    detail: format!("its object file {} is missing", path.display()),
                };
                c.later(Later::Missing(hash, f));
            }
            Err(Error::MissingBlob(h)) => c.problem(
                FindingKind::BrokenDelta,
                subject,
                format!("its delta base {h} is missing its object file"),
            ),
            Err(Error::CorruptBlob { hash: h, reason }) if h == me => {
                c.problem(FindingKind::CorruptBlob, subject, reason)
            }
            Err(Error::CorruptBlob { hash: h, reason }) => c.problem(
                FindingKind::CorruptBlob,
                subject,
                format!("its delta base {h} is corrupt: {reason}"),
            ),
            Err(e @ Error::Io { .. }) => c.problem(FindingKind::Unreadable, subject, e.to_string()),
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Why the delta chain starting at `hash` (whose row has `base`, `depth`)
/// cannot be read, if it cannot: every base must exist and sit one level
/// lower, down to a whole blob at depth 0. Depths strictly fall, so this
/// ends, even on a chain tampered into a cycle.
fn broken_chain(
    conn: &Connection,
    hash: Hash,
    base: Option<Vec<u8>>,
    depth: i64,
) -> Result<Option<String>> {
    let mut base_stmt = conn.prepare_cached("SELECT base, depth FROM blobs WHERE hash = ?1")?;
    let (mut at, mut base, mut depth) = (hash, base, depth);
    loop {
        let Some(b) = base else {
            return Ok((depth != 0).then(|| {
                format!("blob {at} is stored whole but says it is at delta depth {depth}")
            }));
        };
        if !(1..=MAX_DELTA_DEPTH).contains(&depth) {
            return Ok(Some(format!(
                "blob {at} is a delta at depth {depth}, outside 1..={MAX_DELTA_DEPTH}"
            )));
        }
        let Some(b) = Hash::from_slice(&b) else {
            return Ok(Some(format!(
                "blob {at} names a delta base that is no SHA-256"
            )));
        };
        let row: Option<(Option<Vec<u8>>, i64)> = base_stmt
            .query_row([&b.0[..]], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        let Some((next_base, next_depth)) = row else {
            return Ok(Some(format!(
                "delta base {b} of blob {at} is not in the store"
            )));
        };
        if next_depth != depth - 1 {
            return Ok(Some(format!(
                "blob {at} is at delta depth {depth} but its base {b} at {next_depth}"
            )));
        }
        (at, base, depth) = (b, next_base, next_depth);
    }
}

/// Files in `objects/` that no row names; leftover temp files; anything
/// else. Warnings only: gc removes the first two, nothing is touched here.
pub(super) fn object_dir(c: &mut Checker) -> Result<()> {
    let dir = c.store_dir.join(OBJECTS_DIR);
    let fans = match fs::read_dir(&dir) {
        Ok(f) => f,
        // A missing object file is reported by its blob.
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).ctx("list object dir", &dir),
    };
    for fan in fans {
        let fan = fan.ctx("list object dir", &dir)?;
        let fan_name = fan.file_name().to_string_lossy().into_owned();
        let fan_path = fan.path();
        let is_dir = fan.file_type().ctx("stat", &fan_path)?.is_dir();
        if !is_dir || !is_hex(&fan_name, 2) {
            c.warning(
                FindingKind::StrayFile,
                format!("{OBJECTS_DIR}/{fan_name}"),
                "not a name ckpt writes (left alone)".into(),
            );
            continue;
        }
        for entry in fs::read_dir(&fan_path).ctx("list object dir", &fan_path)? {
            let entry = entry.ctx("list object dir", &fan_path)?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let subject = format!("{OBJECTS_DIR}/{fan_name}/{name}");
            let hash = is_hex(&name, 62)
                .then(|| hex_hash(&fan_name, &name))
                .flatten();
            let is_file = entry.file_type().ctx("stat", entry.path())?.is_file();
            match hash {
                Some(hash) if is_file => {
                    if named_as_file(c.conn, &hash)? != Some(true) {
                        let f = super::Finding {
                            kind: FindingKind::UnnamedObject,
                            subject,
                            detail: format!(
                                "no row stores blob {hash} in this file (gc removes it)"
                            ),
                        };
                        c.later(Later::Unnamed(hash, f));
                    }
                }
                _ if name.starts_with(TMP_PREFIX) => c.warning(
                    FindingKind::TempFile,
                    subject,
                    "a temp file left by an interrupted write (gc removes it)".into(),
                ),
                _ => c.warning(
                    FindingKind::StrayFile,
                    subject,
                    "not a name ckpt writes (left alone)".into(),
                ),
            }
        }
    }
    Ok(())
}

/// Whether `hash` is stored, and if so whether as an object file.
fn named_as_file(conn: &Connection, hash: &Hash) -> Result<Option<bool>> {
    Ok(conn
        .prepare_cached("SELECT data IS NULL AND pack IS NULL FROM blobs WHERE hash = ?1")?
        .query_row([&hash.0[..]], |r| r.get(0))
        .optional()?)
}

/// Outside the snapshot: what still holds of the object file findings.
pub(super) fn confirm(c: &mut Checker) -> Result<()> {
    for l in std::mem::take(&mut c.later) {
        match l {
            Later::Missing(hash, f) => {
                let gone = fs::symlink_metadata(c.store.object_path(&hash)).is_err();
                // gc removes a blob's row before its file.
                if gone && named_as_file(c.conn, &hash)? == Some(true) {
                    c.problem(f.kind, f.subject, f.detail);
                }
            }
            Later::Unnamed(hash, f) => {
                let there = fs::symlink_metadata(c.store.object_path(&hash)).is_ok();
                // A capture writes the file before it commits the row.
                if there && named_as_file(c.conn, &hash)? != Some(true) {
                    c.warning(f.kind, f.subject, f.detail);
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsck::{Finding, FsckReport};
    use crate::store::tests::fixture;
    use crate::store::BlobStore;

    fn finding(kind: FindingKind, hash: &Hash) -> Finding {
        Finding {
            kind,
            subject: format!("blob {hash}"),
            detail: String::new(),
        }
    }

    /// What a capture or a gc does between the snapshot and the second
    /// look decides: only findings that still hold are reported.
    #[test]
    fn object_file_findings_are_kept_only_if_they_still_hold_after_the_snapshot() {
        let f = fixture(0); // every blob an object file
        let put = |data: &[u8]| {
            let p = f.store.prepare(data);
            f.store.insert(&f.conn, &p).unwrap();
            p.hash
        };
        // Its file is gone and its row is still there: missing.
        let lost = put(b"lost");
        fs::remove_file(f.store.object_path(&lost)).unwrap();
        // gc removed the row, then the file: not missing.
        let collected = Hash::of(b"collected by gc");
        // A capture wrote the file and committed its row since: named.
        let committed = put(b"committed meanwhile");
        // Still no row names it: unnamed.
        let stray = Hash::of(b"stray");
        let path = f.store.object_path(&stray);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, b"x").unwrap();

        let objects = path.parent().and_then(|p| p.parent()).unwrap();
        let dir = objects.parent().unwrap().to_path_buf();
        let mut c = Checker {
            conn: &f.conn,
            store: BlobStore::reader(objects),
            store_dir: &dir,
            max: 10,
            report: FsckReport::default(),
            later: vec![
                Later::Missing(lost, finding(FindingKind::MissingObject, &lost)),
                Later::Missing(collected, finding(FindingKind::MissingObject, &collected)),
                Later::Unnamed(committed, finding(FindingKind::UnnamedObject, &committed)),
                Later::Unnamed(stray, finding(FindingKind::UnnamedObject, &stray)),
            ],
        };
        confirm(&mut c).unwrap();
        let subjects =
            |list: &[Finding]| list.iter().map(|f| f.subject.clone()).collect::<Vec<_>>();
        assert_eq!(subjects(&c.report.problems), [format!("blob {lost}")]);
        assert_eq!(subjects(&c.report.warnings), [format!("blob {stray}")]);
    }
}
