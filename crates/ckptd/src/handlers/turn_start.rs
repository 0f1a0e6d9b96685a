//! `turn-start`: barrier, close the session's open turn, open a new one. Watches the
//! project first when asked and it is not watched yet.

use std::sync::Arc;

use ckpt_core::TurnMeta;
use ckpt_proto::{ErrorKind, TurnStarted, WirePath};

use crate::convert;
use ckpt_proto::paths::discover_root;

use crate::daemon::{barrier, Daemon};
use crate::error::ReqResult;

pub fn handle(
    d: &Arc<Daemon>,
    dir: &WirePath,
    meta: TurnMeta,
    auto_watch: bool,
) -> ReqResult<TurnStarted> {
    let (h, watched_now) = match d.project_for(dir) {
        Ok(h) => (h, false),
        Err(e) if e.kind == ErrorKind::NotWatched && auto_watch => {
            let canonical = Daemon::canonical_dir(dir)?;
            let (h, report) = d.watch(&discover_root(&canonical))?;
            (h, report.is_some())
        }
        Err(e) => return Err(e),
    };
    let (closed_turn, turn) = d.with_reserve(crate::reserve::For::TurnBoundary, || {
        barrier(d, &h)?;
        h.call(|p| p.turn_start_closing(meta.clone()))
    })?;
    tracing::info!(root = %h.root.display(), turn, "turn started");
    Ok(TurnStarted {
        project: convert::abs(&h.root),
        turn,
        watched_now,
        closed_turn,
        degraded: h.degraded_reason(),
    })
}
