//! inotify watches: the kernel's per-user pool (`fs.inotify.max_user_watches`)
//! is shared by every process of the user, so the finding gives ckptd's
//! share, the pool's use, and the biggest other users, read from
//! `/proc/<pid>/fdinfo` (one `inotify wd:` line per watch).

use std::path::Path;

use ckpt_proto::StatusReply;

use super::thousands;
use crate::finding::Finding;

/// The limit's sysctl file.
const MAX_USER_WATCHES: &str = "/proc/sys/fs/inotify/max_user_watches";

/// Test-only: a limit to use instead of the kernel's, so a test can show a
/// nearly used pool without filling the real one.
#[cfg(feature = "test-hooks")]
const LIMIT_OVERRIDE: &str = "CKPT_TEST_MAX_USER_WATCHES";

/// Share of the pool in use from which the finding warns, and fails.
const WARN_PERCENT: u64 = 80;
const FAIL_PERCENT: u64 = 95;

/// A process of the user holding inotify watches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Holder {
    pub pid: u32,
    pub name: String,
    pub watches: u64,
}

pub fn check(status: Option<&StatusReply>) -> Finding {
    #[cfg(feature = "test-hooks")]
    let given = std::env::var(LIMIT_OVERRIDE).ok();
    #[cfg(not(feature = "test-hooks"))]
    let given = None;
    let limit = given
        .or_else(|| std::fs::read_to_string(MAX_USER_WATCHES).ok())
        .and_then(|t| t.trim().parse::<u64>().ok());
    let Some(limit) = limit.filter(|&l| l > 0) else {
        return Finding::warn(
            "inotify",
            format!("cannot read {MAX_USER_WATCHES}"),
            "cat /proc/sys/fs/inotify/max_user_watches",
        );
    };
    let holders = holders(Path::new("/proc"), rustix::process::getuid().as_raw());
    let used: u64 = holders.iter().map(|h| h.watches).sum();
    let daemon_pid = status.map(|s| s.daemon.pid);
    // The daemon's own count when it keeps one; else what /proc says of it.
    let ckpt = status.and_then(|s| s.daemon.watches).or_else(|| {
        holders
            .iter()
            .find(|h| Some(h.pid) == daemon_pid)
            .map(|h| h.watches)
    });
    let mut others: Vec<&Holder> = holders
        .iter()
        .filter(|h| Some(h.pid) != daemon_pid)
        .collect();
    others.sort_by(|a, b| b.watches.cmp(&a.watches).then(a.pid.cmp(&b.pid)));
    let top: Vec<String> = others
        .iter()
        .take(3)
        .map(|h| format!("{} (pid {}) {}", h.name, h.pid, thousands(h.watches)))
        .collect();
    let percent = used.max(ckpt.unwrap_or(0)) * 100 / limit;
    let mut found = format!(
        "{} of the user's {} watches in use ({percent}%)",
        thousands(used),
        thousands(limit)
    );
    match (status, ckpt) {
        (None, _) => found.push_str(", ckptd is not running"),
        (Some(_), Some(n)) => found.push_str(&format!(", ckptd holds {}", thousands(n))),
        (Some(_), None) => found.push_str(", ckptd's share unknown"),
    }
    if !top.is_empty() {
        found.push_str(&format!("; most of the rest: {}", top.join(", ")));
    }
    let raise = format!(
        "sudo sysctl -w fs.inotify.max_user_watches={} (and the same line in /etc/sysctl.d/ to keep it)",
        (limit * 2).max(524_288)
    );
    if percent >= FAIL_PERCENT {
        Finding::fail("inotify", found, raise)
    } else if percent >= WARN_PERCENT {
        Finding::warn("inotify", found, raise)
    } else {
        Finding::ok("inotify", found)
    }
}

/// Every process of `uid` under `proc` that holds inotify watches, with
/// how many; processes that vanish or cannot be read are left out.
pub fn holders(proc: &Path, uid: u32) -> Vec<Holder> {
    use std::os::unix::fs::MetadataExt;
    let Ok(dir) = std::fs::read_dir(proc) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let pdir = entry.path();
        if !std::fs::metadata(&pdir).is_ok_and(|m| m.uid() == uid) {
            continue;
        }
        let watches = process_watches(&pdir);
        if watches > 0 {
            let name = std::fs::read_to_string(pdir.join("comm"))
                .map(|n| n.trim().to_string())
                .unwrap_or_else(|_| "?".to_string());
            out.push(Holder { pid, name, watches });
        }
    }
    out
}

/// The watches of one process: the `inotify wd:` lines of its inotify
/// descriptors' fdinfo.
fn process_watches(pdir: &Path) -> u64 {
    let Ok(fds) = std::fs::read_dir(pdir.join("fd")) else {
        return 0;
    };
    let mut n = 0;
    for fd in fds.flatten() {
        // Only inotify descriptors' fdinfo is worth reading.
        let is_inotify =
            std::fs::read_link(fd.path()).is_ok_and(|t| t.as_os_str() == "anon_inode:inotify");
        if !is_inotify {
            continue;
        }
        if let Ok(text) = std::fs::read_to_string(pdir.join("fdinfo").join(fd.file_name())) {
            n += count_watches(&text);
        }
    }
    n
}

/// The watches one fdinfo file lists (proc(5): "inotify wd:… ino:… sdev:…
/// mask:…", one line per watch).
pub fn count_watches(fdinfo: &str) -> u64 {
    fdinfo
        .lines()
        .filter(|l| l.starts_with("inotify wd:"))
        .count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An inotify descriptor's fdinfo as Linux 6.x prints it.
    const SAMPLE: &str = "pos:\t0
flags:\t02004000
mnt_id:\t15
ino:\t1057
inotify wd:3 ino:2a8e4 sdev:fd00001 mask:fce ignored_mask:0 fhandle-bytes:8 fhandle-type:1 f_handle:e48a0200a5c8d3b1
inotify wd:2 ino:2a8e3 sdev:fd00001 mask:fce ignored_mask:0 fhandle-bytes:8 fhandle-type:1 f_handle:e38a0200a4c8d3b1
inotify wd:1 ino:2a8e2 sdev:fd00001 mask:fce ignored_mask:0 fhandle-bytes:8 fhandle-type:1 f_handle:e28a0200a3c8d3b1
";

    #[test]
    fn count_watches_counts_one_per_inotify_line() {
        assert_eq!(count_watches(SAMPLE), 3);
        // A descriptor with no watch left, and another kind of fd.
        assert_eq!(
            count_watches("pos:\t0\nflags:\t02004000\nmnt_id:\t15\nino:\t1057\n"),
            0
        );
        assert_eq!(
            count_watches("pos:\t0\nflags:\t02\nmnt_id:\t15\nino:\t1\neventfd-count:  0\n"),
            0
        );
    }

    /// A fake /proc: a process of ours with two inotify descriptors, one
    /// with an eventfd, and one of another user (not read).
    #[test]
    fn holders_sums_each_process_inotify_descriptors() {
        use std::os::unix::fs::{symlink, MetadataExt};
        let t = tempfile::tempdir().unwrap();
        let uid = std::fs::metadata(t.path()).unwrap().uid();
        let p = t.path().join("4242");
        std::fs::create_dir_all(p.join("fd")).unwrap();
        std::fs::create_dir_all(p.join("fdinfo")).unwrap();
        std::fs::write(p.join("comm"), "code\n").unwrap();
        for (fd, target, info) in [
            ("3", "anon_inode:inotify", SAMPLE),
            (
                "4",
                "anon_inode:inotify",
                "pos:\t0\ninotify wd:1 ino:1 sdev:1 mask:fce ignored_mask:0\n",
            ),
            ("5", "anon_inode:[eventfd]", SAMPLE),
        ] {
            symlink(target, p.join("fd").join(fd)).unwrap();
            std::fs::write(p.join("fdinfo").join(fd), info).unwrap();
        }
        std::fs::create_dir_all(t.path().join("self")).unwrap();
        assert_eq!(
            holders(t.path(), uid),
            [Holder {
                pid: 4242,
                name: "code".into(),
                watches: 4
            }]
        );
        assert!(holders(t.path(), uid + 1).is_empty());
    }
}
