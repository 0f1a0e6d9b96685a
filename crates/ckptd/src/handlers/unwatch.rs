//! `unwatch`: stop watching; keep or drop the store.

use std::sync::Arc;

use ckpt_proto::{ErrorKind, Unwatched, WirePath};

use super::gate::Gate;
use crate::daemon::Daemon;
use crate::error::ReqResult;

pub fn handle(d: &Arc<Daemon>, g: Gate, dir: &WirePath, drop_data: bool) -> ReqResult<Unwatched> {
    let h = match d.project_for(dir) {
        Ok(h) => h,
        Err(e) if e.kind == ErrorKind::NotWatched => {
            // A store that could not be opened (its root vanished and came back).
            let canonical = Daemon::canonical_dir(dir)?;
            let Some(b) = d
                .registry
                .broken()
                .into_iter()
                .find(|b| b.root.as_deref().is_some_and(|r| canonical.starts_with(r)))
            else {
                return Err(e);
            };
            d.unwatch_broken(&b, drop_data)?;
            let root = b.root.unwrap_or(b.store_dir);
            return Ok(Unwatched {
                project: WirePath::from(root),
                dropped_data: drop_data,
            });
        }
        Err(e) => return Err(e),
    };
    // Close an open turn so the kept history is complete; a project that is
    // gone or broken is simply forgotten.
    if h.ensure_available().is_ok() {
        let open = h.call(|p| p.open_turn()).ok().flatten();
        if open.is_some() {
            if let Err(e) = g.pass(d, &h) {
                tracing::warn!(root = %h.root.display(), error = %e, "barrier before unwatch");
            }
            if let Err(e) = h.call(|p| p.close_open_turns()) {
                tracing::warn!(root = %h.root.display(), error = %e, "closing the open turn");
            }
        }
    }
    d.unwatch(&h, drop_data)?;
    tracing::info!(root = %h.root.display(), drop_data, "unwatched");
    Ok(Unwatched {
        project: WirePath::from(h.root.as_path()),
        dropped_data: drop_data,
    })
}
