//! What the daemon asks of the system: its code kept in memory for latency,
//! and memory it freed handed back.

use ckpt_e2e::*;

/// One mapping of `/proc/<pid>/smaps`: the file it maps, its permissions,
/// its `Size:`/`Rss:`/`Pss:`/`Locked:` KiB and its `VmFlags` (`lo`:
/// locked with `mlock`).
struct Mapping {
    path: Option<std::path::PathBuf>,
    perms: String,
    kib: std::collections::HashMap<String, u64>,
    flags: Vec<String>,
}

impl Mapping {
    fn kib(&self, field: &str) -> u64 {
        self.kib.get(field).copied().unwrap_or(0)
    }
}

fn smaps(pid: i32) -> Vec<Mapping> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/smaps")).expect("smaps");
    let mut out: Vec<Mapping> = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.first() {
            // address perms offset dev inode [path]
            Some(a) if a.contains('-') && !a.ends_with(':') => out.push(Mapping {
                path: f.get(5).map(std::path::PathBuf::from),
                perms: f.get(1).unwrap_or(&"").to_string(),
                kib: Default::default(),
                flags: Vec::new(),
            }),
            Some(&"VmFlags:") => {
                if let Some(m) = out.last_mut() {
                    m.flags = f[1..].iter().map(|s| s.to_string()).collect();
                }
            }
            Some(field) => {
                if let (Some(m), Some(v)) = (out.last_mut(), f.get(1).and_then(|v| v.parse().ok()))
                {
                    m.kib.insert(field.trim_end_matches(':').to_string(), v);
                }
            }
            None => {}
        }
    }
    out
}

/// Mapped, resident (proportional set) and locked KiB of the daemon's
/// read-only executable mappings. `Locked` counts proportionally too, so
/// it is compared with `Pss`: a file page at a segment boundary is mapped
/// twice and counts half in each mapping.
fn code_pages(pid: i32) -> (u64, u64, u64) {
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).expect("the daemon's exe");
    // Code and constants; the writable data is the heap's business.
    smaps(pid)
        .iter()
        .filter(|m| m.path.as_ref() == Some(&exe) && !m.perms.contains('w'))
        .fold((0, 0, 0), |(size, pss, locked), m| {
            (
                size + m.kib("Size"),
                pss + m.kib("Pss"),
                locked + m.kib("Locked"),
            )
        })
}

/// A limit on locked memory too small for the daemon's code (a debug
/// build maps far more than a release one), for a user who cannot exceed it.
fn memlock_too_small(pid: i32, mapped_kib: u64) -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return false;
    }
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let soft = limits
        .lines()
        .find(|l| l.starts_with("Max locked memory"))
        .and_then(|l| l.split_whitespace().nth(3))
        .expect("a locked-memory line");
    soft != "unlimited" && soft.parse::<u64>().unwrap() < mapped_kib * 1024
}

#[test]
fn the_daemon_keeps_the_code_it_has_run_in_memory() {
    let env = Env::new();
    let d = env.start_daemon();
    let proj = env.git_repo("app", &[("a.txt", b"a\n")]);
    env.ctl_ok(&proj, &["watch"]);
    env.ctl_ok(&proj, &["turn-start"]);
    std::fs::write(proj.join("a.txt"), "b\n").unwrap();
    env.ctl_ok(&proj, &["turn-end"]);
    let (size, pss, locked) = code_pages(d.pid());
    if memlock_too_small(d.pid(), size) {
        eprintln!("skipped: RLIMIT_MEMLOCK is below the {size} KiB of code mapped");
        assert!(d.log_text().contains("cannot lock the daemon's code"));
        return;
    }
    assert!(pss > 0, "no resident code found in smaps");
    // Locked as it runs: the resident pages, not the whole mapping.
    assert_eq!(locked, pss, "every resident page of code is locked");
}

/// The daemon holds `ckptctl`'s executable (beside its own) mapped and
/// locked, wholly resident: a hook call after a long idle does not wait
/// for the client to be read back in (5.8 ms against 2.6 ms warm).
#[test]
fn the_daemon_keeps_the_client_in_memory() {
    let env = Env::new();
    let d = env.start_daemon();
    let client = std::fs::canonicalize(bin("ckptctl")).unwrap();
    let mapped: Vec<Mapping> = smaps(d.pid())
        .into_iter()
        .filter(|m| m.path.as_ref() == Some(&client))
        .collect();
    if d.log_text().contains("cannot keep ckptctl in memory") {
        // SAFETY: geteuid has no preconditions.
        assert_ne!(unsafe { libc::geteuid() }, 0, "root has no lock limit");
        eprintln!("skipped: RLIMIT_MEMLOCK is too small for the client too");
        return;
    }
    assert_eq!(mapped.len(), 1, "one mapping of {}", client.display());
    let m = &mapped[0];
    assert!(
        m.flags.iter().any(|f| f == "lo"),
        "the client's mapping is locked"
    );
    let file_kib = std::fs::metadata(&client).unwrap().len().div_ceil(4096) * 4;
    assert_eq!(m.kib("Size"), file_kib, "the whole file is mapped");
    assert_eq!(m.kib("Rss"), m.kib("Size"), "and all of it is resident");
}

/// `ckptctl` starts on every hook call, so on Linux it is linked statically
/// (`.cargo/config.toml`): the kernel starts it without a dynamic loader
/// (no `PT_INTERP` program header), saving ~0.5 ms per call.
#[test]
#[cfg(target_os = "linux")]
fn the_client_is_started_without_a_dynamic_loader() {
    const PT_INTERP: u32 = 3;
    let elf = std::fs::read(bin("ckptctl")).expect("read ckptctl");
    assert_eq!(&elf[..6], b"\x7fELF\x02\x01", "a 64-bit little-endian ELF");
    let word = |at: usize, len: usize| -> usize {
        let mut b = [0u8; 8];
        b[..len].copy_from_slice(&elf[at..at + len]);
        u64::from_le_bytes(b) as usize
    };
    let (table, entry, count) = (word(0x20, 8), word(0x36, 2), word(0x38, 2));
    let kinds: Vec<usize> = (0..count).map(|i| word(table + i * entry, 4)).collect();
    assert!(kinds.contains(&1), "no PT_LOAD header read: {kinds:?}");
    assert!(
        !kinds.contains(&(PT_INTERP as usize)),
        "ckptctl asks for a dynamic loader: {kinds:?}"
    );
}

/// KiB of a `/proc/<pid>/status` field.
fn status_kib(pid: i32, field: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    text.lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
}

/// After a large request (here a baseline of 3,000 files) the daemon gives
/// the memory it freed back to the system instead of keeping its peak:
/// glibc would keep it (38 MiB resident after watching 5,302 files,
/// against 16 MiB with it handed back).
#[test]
fn the_daemon_hands_back_memory_after_a_large_request() {
    let env = Env::new();
    let d = env.start_daemon();
    let proj = env.git_repo("app", &[("README", b"app\n")]);
    for i in 0..3000 {
        let body: String = (0..400)
            .map(|l| format!("line {l} of file {i}\n"))
            .collect();
        std::fs::write(proj.join(format!("f{i:04}.txt")), body).unwrap();
    }
    env.ctl_ok(&proj, &["watch"]);
    let pid = d.pid();
    // Anonymous memory at the peak: the peak less what is not anonymous
    // (the executables, mapped and partly locked, stay as they are).
    let not_anon = status_kib(pid, "RssFile:") + status_kib(pid, "RssShmem:");
    let anon_peak = status_kib(pid, "VmHWM:").saturating_sub(not_anon);
    // The memory is handed back just after the reply has gone.
    let mut anon = status_kib(pid, "RssAnon:");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while anon * 2 > anon_peak && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
        anon = status_kib(pid, "RssAnon:");
    }
    assert!(
        anon * 2 <= anon_peak,
        "{anon} KiB of anonymous memory still resident after the baseline, against a peak of ~{anon_peak} KiB"
    );
}
