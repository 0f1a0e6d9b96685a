//! Object files, for blobs too large to keep in the database:
//! `<dir>/<first 2 hex>/<remaining 62 hex>`, each written to a temp file,
//! synced and renamed into place before the row that names it.
//!
//! Temp files are `<dir>/<first 2 hex>/.tmp-…`: a name that starts with a
//! dot is never a blob name, and blobs are only ever found through their
//! row, so a temp file left by a crash is never read as a blob;
//! [`BlobStore::gc`] removes it once it is older than the grace period.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::UNIX_EPOCH;

use super::{now_ns, BlobStore};
use crate::error::{IoContext, Result};
use crate::state::Hash;

/// Prefix of temp files in the fan-out directories. Hex digits never start
/// with a dot, so a temp file can never be taken for a blob.
pub(crate) const TMP_PREFIX: &str = ".tmp-";

impl BlobStore {
    /// Where the object file of `hash` is (or would be).
    pub(crate) fn object_path(&self, hash: &Hash) -> PathBuf {
        let hex = hash.to_hex();
        self.dir.join(&hex[..2]).join(&hex[2..])
    }

    /// Makes sure the fan-out directory for `hash` exists durably.
    fn fan_dir(&self, hash: &Hash) -> Result<PathBuf> {
        let hex = hash.to_hex();
        let fan = self.dir.join(&hex[..2]);
        let ready = &self.fan_ready[hash.0[0] as usize];
        if !ready.load(Ordering::Acquire) {
            match fs::create_dir(&fan) {
                Ok(()) => sync_dir(&self.dir)?,
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e).ctx("create object dir", fan),
            }
            ready.store(true, Ordering::Release);
        }
        Ok(fan)
    }

    /// Writes `compressed` as the object file of `hash`: temp file in the
    /// fan-out dir, sync, rename into place, sync the dir (so the new name
    /// itself survives a power loss before the row is committed).
    pub(super) fn write_object(&self, hash: &Hash, compressed: &[u8]) -> Result<()> {
        let fan = self.fan_dir(hash)?;
        let dest = self.object_path(hash);
        let (tmp, mut file) = self.create_temp(&fan)?;
        let written = file
            .write_all(compressed)
            .ctx("write blob", &tmp)
            .and_then(|()| file.sync_all().ctx("sync blob", &tmp))
            .and_then(|()| {
                drop(file);
                fs::rename(&tmp, &dest).ctx("rename blob into place", &dest)
            });
        if let Err(e) = written {
            let _ = fs::remove_file(&tmp);
            return Err(e);
        }
        sync_dir(&fan)
    }

    fn create_temp(&self, fan: &Path) -> Result<(PathBuf, File)> {
        loop {
            let seq = self.tmp_seq.fetch_add(1, Ordering::Relaxed);
            let path = fan.join(format!(
                "{TMP_PREFIX}{}-{}-{seq}",
                std::process::id(),
                now_ns()
            ));
            match OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(f) => return Ok((path, f)),
                Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e).ctx("create temp blob", path),
            }
        }
    }

    /// Whether the object file of `hash` is not there (or not a file).
    pub(super) fn object_missing(&self, hash: &Hash) -> Result<bool> {
        let path = self.object_path(hash);
        match fs::symlink_metadata(&path) {
            Ok(meta) => Ok(!meta.is_file()),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(true),
            Err(e) => Err(e).ctx("stat blob", path),
        }
    }
}

pub(super) fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .ctx("sync dir", dir)
}

pub(super) fn mtime_ns(meta: &fs::Metadata) -> i64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// Whether `s` is `len` lowercase hex digits (a fan-out or object name).
pub(crate) fn is_hex(s: &str, len: usize) -> bool {
    s.len() == len && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The hash named by fan-out `prefix` and object name `rest`.
pub(crate) fn hex_hash(prefix: &str, rest: &str) -> Option<Hash> {
    let mut out = [0u8; 32];
    hex::decode_to_slice([prefix, rest].concat(), &mut out).ok()?;
    Some(Hash(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::store::tests::{fixture, put};

    #[test]
    fn reinsert_rewrites_a_missing_object_file() {
        let f = fixture(0);
        let h = put(&f, b"will be lost");
        let hex = h.to_hex();
        fs::remove_file(f.objects.join(&hex[..2]).join(&hex[2..])).unwrap();
        assert!(matches!(
            f.store.get(&f.conn, &h),
            Err(Error::MissingBlob(_))
        ));
        put(&f, b"will be lost");
        assert_eq!(f.store.get(&f.conn, &h).unwrap(), b"will be lost");
    }
}
