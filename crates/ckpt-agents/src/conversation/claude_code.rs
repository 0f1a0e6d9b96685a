//! Claude Code's session transcripts (closed source; the format as public
//! tools that parse it document it):
//! - Location `~/.claude/projects/<project dir>/<sessionId>.jsonl`, JSON Lines,
//!   appended, created with its first entry: jeremedia/claude-code-log-format
//!   `source-docs/JSONL_LOGGING.md` ("Primary session file", "created lazily on the first
//!   appendEntry"), microsoft/amplifier
//!   `ai_working/claude_code_logging/session_format_specification.md`.
//! - Entries: `type` `user` | `assistant` | `system` with `uuid`, `parentUuid`
//!   (null at a root), `sessionId`, `isSidechain`, `userType`, `cwd`, `version`
//!   (Claude Code's), `timestamp`, `isMeta`, `message` {`role`, `content`: a
//!   string or blocks `text` / `tool_use` / `tool_result` / `thinking`};
//!   `summary` entries {`summary`, `leafUuid`}: daaain/claude-code-log
//!   `claude_code_log/models.py` (`BaseTranscriptEntry`,
//!   `SummaryTranscriptEntry`, `parse_content_item`).
//! - Compaction: a `system` entry with `subtype` `compact_boundary`,
//!   `parentUuid` null and `logicalParentUuid` naming the last entry before it,
//!   then a `user` entry holding the summary (`isCompactSummary`): amplifier's
//!   specification, "Compact Operation". Other `type`s (`file-history-snapshot`,
//!   `attachment`, `last-prompt`, `mode`, Crazytieguy/alignment-hive
//!   `docs/sessions/session-8-jsonl-format.md`) are copied through.
//! - Prompts pass through a queue, and each step of it is an entry
//!   `{"type": "queue-operation", "operation": "enqueue" | "dequeue" | "remove" |
//!   "popAll", "timestamp", "sessionId", "content"?}`, `content` being the
//!   prompt's text (Claude Code 2.1.197's bundle, the writer of
//!   `queue-operation`). `claude -p` writes the prompt's enqueue and dequeue,
//!   then runs the `UserPromptSubmit` hook, then writes the `user` entry
//!   (`testdata/claude-code-2.1.197.jsonl`, recorded from `claude -p` and
//!   `claude -p --resume`); a prompt typed while a turn runs is enqueued in
//!   the middle of that turn's entries. Claude Code ignores them when it
//!   resumes (issue 28).
//! - The transcript "is written asynchronously and may lag" (hooks reference,
//!   https://code.claude.com/docs/en/hooks, common input fields); resume with
//!   `claude --resume <session id>` (https://code.claude.com/docs/en/cli-reference).
//!
//! The fork keeps `uuid` and parent links as they are (it is a prefix, so
//! every parent is in it) and puts the new id in every entry's `sessionId`.
//! It holds no text of the rewound prompt or a later one: the queue entries
//! just before the prompt are cut with it, and a queued text that no kept
//! prompt holds is dropped.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde_json::Value;

use super::{check_version, content_text, Adapter, ForkEntry};
use crate::Home;

pub struct ClaudeCode;

/// The major versions of Claude Code whose transcripts this was written
/// against (1.x and 2.x write the entries above).
const MAX_MAJOR: u64 = 2;

/// Entry types that are conversation messages and must carry ids.
const MESSAGES: &[&str] = &["user", "assistant", "system"];

/// A step of the prompt queue (see the header).
fn is_queue(e: &Value) -> bool {
    e.get("type").and_then(Value::as_str) == Some("queue-operation")
}

impl Adapter for ClaudeCode {
    fn agent(&self) -> &'static str {
        "claude-code"
    }

    fn detect(&self, entries: &[Value]) -> anyhow::Result<String> {
        let mut version = None;
        for (i, e) in entries.iter().enumerate() {
            let kind = e
                .get("type")
                .and_then(Value::as_str)
                .with_context(|| format!("entry {} has no `type`", i + 1))?;
            if !MESSAGES.contains(&kind) {
                continue;
            }
            for field in ["uuid", "sessionId"] {
                e.get(field).and_then(Value::as_str).with_context(|| {
                    format!(
                        "entry {} ({kind}) has no `{field}`: not the format this ckpt knows",
                        i + 1
                    )
                })?;
            }
            if let Some(v) = e.get("version").and_then(Value::as_str) {
                version = Some(v);
            }
        }
        let version = version.context("no entry names the Claude Code `version` that wrote it")?;
        check_version("Claude Code", version, MAX_MAJOR)?;
        Ok(version.to_string())
    }

    fn entry_id(&self, entry: &Value) -> Option<String> {
        ["uuid", "messageId", "leafUuid"]
            .iter()
            .find_map(|k| entry.get(*k).and_then(Value::as_str))
            .map(str::to_string)
    }

    fn is_prompt(&self, e: &Value) -> bool {
        let flag = |k: &str| e.get(k).and_then(Value::as_bool).unwrap_or(false);
        if e.get("type").and_then(Value::as_str) != Some("user")
            || flag("isMeta")
            || flag("isSidechain")
            || flag("isCompactSummary")
        {
            return false;
        }
        let Some(content) = e.pointer("/message/content") else {
            return false;
        };
        // Tool results travel as `user` entries too.
        let tool_result = content.as_array().is_some_and(|blocks| {
            blocks
                .iter()
                .any(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
        });
        // Slash commands and their output are recorded as tagged user text.
        let command = |t: &str| t.starts_with("<command-") || t.starts_with("<local-command-");
        !tool_result && content_text(content).is_some_and(|t| !command(t.trim_start()))
    }

    fn lead_in(&self, before: &[Value]) -> usize {
        before.iter().rev().take_while(|e| is_queue(e)).count()
    }

    fn fork_entries(
        &self,
        kept: &[Value],
        new_session: &str,
        _original_session: &str,
    ) -> anyhow::Result<Vec<ForkEntry>> {
        let uuids: HashSet<&str> = kept
            .iter()
            .filter_map(|e| e.get("uuid").and_then(Value::as_str))
            .collect();
        let prompts: HashSet<String> = kept
            .iter()
            .filter(|e| self.is_prompt(e))
            .filter_map(|e| e.pointer("/message/content").and_then(content_text))
            .collect();
        Ok(kept
            .iter()
            .map(|e| {
                // Queued while an earlier turn ran, for the rewound prompt
                // or a later one (or never sent): its text stays behind.
                let queued = e.get("content").and_then(Value::as_str);
                if is_queue(e) && queued.is_some_and(|t| !prompts.contains(t)) {
                    return ForkEntry::Dropped;
                }
                // A summary of a branch that continues past the cut would
                // describe turns the fork does not hold.
                if e.get("type").and_then(Value::as_str) == Some("summary") {
                    let leaf = e.get("leafUuid").and_then(Value::as_str);
                    if !leaf.is_some_and(|l| uuids.contains(l)) {
                        return ForkEntry::Dropped;
                    }
                }
                match e.get("sessionId") {
                    Some(Value::String(_)) => {
                        let mut v = e.clone();
                        v["sessionId"] = Value::String(new_session.to_string());
                        ForkEntry::Changed(v)
                    }
                    _ => ForkEntry::Unchanged,
                }
            })
            .collect())
    }

    fn fork_name(&self, new_session: &str) -> String {
        format!("{new_session}.jsonl")
    }

    fn resume_command(&self, session: &str) -> String {
        format!("claude --resume {session}")
    }

    fn session_dirs(&self, home: &Home) -> Vec<PathBuf> {
        vec![crate::claude_dir(home).join("projects")]
    }

    fn transcripts(&self, dir: &Path) -> Vec<PathBuf> {
        let Ok(projects) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        projects
            .flatten()
            .filter_map(|p| std::fs::read_dir(p.path()).ok())
            .flat_map(|files| files.flatten().map(|f| f.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
            .collect()
    }
}
