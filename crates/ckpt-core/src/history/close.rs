//! Closing a turn: each entry gets its post-image, or goes if it ended as
//! it began. A turn is closed window by window, so closing one that
//! touched 50,000 files holds one window of them, not all.

use rusqlite::{params, Connection};

use super::{decode_entries, ENTRY_COLUMNS};
use crate::error::Result;
use crate::model::{TurnEntry, TurnStatus};
use crate::relpath::RelPath;
use crate::state::State;

/// Entries read (and then updated) at a time: a window's paths and states
/// are about 1 MB, and a 50,000-file turn takes 13 index seeks.
const WINDOW: usize = 4096;

/// What closing a turn now makes of `e`: its post-image (`post_of` its
/// path, for an entry that has none yet), or `None` when it ends as it
/// began and so goes (a path ckpt could not capture never does).
fn post_at_close(
    e: &TurnEntry,
    post_of: &mut impl FnMut(&RelPath) -> Result<State>,
) -> Result<Option<State>> {
    Ok(match &e.post {
        Some(post) => Some(post.clone()),
        // Two equal skipped states do not show the content stayed: ckpt
        // never read it.
        None => Some(post_of(&e.path)?)
            .filter(|post| *post != e.pre || matches!(post, State::Skipped { .. })),
    })
}

/// What closing `turn` now makes of each of its entries
/// ([`post_at_close`]). A rewind plans the open turn it undoes through
/// this, without closing it. Each entry goes to `f` as it is read.
pub(crate) fn closing(
    conn: &Connection,
    turn: i64,
    mut post_of: impl FnMut(&RelPath) -> Result<State>,
    mut f: impl FnMut(TurnEntry, Option<State>) -> Result<()>,
) -> Result<()> {
    super::each_entry(conn, turn, |e| {
        let post = post_at_close(&e, &mut post_of)?;
        f(e, post)
    })
}

/// Closes `turn`: each entry gets its post-image (`post_of` its path), or
/// is dropped if it ended as it began. Call in a transaction.
pub(crate) fn close_turn(
    tx: &Connection,
    turn: i64,
    ended_ns: i64,
    post_of: impl FnMut(&RelPath) -> Result<State>,
) -> Result<()> {
    close_in_windows(tx, turn, ended_ns, post_of, WINDOW)
}

/// [`close_turn`], reading at most `window` entries at a time.
fn close_in_windows(
    tx: &Connection,
    turn: i64,
    ended_ns: i64,
    mut post_of: impl FnMut(&RelPath) -> Result<State>,
    window: usize,
) -> Result<()> {
    {
        // Prepared once: a turn that touched the whole tree has one entry
        // per file.
        let mut drop_entry =
            tx.prepare_cached("DELETE FROM turn_entries WHERE turn = ?1 AND path = ?2")?;
        let mut set_post = tx.prepare_cached(
            "UPDATE turn_entries SET post_kind = ?3, post_mode = ?4, post_data = ?5, post_size = ?6
             WHERE turn = ?1 AND path = ?2",
        )?;
        let mut first = tx.prepare_cached(&format!(
            "{ENTRY_COLUMNS} WHERE turn = ?1 ORDER BY path LIMIT ?2"
        ))?;
        let mut next = tx.prepare_cached(&format!(
            "{ENTRY_COLUMNS} WHERE turn = ?1 AND path > ?2 ORDER BY path LIMIT ?3"
        ))?;
        let mut after: Option<RelPath> = None;
        loop {
            // A window is read whole before any of its rows change (a
            // statement must not see the rows it reads change under it);
            // the next starts past its last path, so it never sees them.
            let mut posts: Vec<(RelPath, Option<State>)> = Vec::new();
            let keep = |e: TurnEntry| {
                let post = post_at_close(&e, &mut post_of)?;
                posts.push((e.path, post));
                Ok(())
            };
            let rows = match &after {
                None => first.query(params![turn, window as i64])?,
                Some(last) => next.query(params![turn, last.as_bytes(), window as i64])?,
            };
            decode_entries(turn, rows, keep)?;
            let read = posts.len();
            after = posts.last().map(|(path, _)| path.clone());
            for (path, post) in posts {
                let Some(post) = post else {
                    drop_entry.execute(params![turn, path.as_bytes()])?;
                    continue;
                };
                let (kind, mode, data, size) = crate::state::encode(&post);
                set_post.execute(params![turn, path.as_bytes(), kind, mode, data, size])?;
            }
            if read < window {
                break;
            }
        }
    }
    // A closed turn's session runs no tool call: its windows end with it.
    tx.prepare_cached("UPDATE turns SET status = ?3, ended_ns = ?2, tools = 0 WHERE id = ?1")?
        .execute(params![turn, ended_ns, TurnStatus::Closed.as_str()])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::TurnMeta;

    /// A turn of `n` entries: each path's pre-image, and its state at the
    /// close: every third ends as it began (and goes), every fifth was
    /// skipped on both sides (and stays), the rest changed.
    fn open_turn(conn: &Connection, n: usize) -> (i64, Vec<(RelPath, State, State)>) {
        let turn = super::super::insert_turn(conn, &TurnMeta::default(), 1).unwrap();
        let mut paths = Vec::new();
        for i in 0..n {
            let path = RelPath::new(format!("d{}/f{i:03}", i % 4)).unwrap();
            let (pre, post) = match i {
                i if i % 5 == 0 => {
                    let s = State::Skipped {
                        reason: "too large".into(),
                    };
                    (s.clone(), s)
                }
                i if i % 3 == 0 => (State::Dir { mode: 0o755 }, State::Dir { mode: 0o755 }),
                i if i % 2 == 0 => (State::Absent, State::Dir { mode: 0o700 }),
                _ => (
                    State::Symlink {
                        target: b"old".to_vec(),
                    },
                    State::Absent,
                ),
            };
            super::super::record_pre(conn, turn, &path, &pre, false).unwrap();
            paths.push((path, pre, post));
        }
        (turn, paths)
    }

    #[test]
    fn a_turn_bigger_than_a_window_closes_as_one_read_whole() {
        let n = 23;
        for window in [1, 4, 7, 23, 24, WINDOW] {
            let dir = tempfile::tempdir().unwrap();
            let conn = crate::db::open(&dir.path().join("db")).unwrap();
            let (turn, paths) = open_turn(&conn, n);
            let at_close = |p: &RelPath| {
                let (_, _, post) = paths.iter().find(|(q, _, _)| q == p).unwrap();
                Ok(post.clone())
            };
            let tx = conn.unchecked_transaction().unwrap();
            close_in_windows(&tx, turn, 9, at_close, window).unwrap();
            tx.commit().unwrap();

            let mut want: Vec<TurnEntry> = paths
                .iter()
                .filter(|(_, pre, post)| pre != post || matches!(post, State::Skipped { .. }))
                .map(|(path, pre, post)| TurnEntry {
                    path: path.clone(),
                    pre: pre.clone(),
                    post: Some(post.clone()),
                    shared: false,
                })
                .collect();
            want.sort_by(|a, b| a.path.cmp(&b.path));
            let got = super::super::entries(&conn, turn).unwrap();
            assert_eq!(got, want, "window {window}");
            assert!(
                want.len() > 7 && want.len() < n,
                "the turn keeps some, drops some"
            );
            let row = super::super::turn(&conn, turn).unwrap().unwrap();
            assert_eq!(row.status, TurnStatus::Closed, "window {window}");
            assert_eq!(row.ended_ns, Some(9));
        }
    }
}
