//! What the last hook call of each agent did, kept by the client itself
//! (when the daemon is down it cannot keep it): `hooks status` and
//! `status` show it, so a hook that fails quietly (it must never break the
//! agent) is still seen.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::{Agent, Event};

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct Calls {
    /// The last call that reached the daemon and did its work.
    #[serde(default)]
    pub last_ok: Option<Call>,
    /// The last call that failed.
    #[serde(default)]
    pub last_error: Option<Call>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Call {
    /// Unix time, milliseconds.
    pub at_ms: u64,
    /// `turn-start`, `turn-end`, `tool-start`, `tool-end` or `session-end`.
    pub event: String,
    #[serde(default)]
    pub project: Option<String>,
    #[serde(default)]
    pub error: Option<String>,
    /// A call that succeeded by doing nothing, and why (a turn-end with no
    /// turn open).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The note of a turn-end that found no turn to close.
pub const NO_TURN_OPEN: &str = "no turn open, nothing to close";

/// A call's success: the project it acted on, and a note if it did nothing.
#[derive(Debug, Clone)]
pub struct Done {
    pub project: String,
    pub note: Option<String>,
}

impl Calls {
    /// The last call failed (a later success clears it). A turn-end that
    /// found no turn open, recorded as a failure by an older ckptctl, is
    /// the no-op it is now.
    pub fn failing(&self) -> Option<&Call> {
        let e = self.last_error.as_ref().filter(|e| {
            !(e.event == "turn-end" && e.error.as_deref() == Some("no turn is open"))
        })?;
        match &self.last_ok {
            Some(ok) if ok.at_ms > e.at_ms => None,
            _ => Some(e),
        }
    }
}

fn path(data_dir: &Path, agent: Agent) -> PathBuf {
    data_dir
        .join("hooks")
        .join(format!("{}.json", agent.name()))
}

pub fn read(data_dir: &Path, agent: Agent) -> Calls {
    std::fs::read(path(data_dir, agent))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// Records one call; a failure to record is ignored (the hook's own result
/// is what matters to the agent).
pub fn record(data_dir: &Path, agent: Agent, event: Event, outcome: Result<Done, String>) {
    let mut calls = read(data_dir, agent);
    let at_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let event = event.name().to_string();
    match outcome {
        Ok(done) => {
            calls.last_ok = Some(Call {
                at_ms,
                event,
                project: Some(done.project),
                error: None,
                note: done.note,
            })
        }
        Err(error) => {
            calls.last_error = Some(Call {
                at_ms,
                event,
                project: None,
                error: Some(error),
                note: None,
            })
        }
    }
    if let Ok(text) = serde_json::to_string(&calls) {
        let _ = write(&path(data_dir, agent), &text);
    }
}

/// Rewrites the record in place: no fsync, no new inode, no block freed.
/// Renamed over it from a temp file, it cost each hook call 0.68 ms with
/// fsync and 0.4 ms without; in place, 0.07–0.13 ms (docs/measurements.md,
/// "`ckptctl hooks` and the hook path"). A record torn by a crash or a concurrent call reads as
/// none: harmless.
fn write(file: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(file)?;
    f.write_all(text.as_bytes())?;
    f.set_len(text.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(at_ms: u64, event: &str, error: Option<&str>) -> Call {
        Call {
            at_ms,
            event: event.into(),
            project: None,
            error: error.map(String::from),
            note: None,
        }
    }

    #[test]
    fn an_old_turn_end_with_no_turn_open_is_not_failing() {
        let old = Calls {
            last_ok: None,
            last_error: Some(call(2, "turn-end", Some("no turn is open"))),
        };
        assert!(old.failing().is_none());
        let real = Calls {
            last_ok: Some(call(1, "turn-start", None)),
            last_error: Some(call(2, "turn-end", Some("connecting to ckptd: refused"))),
        };
        assert!(real.failing().is_some());
    }
}
