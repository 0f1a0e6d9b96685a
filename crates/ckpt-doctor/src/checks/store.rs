//! Every watched project: its capture health (with the remedy when it is
//! degraded) and its store's fsck.

use ckpt_proto::{FsckReply, Health, ProjectInfo, Request, StatusReply};
use ckptctl::commands::Ctx;

use crate::finding::Finding;

pub fn check(ctx: &Ctx, status: &StatusReply) -> Vec<Finding> {
    let mut out = Vec::new();
    if status.projects.is_empty() {
        out.push(Finding::warn(
            "projects",
            "no watched project: nothing is captured",
            "ckptctl watch   (in a project; an agent's first hook call does it too)",
        ));
    }
    for p in &status.projects {
        out.push(project(ctx, p));
    }
    out
}

fn project(ctx: &Ctx, p: &ProjectInfo) -> Finding {
    let check = format!("project {}", p.root);
    match p.health {
        Health::Unavailable => {
            let why = p.degraded.as_deref().unwrap_or("unusable");
            return Finding::fail(
                check,
                format!("unavailable: {why}"),
                format!("ckptctl unwatch {} (keeps its history), then recreate the folder and `ckptctl watch` in it", p.root),
            );
        }
        Health::Degraded => {
            let why = p.degraded.as_deref().unwrap_or("degraded");
            return Finding::fail(check, format!("capture degraded: {why}"), remedy(p, why));
        }
        Health::Loading | Health::Ok => {}
    }
    let r: FsckReply = match ctx.ask(&Request::Fsck {
        dir: p.root.clone(),
    }) {
        Ok(r) => r,
        Err(e) => {
            return Finding::warn(
                check,
                format!("fsck could not run: {e:#}"),
                format!("ckptctl -C {} fsck", p.root),
            );
        }
    };
    let problems = r.problems.len() as u64 + r.problems_unlisted;
    if !r.ok {
        let first = r.problems.first().map_or(String::new(), |f| {
            format!("; first: {} {}: {}", f.kind, f.subject, f.detail)
        });
        return Finding::fail(
            check,
            format!(
                "fsck found {problems} problem{}{first}",
                if problems == 1 { "" } else { "s" }
            ),
            format!(
                "ckptctl -C {} fsck   (lists them; turns whose blobs are bad cannot be rewound)",
                p.root
            ),
        );
    }
    Finding::ok(
        check,
        format!(
            "capture ok, store sound (fsck: {} blobs, {} turn entries in {} ms)",
            r.checked.blobs, r.checked.turn_entries, r.elapsed_ms
        ),
    )
}

/// The command that clears a degraded project, by what degraded it.
fn remedy(p: &ProjectInfo, why: &str) -> String {
    if why.contains("max_user_watches") {
        "sudo sysctl -w fs.inotify.max_user_watches=524288, then `ckptctl unwatch` and `ckptctl watch` in the project"
            .to_string()
    } else if why.contains("max_user_instances") {
        "sudo sysctl -w fs.inotify.max_user_instances=1024, then restart ckptd".to_string()
    } else {
        // A full scan at the next turn boundary clears the rest.
        format!("ckptctl -C {} sync", p.root)
    }
}
