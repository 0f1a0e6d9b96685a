//! The OpenAI Responses API as Codex CLI 0.171 speaks it to a custom
//! provider (`[model_providers.NAME]` with `base_url = "…/v1"` and
//! `wire_api = "responses"` in `$CODEX_HOME/config.toml`): `POST
//! /v1/responses` with `stream: true`, answered as server-sent events
//! `response.created`, one `response.output_item.done` per output item,
//! `response.completed` with the usage. Codex reads only finished items
//! (openai/codex `codex-rs/codex-api/src/sse/responses.rs`: `output_item.done`
//! items become the turn's items; `completed` ends the stream), so no
//! deltas are sent.
//!
//! Tool calls, as Codex 0.171 offers its tools with a bundled model's
//! metadata (`gpt-5.5`: `shell_type = "shell_command"` becomes the
//! `exec_command` function with `{"cmd": "…"}`, and `apply_patch_tool_type =
//! "freeform"` a `custom` tool whose input is the patch text): a
//! [`ToolCall`](super::ToolCall) whose input is a JSON string is sent as a
//! `custom_tool_call` with that text as `input`; any other input as a
//! `function_call` with it serialized into `arguments`. Codex answers them
//! with `custom_tool_call_output` and `function_call_output` items of the
//! same `call_id` in the next request's `input`.
//!
//! MCP tools: Codex offers each server's tools as a `namespace` tool named
//! `mcp__SERVER` (with `gpt-5.5` only through `tool_search`, its client-side
//! tool discovery, whose `tool_search_output` lists them). A call of
//! `mcp__SERVER__TOOL` is sent as a `function_call` of `name` TOOL in that
//! `namespace`; a call of `tool_search` as a `tool_search_call` whose
//! `arguments` are the input (`{"query": "…"}`). Seen from the real CLI:
//! a plain `mcp__ckpt__list_turns` function call is "unsupported call".

use serde_json::{json, Value};

use super::{Api, Recorded, Reply, Step};

/// Codex's API.
#[derive(Default)]
pub struct Responses {
    responses: usize,
    items: usize,
}

impl Responses {
    pub fn boxed() -> Box<dyn Api> {
        Box::new(Responses::default())
    }

    fn item_id(&mut self) -> usize {
        self.items += 1;
        self.items
    }

    fn stream(&mut self, items: Vec<Value>) -> Reply {
        self.responses += 1;
        let id = format!("resp_ckpt{:04}", self.responses);
        let mut events = vec![json!({"type": "response.created", "response": {"id": id}})];
        for item in items {
            events.push(json!({"type": "response.output_item.done", "item": item}));
        }
        events.push(json!({"type": "response.completed", "response": {
            "id": id,
            "usage": {"input_tokens": 10, "input_tokens_details": null,
                      "output_tokens": 5, "output_tokens_details": null,
                      "total_tokens": 15}}}));
        // Each event named by its type, as the API streams them.
        let named: Vec<(String, Value)> = events
            .into_iter()
            .map(|e| (e["type"].as_str().unwrap_or_default().to_owned(), e))
            .collect();
        Reply::sse(named.iter().map(|(name, e)| (name.as_str(), e.clone())))
    }

    fn message(&mut self, text: &str) -> Value {
        json!({"type": "message", "role": "assistant", "id": format!("msg_ckpt{:04}", self.item_id()),
               "content": [{"type": "output_text", "text": text, "annotations": []}]})
    }
}

/// One tool call as an output item (see the module's doc).
fn call_item(n: usize, name: &str, input: &Value) -> Value {
    let call_id = format!("call_ckpt{n:04}");
    if name == "tool_search" {
        return json!({"type": "tool_search_call", "id": format!("ts_ckpt{n:04}"),
            "call_id": call_id, "status": "completed", "execution": "client",
            "arguments": input});
    }
    if let Some(text) = input.as_str() {
        return json!({"type": "custom_tool_call", "id": format!("ctc_ckpt{n:04}"),
            "call_id": call_id, "name": name, "input": text});
    }
    let mut item = json!({"type": "function_call", "id": format!("fc_ckpt{n:04}"),
        "call_id": call_id, "name": name, "arguments": input.to_string()});
    // An MCP tool: `mcp__SERVER__TOOL` is tool TOOL of namespace `mcp__SERVER`.
    if let Some((server, tool)) = name
        .strip_prefix("mcp__")
        .and_then(|rest| rest.split_once("__"))
    {
        item["namespace"] = json!(format!("mcp__{server}"));
        item["name"] = json!(tool);
    }
    item
}

fn path(req: &Recorded) -> &str {
    req.url.split('?').next().unwrap_or("")
}

impl Api for Responses {
    fn is_step(&self, req: &Recorded) -> bool {
        req.method == "POST" && path(req).ends_with("/responses")
    }

    fn step(&mut self, _req: &Recorded, step: &Step) -> Reply {
        match step {
            Step::Text(text) => {
                let m = self.message(text);
                self.stream(vec![m])
            }
            Step::Tools(calls) => {
                let items = calls
                    .iter()
                    .map(|c| {
                        let n = self.item_id();
                        call_item(n, &c.name, &c.input)
                    })
                    .collect();
                self.stream(items)
            }
            Step::Error { status, body } => {
                let v = serde_json::from_str::<Value>(body).unwrap_or_else(
                    |_| json!({"error": {"type": "server_error", "message": body, "code": null}}),
                );
                Reply::json(*status, &v)
            }
        }
    }

    /// `GET /v1/models` (a provider's model list) gets an empty list;
    /// anything else is not part of this API.
    fn side(&mut self, req: &Recorded) -> Reply {
        if path(req).ends_with("/models") {
            return Reply::json(200, &json!({"object": "list", "data": [], "models": []}));
        }
        Reply::json(
            404,
            &json!({"error": {"type": "not_found", "message": format!("no {} here", req.url)}}),
        )
    }
}
