//! `export`.

use crate::WirePath;
use serde::{Deserialize, Serialize};

/// An export written: where, and its manifest (`manifest.json`'s content).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ExportReply {
    pub project: WirePath,
    pub out: WirePath,
    pub manifest: serde_json::Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub degraded: Option<String>,
}
