//! `ckptctl doctor`: every check, in the order a user fixes things (the
//! daemon first: the other checks read what it knows). The heavy ones —
//! the agents' configs, `/proc`, the MCP handshakes — run here in the
//! client; the daemon only answers `status` and `fsck`.

use ckpt_proto::{Request, StatusReply};
use ckptctl::client::Client;
use ckptctl::commands::Ctx;
use ckptctl::output;
use serde_json::json;

use crate::finding::{self, Level};

mod agents;
mod daemon;
mod disk;
#[cfg(target_os = "linux")]
pub mod inotify;
mod service;
mod store;

/// Exit code when any finding is a failure (the report is still printed).
const EXIT_FAILED: u8 = 1;

pub fn run(ctx: &Ctx) -> anyhow::Result<u8> {
    let mut findings = Vec::new();
    // Never start a daemon here: whether one runs is what is checked.
    let client = Client::connect_existing(&ctx.g.connection());
    let status: Option<StatusReply> = client.and_then(|mut c| c.reply(&Request::Status).ok());
    findings.push(daemon::check(ctx, status.as_ref()));
    findings.extend(service::check());
    #[cfg(target_os = "linux")]
    findings.push(inotify::check(status.as_ref()));
    findings.extend(agents::check(ctx)?);
    findings.push(disk::check(ctx, status.as_ref()));
    if let Some(s) = &status {
        findings.extend(store::check(ctx, s));
    }
    let failed = findings.iter().any(|f| f.level == Level::Fail);
    if ctx.g.json {
        output::json(&json!({ "ok": !failed, "findings": findings }))?;
    } else {
        finding::print(&findings);
    }
    Ok(if failed { EXIT_FAILED } else { 0 })
}

/// `n` with thousands separators, as the findings show counts.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn thousands_groups_digits_by_three() {
        assert_eq!(super::thousands(0), "0");
        assert_eq!(super::thousands(999), "999");
        assert_eq!(super::thousands(8192), "8,192");
        assert_eq!(super::thousands(1_048_576), "1,048,576");
    }
}
