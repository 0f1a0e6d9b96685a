//! `ckptctl`: the thin client of ckpt. Marks turn boundaries for an AI coding
//! agent, lists and diffs turns, rewinds and redoes them, by asking `ckptd`
//! over its Unix socket (and starting it when none answers).
//!
//! ```text
//! ckptctl watch                      # baseline the project
//! ckptctl turn-start --label "fix the header"
//! ...the agent edits files...
//! ckptctl turn-end
//! ckptctl rewind 1                   # back to before turn 1
//! ckptctl redo                       # undo that rewind
//! ```
//!
//! Exit codes: 0 ok, 1 error, 2 usage, 3 rewind refused because of conflicts
//! (or a work copy whose preview found conflicts).
//!
//! `ckptctl` starts on every agent hook call, so this crate holds only the
//! command line, the commands (the hook path among them), the output and
//! the transport; Cargo keeps the rest out. Three executables of their own
//! crates, which `ckptctl` execs from next to itself, use this library:
//! `ckpt-mcp` (`ckptctl mcp`: rmcp, tokio), `ckpt-hooks` (`ckptctl hooks`:
//! the config editors) and `ckpt-workcopy` (`ckptctl workcopy`: the core's
//! walk).

pub mod cli;
pub mod client;
pub mod commands;
pub mod output;
pub mod progress;
pub mod term;

use std::process::ExitCode;

use ckpt_proto::ErrorKind;

use crate::client::DaemonError;

/// Exit code of a rewind or redo refused because of conflicts.
pub const EXIT_CONFLICTS: u8 = 3;

/// Like other Unix tools, end quietly when the reader of our output goes
/// away (`ckptctl log | head`) instead of panicking on the write. The
/// request has been answered by then: nothing is cut short.
///
/// # Safety
/// Call at start-up, before any thread exists.
pub unsafe fn default_sigpipe() {
    // SAFETY: the caller guarantees no other thread exists yet.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// A daemon's error message, prefixed with what a person should know of its
/// kind: a full disk, or a damaged store and how to learn more.
fn labelled(kind: ErrorKind, message: String) -> String {
    match kind {
        ErrorKind::DiskFull => format!("disk full: {message}"),
        ErrorKind::Corrupt => {
            format!("store damaged: {message} (run `ckptctl fsck` to see what is damaged)")
        }
        _ => message,
    }
}

/// The exit code of a command's result; a failure is reported on stderr
/// (and as a JSON document on stdout with `--json`).
pub fn exit_code(result: anyhow::Result<u8>, json: bool) -> ExitCode {
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            let (kind, code) = match e.downcast_ref::<DaemonError>() {
                Some(d) if d.kind == ErrorKind::Conflicts => (d.kind, EXIT_CONFLICTS),
                Some(d) => (d.kind, 1),
                None => (ErrorKind::Other, 1),
            };
            let message = labelled(kind, output::error_message(&e));
            if json {
                let doc = serde_json::json!({ "error": { "kind": kind, "message": message } });
                println!("{doc}");
            }
            eprintln!("ckptctl: error: {message}");
            ExitCode::from(code)
        }
    }
}
