//! Counters of a running process from `/proc` (Linux): peak and current
//! RSS, CPU time, and context switches per thread (every wake-up of a
//! sleeping thread is a voluntary switch when it sleeps again); and the
//! mount that holds a path.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use anyhow::{Context, Result};

#[derive(Clone, Debug, Default)]
pub struct ProcSample {
    /// Peak resident set size (VmHWM), bytes.
    pub peak_rss: u64,
    /// Current resident set size (VmRSS), bytes.
    pub rss: u64,
    /// utime + stime, seconds.
    pub cpu_secs: f64,
    /// Context switches, voluntary + involuntary, per thread id, with the
    /// thread's name.
    pub switches: BTreeMap<u32, (String, u64)>,
}

impl ProcSample {
    /// Context switches between `self` and a later sample `b`, per thread
    /// name. Threads that exited in between are left out (their counters are
    /// gone); threads that appeared count from zero.
    pub fn wakeups_until(&self, b: &ProcSample) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        for (tid, (name, n)) in &b.switches {
            let before = self.switches.get(tid).map(|(_, n)| *n).unwrap_or(0);
            *out.entry(name.clone()).or_insert(0) += n.saturating_sub(before);
        }
        out
    }
}

fn status_kib(text: &str, key: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

pub fn sample(pid: u32) -> Result<ProcSample> {
    let status = fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("reading /proc/{pid}/status"))?;
    let stat = fs::read_to_string(format!("/proc/{pid}/stat"))
        .with_context(|| format!("reading /proc/{pid}/stat"))?;
    // Fields after the parenthesised command name; utime and stime are
    // fields 14 and 15 of the whole line, i.e. 12 and 13 after the ')'.
    let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let mut switches = BTreeMap::new();
    if let Ok(rd) = fs::read_dir(format!("/proc/{pid}/task")) {
        for t in rd.flatten() {
            let Some(tid) = t.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            if let Ok(s) = fs::read_to_string(t.path().join("status")) {
                let name = s
                    .lines()
                    .find_map(|l| l.strip_prefix("Name:"))
                    .unwrap_or("")
                    .trim()
                    .to_string();
                let n = status_kib(&s, "voluntary_ctxt_switches:")
                    + status_kib(&s, "nonvoluntary_ctxt_switches:");
                switches.insert(tid, (name, n));
            }
        }
    }
    Ok(ProcSample {
        peak_rss: status_kib(&status, "VmHWM:") * 1024,
        rss: status_kib(&status, "VmRSS:") * 1024,
        cpu_secs: (tick(11) + tick(12)) as f64 / hz,
        switches,
    })
}

/// Resets the process's peak RSS (VmHWM) to its RSS now (Linux 4.0 on), so
/// the next sample's peak is that of what ran in between.
pub fn reset_peak(pid: u32) -> Result<()> {
    fs::write(format!("/proc/{pid}/clear_refs"), "5")
        .with_context(|| format!("resetting the peak RSS of {pid} (/proc/{pid}/clear_refs)"))
}

/// The mount that holds a path, from `/proc/self/mountinfo`.
#[derive(Clone, Debug)]
pub struct Mount {
    pub point: String,
    pub fstype: String,
    pub source: String,
    /// Per-mount and filesystem options, e.g. `rw,relatime,discard`.
    pub options: String,
}

impl Mount {
    /// Mounted with online discard: every unlink that frees blocks waits
    /// for the device to discard them.
    pub fn discards(&self) -> bool {
        self.options.split(',').any(|o| o == "discard")
    }
}

/// The mount holding `path` (already absolute and free of symlinks): the
/// longest mount point that contains it.
pub fn mount_of(path: &Path) -> Option<Mount> {
    mount_in(&fs::read_to_string("/proc/self/mountinfo").ok()?, path)
}

fn mount_in(mountinfo: &str, path: &Path) -> Option<Mount> {
    // mountinfo escapes space, tab, newline and backslash as octal.
    let unescape = |s: &str| {
        s.replace("\\040", " ")
            .replace("\\011", "\t")
            .replace("\\012", "\n")
            .replace("\\134", "\\")
    };
    let mut best: Option<Mount> = None;
    for line in mountinfo.lines() {
        // ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL…] - TYPE SOURCE SUPER
        let Some((head, tail)) = line.split_once(" - ") else {
            continue;
        };
        let head: Vec<&str> = head.split(' ').collect();
        let tail: Vec<&str> = tail.split(' ').collect();
        let (Some(point), Some(opts), [fstype, source, sup, ..]) =
            (head.get(4), head.get(5), &tail[..])
        else {
            continue;
        };
        let point = unescape(point);
        let longer = best.as_ref().is_none_or(|b| point.len() >= b.point.len());
        if path.starts_with(&point) && longer {
            best = Some(Mount {
                point,
                fstype: fstype.to_string(),
                source: unescape(source),
                options: dedup_options(opts, sup),
            });
        }
    }
    best
}

/// A mount's own options, then its filesystem's, each once.
fn dedup_options(mount: &str, fs: &str) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for o in mount.split(',').chain(fs.split(',')) {
        if !seen.contains(&o) {
            seen.push(o);
        }
    }
    seen.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard,resv_strict
30 22 0:26 / /tmp/my\\040dir rw,nosuid - tmpfs tmpfs rw,size=100k
31 22 7:0 / /mnt/e4 rw,relatime shared:5 - ext4 /dev/loop0 rw
";

    #[test]
    fn the_longest_mount_point_holding_the_path_is_its_mount() {
        let m = mount_in(MOUNTINFO, Path::new("/mnt/e4/bench/x")).unwrap();
        assert_eq!(
            (m.point.as_str(), m.source.as_str()),
            ("/mnt/e4", "/dev/loop0")
        );
        assert!(!m.discards());
        let root = mount_in(MOUNTINFO, Path::new("/mnt/e4x")).unwrap();
        assert_eq!(root.point, "/");
        assert!(root.discards());
        let spaced = mount_in(MOUNTINFO, Path::new("/tmp/my dir/a")).unwrap();
        assert_eq!(
            (spaced.fstype.as_str(), spaced.options.as_str()),
            ("tmpfs", "rw,nosuid,size=100k")
        );
    }
}
