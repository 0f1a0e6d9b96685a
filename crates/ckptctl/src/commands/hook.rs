//! Agent hooks pass their context as JSON on stdin. Claude Code sends
//! `{"session_id", "cwd", "prompt", …}`, tested end to end. Cursor's names
//! (`conversation_id`, `workspace_roots`) are read too, but only this
//! file's unit test has seen them. Whatever is missing is left to the flags
//! and the current directory.

use std::io::{IsTerminal, Read};
use std::path::PathBuf;

use anyhow::{bail, Context};
use serde_json::Value;

/// Labels longer than this (a pasted log as a prompt) are cut.
const MAX_LABEL_CHARS: usize = 1000;

#[derive(Debug, Default)]
pub struct HookInput {
    pub prompt: Option<String>,
    pub session: Option<String>,
    pub cwd: Option<PathBuf>,
}

pub fn read_stdin() -> anyhow::Result<HookInput> {
    let mut stdin = std::io::stdin();
    if stdin.is_terminal() {
        bail!("--from-hook reads the hook's JSON on stdin, but stdin is a terminal");
    }
    let mut text = String::new();
    stdin
        .read_to_string(&mut text)
        .context("reading the hook input on stdin")?;
    parse(&text)
}

pub fn parse(text: &str) -> anyhow::Result<HookInput> {
    if text.trim().is_empty() {
        return Ok(HookInput::default());
    }
    let v: Value = serde_json::from_str(text).context("the hook input on stdin is not JSON")?;
    let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let prompt = s("prompt").map(|p| {
        let p = p.trim();
        if p.chars().count() > MAX_LABEL_CHARS {
            let cut: String = p.chars().take(MAX_LABEL_CHARS).collect();
            format!("{cut}…")
        } else {
            p.to_string()
        }
    });
    let cwd = s("cwd").or_else(|| {
        v.get("workspace_roots")
            .and_then(Value::as_array)
            .and_then(|a| a.first())
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    Ok(HookInput {
        prompt,
        session: s("session_id").or_else(|| s("conversation_id")),
        cwd: cwd.map(PathBuf::from),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_code_user_prompt_submit() {
        let h = parse(
            r#"{"session_id":"abc","transcript_path":"/t","cwd":"/src/app",
                "hook_event_name":"UserPromptSubmit","prompt":"fix the header\n"}"#,
        )
        .unwrap();
        assert_eq!(h.prompt.as_deref(), Some("fix the header"));
        assert_eq!(h.session.as_deref(), Some("abc"));
        assert_eq!(h.cwd, Some(PathBuf::from("/src/app")));
    }

    #[test]
    fn cursor_style_and_long_prompts() {
        let long = "x".repeat(5000);
        let h = parse(&format!(
            r#"{{"conversation_id":"c1","workspace_roots":["/w"],"prompt":"{long}"}}"#
        ))
        .unwrap();
        assert_eq!(h.session.as_deref(), Some("c1"));
        assert_eq!(h.cwd, Some(PathBuf::from("/w")));
        assert_eq!(h.prompt.unwrap().chars().count(), MAX_LABEL_CHARS + 1);
        assert!(parse("").unwrap().prompt.is_none());
        assert!(parse("not json").is_err());
    }
}
