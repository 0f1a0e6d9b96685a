//! `activity`: when the project last saw a change, and its open turn. No
//! barrier: a client polls it (`ckptctl run --bursts`) to tell when the
//! tree has gone quiet, and the turn-end that follows runs the barrier.

use std::sync::Arc;

use ckpt_proto::{ActivityBody, WirePath};

use super::About;
use crate::daemon::Daemon;
use crate::error::ReqResult;
use crate::project::now_ns;

pub fn handle(d: &Arc<Daemon>, dir: &WirePath) -> ReqResult<About<ActivityBody>> {
    let h = d.project_for(dir)?;
    let open_turn = h.call(|p| p.open_turn())?;
    let body = ActivityBody {
        open_turn,
        last_change_ns: h.last_change_ns(),
        queued: h.unchecked(),
        now_ns: now_ns(),
    };
    Ok((h, body))
}
