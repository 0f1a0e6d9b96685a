//! Free space where the data dir is: a full disk stops capture (the
//! project is degraded until space returns).

use ckpt_proto::StatusReply;
use ckptctl::commands::Ctx;
use ckptctl::output;

use crate::finding::Finding;

/// Below this much free space the finding warns, and below the second, fails.
const WARN_BELOW: u64 = 1 << 30;
const FAIL_BELOW: u64 = 100 << 20;

pub fn check(ctx: &Ctx, status: Option<&StatusReply>) -> Finding {
    // The running daemon's data dir, else the one a started one would use.
    let dir = match status {
        Some(s) => Ok(s.daemon.data_dir.to_path_buf()),
        None => ctx.g.data_dir(),
    };
    let dir = match dir {
        Ok(d) => d,
        Err(e) => {
            return Finding::warn(
                "disk",
                format!("no data dir: {e:#}"),
                "ckptctl --data-dir DIR doctor",
            )
        }
    };
    let Some(existing) = dir.ancestors().find(|d| d.exists()) else {
        return Finding::warn(
            "disk",
            format!("{} has no existing parent", dir.display()),
            "ckptctl status",
        );
    };
    let free = match rustix::fs::statvfs(existing) {
        Ok(s) => s.f_bavail * s.f_frsize,
        Err(e) => {
            return Finding::warn(
                "disk",
                format!("cannot read the free space of {}: {e}", existing.display()),
                format!("df -h {}", existing.display()),
            )
        }
    };
    let found = format!(
        "{} free where the data dir is ({})",
        output::bytes(free),
        dir.display()
    );
    let fix = format!(
        "free space on the file system of {} (see `du -sh {}`)",
        existing.display(),
        existing.display()
    );
    if free < FAIL_BELOW {
        Finding::fail(
            "disk",
            format!(
                "{found}: below {}, capture stops when it runs out",
                output::bytes(FAIL_BELOW)
            ),
            fix,
        )
    } else if free < WARN_BELOW {
        Finding::warn(
            "disk",
            format!("{found}: below {}", output::bytes(WARN_BELOW)),
            fix,
        )
    } else {
        Finding::ok(
            "disk",
            format!("{found}; warns below {}", output::bytes(WARN_BELOW)),
        )
    }
}
