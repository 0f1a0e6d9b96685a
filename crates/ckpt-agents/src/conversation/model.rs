//! The model an agent's transcript names: Claude Code, Codex and Gemini
//! CLI each write a `"model": "…"` key into their JSON Lines (an assistant
//! message's, a turn's context), so the newest such key in the file's tail
//! is the model the session used last.

use std::path::Path;

use serde_json::Value;

use super::{jsonl, TAIL_BYTES};

/// The model named last in the transcript at `path`; `None` when the file
/// cannot be read or names none.
pub fn model_of(path: &Path) -> Option<String> {
    let (tail, _) = jsonl::read_tail(path, TAIL_BYTES).ok()?;
    tail.lines
        .iter()
        .rev()
        .filter_map(|l| tail.parse(l).ok())
        .find_map(|v| find_model(&v))
}

/// The first string under a `model` key, depth first.
fn find_model(v: &Value) -> Option<String> {
    match v {
        Value::Object(m) => match m.get("model") {
            Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
            _ => m.values().find_map(find_model),
        },
        Value::Array(a) => a.iter().find_map(find_model),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_agents_transcript_names_its_model() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/conversation/testdata");
        for (file, model) in [
            ("claude-code-2.1.197.jsonl", "claude-opus-4-8"),
            ("codex-0.171.0.jsonl", "gpt-5"),
            ("gemini-cli-0.61.0.jsonl", "gemini-3.1-pro-preview"),
        ] {
            assert_eq!(model_of(&dir.join(file)).as_deref(), Some(model), "{file}");
        }
        assert_eq!(model_of(&dir.join("no-such-file")), None);
    }
}
