//! `blame FILE`: every line of a file as it is now, with the live turn that
//! last introduced it, or `baseline` / `between-turns`, and the open ledger
//! entries covering it.

use std::sync::Arc;

use ckpt_proto::{Blame, BlameAt, WirePath};

use super::gate::Gate;
use super::About;
use crate::daemon::Daemon;
use crate::error::ReqResult;

pub fn handle(
    d: &Arc<Daemon>,
    g: Gate,
    dir: &WirePath,
    path: &WirePath,
    at: Option<&BlameAt>,
) -> ReqResult<About<Blame>> {
    let h = d.project_for(dir)?;
    h.ensure_available()?;
    let rel = Daemon::rel_path(&h, path)?;
    // The current content is the cache's: it must hold every edit made
    // before this request.
    g.pass(d, &h)?;
    let blame = h.call(|p| p.blame_version(&rel, at))?;
    Ok((h, blame))
}
