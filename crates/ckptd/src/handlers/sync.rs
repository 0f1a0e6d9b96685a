//! `sync`: the barrier alone.

use std::sync::Arc;

use ckpt_proto::{Synced, WirePath};

use crate::convert;
use crate::daemon::{barrier, Daemon};
use crate::error::ReqResult;

pub fn handle(d: &Arc<Daemon>, dir: &WirePath) -> ReqResult<Synced> {
    let h = d.project_for(dir)?;
    let out = barrier(d, &h)?;
    Ok(Synced {
        project: convert::abs(&h.root),
        method: out.method,
        elapsed_ms: out.elapsed.as_millis() as u64,
        degraded: h.degraded_reason(),
    })
}
