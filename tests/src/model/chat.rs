//! OpenAI Chat Completions with streaming, as OpenCode 1.18.33 calls it for
//! a provider of its config that uses `@ai-sdk/openai-compatible` (bundled
//! in its binary; `options.baseURL` is the server's `URL/v1`):
//!
//! - A model step is `POST /v1/chat/completions` with `stream: true`,
//!   `messages` (`system`, `user`, `assistant` with `tool_calls`, `tool`
//!   with `tool_call_id`) and `tools` (`type: function`: OpenCode's `bash`,
//!   `edit`, `write`, `read`, … and MCP tools as `SERVER_TOOL`). The answer
//!   is server-sent `data:` events of `chat.completion.chunk`s: a tool call
//!   is one delta `tool_calls: [{index, id, type, function: {name,
//!   arguments}}]` whose `arguments` is already the whole JSON (the SDK
//!   emits a call once they parse), then `finish_reason: tool_calls`; text
//!   is a `content` delta and `finish_reason: stop`; then `data: [DONE]`.
//! - Side requests take no step: the session's title (`chat/completions`
//!   with no `tools`, from the `small_model`) gets a streamed text; the npm
//!   registry lookups of OpenCode's background plugin install (when
//!   `npm_config_registry` points here) and anything else get a 404.
//! - An error is the status with OpenAI's error body, e.g. `{"error":
//!   {"message": "…", "type": "invalid_request_error"}}`.

use serde_json::{json, Value};

use super::{Api, Recorded, Reply, Step};

/// The Chat Completions API's side; `Box::new(Chat::default())` for
/// [`super::ModelServer::start`].
#[derive(Default)]
pub struct Chat {
    calls: usize,
}

fn is_chat(req: &Recorded) -> bool {
    req.method == "POST"
        && req
            .url
            .split('?')
            .next()
            .unwrap_or("")
            .ends_with("/chat/completions")
}

fn chunk(delta: Value, finish: Option<&str>) -> Value {
    let mut c = json!({
        "id": "chatcmpl-scripted",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "scripted",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    });
    if finish.is_some() {
        c["usage"] = json!({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15});
    }
    c
}

/// `data: CHUNK` events, then `data: [DONE]`.
fn stream(chunks: &[Value]) -> Reply {
    let mut body = String::new();
    for c in chunks {
        body.push_str(&format!("data: {c}\n\n"));
    }
    body.push_str("data: [DONE]\n\n");
    Reply {
        status: 200,
        content_type: "text/event-stream",
        body: body.into_bytes(),
    }
}

fn text(t: &str) -> Reply {
    stream(&[
        chunk(json!({"role": "assistant", "content": t}), None),
        chunk(json!({}), Some("stop")),
    ])
}

impl Api for Chat {
    fn is_step(&self, req: &Recorded) -> bool {
        is_chat(req) && req.json["tools"].as_array().is_some_and(|t| !t.is_empty())
    }

    fn step(&mut self, _req: &Recorded, step: &Step) -> Reply {
        match step {
            Step::Tools(calls) => {
                let deltas: Vec<Value> = calls
                    .iter()
                    .enumerate()
                    .map(|(i, c)| {
                        self.calls += 1;
                        chunk(
                            json!({"role": "assistant", "tool_calls": [{
                                "index": i,
                                "id": format!("call_{}", self.calls),
                                "type": "function",
                                "function": {"name": c.name, "arguments": c.input.to_string()},
                            }]}),
                            None,
                        )
                    })
                    .chain([chunk(json!({}), Some("tool_calls"))])
                    .collect();
                stream(&deltas)
            }
            Step::Text(t) => text(t),
            Step::Error { status, body } => Reply {
                status: *status,
                content_type: "application/json",
                body: body.clone().into_bytes(),
            },
        }
    }

    fn side(&mut self, req: &Recorded) -> Reply {
        if is_chat(req) {
            if req.json["stream"] == true {
                return text("A scripted session");
            }
            return Reply::json(
                200,
                &json!({
                    "id": "chatcmpl-scripted",
                    "object": "chat.completion",
                    "created": 0,
                    "model": "scripted",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": "A scripted session"}, "finish_reason": "stop"}],
                }),
            );
        }
        Reply::json(
            404,
            &json!({"error": {"message": format!("no {} here", req.url), "type": "not_found"}}),
        )
    }
}

/// The names of the tools a request offers the model.
pub fn tool_names(req: &Recorded) -> Vec<String> {
    req.json["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
        .collect()
}

/// The `user` messages of a request: their texts, in order.
pub fn user_texts(req: &Recorded) -> Vec<String> {
    req.json["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "user")
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            Value::Array(parts) => parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join(""),
            other => other.to_string(),
        })
        .collect()
}

/// The `tool` messages of a request: their contents, in order.
pub fn tool_results(req: &Recorded) -> Vec<String> {
    req.json["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_step_streams_whole_arguments_then_tool_calls() {
        let mut c = Chat::default();
        let req = Recorded {
            method: "POST".into(),
            url: "/v1/chat/completions".into(),
            headers: Vec::new(),
            json: json!({"stream": true, "tools": [{"type": "function", "function": {"name": "bash"}}]}),
            step: false,
        };
        assert!(c.is_step(&req));
        let step = Step::Tools(vec![super::super::ToolCall::new(
            "bash",
            json!({"command": "rm a"}),
        )]);
        let body = String::from_utf8(c.step(&req, &step).body).unwrap();
        let events: Vec<&str> = body
            .split("\n\n")
            .filter_map(|e| e.strip_prefix("data: "))
            .collect();
        assert_eq!(events.last(), Some(&"[DONE]"));
        let first: Value = serde_json::from_str(events[0]).unwrap();
        let call = &first["choices"][0]["delta"]["tool_calls"][0];
        assert_eq!(call["function"]["name"], "bash");
        let args: Value =
            serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
        assert_eq!(args["command"], "rm a");
        let last: Value = serde_json::from_str(events[1]).unwrap();
        assert_eq!(last["choices"][0]["finish_reason"], "tool_calls");
    }
}
