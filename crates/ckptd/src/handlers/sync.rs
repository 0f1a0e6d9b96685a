//! `sync`: the barrier, then the wait for what rewinds removed to be
//! closed (their space free).

use std::sync::Arc;

use ckpt_proto::{SyncedBody, WirePath};

use super::gate::Gate;
use super::About;
use crate::daemon::Daemon;
use crate::error::ReqResult;

pub fn handle(d: &Arc<Daemon>, g: Gate, dir: &WirePath) -> ReqResult<About<SyncedBody>> {
    let h = d.project_for(dir)?;
    let out = g.pass(d, &h)?;
    d.freer.wait_idle();
    let body = SyncedBody {
        method: out.method,
        elapsed_ms: out.elapsed.as_millis() as u64,
    };
    Ok((h, body))
}
