//! Gemini CLI's session files (google-gemini/gemini-cli,
//! `packages/core/src/services/chatRecordingService.ts` and `chatRecordingTypes.ts`):
//! - `~/.gemini/tmp/<project>/chats/session-<YYYY-MM-DDTHH-MM>-<first 8 of the session
//!   id>.jsonl`, JSON Lines, appended (`initialize`, `appendRecord`).
//! - The first record is the metadata `{sessionId, projectHash, startTime, lastUpdated,
//!   kind?, directories?}`; then `MessageRecord`s `{id, timestamp, type: user | gemini |
//!   info | error | warning, content, toolCalls?, thoughts?, tokens?, model?}` (a message
//!   appended again with the same `id` replaces the earlier one), `{"$set": {...}}`
//!   metadata updates (`summary`, `lastUpdated`, a `messages` checkpoint) and
//!   `{"$rewindTo": id}` (Gemini's own rewind) — `loadConversationRecord`.
//! - Files ending `.json` are the older single-document format (`ConversationRecord`),
//!   which this adapter does not fork.
//! - The user's message is recorded after the `BeforeAgent` hook runs
//!   (`packages/core/src/core/client.ts`, `fireBeforeAgentHookSafe`, before
//!   `geminiChat.ts` `recordMessage`).
//! - A tool's result goes back to the model as a `user` turn and is recorded
//!   as a `user` message too, its `content` the parts holding `functionResponse`
//!   `{id, name, response}` (Gemini CLI 0.61.0, `geminiChat.ts` `sendMessageStream`:
//!   `isFunctionResponse(userContent)` then `recordSyntheticMessage('user', parts)`;
//!   `messageInspectors.ts` `isFunctionResponse`; `testdata/gemini-cli-0.61.0.jsonl`,
//!   recorded from `gemini -p` and `gemini -p --resume`, with the copies its
//!   `BeforeAgent` hook took before each prompt was written). Such a message is no
//!   prompt.
//! - `gemini --resume <session id>` (`packages/cli/src/config/config.ts`; found by
//!   `SessionSelector.findSession` in `packages/cli/src/utils/sessionUtils.ts` among the
//!   project's chats).
//!
//! Records carry no version: a record of no kind above means a format this
//! adapter does not know. The fork's metadata (and any `$set` of it) gets the
//! new `sessionId`; messages carry none and are copied as they are.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use serde_json::Value;

use super::{file_time, Adapter, ForkEntry};
use crate::{gemini_dir, Home};

pub struct Gemini;

/// The only format there is to name: JSON Lines sessions.
const FORMAT: &str = "jsonl";

fn is_metadata(e: &Value) -> bool {
    e.get("sessionId").is_some_and(Value::is_string)
        && e.get("projectHash").is_some_and(Value::is_string)
}

fn is_message(e: &Value) -> bool {
    e.get("id").is_some_and(Value::is_string)
}

/// A message whose parts hold a `functionResponse` (see the header); its
/// `content` is a part list, or one part.
fn is_tool_result(e: &Value) -> bool {
    let response = |p: &Value| p.get("functionResponse").is_some();
    match e.get("content") {
        Some(Value::Array(parts)) => parts.iter().any(response),
        Some(part) => response(part),
        None => false,
    }
}

impl Adapter for Gemini {
    fn agent(&self) -> &'static str {
        "gemini"
    }

    fn detect(&self, entries: &[Value]) -> anyhow::Result<String> {
        let first = entries.first().context("the session file is empty")?;
        if !is_metadata(first) {
            bail!("the session file does not begin with its metadata (`sessionId`, `projectHash`): not the JSON Lines format this ckpt knows");
        }
        for (i, e) in entries.iter().enumerate().skip(1) {
            let known = is_message(e)
                || e.get("$set").is_some_and(Value::is_object)
                || e.get("$rewindTo").is_some_and(Value::is_string)
                || is_metadata(e);
            if !known {
                bail!(
                    "record {} is of no kind this ckpt knows: a newer format",
                    i + 1
                );
            }
        }
        Ok(FORMAT.to_string())
    }

    fn entry_id(&self, e: &Value) -> Option<String> {
        if let Some(id) = e.get("id").and_then(Value::as_str) {
            return Some(id.to_string());
        }
        e.get("$rewindTo")
            .and_then(Value::as_str)
            .map(|id| format!("$rewindTo {id}"))
    }

    fn is_prompt(&self, e: &Value) -> bool {
        is_message(e) && e.get("type").and_then(Value::as_str) == Some("user") && !is_tool_result(e)
    }

    fn fork_entries(
        &self,
        kept: &[Value],
        new_session: &str,
        _original_session: &str,
    ) -> anyhow::Result<Vec<ForkEntry>> {
        let id = Value::String(new_session.to_string());
        Ok(kept
            .iter()
            .map(|e| {
                if is_metadata(e) {
                    let mut v = e.clone();
                    v["sessionId"] = id.clone();
                    return ForkEntry::Changed(v);
                }
                match e.get("$set") {
                    Some(set) if set.get("sessionId").is_some() => {
                        let mut v = e.clone();
                        v["$set"]["sessionId"] = id.clone();
                        ForkEntry::Changed(v)
                    }
                    _ => ForkEntry::Unchanged,
                }
            })
            .collect())
    }

    fn fork_name(&self, new_session: &str) -> String {
        let minute = &file_time()[..16];
        let short: String = new_session.chars().take(8).collect();
        format!("session-{minute}-{short}.jsonl")
    }

    fn resume_command(&self, session: &str) -> String {
        format!("gemini --resume {session}")
    }

    fn session_dirs(&self, home: &Home) -> Vec<PathBuf> {
        vec![gemini_dir(home).join("tmp")]
    }

    fn transcripts(&self, dir: &Path) -> Vec<PathBuf> {
        let Ok(projects) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        projects
            .flatten()
            .filter_map(|p| std::fs::read_dir(p.path().join("chats")).ok())
            .flat_map(|files| files.flatten().map(|f| f.path()))
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("session-") && n.ends_with(".jsonl"))
            })
            .collect()
    }
}
