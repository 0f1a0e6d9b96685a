//! Codex CLI's rollout files (openai/codex):
//! - `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-YYYY-MM-DDThh-mm-ss-<uuid>.jsonl`, one
//!   `RolloutLine` per line: `{"timestamp", "type", "payload"}` with `type` one of
//!   `session_meta`, `response_item`, `compacted`, `turn_context`, `event_msg`
//!   (`codex-rs/protocol/src/protocol.rs`: `RolloutLine`, `RolloutItem`, `SessionMetaLine`;
//!   `codex-rs/core/src/rollout/list.rs`: the layout and `parse_timestamp_uuid_from_filename`).
//! - The first line is `session_meta`; its payload `SessionMeta` holds `id` (the thread
//!   id), `forked_from_id`, `timestamp`, `cwd`, `originator`, `cli_version`, `source`.
//!   `compacted` holds `message` and `replacement_history` (`CompactedItem`).
//! - A user turn begins at a `response_item` `{"type": "message", "role": "user"}` that is
//!   not context Codex adds itself (text starting `<environment_context>`,
//!   `<user_instructions>`, `<turn_aborted>`…, or `# AGENTS.md` instructions), and Codex's
//!   own fork cuts strictly before such a message (`codex-rs/core/src/rollout/truncation.rs`,
//!   `codex-rs/core/src/event_mapping.rs`, `codex-rs/core/src/contextual_user_message.rs`).
//! - `codex resume <SESSION_ID>` finds a rollout by the id in its file name
//!   (`find_thread_path_by_id_str`, falling back from its state database to the files).
//! - Codex 0.171.0 (`testdata/codex-0.171.0.jsonl`, recorded from `codex exec` and
//!   `codex exec resume`): every line also carries its `ordinal`; `session_meta` holds
//!   `session_id` beside `id` (the id its hooks send once the rollout is resumed),
//!   `history_mode` and `context_window`; new line types `world_state` and
//!   `token_usage_record`, new events `thread_settings_applied`, `item_completed`. A turn
//!   opens with `event_msg` `task_started` and its `turn_context` (and on a thread's first
//!   turn its context messages and `world_state`), and only then does the
//!   `UserPromptSubmit` hook run and the prompt follow; `task_complete` ends it.
//!   `codex exec fork` writes a `session_meta` whose `id` and `session_id` are the new
//!   thread's, with `forked_from_id` and a `history_base` that points into the parent
//!   rollout instead of copying it; a full copy, as ckpt writes, resumes all the same.
//!
//! The fork gets a new `id` and `session_id` in its `session_meta`, and `forked_from_id`
//! names the original, as Codex's own fork does; every other line is copied as it is.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use serde_json::Value;

use super::{check_version, content_text, file_time, Adapter, ForkEntry};
use crate::{codex_home, Home};

pub struct Codex;

/// Codex's versions are 0.x; a 1.0 may change the rollout, so it is refused
/// until someone checks.
const MAX_MAJOR: u64 = 0;

impl Adapter for Codex {
    fn agent(&self) -> &'static str {
        "codex"
    }

    fn detect(&self, entries: &[Value]) -> anyhow::Result<String> {
        for (i, e) in entries.iter().enumerate() {
            for field in ["timestamp", "type", "payload"] {
                if e.get(field).is_none() {
                    bail!(
                        "line {} has no `{field}`: not the rollout format this ckpt knows",
                        i + 1
                    );
                }
            }
        }
        let first = entries.first().context("the rollout is empty")?;
        if first["type"] != "session_meta" {
            bail!("the rollout does not begin with `session_meta`");
        }
        first
            .pointer("/payload/id")
            .and_then(Value::as_str)
            .context("`session_meta` has no `id`")?;
        let version = first
            .pointer("/payload/cli_version")
            .and_then(Value::as_str)
            .context("`session_meta` names no `cli_version`")?;
        check_version("Codex", version, MAX_MAJOR)?;
        Ok(version.to_string())
    }

    fn entry_id(&self, entry: &Value) -> Option<String> {
        // Lines carry no ids of their own; the time and kind identify one.
        let ts = entry.get("timestamp")?.as_str()?;
        let kind = entry.get("type")?.as_str()?;
        Some(format!("{ts} {kind}"))
    }

    fn is_prompt(&self, e: &Value) -> bool {
        let Some(p) = e.get("payload") else {
            return false;
        };
        if e["type"] != "response_item" || p["type"] != "message" || p["role"] != "user" {
            return false;
        }
        let Some(text) = p.get("content").and_then(content_text) else {
            return false;
        };
        let t = text.trim_start();
        !(t.starts_with("# AGENTS.md") || is_context_tag(t))
    }

    fn lead_in(&self, before: &[Value]) -> usize {
        // Back to the turn's `task_started`; a prompt or a turn's end first
        // means the turn opened with none (older rollouts persist none).
        for (n, e) in before.iter().rev().enumerate() {
            match event(e) {
                Some("task_started") => return n + 1,
                Some("task_complete" | "turn_aborted") => return 0,
                _ if self.is_prompt(e) => return 0,
                _ => {}
            }
        }
        0
    }

    fn fork_entries(
        &self,
        kept: &[Value],
        new_session: &str,
        original_session: &str,
    ) -> anyhow::Result<Vec<ForkEntry>> {
        let new = Value::String(new_session.to_string());
        Ok(kept
            .iter()
            .enumerate()
            .map(|(i, e)| {
                if i > 0 || e["type"] != "session_meta" {
                    return ForkEntry::Unchanged;
                }
                let mut v = e.clone();
                let meta = &mut v["payload"];
                meta["id"] = new.clone();
                // Resumed, Codex names the session by `session_id` where
                // there is one (its hooks send it).
                if meta.get("session_id").is_some() {
                    meta["session_id"] = new.clone();
                }
                meta["forked_from_id"] = Value::String(original_session.to_string());
                ForkEntry::Changed(v)
            })
            .collect())
    }

    fn fork_name(&self, new_session: &str) -> String {
        format!("rollout-{}-{new_session}.jsonl", file_time())
    }

    fn resume_command(&self, session: &str) -> String {
        format!("codex resume {session}")
    }

    fn session_dirs(&self, home: &Home) -> Vec<PathBuf> {
        vec![codex_home(home).join("sessions")]
    }

    fn transcripts(&self, dir: &Path) -> Vec<PathBuf> {
        // sessions/YYYY/MM/DD/rollout-*.jsonl
        let mut level = vec![dir.to_path_buf()];
        for _ in 0..3 {
            level = level
                .iter()
                .filter_map(|d| std::fs::read_dir(d).ok())
                .flat_map(|r| r.flatten().map(|e| e.path()))
                .filter(|p| p.is_dir())
                .collect();
        }
        level
            .iter()
            .filter_map(|d| std::fs::read_dir(d).ok())
            .flat_map(|r| r.flatten().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("rollout-") && n.ends_with(".jsonl"))
            })
            .collect()
    }
}

/// The kind of an `event_msg` line.
fn event(e: &Value) -> Option<&str> {
    if e.get("type").and_then(Value::as_str) != Some("event_msg") {
        return None;
    }
    e.pointer("/payload/type").and_then(Value::as_str)
}

/// `<lowercase_tag>` at the start: context Codex adds as a user message.
fn is_context_tag(t: &str) -> bool {
    let Some(rest) = t.strip_prefix('<') else {
        return false;
    };
    let name_len = rest
        .bytes()
        .take_while(|b| b.is_ascii_lowercase() || *b == b'_')
        .count();
    name_len > 0 && rest[name_len..].starts_with('>')
}
