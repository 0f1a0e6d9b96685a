//! The hash cache: per path, the last captured state and the stat it was
//! captured with. Every file state's blob is in the store, so the cache is
//! also where pre-images come from.

#[cfg(test)]
use std::collections::HashMap;
use std::collections::HashSet;

use rusqlite::{params, Connection, OptionalExtension, Row};

use crate::confined::{Stat, StatKind};
use crate::error::Result;
use crate::relpath::RelPath;
use crate::state::State;

/// A file whose mtime is within this of the scan that captured it may be
/// changed again without its stat changing (coarse kernel timestamps), so it
/// is re-hashed next time (git's "racy" rule).
pub(crate) const RACY_MARGIN_NS: i64 = 50_000_000;

#[derive(Clone, Debug)]
pub(crate) struct CacheRow {
    pub state: State,
    pub stat: Stat,
    pub racy: bool,
}

impl CacheRow {
    /// Whether `st` shows the same entry, unchanged since it was captured.
    pub fn unchanged(&self, st: &Stat) -> bool {
        !self.racy && self.same_stat(st)
    }

    /// Whether `st` equals the stat recorded at capture. For a racy entry
    /// that does not prove the content is the same; see [`Self::unchanged`].
    pub fn same_stat(&self, st: &Stat) -> bool {
        self.stat.kind == st.kind
            && self.stat.size == st.size
            && self.stat.mtime_ns == st.mtime_ns
            && self.stat.ctime_ns == st.ctime_ns
            && self.stat.ino == st.ino
            && self.stat.dev == st.dev
            && (st.kind == StatKind::Symlink || self.stat.mode == st.mode)
    }
}

/// `ctime_after_ns` is ctime less mtime (wrapping): 0, stored in no bytes,
/// for nearly every file.
const COLS: &str = "path, kind, mode, data, size, mtime_ns, ctime_after_ns, ino, dev, racy, nlink";

fn from_row(row: &Row) -> rusqlite::Result<Option<(RelPath, CacheRow)>> {
    let path: Vec<u8> = row.get(0)?;
    let kind: i64 = row.get(1)?;
    let mode: i64 = row.get(2)?;
    let data: Option<Vec<u8>> = row.get(3)?;
    let size: i64 = row.get(4)?;
    let stat_kind = match kind {
        1 => StatKind::File,
        2 => StatKind::Dir,
        3 => StatKind::Symlink,
        _ => StatKind::Other,
    };
    let mtime_ns: i64 = row.get(5)?;
    let stat = Stat {
        kind: stat_kind,
        mode: mode as u32,
        size: size as u64,
        mtime_ns,
        ctime_ns: mtime_ns.wrapping_add(row.get(6)?),
        ino: row.get::<_, i64>(7)? as u64,
        dev: row.get::<_, i64>(8)? as u64,
        nlink: row.get::<_, i64>(10)? as u64,
    };
    let racy: bool = row.get(9)?;
    // A row that does not decode is treated as absent: it is re-captured.
    let (Ok(path), Some(state)) = (
        RelPath::new(path),
        crate::state::decode(kind, mode, data, size),
    ) else {
        return Ok(None);
    };
    let stat = Stat {
        kind: if matches!(state, State::Skipped { .. }) {
            StatKind::Other
        } else {
            stat.kind
        },
        ..stat
    };
    Ok(Some((path, CacheRow { state, stat, racy })))
}

/// The state the row of the path `path_sql` (an SQL expression) reads as,
/// in `state::encode`'s four columns (kind, mode, data, size): what
/// [`state`] gives, worked out by SQLite (a row keeps its stat's mode and
/// size whatever its kind; one that does not decode, or none, is absent).
pub(crate) fn state_sql(path_sql: &str) -> String {
    format!(
        "SELECT CASE WHEN ok THEN kind ELSE 0 END,
                CASE WHEN ok AND kind IN (1, 2) THEN mode ELSE 0 END,
                CASE WHEN ok AND kind IN (1, 3, 4) THEN data END,
                CASE WHEN ok AND kind = 1 THEN size ELSE 0 END
         FROM (SELECT f.kind AS kind, f.mode AS mode, f.data AS data, f.size AS size,
                      (f.kind = 1 AND length(f.data) = 32) OR f.kind = 2
                      OR (f.kind IN (3, 4) AND f.data IS NOT NULL) AS ok
               FROM (SELECT 1) LEFT JOIN files AS f ON f.path = {path_sql})"
    )
}

/// What [`state`] reads back once [`put`] stored `state` with `stat`: a
/// file's size is the stat's (a file that grew while it was read holds
/// more than it said).
pub(crate) fn stored(state: &State, stat: &Stat) -> State {
    let (kind, _, data, _) = crate::state::encode(state);
    crate::state::decode(kind, stat.mode as i64, data, stat.size as i64).unwrap_or(State::Absent)
}

pub(crate) fn get(conn: &Connection, path: &RelPath) -> Result<Option<CacheRow>> {
    let row = conn
        .prepare_cached(&format!("SELECT {COLS} FROM files WHERE path = ?1"))?
        .query_row([path.as_bytes()], from_row)
        .optional()?;
    Ok(row.flatten().map(|(_, r)| r))
}

/// The state of `path` in the cache (`Absent` if it has no row).
pub(crate) fn state(conn: &Connection, path: &RelPath) -> Result<State> {
    Ok(get(conn, path)?.map_or(State::Absent, |r| r.state))
}

/// Key bounds of the rows strictly below `dir`: `dir/` < path < `dir0`.
fn bounds(dir: &RelPath) -> (Vec<u8>, Vec<u8>) {
    let r = crate::relpath::below_range(dir.as_bytes());
    (r.start, r.end)
}

pub(crate) fn remove_below(conn: &Connection, dir: &RelPath) -> Result<()> {
    conn.execute(
        "DELETE FROM files WHERE path > ?1 AND path < ?2",
        bounds(dir),
    )?;
    Ok(())
}

/// The paths of the rows directly inside `dir` (the root when `None`).
pub(crate) fn children_at(conn: &Connection, dir: Option<&RelPath>) -> Result<Vec<RelPath>> {
    let rows = match dir {
        Some(dir) => {
            let (lo, hi) = bounds(dir);
            let skip = lo.len() as i64 + 1;
            let mut stmt = conn.prepare_cached(
                "SELECT path FROM files \
                 WHERE path > ?1 AND path < ?2 AND instr(substr(path, ?3), '/') = 0",
            )?;
            let rows = stmt.query_map(params![lo, hi, skip], |r| r.get::<_, Vec<u8>>(0))?;
            rows.collect::<rusqlite::Result<Vec<_>>>()?
        }
        None => {
            let mut stmt =
                conn.prepare_cached("SELECT path FROM files WHERE instr(path, '/') = 0")?;
            let rows = stmt.query_map([], |r| r.get::<_, Vec<u8>>(0))?;
            rows.collect::<rusqlite::Result<Vec<_>>>()?
        }
    };
    Ok(rows
        .into_iter()
        .filter_map(|r| RelPath::new(r).ok())
        .collect())
}

/// Every row strictly below `dir`.
pub(crate) fn below(conn: &Connection, dir: &RelPath) -> Result<Vec<(RelPath, CacheRow)>> {
    let mut out = Vec::new();
    each_below(conn, dir, |p, row| {
        out.push((p, row));
        Ok(())
    })?;
    Ok(out)
}

/// Calls `f` with every row strictly below `dir`, in path order, as it
/// is read.
pub(crate) fn each_below(
    conn: &Connection,
    dir: &RelPath,
    mut f: impl FnMut(RelPath, CacheRow) -> Result<()>,
) -> Result<()> {
    let (lo, hi) = bounds(dir);
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLS} FROM files WHERE path > ?1 AND path < ?2 ORDER BY path"
    ))?;
    let mut rows = stmt.query([lo, hi])?;
    while let Some(r) = rows.next()? {
        if let Some((p, row)) = from_row(r)? {
            f(p, row)?;
        }
    }
    Ok(())
}

/// Every row, in a map. Tests only: the daemon streams the cache with
/// [`page`] instead, so its memory does not grow with the tree.
#[cfg(test)]
pub(crate) fn all(conn: &Connection) -> Result<HashMap<RelPath, CacheRow>> {
    let mut stmt = conn.prepare(&format!("SELECT {COLS} FROM files"))?;
    let rows = stmt.query_map([], from_row)?;
    let mut out = HashMap::new();
    for r in rows {
        out.extend(r?);
    }
    Ok(out)
}

/// Appends to `out` up to `limit` rows whose path sorts after `after`, in
/// path order; returns the raw key of the last row read (`None` when there
/// are no more). Rows that do not decode are left out, as in [`get`].
pub(crate) fn page(
    conn: &Connection,
    after: &[u8],
    limit: usize,
    out: &mut Vec<(RelPath, CacheRow)>,
) -> Result<Option<Vec<u8>>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLS} FROM files WHERE path > ?1 ORDER BY path LIMIT ?2"
    ))?;
    let last = read_page(stmt.query(params![after, limit as i64])?, out)?;
    Ok(last)
}

/// [`page`] of the rows strictly below `dir`.
pub(crate) fn below_page(
    conn: &Connection,
    dir: &RelPath,
    after: &[u8],
    limit: usize,
    out: &mut Vec<(RelPath, CacheRow)>,
) -> Result<Option<Vec<u8>>> {
    let (lo, hi) = bounds(dir);
    let after = after.max(&lo);
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLS} FROM files WHERE path > ?1 AND path < ?2 ORDER BY path LIMIT ?3"
    ))?;
    let last = read_page(stmt.query(params![after, hi, limit as i64])?, out)?;
    Ok(last)
}

/// A page's rows into `out`; the raw key of the last one read.
fn read_page(
    mut rows: rusqlite::Rows<'_>,
    out: &mut Vec<(RelPath, CacheRow)>,
) -> Result<Option<Vec<u8>>> {
    let mut last = None;
    while let Some(row) = rows.next()? {
        last = Some(row.get::<_, Vec<u8>>(0)?);
        out.extend(from_row(row)?);
    }
    Ok(last)
}

pub(crate) fn put(
    conn: &Connection,
    path: &RelPath,
    state: &State,
    stat: &Stat,
    scan_start_ns: i64,
) -> Result<()> {
    let (kind, _, data, _) = crate::state::encode(state);
    let racy = stat.mtime_ns >= scan_start_ns - RACY_MARGIN_NS;
    conn.prepare_cached(&format!(
        "INSERT OR REPLACE INTO files ({COLS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"
    ))?
    .execute(params![
        path.as_bytes(),
        kind,
        stat.mode as i64,
        data,
        stat.size as i64,
        stat.mtime_ns,
        stat.ctime_ns.wrapping_sub(stat.mtime_ns),
        stat.ino as i64,
        stat.dev as i64,
        racy,
        stat.nlink as i64
    ])?;
    Ok(())
}

/// Served by the partial index `files_linked`, which holds only the rows
/// of files with more than one link (a query names its condition whole,
/// or SQLite does not use it).
const LINKED: &str =
    "SELECT path FROM files WHERE dev = ?1 AND ino = ?2 AND nlink > 1 AND kind = 1";

/// The cached paths of file `(dev, ino)` recorded with more than one link.
pub(crate) fn linked(conn: &Connection, dev: u64, ino: u64) -> Result<Vec<RelPath>> {
    let mut stmt = conn.prepare_cached(LINKED)?;
    let rows = stmt.query_map(params![dev as i64, ino as i64], |r| r.get::<_, Vec<u8>>(0))?;
    let mut out = Vec::new();
    for r in rows {
        out.extend(RelPath::new(r?).ok());
    }
    Ok(out)
}

/// The cached paths of any of `inodes` (dev, ino), whatever link count
/// they were recorded with: one scan of the whole cache, for a name that
/// was cached before another link to it was made (`ln` reports only the
/// new name, and the old row still says one link).
pub(crate) fn named_inodes(
    conn: &Connection,
    inodes: &HashSet<(u64, u64)>,
) -> Result<Vec<RelPath>> {
    let mut stmt = conn.prepare("SELECT path, dev, ino FROM files WHERE kind = 1")?;
    let rows = stmt.query_map([], |r| {
        Ok((
            r.get::<_, Vec<u8>>(0)?,
            r.get::<_, i64>(1)?,
            r.get::<_, i64>(2)?,
        ))
    })?;
    let mut out = Vec::new();
    for r in rows {
        let (path, dev, ino) = r?;
        if inodes.contains(&(dev as u64, ino as u64)) {
            out.extend(RelPath::new(path).ok());
        }
    }
    Ok(out)
}

pub(crate) fn remove(conn: &Connection, path: &RelPath) -> Result<()> {
    conn.prepare_cached("DELETE FROM files WHERE path = ?1")?
        .execute([path.as_bytes()])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{Hash, HashOf};

    #[test]
    fn the_state_sql_reads_every_row_as_the_cache_does() {
        let dir = tempfile::tempdir().unwrap();
        let conn = crate::db::open(&dir.path().join("db")).unwrap();
        let stat = |kind, mode, size| Stat {
            kind,
            mode,
            size,
            mtime_ns: 1,
            ctime_ns: 1,
            ino: 1,
            dev: 1,
            nlink: 1,
        };
        let file = State::File {
            hash: Hash::of(b"x"),
            size: 1,
            mode: 0o644,
        };
        let rows = [
            (file.clone(), stat(StatKind::File, 0o644, 1)),
            // A file that grew while it was read: the stat's size.
            (file, stat(StatKind::File, 0o755, 9)),
            (State::Dir { mode: 0o700 }, stat(StatKind::Dir, 0o700, 4096)),
            (
                State::Symlink {
                    target: b"t".to_vec(),
                },
                stat(StatKind::Symlink, 0o777, 1),
            ),
            (
                State::Skipped {
                    reason: "too large".into(),
                },
                stat(StatKind::File, 0o600, 1 << 40),
            ),
        ];
        for (i, (state, st)) in rows.iter().enumerate() {
            put(&conn, &RelPath::new(format!("p{i}")).unwrap(), state, st, 0).unwrap();
        }
        // Rows that do not decode (a damaged database), and one that says absent.
        for (i, (kind, data)) in [
            (1, Some(vec![0u8; 31])),
            (3, None),
            (4, None),
            (9, Some(vec![1])),
            (0, None),
        ]
        .into_iter()
        .enumerate()
        {
            conn.execute(
                "INSERT INTO files (path, kind, mode, data, size, mtime_ns, ctime_after_ns, ino, dev, racy, nlink)
                 VALUES (?1, ?2, 420, ?3, 7, 0, 0, 0, 0, 0, 1)",
                params![format!("bad{i}").into_bytes(), kind, data],
            )
            .unwrap();
        }
        let mut paths: Vec<String> = (0..rows.len()).map(|i| format!("p{i}")).collect();
        paths.extend((0..5).map(|i| format!("bad{i}")));
        paths.push("none".into());
        let sql = state_sql("?1");
        for p in paths {
            let path = RelPath::new(p.clone()).unwrap();
            let by_sql = conn
                .query_row(&sql, [path.as_bytes()], |r| crate::state::from_row(r, 0))
                .unwrap();
            assert_eq!(by_sql, Some(state(&conn, &path).unwrap()), "{p}");
            if let Some(i) = p.strip_prefix('p') {
                let (state, st) = &rows[i.parse::<usize>().unwrap()];
                assert_eq!(
                    stored(state, st),
                    super::state(&conn, &path).unwrap(),
                    "{p}"
                );
            }
        }
    }

    #[test]
    fn the_other_links_lookup_uses_the_partial_index() {
        let dir = tempfile::tempdir().unwrap();
        let conn = crate::db::open(&dir.path().join("db")).unwrap();
        let plan: String = conn
            .query_row(
                &format!("EXPLAIN QUERY PLAN {}", super::LINKED),
                [1, 2],
                |r| r.get(3),
            )
            .unwrap();
        assert!(plan.contains("USING INDEX files_linked"), "{plan}");
    }
}
