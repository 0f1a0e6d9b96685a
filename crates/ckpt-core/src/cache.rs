//! The hash cache: per path, the last captured state and the stat it was
//! captured with. Every file state's blob is in the store, so the cache is
//! also where pre-images come from.

#[cfg(test)]
use std::collections::HashMap;

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

const COLS: &str = "path, kind, mode, data, size, mtime_ns, ctime_ns, ino, dev, racy";

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
    let stat = Stat {
        kind: stat_kind,
        mode: mode as u32,
        size: size as u64,
        mtime_ns: row.get(5)?,
        ctime_ns: row.get(6)?,
        ino: row.get::<_, i64>(7)? as u64,
        dev: row.get::<_, i64>(8)? as u64,
    };
    let racy: bool = row.get(9)?;
    // A row that does not decode is treated as absent: it is re-captured.
    let (Ok(path), Some(state)) = (RelPath::new(path), State::decode(kind, mode, data, size))
    else {
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

/// The paths of the rows directly inside `dir`.
pub(crate) fn children(conn: &Connection, dir: &RelPath) -> Result<Vec<RelPath>> {
    let (lo, hi) = bounds(dir);
    let skip = lo.len() as i64 + 1;
    let mut stmt = conn.prepare_cached(
        "SELECT path FROM files WHERE path > ?1 AND path < ?2 AND instr(substr(path, ?3), '/') = 0",
    )?;
    let rows = stmt.query_map(params![lo, hi, skip], |r| r.get::<_, Vec<u8>>(0))?;
    let mut out = Vec::new();
    for r in rows {
        out.extend(RelPath::new(r?).ok());
    }
    Ok(out)
}

/// Every row strictly below `dir`.
pub(crate) fn below(conn: &Connection, dir: &RelPath) -> Result<Vec<(RelPath, CacheRow)>> {
    let (lo, hi) = bounds(dir);
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLS} FROM files WHERE path > ?1 AND path < ?2"
    ))?;
    let rows = stmt.query_map([lo, hi], from_row)?;
    let mut out = Vec::new();
    for r in rows {
        out.extend(r?);
    }
    Ok(out)
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
    let mut rows = stmt.query(params![after, limit as i64])?;
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
    let (kind, _, data, _) = state.encode();
    let racy = stat.mtime_ns >= scan_start_ns - RACY_MARGIN_NS;
    conn.prepare_cached(&format!(
        "INSERT OR REPLACE INTO files ({COLS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"
    ))?
    .execute(params![
        path.as_bytes(),
        kind,
        stat.mode as i64,
        data,
        stat.size as i64,
        stat.mtime_ns,
        stat.ctime_ns,
        stat.ino as i64,
        stat.dev as i64,
        racy
    ])?;
    Ok(())
}

pub(crate) fn remove(conn: &Connection, path: &RelPath) -> Result<()> {
    conn.prepare_cached("DELETE FROM files WHERE path = ?1")?
        .execute([path.as_bytes()])?;
    Ok(())
}
