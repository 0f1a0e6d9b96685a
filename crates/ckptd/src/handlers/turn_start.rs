//! `turn-start`: barrier, close the session's open turn, open a new one. Watches the
//! project first when asked and it is not watched yet.

use std::sync::Arc;

use ckpt_core::TurnMeta;
use ckpt_proto::{ErrorKind, TurnStart, TurnStartedBody};

use ckpt_proto::paths::discover_root;

use super::gate::Gate;
use super::About;
use crate::daemon::Daemon;
use crate::error::ReqResult;

pub fn handle(d: &Arc<Daemon>, g: Gate, r: TurnStart) -> ReqResult<About<TurnStartedBody>> {
    let dir = &r.dir;
    let meta = TurnMeta {
        label: r.label,
        agent: r.agent,
        session: r.session,
        transcript: r.transcript,
        conversation: r.conversation,
    };
    let (h, watched_now) = match d.project_for(dir) {
        Ok(h) => (h, false),
        Err(e) if e.kind == ErrorKind::NotWatched && r.auto_watch => {
            let canonical = Daemon::canonical_dir(dir)?;
            let (h, report) = d.watch(&discover_root(&canonical))?;
            (h, report.is_some())
        }
        Err(e) => return Err(e),
    };
    let (closed_turn, turn) = d.with_reserve(crate::reserve::For::TurnBoundary, || {
        g.pass(d, &h)?;
        h.call(|p| p.turn_start_closing(meta.clone()))
    })?;
    // Debug: two lines per prompt would fill the user's journal with what
    // `ckptctl log` lists, and cost a hook call 2% of the daemon's time.
    tracing::debug!(root = %h.root.display(), turn, "turn started");
    let body = TurnStartedBody {
        turn,
        watched_now,
        closed_turn,
    };
    Ok((h, body))
}
