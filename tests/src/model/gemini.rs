//! The Gemini API as Gemini CLI 0.61 calls it with `GOOGLE_GEMINI_BASE_URL`
//! and `GEMINI_API_KEY` (auth type `gemini-api-key`; the `@google/genai`
//! SDK 1.30 in its bundle, `chunk-*.js`):
//!
//! - A model step is `POST /v1beta/models/MODEL:streamGenerateContent?alt=sse`
//!   with `contents` (the whole conversation, `role` `user` or `model`,
//!   `parts` of `text`, `functionCall`, `functionResponse`), `tools`
//!   (`functionDeclarations`: `write_file`, `replace`, `run_shell_command`,
//!   `read_file`, … and MCP tools as `mcp_SERVER_TOOL`), `systemInstruction`.
//!   The answer is server-sent events, each `data: GenerateContentResponse`
//!   (the SDK splits on a blank line): here one event whose candidate's
//!   `content.parts` are the step's `functionCall`s or its `text`, with
//!   `finishReason: STOP`.
//! - Side requests take no step: `:generateContent` (not streamed) is the
//!   model router's classifier (`complexity_reasoning`, `complexity_score`)
//!   and, when enabled, the next-speaker check (`reasoning`, `next_speaker`):
//!   each parses a JSON object out of the answer's text and ignores keys it
//!   does not know, so one object answers them all. `:countTokens` gets a
//!   count. Anything else is a 404.
//! - An error is the status with Google's error body, e.g. `{"error":
//!   {"code": 400, "message": "…", "status": "INVALID_ARGUMENT"}}`; the CLI
//!   retries 429 and 5xx with backoff, so a test that wants one failure uses
//!   a 4xx.

use serde_json::{json, Value};

use super::{Api, Recorded, Reply, Step};

/// The Gemini API's side; `Box::new(Gemini::default())` for
/// [`super::ModelServer::start`].
#[derive(Default)]
pub struct Gemini {
    calls: usize,
}

/// `MODEL` of `/v1beta/models/MODEL:METHOD…`.
fn model(url: &str) -> &str {
    let tail = url.rsplit("/models/").next().unwrap_or("");
    tail.split(':').next().unwrap_or("")
}

fn response(url: &str, parts: Vec<Value>) -> Value {
    json!({
        "candidates": [{
            "content": {"role": "model", "parts": parts},
            "finishReason": "STOP",
            "index": 0,
        }],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        "modelVersion": model(url),
    })
}

impl Api for Gemini {
    fn is_step(&self, req: &Recorded) -> bool {
        req.method == "POST" && req.url.contains(":streamGenerateContent")
    }

    fn step(&mut self, req: &Recorded, step: &Step) -> Reply {
        let parts = match step {
            Step::Tools(calls) => calls
                .iter()
                .map(|c| {
                    self.calls += 1;
                    json!({"functionCall": {
                        "id": format!("call-{}", self.calls),
                        "name": c.name,
                        "args": c.input,
                    }})
                })
                .collect(),
            Step::Text(text) => vec![json!({"text": text})],
            Step::Error { status, body } => {
                return Reply {
                    status: *status,
                    content_type: "application/json",
                    body: body.clone().into_bytes(),
                }
            }
        };
        Reply::sse([("", response(&req.url, parts))])
    }

    fn side(&mut self, req: &Recorded) -> Reply {
        if req.url.contains(":countTokens") {
            return Reply::json(200, &json!({"totalTokens": 10}));
        }
        if req.url.contains(":generateContent") {
            let answer = json!({
                "complexity_reasoning": "a scripted test",
                "complexity_score": 1,
                "reasoning": "a scripted test",
                "next_speaker": "user",
            });
            return Reply::json(
                200,
                &response(&req.url, vec![json!({"text": answer.to_string()})]),
            );
        }
        Reply::json(
            404,
            &json!({"error": {"code": 404, "message": format!("no {} here", req.url), "status": "NOT_FOUND"}}),
        )
    }
}

/// The texts of a request's `contents` of `role` (`user` or `model`), in
/// order, one string per content (its text parts joined).
pub fn texts(req: &Recorded, role: &str) -> Vec<String> {
    req.json["contents"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["role"] == role)
        .map(|c| {
            c["parts"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join("")
        })
        .filter(|t| !t.is_empty())
        .collect()
}

/// The names of the function declarations a request offers the model.
pub fn tool_names(req: &Recorded) -> Vec<String> {
    req.json["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|t| t["functionDeclarations"].as_array().into_iter().flatten())
        .filter_map(|f| f["name"].as_str().map(str::to_string))
        .collect()
}

/// The `functionResponse` parts of a request, as `(name, response)`.
pub fn function_responses(req: &Recorded) -> Vec<(String, Value)> {
    req.json["contents"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|c| c["parts"].as_array().into_iter().flatten())
        .filter_map(|p| {
            let r = p.get("functionResponse")?;
            Some((r["name"].as_str()?.to_string(), r["response"].clone()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(url: &str) -> Recorded {
        Recorded {
            method: "POST".into(),
            url: url.into(),
            headers: Vec::new(),
            json: Value::Null,
            step: false,
        }
    }

    #[test]
    fn a_tool_step_is_one_event_of_function_calls() {
        let mut g = Gemini::default();
        let req = post("/v1beta/models/gemini-x:streamGenerateContent?alt=sse");
        assert!(g.is_step(&req));
        assert!(!g.is_step(&post("/v1beta/models/gemini-x:generateContent")));
        let step = Step::Tools(vec![super::super::ToolCall::new(
            "write_file",
            json!({"file_path": "a", "content": "b"}),
        )]);
        let body = String::from_utf8(g.step(&req, &step).body).unwrap();
        let data = body.strip_prefix("data: ").unwrap().trim_end();
        let v: Value = serde_json::from_str(data).unwrap();
        let call = &v["candidates"][0]["content"]["parts"][0]["functionCall"];
        assert_eq!(call["name"], "write_file");
        assert_eq!(call["args"]["content"], "b");
        assert_eq!(v["modelVersion"], "gemini-x");
        assert!(body.ends_with("\n\n"));
    }
}
