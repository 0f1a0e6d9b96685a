//! A scripted model server for the real-agent tier: the agents' own base-URL
//! settings point them at it on 127.0.0.1, and each request that asks the
//! model for its next step gets the next [`Step`] of the test's script,
//! written in that agent's API (Anthropic Messages, OpenAI Responses and Chat
//! Completions, Gemini). Every request is recorded so a test can check what
//! the agent sent (a resumed conversation's earlier turns, say).
//!
//! ```no_run
//! use ckpt_e2e::model::{ModelServer, Step, ToolCall};
//! # fn api() -> Box<dyn ckpt_e2e::model::Api> { unimplemented!() }
//! let server = ModelServer::start(api());
//! server.push(Step::Tools(vec![ToolCall::new("Bash", serde_json::json!({"command": "rm a.txt"}))]));
//! server.push(Step::Text("done".into()));
//! // point the agent at server.url() and run it
//! ```

pub mod anthropic;
pub mod chat;
pub mod gemini;
pub mod responses;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use serde_json::Value;

/// What the model does next, in any API's terms.
#[derive(Debug, Clone)]
pub enum Step {
    /// Call these tools (in one response), then wait for their results.
    Tools(Vec<ToolCall>),
    /// Answer with this text and end the turn.
    Text(String),
    /// Fail the request with this HTTP status and body (an API error).
    Error { status: u16, body: String },
}

#[derive(Debug, Clone)]
pub struct ToolCall {
    /// The agent's own tool name (`Bash`, `Edit`, `shell`, `replace`, …).
    pub name: String,
    pub input: Value,
}

impl ToolCall {
    pub fn new(name: &str, input: Value) -> ToolCall {
        ToolCall {
            name: name.to_string(),
            input,
        }
    }
}

/// One HTTP request as the agent sent it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    /// Path and query, as sent (`/v1/messages?beta=true`).
    pub url: String,
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON (`Value::Null` when empty or not JSON).
    pub json: Value,
    /// Whether the API treated it as a model step (it took one off the script).
    pub step: bool,
}

/// An HTTP reply.
pub struct Reply {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn json(status: u16, v: &Value) -> Reply {
        Reply {
            status,
            content_type: "application/json",
            body: serde_json::to_vec(v).expect("a Value serializes"),
        }
    }

    /// A server-sent-events body: each `(event, data)` pair as one event
    /// (an empty event name writes only the `data:` line).
    pub fn sse<'a>(events: impl IntoIterator<Item = (&'a str, Value)>) -> Reply {
        let mut body = String::new();
        for (event, data) in events {
            if !event.is_empty() {
                body.push_str(&format!("event: {event}\n"));
            }
            body.push_str(&format!("data: {data}\n\n"));
        }
        Reply {
            status: 200,
            content_type: "text/event-stream",
            body: body.into_bytes(),
        }
    }
}

/// One API's side of the conversation.
pub trait Api: Send {
    /// Whether `req` asks the model for the next step of the agent's loop
    /// (agents also send side requests: titles, token counts, model lists).
    fn is_step(&self, req: &Recorded) -> bool;
    /// The reply to a step request, writing `step` in this API's format.
    fn step(&mut self, req: &Recorded, step: &Step) -> Reply;
    /// The reply to any other request.
    fn side(&mut self, req: &Recorded) -> Reply;
}

/// Something a test does when a step request arrives, before it is answered.
type BeforeStep = Box<dyn FnOnce() + Send>;

struct Shared {
    script: VecDeque<Step>,
    requests: Vec<Recorded>,
    /// Step requests answered so far.
    steps: usize,
    /// By the index of the step request they wait for.
    before: Vec<(usize, BeforeStep)>,
}

/// The running server; stops when dropped.
pub struct ModelServer {
    server: Arc<tiny_http::Server>,
    shared: Arc<Mutex<Shared>>,
    thread: Option<JoinHandle<()>>,
    port: u16,
}

impl ModelServer {
    pub fn start(mut api: Box<dyn Api>) -> ModelServer {
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").expect("bind 127.0.0.1:0"));
        let port = server.server_addr().to_ip().expect("an IP listener").port();
        let shared = Arc::new(Mutex::new(Shared {
            script: VecDeque::new(),
            requests: Vec::new(),
            steps: 0,
            before: Vec::new(),
        }));
        let thread = {
            let server = Arc::clone(&server);
            let shared = Arc::clone(&shared);
            std::thread::spawn(move || {
                for mut request in server.incoming_requests() {
                    let mut body = Vec::new();
                    let _ = request.as_reader().read_to_end(&mut body);
                    let mut rec = Recorded {
                        method: request.method().to_string(),
                        url: request.url().to_string(),
                        headers: request
                            .headers()
                            .iter()
                            .map(|h| (h.field.to_string(), h.value.to_string()))
                            .collect(),
                        json: serde_json::from_slice(&body).unwrap_or(Value::Null),
                        step: false,
                    };
                    let reply = if api.is_step(&rec) {
                        rec.step = true;
                        let due: Vec<BeforeStep> = {
                            let mut sh = shared.lock().expect("not poisoned");
                            let n = sh.steps;
                            sh.steps += 1;
                            let (due, later) = std::mem::take(&mut sh.before)
                                .into_iter()
                                .partition(|(at, _)| *at == n);
                            sh.before = later;
                            due.into_iter().map(|(_, f)| f).collect()
                        };
                        // Unlocked: what the test does may take a while.
                        for f in due {
                            f();
                        }
                        let step = shared.lock().expect("not poisoned").script.pop_front();
                        match step {
                            Some(step) => api.step(&rec, &step),
                            // A script that ran out is the test's mistake: say so to the agent.
                            None => Reply::json(
                                500,
                                &serde_json::json!({"error": {"message": "the test's script has no more steps"}}),
                            ),
                        }
                    } else {
                        api.side(&rec)
                    };
                    shared.lock().expect("not poisoned").requests.push(rec);
                    let header = tiny_http::Header::from_bytes("Content-Type", reply.content_type)
                        .expect("a valid header");
                    let response = tiny_http::Response::from_data(reply.body)
                        .with_status_code(reply.status)
                        .with_header(header);
                    let _ = request.respond(response);
                }
            })
        };
        ModelServer {
            server,
            shared,
            thread: Some(thread),
            port,
        }
    }

    /// `http://127.0.0.1:PORT` (no trailing slash).
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Appends a step to the script.
    pub fn push(&self, step: Step) {
        self.shared
            .lock()
            .expect("not poisoned")
            .script
            .push_back(step);
    }

    /// Runs `f` when the step request with index `n` (0 for the first)
    /// arrives, before it is answered: the agent waits for its model
    /// meanwhile, so `f` acts at a known point of the agent's loop (after
    /// the tool calls of step `n - 1` and their hooks).
    pub fn before_step(&self, n: usize, f: impl FnOnce() + Send + 'static) {
        self.shared
            .lock()
            .expect("not poisoned")
            .before
            .push((n, Box::new(f)));
    }

    /// Steps not taken yet.
    pub fn remaining(&self) -> usize {
        self.shared.lock().expect("not poisoned").script.len()
    }

    /// Every request so far, in order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.lock().expect("not poisoned").requests.clone()
    }

    /// The step requests so far, in order.
    pub fn step_requests(&self) -> Vec<Recorded> {
        self.requests().into_iter().filter(|r| r.step).collect()
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The executable of a real agent that `scripts/agents/install.sh` installed
/// (`name` as in that script: `claude-code`, `codex`, `gemini`, `opencode`),
/// under `$CKPT_AGENTS_DIR` (relative to the workspace's root) or the
/// workspace's `target/agents`.
///
/// Not installed: with `CKPT_REAL_AGENTS=require` (what `.ci/run` sets) the
/// test fails; otherwise it says so on stderr and the test returns early.
pub fn installed_agent(name: &str, bin: &str) -> Option<std::path::PathBuf> {
    // Relative to the workspace, not to the test's working directory
    // (cargo runs tests in their package's directory).
    let workspace = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = workspace.join(std::env::var_os("CKPT_AGENTS_DIR").unwrap_or("target/agents".into()));
    let exe = dir.join(name).join("node_modules/.bin").join(bin);
    if exe.exists() {
        return Some(exe);
    }
    let why = format!(
        "the real agent {name} is not installed at {}: run scripts/agents/install.sh",
        exe.display()
    );
    if std::env::var("CKPT_REAL_AGENTS").as_deref() == Ok("require") {
        panic!("{why} (CKPT_REAL_AGENTS=require)");
    }
    eprintln!("SKIPPED: {why}");
    None
}
