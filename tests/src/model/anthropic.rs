//! The Anthropic Messages API as Claude Code 2.1 speaks it: `POST
//! /v1/messages?beta=true` with `stream: true`, answered as server-sent
//! events (`message_start`, a `content_block_start`/`_delta`/`_stop` triple
//! per block, `message_delta` with the stop reason, `message_stop`), tool
//! calls as `tool_use` blocks whose input arrives as one `input_json_delta`.
//! Event shapes: anthropics/anthropic-sdk-typescript
//! `src/resources/messages/messages.ts` (`RawMessageStreamEvent`) and the
//! streaming page of the API reference (docs.anthropic.com, "Streaming
//! Messages"); error bodies `{"type": "error", "error": {"type", "message"}}`
//! from its "Errors" page.
//!
//! What Claude Code sends besides its loop's steps, seen from the real CLI
//! pointed here with `ANTHROPIC_BASE_URL`: a `HEAD /` connectivity check
//! before the first request; `/v1/messages/count_tokens` and requests with
//! no tools (titles, summaries, the small model's side questions) in other
//! modes. Those are answered here without taking a step off the script.

use serde_json::{json, Value};

use super::{Api, Recorded, Reply, Step};

/// Claude Code's API. Each step's message and tool calls get ids of their
/// own: Claude Code merges consecutive assistant messages that share a
/// message id into one.
#[derive(Default)]
pub struct Anthropic {
    messages: usize,
    tools: usize,
}

impl Anthropic {
    pub fn boxed() -> Box<dyn Api> {
        Box::new(Anthropic::default())
    }

    fn message_id(&mut self) -> String {
        self.messages += 1;
        format!("msg_ckpt{:04}", self.messages)
    }
}

fn path(req: &Recorded) -> &str {
    req.url.split('?').next().unwrap_or("")
}

fn model(req: &Recorded) -> Value {
    req.json
        .get("model")
        .cloned()
        .unwrap_or_else(|| json!("claude-test"))
}

/// The stream of one assistant message holding `blocks` (each a finished
/// `text` or `tool_use` content block).
fn stream(id: &str, model: Value, blocks: &[Value], stop_reason: &str) -> Reply {
    let mut events = vec![(
        "message_start",
        json!({"type": "message_start", "message": {
            "id": id, "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 10, "output_tokens": 1,
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}}),
    )];
    for (index, block) in blocks.iter().enumerate() {
        let (start, delta) = match block["type"].as_str() {
            Some("tool_use") => (
                json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}),
                json!({"type": "input_json_delta", "partial_json": block["input"].to_string()}),
            ),
            _ => (
                json!({"type": "text", "text": ""}),
                json!({"type": "text_delta", "text": block["text"]}),
            ),
        };
        events.push((
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": start}),
        ));
        events.push((
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index, "delta": delta}),
        ));
        events.push((
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
    }
    events.push((
        "message_delta",
        json!({"type": "message_delta",
               "delta": {"stop_reason": stop_reason, "stop_sequence": null},
               "usage": {"output_tokens": 5}}),
    ));
    events.push(("message_stop", json!({"type": "message_stop"})));
    Reply::sse(events)
}

impl Api for Anthropic {
    /// A streamed `/v1/messages` that offers tools: the agent's loop (side
    /// questions to the small model come without tools).
    fn is_step(&self, req: &Recorded) -> bool {
        req.method == "POST"
            && path(req) == "/v1/messages"
            && req.json["stream"] == true
            && req.json["tools"].as_array().is_some_and(|t| !t.is_empty())
    }

    fn step(&mut self, req: &Recorded, step: &Step) -> Reply {
        let id = self.message_id();
        match step {
            Step::Text(text) => stream(
                &id,
                model(req),
                &[json!({"type": "text", "text": text})],
                "end_turn",
            ),
            Step::Tools(calls) => {
                let blocks: Vec<Value> = calls
                    .iter()
                    .map(|c| {
                        self.tools += 1;
                        json!({"type": "tool_use", "id": format!("toolu_ckpt{:04}", self.tools),
                               "name": c.name, "input": c.input})
                    })
                    .collect();
                stream(&id, model(req), &blocks, "tool_use")
            }
            Step::Error { status, body } => error(*status, body),
        }
    }

    fn side(&mut self, req: &Recorded) -> Reply {
        match (req.method.as_str(), path(req)) {
            ("POST", "/v1/messages/count_tokens") => {
                // Roughly four bytes a token, as the API's own estimate goes.
                let tokens = req.json.to_string().len() / 4 + 1;
                Reply::json(200, &json!({"input_tokens": tokens}))
            }
            ("POST", "/v1/messages") => {
                let id = self.message_id();
                let text = "ckpt test";
                if req.json["stream"] == true {
                    stream(
                        &id,
                        model(req),
                        &[json!({"type": "text", "text": text})],
                        "end_turn",
                    )
                } else {
                    Reply::json(
                        200,
                        &json!({"id": id, "type": "message", "role": "assistant",
                                "model": model(req),
                                "content": [{"type": "text", "text": text}],
                                "stop_reason": "end_turn", "stop_sequence": null,
                                "usage": {"input_tokens": 10, "output_tokens": 2}}),
                    )
                }
            }
            // `HEAD /` (a connectivity check) and anything else: nothing to say.
            _ => Reply::json(200, &json!({})),
        }
    }
}

/// An API error as the API sends it: `body` as is when it is JSON, else
/// wrapped as an `api_error` message.
fn error(status: u16, body: &str) -> Reply {
    match serde_json::from_str::<Value>(body) {
        Ok(v) => Reply::json(status, &v),
        Err(_) => Reply::json(
            status,
            &json!({"type": "error", "error": {"type": "api_error", "message": body}}),
        ),
    }
}
