//! `ckpt-mcp`, run as `ckptctl mcp`: an MCP server on stdin/stdout, so the
//! agent's model can list, inspect, rewind and redo its own turns when the
//! user asks it to.
//!
//! Every tool is answered by the same functions as the CLI command of the
//! same name and returns the document `ckptctl --json` prints; a failure is
//! a tool error (`isError`) carrying the message the CLI prints. A rewind or
//! redo only plans unless the call says `confirm: true`, and it never
//! forces: paths the user edited after the agent keep it refused.
//!
//! rmcp is async, and this is the only place that builds a runtime (one
//! thread; each daemon request runs on its blocking pool). It is an
//! executable of its own, which `ckptctl mcp` execs, so that `ckptctl`,
//! started on every hook call, links neither rmcp nor tokio.
//!
//! ```text
//! claude mcp add ckpt -- ckptctl mcp
//! ```

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use ckpt_proto::{
    Bucket, LedgerFilter, LedgerStatus, LineSpan, Outcome, RewindFlags, Severity, WirePath,
};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{schemars, tool, tool_handler, tool_router, ServerHandler, ServiceExt};
use std::process::ExitCode;

use ckptctl::cli::{Global, LOG_LIMIT};
use ckptctl::commands::{diff, ledger, log, rewind, show, status, Ctx};
use ckptctl::output;
use clap::Parser;
use serde::{Deserialize, Serialize};

/// MCP server of ckpt on stdin/stdout; run it as `ckptctl mcp`.
#[derive(Parser, Debug)]
#[command(name = "ckpt-mcp", version)]
struct Cli {
    #[command(flatten)]
    global: Global,
}

fn main() -> ExitCode {
    // SAFETY: at start-up, before any thread exists.
    unsafe { ckptctl::default_sigpipe() };
    let cli = Cli::parse();
    let json = cli.global.json;
    ckptctl::exit_code(Ctx::new(cli.global).and_then(run), json)
}

/// Serves MCP on stdin/stdout until the client closes stdin.
fn run(ctx: Ctx) -> anyhow::Result<u8> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime for the MCP server")?;
    rt.block_on(async {
        let server = Ckpt::new(ctx)
            .serve(rmcp::transport::stdio())
            .await
            .context("starting the MCP session on stdin/stdout")?;
        server.waiting().await.context("serving MCP")?;
        Ok(0)
    })
}

/// How many of a rewind's actions (`counts` has them all) or a turn's
/// paths (`total_entries` counts them) a result lists: the model reads the
/// result whole, and a full-tree rewind of 50,000 files would be 21 MB of
/// it.
const LISTED: u64 = 100;

const INSTRUCTIONS: &str = "ckpt records every change made to this project's files, \
turn by turn (a turn is one user prompt and what the agent did for it), and can put \
them back exactly. Use these tools when the user asks what you changed earlier or \
asks you to undo it. rewind and redo only return their plan unless called with \
confirm: true; they never overwrite files the user edited after you. The slop \
ledger (ledger_add, ledger_query) records residue left in the code: check it before \
changing a file, and add to it when you leave some.";

#[derive(Clone)]
struct Ckpt {
    ctx: Arc<Ctx>,
    tool_router: ToolRouter<Ckpt>,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct ListTurns {
    /// How many turns to list, newest first [default: 20].
    limit: Option<usize>,
    /// Only this session's turns (the `session` list_turns shows).
    session: Option<String>,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct ShowTurn {
    /// The turn's id, as list_turns gives it.
    turn: i64,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct DiffTurn {
    /// The turn's id, as list_turns gives it.
    turn: i64,
    /// Only these paths (and what is below them): relative to the project
    /// root, as show_turn lists them, or absolute.
    #[serde(default)]
    paths: Vec<String>,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct Rewind {
    /// The oldest turn to undo: it and every later turn of its session are
    /// undone (another session's turns are left; a path one changed too is
    /// a conflict naming it).
    turn: i64,
    /// Keep `turn` and undo only its session's later turns (the state
    /// just after `turn`). An error when no later turn of its session is
    /// live.
    #[serde(default)]
    after: bool,
    /// Only these paths (and what is below them): relative to the project
    /// root, as show_turn lists them, or absolute. Default: every path the
    /// undone turns touched.
    #[serde(default)]
    paths: Vec<String>,
    /// Apply the rewind. Without it nothing changes and the plan is returned.
    #[serde(default)]
    confirm: bool,
    /// Fork the conversation back to before `turn` too: a new session next
    /// to the original, whose resume command the answer names.
    #[serde(default)]
    conversation: bool,
    /// Keep the user's later edits to text files instead of refusing them:
    /// a three-way merge undoes only the turns' change (`merged` in the
    /// answer). Overlapping edits leave the file as it is.
    #[serde(default)]
    merge: bool,
    /// Apply it even though some undone turn's capture is partial
    /// (`partial_capture` in the plan: files ckpt could not capture, which
    /// it cannot restore). Only after telling the user what stays as it is.
    #[serde(default)]
    accept_partial: bool,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct Redo {
    /// Apply the redo. Without it nothing changes and the plan is returned.
    #[serde(default)]
    confirm: bool,
    /// Name the session that holds the redone turns (the original one).
    #[serde(default)]
    conversation: bool,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct LedgerAdd {
    /// The file, relative to the project root (or absolute).
    path: String,
    /// First line of the span (1-based); omit for the whole file.
    start_line: Option<u32>,
    /// Last line of the span [default: start_line].
    end_line: Option<u32>,
    /// One of compat-shim, unmigrated-callers, duplicate-concept,
    /// naming-drift, stale-docs-tests, suspected-dead-code, tool-gap.
    bucket: String,
    /// low, medium, high or critical.
    severity: String,
    /// How sure you are, 0 to 1 (say 0.5 for "nobody seems to call this").
    confidence: f64,
    /// What it is, why it is there and what would remove it.
    note: String,
    /// Who should deal with it [default: agent:<your agent name>].
    owner: Option<String>,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct LedgerQuery {
    /// Only entries about this file or directory (relative to the project
    /// root, or absolute).
    path: Option<String>,
    /// Only this bucket.
    bucket: Option<String>,
    /// open (the default), resolved, wont-fix or rewound; "any" for all.
    status: Option<String>,
}

#[tool_router]
impl Ckpt {
    fn new(ctx: Ctx) -> Ckpt {
        Ckpt {
            ctx: Arc::new(ctx),
            tool_router: Self::tool_router(),
        }
    }

    /// The turns ckpt recorded in this project, newest first: id, label
    /// (the user's prompt), agent, session, status (open, closed, rewound)
    /// and how many paths each added, modified and deleted. Use it first
    /// whenever the user refers to earlier work ("undo your last change",
    /// "what did you do before the tests passed"), to find the turn's id;
    /// the open turn on top is usually the current request.
    #[tool(annotations(read_only_hint = true))]
    async fn list_turns(&self, Parameters(a): Parameters<ListTurns>) -> CallToolResult {
        let limit = a.limit.unwrap_or(LOG_LIMIT as usize);
        self.call(move |ctx| log::query(ctx, limit, a.session))
            .await
    }

    /// The paths one turn added, modified or deleted, with their states
    /// before and after it (the first 100; `total_entries` counts a longer
    /// list). Use it to see what a turn touched before describing or
    /// rewinding it.
    #[tool(annotations(read_only_hint = true))]
    async fn show_turn(&self, Parameters(a): Parameters<ShowTurn>) -> CallToolResult {
        self.call(move |ctx| show::query(ctx, a.turn, Some(LISTED)))
            .await
    }

    /// Unified diff of one turn, from before it to after it (to now while
    /// it is open); binary files are named, not shown. Use it when the user
    /// asks what changed in a turn, or to check a turn before rewinding it.
    #[tool(annotations(read_only_hint = true))]
    async fn diff_turn(&self, Parameters(a): Parameters<DiffTurn>) -> CallToolResult {
        self.call(move |ctx| diff::query(ctx, a.turn, wire_paths(ctx, &a.paths)?))
            .await
    }

    /// Undo turn `turn` and every later turn: the files they touched go
    /// back to what they were just before `turn` (only `paths`, when
    /// given); the user's other files are untouched. Use when the user asks
    /// to undo, revert or roll back what you did in the last turn(s): find
    /// the turn with list_turns. Without `confirm: true` nothing changes:
    /// it returns the plan (`actions`, the first 100 paths, with `counts`
    /// of all; `conflicts`, `skipped`); tell the user what it would do when
    /// in doubt, then call again with `confirm: true`. `conflicts` are
    /// files edited after your turns, by the user: the rewind is refused
    /// then and nothing changes; tell the user (they can pass `paths` to
    /// rewind the other files, or run `ckptctl rewind N --force`
    /// themselves). The turn you are in now is undone with them
    /// (what you did for this prompt so far too); what you do after the
    /// rewind is recorded in a new turn that continues it (`continued` in
    /// the answer). `redo` undoes a rewind. With `conversation:
    /// true` your conversation is forked back to before `turn` as well (a
    /// new session; the answer's `conversation` names the command that
    /// resumes it, or says in `skipped` why it was not forked). The plan's
    /// `effects` are commands the undone turns ran that a rewind does not
    /// undo (a push, a publish…): tell the user. A turn whose capture is
    /// partial (`partial_capture`) is refused unless `accept_partial: true`.
    #[tool(annotations(destructive_hint = true, idempotent_hint = false))]
    async fn rewind(&self, Parameters(a): Parameters<Rewind>) -> CallToolResult {
        let dry_run = !a.confirm;
        let r = self.call_raw(move |ctx| {
            let paths = wire_paths(ctx, &a.paths)?;
            let partial = !paths.is_empty();
            let req = |dry_run| ckpt_proto::Rewind {
                dir: ctx.wire_dir(),
                to: if a.after {
                    ckpt_proto::RewindTo::After(a.turn)
                } else {
                    ckpt_proto::RewindTo::Before(a.turn)
                },
                paths: paths.clone(),
                // Never forced: the user's own edits keep it refused.
                flags: RewindFlags {
                    dry_run,
                    ..RewindFlags::default()
                },
                merge: a.merge.then_some(ckpt_proto::MergeMode::Clean),
                list: Some(LISTED),
            };
            if !dry_run && !a.accept_partial {
                let plan = rewind::request_rewind(ctx, req(true), false)?;
                if let Some(p) = plan.body.caveats.partial_capture.first() {
                    let mut gaps = Vec::new();
                    output::caveats(&mut gaps, &plan.body.caveats)?;
                    anyhow::bail!(
                        "refused: the capture of turn {} is partial, so this rewind cannot restore \
                         everything; nothing changed. Tell the user what it cannot restore, and \
                         call again with accept_partial: true if they agree:\n{}",
                        p.turn,
                        String::from_utf8_lossy(&gaps).trim_end()
                    );
                }
            }
            let r = rewind::request_rewind(ctx, req(dry_run), false)?;
            Ok(rewind::with(ctx, r, a.conversation, partial))
        });
        rewind_result(r.await)
    }

    /// Undo the last rewind exactly: the files it restored get the content
    /// they had before it. Use when the user wants back what a rewind
    /// undid. Without `confirm: true` nothing changes: it returns the plan;
    /// it is refused, changing nothing, if files were edited since the
    /// rewind (`conflicts`) or the tree cannot be put back exactly
    /// (`blocked`).
    #[tool(annotations(destructive_hint = true, idempotent_hint = false))]
    async fn redo(&self, Parameters(a): Parameters<Redo>) -> CallToolResult {
        let dry_run = !a.confirm;
        let r = self.call_raw(move |ctx| {
            let flags = RewindFlags {
                dry_run,
                ..RewindFlags::default()
            };
            let r = rewind::request_redo(ctx, flags, Some(LISTED), false)?;
            Ok(rewind::with(ctx, r, a.conversation, false))
        });
        rewind_result(r.await)
    }

    /// Record residue you leave in the code, so that the next agent or
    /// person does not mistake it for design: a compatibility shim, callers
    /// you did not migrate, a concept now duplicated, naming that drifted,
    /// docs or tests left stale, code you suspect is dead, a tool gap you
    /// worked around. Call it before you end a turn that leaves any, one
    /// entry per place, with an honest confidence. It is kept with the
    /// current turn (rewinding the turn marks it rewound). Returns the id.
    #[tool]
    async fn ledger_add(&self, Parameters(a): Parameters<LedgerAdd>) -> CallToolResult {
        self.call(move |ctx| {
            let span = match (a.start_line, a.end_line) {
                (Some(start), end) => Some(LineSpan {
                    start,
                    end: end.unwrap_or(start),
                }),
                (None, Some(_)) => anyhow::bail!("end_line without start_line"),
                (None, None) => None,
            };
            anyhow::ensure!(
                a.confidence.is_finite(),
                "confidence must be between 0 and 1"
            );
            let entry = ledger::NewEntry {
                path: one_path(ctx, &a.path)?,
                span,
                bucket: Bucket::parse(&a.bucket)?,
                severity: Severity::parse(&a.severity)?,
                confidence: a.confidence,
                owner: a.owner,
                note: a.note,
            };
            Ok(serde_json::json!({ "id": ledger::request_add(ctx, entry)?.id }))
        })
        .await
    }

    /// The slop ledger: residue recorded earlier (shims, unmigrated
    /// callers, duplicates, stale docs, suspected dead code…) with where
    /// its lines are now (`anchor`: fresh, moved, changed, gone). Check it
    /// before you change a file or build on code you did not write in this
    /// session, so you do not take residue for design or pile onto it.
    #[tool(annotations(read_only_hint = true))]
    async fn ledger_query(&self, Parameters(a): Parameters<LedgerQuery>) -> CallToolResult {
        self.call(move |ctx| {
            let status = match a.status.as_deref() {
                None => Some(LedgerStatus::Open),
                Some("any") => None,
                Some(s) => Some(LedgerStatus::parse(s)?),
            };
            let filter = LedgerFilter {
                path: a.path.as_deref().map(|p| one_path(ctx, p)).transpose()?,
                bucket: a.bucket.as_deref().map(Bucket::parse).transpose()?,
                status,
                ..LedgerFilter::default()
            };
            let l = ledger::query(ctx, filter)?;
            Ok(serde_json::json!({ "entries": l.entries }))
        })
        .await
    }

    /// ckpt's daemon and every watched project: store sizes, capture
    /// health (`degraded` says why changes may be missed). Use it when
    /// another ckpt tool fails, or the user asks whether ckpt is recording.
    #[tool(annotations(read_only_hint = true))]
    async fn status(&self) -> CallToolResult {
        self.call(status::query).await
    }
}

impl Ckpt {
    /// Runs a blocking daemon request off the runtime's thread; a failure
    /// becomes the tool error the caller returns.
    async fn call_raw<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Ctx) -> anyhow::Result<T> + Send + 'static,
    ) -> Result<T, CallToolResult> {
        let ctx = Arc::clone(&self.ctx);
        match tokio::task::spawn_blocking(move || f(&ctx)).await {
            Ok(Ok(doc)) => Ok(doc),
            Ok(Err(e)) => Err(error(output::error_message(&e))),
            Err(e) => Err(error(format!("the request failed: {e}"))),
        }
    }

    /// Like [`Ckpt::call_raw`], returning the document as `--json` prints it.
    async fn call<T: Serialize + Send + 'static>(
        &self,
        f: impl FnOnce(&Ctx) -> anyhow::Result<T> + Send + 'static,
    ) -> CallToolResult {
        match self.call_raw(f).await {
            Ok(doc) => document(&doc, false),
            Err(e) => e,
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Ckpt {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("ckpt", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }
}

/// A rewind's or redo's document; a refused one is a tool error (nothing
/// changed, as the CLI's exit 3 says).
fn rewind_result(r: Result<rewind::RewindDoc, CallToolResult>) -> CallToolResult {
    match r {
        Ok(d) => document(&d, d.reply.outcome == Outcome::Refused),
        Err(e) => e,
    }
}

/// The document as `--json` prints it, as the tool's text content.
fn document<T: Serialize>(doc: &T, is_error: bool) -> CallToolResult {
    match output::json_text(doc) {
        Ok(text) if is_error => CallToolResult::error(vec![ContentBlock::text(text)]),
        Ok(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
        Err(e) => error(output::error_message(&e)),
    }
}

fn error(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

fn one_path(ctx: &Ctx, path: &str) -> anyhow::Result<WirePath> {
    let mut v = wire_paths(ctx, &[path.to_string()])?;
    Ok(v.remove(0))
}

/// The model names paths as show_turn lists them, relative to the project
/// root (not to the directory the server runs in): relative ones are
/// joined to the root, which the daemon reports.
fn wire_paths(ctx: &Ctx, paths: &[String]) -> anyhow::Result<Vec<WirePath>> {
    if paths.iter().all(|p| Path::new(p).is_absolute()) {
        return Ok(paths.iter().map(|p| WirePath::from(Path::new(p))).collect());
    }
    let root = log::query(ctx, 0, None)?.project;
    Ok(paths
        .iter()
        .map(|p| WirePath::from(root.as_path().join(p)))
        .collect())
}
