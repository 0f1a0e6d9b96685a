//! Which model made a turn, read from the agent's transcript: ckpt's
//! hooks record the transcript's path, and Claude Code, Codex and Gemini
//! CLI each write a `"model"` field in their JSON lines.

use std::path::Path;

/// The last model a transcript (JSON lines, or one JSON document) names;
/// `None` when it cannot be read or names none.
pub fn from_transcript(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut found = None;
    for line in text.lines() {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(line) {
            if let Some(m) = last_model(&v) {
                found = Some(m);
            }
        }
    }
    found.or_else(|| last_model(&serde_json::from_str(&text).ok()?))
}

/// The last string under a `model` key, depth first.
fn last_model(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::Object(map) => {
            let mut found = None;
            for (k, v) in map {
                let inner = match v {
                    serde_json::Value::String(s) if k == "model" && !s.is_empty() => {
                        Some(s.clone())
                    }
                    _ => last_model(v),
                };
                found = inner.or(found);
            }
            found
        }
        serde_json::Value::Array(items) => items.iter().rev().find_map(last_model),
        _ => None,
    }
}

/// `provider/model` as models.dev writes it (what Agent Trace's
/// `model_id` takes); `None` when the provider cannot be told.
pub fn model_id(model: &str) -> Option<String> {
    if model.contains('/') {
        return Some(model.to_owned());
    }
    let m = model.to_ascii_lowercase();
    let provider = if m.starts_with("claude") {
        "anthropic"
    } else if m.starts_with("gpt")
        || m.starts_with("codex")
        || (m.starts_with('o') && m[1..].starts_with(|c: char| c.is_ascii_digit()))
    {
        "openai"
    } else if m.starts_with("gemini") || m.starts_with("gemma") {
        "google"
    } else if m.starts_with("grok") {
        "xai"
    } else if m.starts_with("mistral") || m.starts_with("codestral") || m.starts_with("devstral") {
        "mistral"
    } else if m.starts_with("deepseek") {
        "deepseek"
    } else if m.starts_with("qwen") {
        "alibaba"
    } else {
        return None;
    };
    Some(format!("{provider}/{model}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn testdata(name: &str) -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../ckpt-agents/src/conversation/testdata")
            .join(name)
    }

    #[test]
    fn each_agents_transcript_names_its_model() {
        for (file, want) in [
            ("claude-code-2.1.197.jsonl", "anthropic/claude-opus-4-8"),
            ("codex-0.171.0.jsonl", "openai/gpt-5"),
            ("gemini-cli-0.61.0.jsonl", "google/gemini-3.1-pro-preview"),
        ] {
            let model = from_transcript(&testdata(file)).expect(file);
            assert_eq!(model_id(&model).as_deref(), Some(want), "{file}");
        }
        assert_eq!(from_transcript(Path::new("/nonexistent/t.jsonl")), None);
    }

    #[test]
    fn a_model_id_names_its_provider_when_it_can() {
        assert_eq!(model_id("o3-mini").as_deref(), Some("openai/o3-mini"));
        assert_eq!(
            model_id("openrouter/x").as_deref(),
            Some("openrouter/x"),
            "already provider/model"
        );
        assert_eq!(model_id("ollama-local"), None);
    }
}
