//! `export`.

use crate::WirePath;
use serde::{Deserialize, Serialize};

use crate::Reply;

/// Write the export of turns `from..=to` (patch, ZIP, report, manifest)
/// into `out`: an absolute, existing, empty directory outside the project.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Export {
    pub dir: WirePath,
    pub from: i64,
    pub to: i64,
    pub out: WirePath,
}

/// An export written: where, and its manifest (`manifest.json`'s content).
pub type ExportReply = Reply<ExportBody>;

/// What [`ExportReply`] carries past `project` and `degraded`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ExportBody {
    pub out: WirePath,
    pub manifest: serde_json::Value,
}
