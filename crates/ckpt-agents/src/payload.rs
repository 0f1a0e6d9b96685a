//! Reading an agent's hook payload (JSON on stdin) by the names that agent
//! uses. What is missing is left to the flags and the current directory.

use std::path::PathBuf;

use anyhow::Context;
use serde_json::Value;

/// Labels longer than this (a pasted log as a prompt) are cut.
const MAX_LABEL_CHARS: usize = 1000;

/// Alternative key paths to one value, first found wins.
pub type Keys = &'static [&'static [&'static str]];

/// The names one agent's hook payload uses.
pub struct Payload {
    pub session: Keys,
    pub prompt: Keys,
    /// A directory string, or an array whose first item is one
    /// (workspace roots).
    pub cwd: Keys,
    pub transcript: Keys,
    /// A tool call's shell command (pre-tool hooks; other tools have none).
    pub command: Keys,
    /// A key that means another agent sent this payload: Cursor runs
    /// Claude Code's hooks too, and its turns are its own hook's to mark.
    pub sent_by_other: Option<&'static str>,
}

#[derive(Debug, Default, PartialEq)]
pub struct HookInput {
    pub prompt: Option<String>,
    pub session: Option<String>,
    pub cwd: Option<PathBuf>,
    pub transcript: Option<String>,
    pub command: Option<String>,
    /// The payload came from another agent (see `Payload::sent_by_other`).
    pub other_agent: bool,
}

impl Payload {
    pub fn parse(&self, text: &str) -> anyhow::Result<HookInput> {
        if text.trim().is_empty() {
            return Ok(HookInput::default());
        }
        let v: Value = serde_json::from_str(text).context("the hook's input is not JSON")?;
        anyhow::ensure!(v.is_object(), "the hook's input is not a JSON object");
        Ok(HookInput {
            prompt: find_str(&v, self.prompt).map(|p| cut(p.trim())),
            session: find_str(&v, self.session),
            cwd: find(&v, self.cwd)
                .and_then(|c| match c {
                    Value::Array(a) => a.first().and_then(Value::as_str),
                    other => other.as_str(),
                })
                .filter(|s| !s.is_empty())
                .map(PathBuf::from),
            transcript: find_str(&v, self.transcript),
            command: find_str(&v, self.command),
            other_agent: self.sent_by_other.is_some_and(|k| v.get(k).is_some()),
        })
    }
}

fn find(v: &Value, keys: Keys) -> Option<&Value> {
    keys.iter()
        .find_map(|path| path.iter().try_fold(v, |v, k| v.get(k)))
        .filter(|v| !v.is_null())
}

/// A non-empty string (numbers, as some agents send ids, become strings).
fn find_str(v: &Value, keys: Keys) -> Option<String> {
    match find(v, keys)? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn cut(p: &str) -> String {
    if p.chars().count() > MAX_LABEL_CHARS {
        let cut: String = p.chars().take(MAX_LABEL_CHARS).collect();
        format!("{cut}…")
    } else {
        p.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: Payload = Payload {
        session: &[&["session_id"], &["meta", "id"]],
        prompt: &[&["prompt"]],
        cwd: &[&["cwd"], &["roots"]],
        transcript: &[&["transcript_path"]],
        command: &[&["tool_input", "command"]],
        sent_by_other: Some("other_version"),
    };

    #[test]
    fn reads_nested_and_alternative_keys() {
        let h = P
            .parse(r#"{"meta":{"id":7},"roots":["/w","/v"],"prompt":" hi\n","transcript_path":""}"#)
            .unwrap();
        assert_eq!(h.session.as_deref(), Some("7"));
        assert_eq!(h.cwd, Some(PathBuf::from("/w")));
        assert_eq!(h.prompt.as_deref(), Some("hi"));
        assert_eq!(h.transcript, None, "an empty path is no path");
        assert_eq!(h.command, None);
        let h = P
            .parse(r#"{"tool_name":"Bash","tool_input":{"command":"git push"}}"#)
            .unwrap();
        assert_eq!(h.command.as_deref(), Some("git push"));
        assert!(!h.other_agent);
        assert!(P.parse(r#"{"other_version":"1"}"#).unwrap().other_agent);
    }

    #[test]
    fn long_prompts_are_cut_and_bad_input_is_an_error() {
        let long = "x".repeat(5000);
        let h = P.parse(&format!(r#"{{"prompt":"{long}"}}"#)).unwrap();
        assert_eq!(h.prompt.unwrap().chars().count(), MAX_LABEL_CHARS + 1);
        assert_eq!(P.parse("").unwrap(), HookInput::default());
        assert!(P.parse("not json").is_err());
        assert!(P.parse("[1]").is_err());
    }
}
