//! git-ai's authorship log (`authorship/3.0.0`): the note git-ai and ckpt
//! attach to a commit under refs/notes/ai, saying which of its lines an
//! agent session wrote. Written and read as the standard says
//! (git-ai-project/git-ai `specs/git_ai_standard_v3.0.0.md`), with session
//! ids made as git-ai makes them (`generate_session_id` in
//! `src/authorship/authorship_log_serialization.rs`), so both tools name a
//! session alike.
//!
//! ```text
//! src/main.rs
//!   s_c9883b05a2487d::t_9f8e7d6c5b4a32 1-10,15-20
//! ---
//! {"schema_version": "authorship/3.0.0", "base_commit_sha": "…", "prompts": {}, "sessions": {…}}
//! ```

use std::collections::BTreeMap;

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub const SCHEMA_VERSION: &str = "authorship/3.0.0";

/// Who an attestation names (`agent_id` in the standard).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentId {
    pub tool: String,
    pub id: String,
    pub model: String,
}

/// A session record (`metadata.sessions`) or a legacy prompt record
/// (`metadata.prompts`): only what a reader needs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionRecord {
    pub agent_id: AgentId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub human_author: Option<String>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Metadata {
    pub schema_version: String,
    pub base_commit_sha: String,
    #[serde(default)]
    pub prompts: BTreeMap<String, SessionRecord>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sessions: BTreeMap<String, SessionRecord>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub humans: BTreeMap<String, serde_json::Value>,
}

/// One attestation line: a key and the 1-based lines it covers, as
/// inclusive ranges in ascending order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attestation {
    pub key: String,
    pub ranges: Vec<(u64, u64)>,
}

/// An authorship log.
#[derive(Clone, Debug, Default)]
pub struct AuthorshipLog {
    /// Path (relative to the repository's top) → its attestations.
    pub files: BTreeMap<String, Vec<Attestation>>,
    pub metadata: Metadata,
}

/// Who wrote a line, as a note says.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Author {
    pub key: String,
    /// `ai` (a session or legacy prompt) or `human` (a known human).
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<AgentId>,
}

impl AuthorshipLog {
    pub fn render(&self) -> anyhow::Result<String> {
        let mut out = String::new();
        for (path, atts) in &self.files {
            if atts.is_empty() {
                continue;
            }
            if path.contains('"') {
                bail!("{path}: the standard has no way to write a path with a quote");
            }
            if path.contains([' ', '\t', '\n']) {
                out.push_str(&format!("\"{path}\"\n"));
            } else {
                out.push_str(path);
                out.push('\n');
            }
            for a in atts {
                out.push_str(&format!("  {} {}\n", a.key, ranges_text(&a.ranges)));
            }
        }
        out.push_str("---\n");
        out.push_str(&serde_json::to_string_pretty(&self.metadata)?);
        out.push('\n');
        Ok(out)
    }

    pub fn parse(text: &str) -> anyhow::Result<AuthorshipLog> {
        let (att, meta) = match text.split_once("\n---\n") {
            Some(parts) => parts,
            None => match text.strip_prefix("---\n") {
                Some(meta) => ("", meta),
                None => bail!("not an authorship log: no `---` line"),
            },
        };
        let metadata: Metadata = serde_json::from_str(meta)
            .context("the metadata section is not the JSON it should be")?;
        if !metadata.schema_version.starts_with("authorship/3.") {
            bail!(
                "authorship log version {:?}: this ckpt reads authorship/3.x",
                metadata.schema_version
            );
        }
        let mut files: BTreeMap<String, Vec<Attestation>> = BTreeMap::new();
        let mut current: Option<String> = None;
        for line in att.lines().filter(|l| !l.trim().is_empty()) {
            if let Some(entry) = line.strip_prefix("  ") {
                let path = current
                    .as_ref()
                    .with_context(|| format!("attestation {entry:?} before any path"))?;
                let (key, ranges) = entry
                    .rsplit_once(' ')
                    .with_context(|| format!("attestation {entry:?} has no line ranges"))?;
                files.entry(path.clone()).or_default().push(Attestation {
                    key: key.trim_matches('"').to_owned(),
                    ranges: parse_ranges(ranges)?,
                });
            } else {
                let path = line
                    .strip_prefix('"')
                    .and_then(|l| l.strip_suffix('"'))
                    .unwrap_or(line);
                current = Some(path.to_owned());
            }
        }
        Ok(AuthorshipLog { files, metadata })
    }

    /// Who wrote `line` of `path`, if the log attests it.
    pub fn author(&self, path: &str, line: u64) -> Option<Author> {
        let att = self
            .files
            .get(path)?
            .iter()
            .find(|a| a.ranges.iter().any(|&(s, e)| s <= line && line <= e))?;
        let m = &self.metadata;
        let (kind, record) = if att.key.starts_with("h_") {
            ("human", None)
        } else if let Some(session) = att.key.strip_prefix("s_").map(|_| {
            att.key
                .split_once("::")
                .map_or(att.key.as_str(), |(s, _)| s)
        }) {
            ("ai", m.sessions.get(session))
        } else {
            ("ai", m.prompts.get(&att.key))
        };
        Some(Author {
            key: att.key.clone(),
            kind,
            agent_id: record.map(|r| r.agent_id.clone()),
        })
    }
}

/// `1-4,9,12-13`.
fn ranges_text(ranges: &[(u64, u64)]) -> String {
    ranges
        .iter()
        .map(|&(s, e)| {
            if s == e {
                s.to_string()
            } else {
                format!("{s}-{e}")
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

fn parse_ranges(text: &str) -> anyhow::Result<Vec<(u64, u64)>> {
    text.split(',')
        .map(|part| {
            let num = |s: &str| {
                s.parse::<u64>()
                    .with_context(|| format!("bad line range {part:?}"))
            };
            match part.split_once('-') {
                Some((a, b)) => Ok((num(a)?, num(b)?)),
                None => num(part).map(|n| (n, n)),
            }
        })
        .collect()
}

/// Consecutive line numbers (ascending) as ranges.
pub fn to_ranges(lines: impl IntoIterator<Item = u64>) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for l in lines {
        match out.last_mut() {
            Some((_, e)) if *e + 1 == l => *e = l,
            _ => out.push((l, l)),
        }
    }
    out
}

fn sha256_hex(s: &str) -> String {
    hex::encode(Sha256::digest(s.as_bytes()))
}

/// git-ai's session id: `s_` + the first 14 hex digits of
/// SHA-256(`<tool>:<conversation id>`).
pub fn session_id(tool: &str, conversation: &str) -> String {
    format!("s_{}", &sha256_hex(&format!("{tool}:{conversation}"))[..14])
}

/// The trace id of a ckpt turn: git-ai draws one at random per checkpoint;
/// ckpt derives it from the turn, so writing a commit's note again gives
/// the same note.
pub fn trace_id(project: &str, turn: i64) -> String {
    format!(
        "t_{}",
        &sha256_hex(&format!("ckpt:{project}:turn:{turn}"))[..14]
    )
}

/// The tool name git-ai gives each agent ckpt knows (its presets under
/// `src/commands/checkpoint_agent/presets/`), so both make the same
/// session id; an agent it has no name for keeps ckpt's.
pub fn tool_name(ckpt_agent: &str) -> &str {
    match ckpt_agent {
        "claude-code" => "claude",
        "copilot" => "github-copilot-cli",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The standard's own example (section 1.2.5), less a human record.
    const EXAMPLE: &str = r#"src/main.rs
  s_c9883b05a2487d::t_9f8e7d6c5b4a32 1-10,15-20
  s_c9883b05a2487d::t_a1b2c3d4e5f678 25,30-35
  h_31dce776f88375 42-50
"src/my file.rs"
  abcd1234abcd1234 1-50
---
{
  "schema_version": "authorship/3.0.0",
  "git_ai_version": "1.4.5",
  "base_commit_sha": "7734793b756b3921c88db5375a8c156e9532447b",
  "prompts": {
    "abcd1234abcd1234": {
      "agent_id": {"tool": "cursor", "id": "old", "model": "gpt-4"},
      "human_author": "Developer <dev@example.com>",
      "total_additions": 50, "total_deletions": 0, "accepted_lines": 50, "overriden_lines": 0
    }
  },
  "humans": {"h_31dce776f88375": {"author": "Developer <dev@example.com>"}},
  "sessions": {
    "s_c9883b05a2487d": {
      "agent_id": {"tool": "cursor", "id": "6ef2299e", "model": "claude-sonnet-4-5-20250514"},
      "human_author": "dev@example.com"
    }
  }
}
"#;

    #[test]
    fn a_git_ai_note_is_read_with_every_key_format() {
        let log = AuthorshipLog::parse(EXAMPLE).unwrap();
        let a = log.author("src/main.rs", 31).unwrap();
        assert_eq!(a.key, "s_c9883b05a2487d::t_a1b2c3d4e5f678");
        assert_eq!(a.agent_id.unwrap().model, "claude-sonnet-4-5-20250514");
        assert_eq!(log.author("src/main.rs", 11), None, "untracked");
        assert_eq!(log.author("src/main.rs", 45).unwrap().kind, "human");
        let legacy = log.author("src/my file.rs", 50).unwrap();
        assert_eq!(legacy.agent_id.unwrap().tool, "cursor");
    }

    #[test]
    fn a_written_note_reads_back_the_same() {
        let mut log = AuthorshipLog::parse(EXAMPLE).unwrap();
        log.metadata.humans.clear();
        log.files.get_mut("src/main.rs").unwrap().pop();
        let text = log.render().unwrap();
        assert!(
            text.starts_with(
                "src/main.rs\n  s_c9883b05a2487d::t_9f8e7d6c5b4a32 1-10,15-20\n  s_c9883b05a2487d::t_a1b2c3d4e5f678 25,30-35\n\"src/my file.rs\"\n  abcd1234abcd1234 1-50\n---\n"
            ),
            "{text}"
        );
        assert!(text.contains("\n---\n{\n  \"schema_version\": \"authorship/3.0.0\""));
        let back = AuthorshipLog::parse(&text).unwrap();
        assert_eq!(back.files, log.files);
    }

    #[test]
    fn ids_are_made_as_git_ai_makes_them() {
        // `printf 'claude:abc' | sha256sum`, its first 14 hex digits.
        assert_eq!(session_id("claude", "abc"), "s_2ce06946efc032");
        assert_eq!(trace_id("/p", 3), trace_id("/p", 3));
        assert_ne!(trace_id("/p", 3), trace_id("/p", 4));
        assert_eq!(to_ranges([1, 2, 3, 7, 9, 10]), [(1, 3), (7, 7), (9, 10)]);
        assert!(AuthorshipLog::parse("x\n---\n{\"schema_version\":\"authorship/2.0.0\",\"base_commit_sha\":\"a\",\"prompts\":{}}").is_err());
    }
}
