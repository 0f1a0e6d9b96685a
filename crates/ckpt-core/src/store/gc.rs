//! Garbage collection of blobs nothing references: rows first (committed),
//! then their files, and only past a grace period, so a blob that is being
//! stored or referenced again is never taken away.

#[cfg(test)]
use std::collections::HashSet;
use std::fs;
use std::io::ErrorKind;

use rusqlite::{Connection, OptionalExtension};

use super::objects::{hex_hash, is_hex, mtime_ns, TMP_PREFIX};
use super::{BlobStore, CREATED};
use crate::error::{IoContext, Result};
use crate::state::Hash;

/// The blobs a gc keeps, marked by [`start_keep`] and [`keep_selected`]:
/// a temp table of SQLite's, which spills to a temp file past its page
/// cache, so marking costs no memory per blob (a set of every kept hash,
/// with its copies, peaked at 170 MB for 500,000 blobs).
const KEEP: &str = "temp.gc_keep";

/// Starts a gc's marking: no blob is kept yet.
pub(crate) fn start_keep(conn: &Connection) -> Result<()> {
    conn.execute_batch(
        "CREATE TEMP TABLE IF NOT EXISTS gc_keep(hash BLOB PRIMARY KEY) WITHOUT ROWID;
         DELETE FROM temp.gc_keep;",
    )?;
    Ok(())
}

/// Keeps the blobs `select` names (a query of one column of hashes).
pub(crate) fn keep_selected(conn: &Connection, select: &str) -> Result<()> {
    // In hash order, the table's: inserted as they came, 300,000 hashes
    // took 0.98 s against 0.33 s.
    conn.execute(
        &format!("INSERT OR IGNORE INTO {KEEP} SELECT * FROM ({select}) ORDER BY 1"),
        [],
    )?;
    Ok(())
}

/// What [`BlobStore::delete_unreferenced`] deleted: blob rows, their
/// compressed bytes (packs' included), and the object files to remove.
#[derive(Debug, Default)]
pub(crate) struct Doomed {
    pub blobs: u64,
    pub bytes: u64,
    files: Vec<Hash>,
}

impl BlobStore {
    /// Removes every blob that is not in `referenced` and was created (or
    /// last re-inserted) more than `grace_ns` before `now_ns`; returns
    /// (blobs removed, bytes freed).
    ///
    /// Runs its own transaction, so it must be called outside one: the rows
    /// are deleted and committed first, then the files they named, so a
    /// crash in between leaves only unnamed files, never a row without its
    /// object. It also removes, past the same grace period, files in the
    /// object directory that no row names: objects whose row was never
    /// committed (counted as blobs) and temp files left by a crash (only
    /// their bytes are counted). `referenced` must be computed by the writer
    /// with no insert in flight.
    ///
    /// Bytes freed are compressed sizes; space freed by deleting inline rows
    /// is reused by later inserts but the database file does not shrink.
    /// (The project's gc runs the two halves itself, around its own
    /// transaction; this is their plain form, for the store's tests.)
    #[cfg(test)]
    pub fn gc(
        &self,
        conn: &Connection,
        referenced: &HashSet<Hash>,
        grace_ns: i64,
        now_ns: i64,
    ) -> Result<(u64, u64)> {
        if !conn.is_autocommit() {
            return Err(crate::error::Error::Invariant(
                "blob gc must run outside a transaction (it commits before deleting files)".into(),
            ));
        }
        start_keep(conn)?;
        for h in referenced {
            conn.execute(
                &format!("INSERT OR IGNORE INTO {KEEP} VALUES (?1)"),
                [&h.0[..]],
            )?;
        }
        let cutoff = now_ns.saturating_sub(grace_ns);
        let doomed = {
            let tx = rusqlite::Transaction::new_unchecked(
                conn,
                rusqlite::TransactionBehavior::Immediate,
            )?;
            let doomed = self.delete_unreferenced(&tx, cutoff)?;
            tx.commit()?;
            doomed
        };
        self.remove_doomed(conn, doomed, cutoff)
    }

    /// The row half of [`BlobStore::gc`]: deletes, inside the caller's
    /// transaction, the rows of blobs not kept (see [`start_keep`]; a kept
    /// delta's bases are kept here) created before `cutoff`, and the packs
    /// left empty. The files they name stay until
    /// [`BlobStore::remove_doomed`], called once the transaction committed
    /// (a rolled-back one, as a dry run, removes nothing).
    pub(crate) fn delete_unreferenced(&self, tx: &Connection, cutoff: i64) -> Result<Doomed> {
        keep_delta_bases(tx)?;
        // Old, one of our names, and not kept. (A young blob may be being
        // stored or referenced again.)
        let doomed = format!("{CREATED} < ?1 AND length(hash) = 32 AND hash NOT IN {KEEP}");
        let mut out = Doomed::default();
        {
            let mut stmt = tx.prepare(&format!(
                "SELECT hash, csize, data IS NULL AND pack IS NULL FROM blobs WHERE {doomed}"
            ))?;
            let mut rows = stmt.query([cutoff])?;
            while let Some(row) = rows.next()? {
                out.blobs += 1;
                out.bytes += row.get::<_, i64>(1)?.max(0) as u64;
                // Only blobs too big to pack or inline have files.
                if row.get(2)? {
                    out.files
                        .extend(Hash::from_slice(&row.get::<_, Vec<u8>>(0)?));
                }
            }
        }
        tx.execute(&format!("DELETE FROM blobs WHERE {doomed}"), [cutoff])?;
        // A pack goes with the last blob that points into it.
        let empty = "created_ns < ?1 AND id NOT IN (SELECT pack FROM blobs WHERE pack IS NOT NULL)";
        let pack_bytes: i64 = tx.query_row(
            &format!("SELECT coalesce(sum(max(csize, 0)), 0) FROM packs WHERE {empty}"),
            [cutoff],
            |r| r.get(0),
        )?;
        tx.execute(&format!("DELETE FROM packs WHERE {empty}"), [cutoff])?;
        out.bytes += pack_bytes as u64;
        Ok(out)
    }

    /// The file half of [`BlobStore::gc`], after the rows' deletion
    /// committed: removes their object files, then unnamed files older than
    /// `cutoff`; returns (blobs removed, bytes freed), `doomed`'s included.
    pub(crate) fn remove_doomed(
        &self,
        conn: &Connection,
        doomed: Doomed,
        cutoff: i64,
    ) -> Result<(u64, u64)> {
        for hash in doomed.files {
            let path = self.object_path(&hash);
            match fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(e) => return Err(e).ctx("remove blob", path),
            }
        }
        let (n, bytes) = self.sweep_unnamed(conn, cutoff)?;
        Ok((doomed.blobs + n, doomed.bytes + bytes))
    }

    /// Removes files older than `cutoff_ns` in the object directory that no
    /// file row names (temp files, objects whose row was never committed).
    fn sweep_unnamed(&self, conn: &Connection, cutoff_ns: i64) -> Result<(u64, u64)> {
        let mut removed = 0u64;
        let mut freed = 0u64;
        let mut named = conn.prepare_cached(
            "SELECT 1 FROM blobs WHERE hash = ?1 AND data IS NULL AND pack IS NULL",
        )?;
        for fan in fs::read_dir(&self.dir).ctx("list object dir", &self.dir)? {
            let fan = fan.ctx("list object dir", &self.dir)?;
            let fan_name = fan.file_name();
            let Some(prefix) = fan_name.to_str().filter(|s| is_hex(s, 2)) else {
                continue;
            };
            let fan_path = fan.path();
            if !fan.file_type().ctx("stat", &fan_path)?.is_dir() {
                continue;
            }
            for entry in fs::read_dir(&fan_path).ctx("list object dir", &fan_path)? {
                let entry = entry.ctx("list object dir", &fan_path)?;
                let path = entry.path();
                let name = entry.file_name();
                let Some(name) = name.to_str() else { continue };
                let is_tmp = name.starts_with(TMP_PREFIX);
                let hash = if is_hex(name, 62) {
                    hex_hash(prefix, name)
                } else {
                    None
                };
                if !is_tmp && hash.is_none() {
                    continue; // not ours
                }
                let meta = match entry.metadata() {
                    Ok(m) => m,
                    Err(e) if e.kind() == ErrorKind::NotFound => continue,
                    Err(e) => return Err(e).ctx("stat", path),
                };
                if !meta.is_file() || mtime_ns(&meta) >= cutoff_ns {
                    continue;
                }
                if let Some(hash) = hash {
                    if named
                        .query_row([&hash.0[..]], |_| Ok(()))
                        .optional()?
                        .is_some()
                    {
                        continue;
                    }
                }
                match fs::remove_file(&path) {
                    Ok(()) => {
                        removed += u64::from(!is_tmp);
                        freed += meta.len();
                    }
                    Err(e) if e.kind() == ErrorKind::NotFound => {}
                    Err(e) => return Err(e).ctx("remove unnamed object", path),
                }
            }
        }
        Ok((removed, freed))
    }
}

/// Keeps every blob a kept delta needs, transitively.
fn keep_delta_bases(conn: &Connection) -> Result<()> {
    conn.execute(
        &format!(
            "WITH RECURSIVE base(hash) AS (
                 SELECT base FROM blobs WHERE base IS NOT NULL AND hash IN {KEEP}
                 UNION
                 SELECT b.base FROM blobs b JOIN base ON b.hash = base.hash
                 WHERE b.base IS NOT NULL
             )
             INSERT OR IGNORE INTO {KEEP} SELECT hash FROM base"
        ),
        [],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::store::now_ns;
    use crate::store::tests::{
        count, fill_a_pack, fixture, is_inline, noise, object_files, put, HOUR,
    };

    #[test]
    fn gc_keeps_a_pack_while_any_blob_in_it_is_kept() {
        let f = fixture(64 << 10);
        let blobs = fill_a_pack(&f);
        let keep: HashSet<Hash> = [blobs[3].0].into();
        let later = now_ns() + 2 * HOUR;
        let (n, _) = f.store.gc(&f.conn, &keep, HOUR, later).unwrap();
        assert_eq!(n, blobs.len() as u64 - 1);
        assert_eq!(count(&f, "SELECT count(*) FROM packs"), 1);
        assert_eq!(f.store.get(&f.conn, &blobs[3].0).unwrap(), blobs[3].1);
        let pack_csize = count(&f, "SELECT csize FROM packs") as u64;
        assert_eq!(
            f.store.gc(&f.conn, &HashSet::new(), HOUR, later).unwrap(),
            (1, pack_csize),
            "the pack goes with its last blob"
        );
        assert_eq!(count(&f, "SELECT count(*) FROM packs"), 0);
        assert_eq!(f.store.usage(&f.conn).unwrap(), (0, 0));
    }

    #[test]
    fn leftover_temp_file_is_never_a_blob() {
        let f = fixture(0);
        let h = put(&f, b"real");
        let hex = h.to_hex();
        let fan = f.objects.join(&hex[..2]);
        let tmp = fan.join(format!("{TMP_PREFIX}crashed"));
        fs::write(&tmp, b"half a blob").unwrap();
        assert_eq!(f.store.get(&f.conn, &h).unwrap(), b"real");
        assert_eq!(f.store.usage(&f.conn).unwrap().0, 1);
        // gc leaves it while young, removes it past the grace period, and
        // does not count it as a blob.
        let keep: HashSet<Hash> = [h].into();
        assert_eq!(f.store.gc(&f.conn, &keep, HOUR, now_ns()).unwrap(), (0, 0));
        assert!(tmp.exists());
        assert_eq!(
            f.store
                .gc(&f.conn, &keep, HOUR, now_ns() + 2 * HOUR)
                .unwrap(),
            (0, 11)
        );
        assert!(!tmp.exists());
        assert_eq!(f.store.get(&f.conn, &h).unwrap(), b"real");
    }

    #[test]
    fn gc_respects_referenced_and_grace() {
        let f = fixture(100);
        let keep_inline = put(&f, b"keep me");
        let keep_file = put(&f, &noise(5000, 4));
        let drop_inline = put(&f, b"drop me");
        let drop_file_data = noise(6000, 5);
        let drop_file = put(&f, &drop_file_data);
        assert!(!is_inline(&f, &keep_file) && !is_inline(&f, &drop_file));
        let referenced: HashSet<Hash> = [keep_inline, keep_file].into();
        let now = now_ns();

        // Young blobs survive even when unreferenced.
        assert_eq!(f.store.gc(&f.conn, &referenced, HOUR, now).unwrap(), (0, 0));
        assert_eq!(f.store.usage(&f.conn).unwrap().0, 4);

        // Past the grace period only the unreferenced go, rows and files.
        let csize = |h: &Hash| -> u64 {
            f.conn
                .query_row(
                    "SELECT csize + coalesce((SELECT csize FROM packs WHERE id = pack), 0)
                     FROM blobs WHERE hash = ?1",
                    [&h.0[..]],
                    |r| r.get::<_, i64>(0),
                )
                .unwrap() as u64
        };
        let expect_freed = csize(&drop_inline) + csize(&drop_file);
        let (n, freed) = f
            .store
            .gc(&f.conn, &referenced, HOUR, now + 2 * HOUR)
            .unwrap();
        assert_eq!((n, freed), (2, expect_freed));
        assert_eq!(f.store.get(&f.conn, &keep_inline).unwrap(), b"keep me");
        assert!(f.store.get(&f.conn, &keep_file).is_ok());
        assert!(matches!(
            f.store.get(&f.conn, &drop_inline),
            Err(Error::MissingBlob(_))
        ));
        assert!(matches!(
            f.store.get(&f.conn, &drop_file),
            Err(Error::MissingBlob(_))
        ));
        assert_eq!(object_files(&f.objects).len(), 1);

        // Storing a removed blob again works.
        put(&f, &drop_file_data);
        assert_eq!(f.store.get(&f.conn, &drop_file).unwrap(), drop_file_data);
    }

    #[test]
    fn reinsert_freshens_an_old_blob_against_gc() {
        let f = fixture(1024);
        let h = put(&f, b"old but wanted again");
        f.conn
            .execute("UPDATE blobs SET created_ns = 0", [])
            .unwrap();
        put(&f, b"old but wanted again");
        assert_eq!(
            f.store
                .gc(&f.conn, &HashSet::new(), HOUR, now_ns())
                .unwrap(),
            (0, 0)
        );
        assert!(f.store.contains(&f.conn, &h).unwrap());
    }

    #[test]
    fn gc_removes_old_objects_that_no_row_names() {
        let f = fixture(0);
        let h = put(&f, b"orphan after a crash");
        let hex = h.to_hex();
        let path = f.objects.join(&hex[..2]).join(&hex[2..]);
        let len = fs::metadata(&path).unwrap().len();
        // As if the process died after the rename, before the commit.
        f.conn.execute("DELETE FROM blobs", []).unwrap();
        assert_eq!(
            f.store
                .gc(&f.conn, &HashSet::new(), HOUR, now_ns())
                .unwrap(),
            (0, 0)
        );
        assert!(path.exists());
        assert_eq!(
            f.store
                .gc(&f.conn, &HashSet::new(), HOUR, now_ns() + 2 * HOUR)
                .unwrap(),
            (1, len)
        );
        assert!(!path.exists());
    }

    #[test]
    fn gc_refuses_to_run_inside_a_transaction() {
        let f = fixture(0);
        f.conn.execute_batch("BEGIN").unwrap();
        assert!(matches!(
            f.store.gc(&f.conn, &HashSet::new(), 0, now_ns()),
            Err(Error::Invariant(_))
        ));
        f.conn.execute_batch("ROLLBACK").unwrap();
    }
}
