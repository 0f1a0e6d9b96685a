//! Counters of a running process from `/proc` (Linux): peak and current
//! RSS, CPU time, and context switches per thread (every wake-up of a
//! sleeping thread is a voluntary switch when it sleeps again).

use std::collections::BTreeMap;
use std::fs;

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
