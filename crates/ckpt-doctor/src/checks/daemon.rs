//! The daemon answers, and speaks this client's version.

use ckpt_proto::{StatusReply, PROTOCOL_VERSION};
use ckptctl::commands::Ctx;

use crate::finding::Finding;

pub fn check(ctx: &Ctx, status: Option<&StatusReply>) -> Finding {
    let socket = ctx.g.connection().socket.display().to_string();
    let Some(s) = status else {
        return Finding::fail(
            "daemon",
            format!("ckptd does not answer on {socket}: hooks start it on demand, each paying its start-up"),
            "ckptctl service install",
        );
    };
    let d = &s.daemon;
    let mine = env!("CARGO_PKG_VERSION");
    if d.version != mine || d.protocol != PROTOCOL_VERSION {
        return Finding::warn(
            "daemon",
            format!(
                "ckptd {} (pid {}, protocol {}) answers on {socket}, but this ckptctl is {mine} \
                 (protocol {PROTOCOL_VERSION}): an older daemon is still running",
                d.version, d.pid, d.protocol
            ),
            format!(
                "kill {} (the next ckptctl call starts this build's ckptd)",
                d.pid
            ),
        );
    }
    Finding::ok(
        "daemon",
        format!(
            "ckptd {} (pid {}) answers on {socket}, as this ckptctl",
            d.version, d.pid
        ),
    )
}
