//! Each agent found here (or configured for ckpt): its hooks installed,
//! run by the agent (Codex asks for trust), calling a ckptctl that exists
//! and is the one on PATH; its MCP entry naming a program that answers an
//! MCP handshake.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use ckpt_hooks::detect::{scope_name, AgentReport};
use ckpt_hooks::install::Installed;
use ckptctl::commands::Ctx;

use crate::finding::Finding;

/// How long an MCP server may take to answer `initialize`.
const MCP_TIMEOUT: Duration = Duration::from_secs(10);

pub fn check(ctx: &Ctx) -> anyhow::Result<Vec<Finding>> {
    let reports = crate::status::agent_reports(ctx)?;
    let mut out = Vec::new();
    let mut handshakes: HashMap<PathBuf, Result<(), String>> = HashMap::new();
    let mut absent = Vec::new();
    for r in &reports {
        if !r.relevant() {
            absent.push(r.agent.name());
            continue;
        }
        out.extend(agent(ctx, r, &mut handshakes));
    }
    if !absent.is_empty() {
        out.push(Finding::ok(
            "agents",
            format!("not found here: {}", absent.join(", ")),
        ));
    }
    Ok(out)
}

fn agent(
    ctx: &Ctx,
    r: &AgentReport,
    handshakes: &mut HashMap<PathBuf, Result<(), String>>,
) -> Vec<Finding> {
    let check = format!("agent {}", r.agent);
    let what = if r.agent.payload().is_some() {
        "hooks"
    } else {
        "MCP server"
    };
    let mut out = Vec::new();
    if r.scopes().next().is_none() {
        let how = r.found.as_deref().unwrap_or("?");
        out.push(Finding::warn(
            &check,
            format!("found ({how}), ckpt's {what} not installed: its turns are not recorded"),
            r.user.install.clone(),
        ));
        return out;
    }
    for s in r.scopes() {
        let at = scope_name(s.scope);
        if s.installed == Installed::Partly {
            out.push(Finding::fail(
                &check,
                format!("{what} partly installed ({at}): a missing hook leaves turns open"),
                s.install.clone(),
            ));
        }
        if let Some(p) = &s.pending {
            let fix = p
                .split_once(" — ")
                .map_or(s.install.as_str(), |(_, fix)| fix);
            out.push(Finding::fail(
                &check,
                format!("{what} ({at}) not run: {p}"),
                fix,
            ));
        }
        if let Some(c) = &s.ckptctl {
            let f = if c.gone { Finding::fail } else { Finding::warn };
            out.push(f(
                &check,
                format!("({at}) {}", c.message),
                s.install.clone(),
            ));
        }
        for program in &s.mcp {
            let answer = handshakes
                .entry(program.clone())
                .or_insert_with(|| mcp_handshake(program, &ctx.dir));
            if let Err(e) = answer {
                out.push(Finding::fail(
                    &check,
                    format!(
                        "MCP server ({at}) `{} mcp` does not answer: {e}",
                        program.display()
                    ),
                    s.install.clone(),
                ));
            }
        }
    }
    if out.is_empty() {
        out.push(Finding::ok(&check, r.summary()));
    }
    out
}

/// Starts `PROGRAM mcp` in `dir` as the agent would and asks it to
/// `initialize`: Ok when it answers with a result.
fn mcp_handshake(program: &Path, dir: &Path) -> Result<(), String> {
    let mut child = Command::new(program)
        .arg("mcp")
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        // A daemon it started would hold a piped stderr open: none here.
        .env("CKPT_NO_AUTOSTART", "1")
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start it: {e}"))?;
    let init = serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "ckpt-doctor", "version": env!("CARGO_PKG_VERSION")},
        },
    });
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let stdout = child.stdout.take().expect("stdout is piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let read = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(read.map(|_| line));
    });
    let sent = writeln!(stdin, "{init}").and_then(|()| stdin.flush());
    let answer = rx.recv_timeout(MCP_TIMEOUT);
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    sent.map_err(|e| format!("writing to it: {e}"))?;
    match answer {
        Ok(Ok(line)) => match serde_json::from_str::<serde_json::Value>(&line) {
            Ok(v) if v.get("result").is_some() => Ok(()),
            _ if line.is_empty() => Err("it exited without answering".to_string()),
            _ => Err(format!("it answered {}", line.trim())),
        },
        Ok(Err(e)) => Err(format!("reading its answer: {e}")),
        Err(_) => Err(format!("no answer in {} s", MCP_TIMEOUT.as_secs())),
    }
}
