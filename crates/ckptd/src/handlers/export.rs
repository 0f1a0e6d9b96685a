//! `export FROM TO OUT`: writes the patch, ZIP, report and manifest of a
//! range of closed turns into `out`, from the store. The barrier only makes
//! the manifest's `live_matches_result` current; the files come from history.

use std::sync::Arc;

use ckpt_proto::{Export, ExportBody};

use super::gate::Gate;
use super::About;
use crate::daemon::Daemon;
use crate::error::{ReqError, ReqResult};

pub fn handle(d: &Arc<Daemon>, g: Gate, r: Export) -> ReqResult<About<ExportBody>> {
    let (from, to, out) = (r.from, r.to, &r.out);
    let h = d.project_for(&r.dir)?;
    h.ensure_available()?;
    let out_path = out.as_path();
    if !out_path.is_absolute() {
        return Err(ReqError::bad_request(format!(
            "the export directory {} is not an absolute path",
            out.display()
        )));
    }
    g.pass(d, &h)?;
    let manifest = h.call(|p| p.export(from, to, out_path))?;
    let manifest = serde_json::to_value(&manifest)
        .map_err(|e| ReqError::internal(format!("manifest does not serialize: {e}")))?;
    let body = ExportBody {
        out: out.clone(),
        manifest,
    };
    Ok((h, body))
}
