//! What `ckptctl status` says of the session adapters: for each, whether
//! the agent's session directory is there and which format version its
//! newest transcript has (read from that file's first [`HEAD_BYTES`]).

use std::path::PathBuf;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use super::{jsonl, Adapter, ADAPTERS};
use crate::Home;

/// Enough for the metadata and first entries, which name the version.
const HEAD_BYTES: u64 = 256 << 10;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AdapterStatus {
    pub agent: String,
    pub session_dir: String,
    pub found: bool,
    /// Transcripts in it.
    pub transcripts: usize,
    /// The newest transcript's format version, as its adapter reads it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub newest_version: Option<String>,
    /// Why the newest transcript's version could not be read (a format
    /// this ckpt does not know: rewinds of it stay file-only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub newest_error: Option<String>,
}

pub fn adapters_status(home: &Home) -> Vec<AdapterStatus> {
    ADAPTERS
        .iter()
        .flat_map(|a| a.session_dirs(home).into_iter().map(move |d| status(*a, d)))
        .collect()
}

fn status(adapter: &dyn Adapter, dir: PathBuf) -> AdapterStatus {
    let files = adapter.transcripts(&dir);
    let newest = files
        .iter()
        .max_by_key(|p| {
            std::fs::metadata(p)
                .and_then(|m| m.modified())
                .unwrap_or(SystemTime::UNIX_EPOCH)
        })
        .cloned();
    let version = newest.map(|p| {
        let head = jsonl::read_head(&p, HEAD_BYTES)?;
        head.values(&head.lines)
            .and_then(|entries| adapter.detect(&entries))
            .map_err(|e| e.context(p.display().to_string()))
    });
    AdapterStatus {
        agent: adapter.agent().to_string(),
        session_dir: dir.display().to_string(),
        found: dir.is_dir(),
        transcripts: files.len(),
        newest_error: version
            .as_ref()
            .and_then(|v| v.as_ref().err())
            .map(|e| format!("{e:#}")),
        newest_version: version.and_then(Result::ok),
    }
}
