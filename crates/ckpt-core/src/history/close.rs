//! Closing a turn: each entry keeps its post-image, or goes if it ended as
//! it began. While a turn is open its entries carry their paths' states
//! now (every write of the hash cache keeps them so), so closing one that
//! touched 50,000 files is two statements, not 50,000 lookups.

use rusqlite::{params, Connection};

use crate::cache;
use crate::error::Result;
use crate::model::{TurnEntry, TurnStatus};
use crate::relpath::RelPath;
use crate::state::State;

/// What closing a turn now makes of `e`: its post-image (`post_of` its
/// path, for an entry that has none yet), or `None` when it ends as it
/// began and so goes (a path ckpt could not capture never does).
fn post_at_close(
    e: &TurnEntry,
    post_of: &mut impl FnMut(&RelPath) -> Result<State>,
) -> Result<Option<State>> {
    let post = match &e.post {
        Some(post) => post.clone(),
        None => post_of(&e.path)?,
    };
    // Two equal skipped states do not show the content stayed: ckpt
    // never read it.
    Ok(Some(post).filter(|post| *post != e.pre || matches!(post, State::Skipped { .. })))
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

/// Closes `turn` as [`post_at_close`] does with the hash cache's states:
/// an entry recorded without a post-image (by a version that kept none
/// while the turn was open) gets its path's state now, and every entry
/// that ended as it began goes. Call in a transaction.
pub(crate) fn close_turn(tx: &Connection, turn: i64, ended_ns: i64) -> Result<()> {
    let now = cache::state_sql("turn_entries.path");
    tx.prepare_cached(&format!(
        "UPDATE turn_entries SET (post_kind, post_mode, post_data, post_size) = ({now})
         WHERE turn = ?1 AND post_kind IS NULL"
    ))?
    .execute([turn])?;
    // (`state::encode` writes each state one way, so equal columns are
    // equal states; kind 4 is a skipped one.)
    tx.prepare_cached(
        "DELETE FROM turn_entries WHERE turn = ?1 AND pre_kind != 4
         AND (pre_kind, pre_mode, pre_data, pre_size) IS (post_kind, post_mode, post_data, post_size)",
    )?
    .execute([turn])?;
    // A closed turn's session runs no tool call: its windows end with it.
    tx.prepare_cached("UPDATE turns SET status = ?3, ended_ns = ?2, tools = 0 WHERE id = ?1")?
        .execute(params![turn, ended_ns, TurnStatus::Closed.as_str()])?;
    Ok(())
}

/// Gives every open turn's entries that carry a post-image their paths'
/// states in the hash cache again: for a write of the cache that records
/// no change (a rewind's refresh, a path that left the cache), which the
/// open turns of other sessions must still end with.
pub(crate) fn resync_open_posts(conn: &Connection) -> Result<()> {
    let now = cache::state_sql("turn_entries.path");
    conn.prepare_cached(&format!(
        "UPDATE turn_entries SET (post_kind, post_mode, post_data, post_size) = ({now})
         WHERE turn IN (SELECT id FROM turns WHERE status = 'open') AND post_kind IS NOT NULL"
    ))?
    .execute([])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::confined::{Stat, StatKind};
    use crate::model::TurnMeta;

    /// A turn of `n` entries: each path's pre-image, and its state at the
    /// close: every third ends as it began (and goes), every fifth was
    /// skipped on both sides (and stays), the rest changed. Every other
    /// entry carries its post-image as an open turn's do; the rest were
    /// recorded without one, and the cache has their states.
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
            super::super::record_change(conn, turn, &path, &pre, &post, false).unwrap();
            if i % 2 == 1 {
                conn.execute(
                    "UPDATE turn_entries SET post_kind = NULL, post_mode = NULL,
                     post_data = NULL, post_size = NULL WHERE turn = ?1 AND path = ?2",
                    params![turn, path.as_bytes()],
                )
                .unwrap();
                put_in_cache(conn, &path, &post);
            }
            paths.push((path, pre, post));
        }
        (turn, paths)
    }

    fn put_in_cache(conn: &Connection, path: &RelPath, state: &State) {
        let (kind, mode) = match state {
            State::Absent => return,
            State::Dir { mode } => (StatKind::Dir, *mode),
            State::Symlink { .. } => (StatKind::Symlink, 0o777),
            _ => (StatKind::Other, 0o644),
        };
        let stat = Stat {
            kind,
            mode,
            size: 4096,
            mtime_ns: 1,
            ctime_ns: 1,
            ino: 1,
            dev: 1,
            nlink: 1,
        };
        cache::put(conn, path, state, &stat, 0).unwrap();
    }

    #[test]
    fn closing_keeps_what_changed_with_its_post_image_and_drops_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let conn = crate::db::open(&dir.path().join("db")).unwrap();
        let n = 23;
        let (turn, paths) = open_turn(&conn, n);
        let tx = conn.unchecked_transaction().unwrap();
        close_turn(&tx, turn, 9).unwrap();
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
        assert_eq!(got, want);
        assert!(
            want.len() > 7 && want.len() < n,
            "the turn keeps some, drops some"
        );
        let row = super::super::turn(&conn, turn).unwrap().unwrap();
        assert_eq!(row.status, TurnStatus::Closed);
        assert_eq!(row.ended_ns, Some(9));
    }

    #[test]
    fn resyncing_gives_an_open_turns_post_images_the_caches_states() {
        let dir = tempfile::tempdir().unwrap();
        let conn = crate::db::open(&dir.path().join("db")).unwrap();
        let (closed, _) = open_turn(&conn, 12);
        close_turn(&conn, closed, 5).unwrap();
        let before = super::super::entries(&conn, closed).unwrap();
        let (open, paths) = open_turn(&conn, 12);
        // The cache moves on for every path: a rewind's refresh, say.
        let now = State::Dir { mode: 0o711 };
        for (path, ..) in &paths {
            put_in_cache(&conn, path, &now);
        }
        resync_open_posts(&conn).unwrap();
        let entries = super::super::entries(&conn, open).unwrap();
        assert_eq!(entries.len(), 12);
        for e in entries {
            // One recorded without a post-image keeps none: the close
            // reads it from the cache.
            let odd = e
                .path
                .as_bytes()
                .last()
                .is_some_and(|d| (d - b'0') % 2 == 1);
            let want = (!odd).then(|| now.clone());
            assert_eq!(e.post, want, "{}", e.path);
        }
        assert_eq!(super::super::entries(&conn, closed).unwrap(), before);
    }
}
