//! What the daemon asks of the system for its latency.

use ckpt_e2e::*;

/// Mapped, resident (proportional set) and locked KiB of the daemon's
/// read-only executable mappings (`/proc/<pid>/smaps`). `Locked` counts
/// proportionally too, so it is compared with `Pss`: a file page at a
/// segment boundary is mapped twice and counts half in each mapping.
fn code_pages(pid: i32) -> (u64, u64, u64) {
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).expect("the daemon's exe");
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).expect("smaps");
    let (mut size, mut pss, mut locked) = (0, 0, 0);
    let mut in_exe = false;
    for line in smaps.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.first()
            .is_some_and(|a| a.contains('-') && !a.ends_with(':'))
        {
            // Code and constants; the writable data is the heap's business.
            in_exe = f.get(5).is_some_and(|p| std::path::Path::new(p) == exe)
                && f.get(1).is_some_and(|perms| !perms.contains('w'));
            continue;
        }
        let kib = || f.get(1).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        match f.first() {
            Some(&"Size:") if in_exe => size += kib(),
            Some(&"Pss:") if in_exe => pss += kib(),
            Some(&"Locked:") if in_exe => locked += kib(),
            _ => {}
        }
    }
    (size, pss, locked)
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
    let smaps = std::fs::read_to_string(format!("/proc/{}/smaps", d.pid())).expect("smaps");
    let (mut size, mut rss, mut locked_vmas, mut vmas) = (0u64, 0u64, 0, 0);
    let mut in_client = false;
    for line in smaps.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.first()
            .is_some_and(|a| a.contains('-') && !a.ends_with(':'))
        {
            in_client = f.get(5).is_some_and(|p| std::path::Path::new(p) == client);
            vmas += usize::from(in_client);
            continue;
        }
        let kib = || f.get(1).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        match f.first() {
            Some(&"Size:") if in_client => size += kib(),
            Some(&"Rss:") if in_client => rss += kib(),
            // `lo`: the mapping is locked (`mlock`).
            Some(&"VmFlags:") if in_client && f.contains(&"lo") => locked_vmas += 1,
            _ => {}
        }
    }
    if d.log_text().contains("cannot keep ckptctl in memory") {
        // SAFETY: geteuid has no preconditions.
        assert_ne!(unsafe { libc::geteuid() }, 0, "root has no lock limit");
        eprintln!("skipped: RLIMIT_MEMLOCK is too small for the client too");
        return;
    }
    assert_eq!(vmas, 1, "one mapping of {}", client.display());
    assert_eq!(locked_vmas, 1, "the client's mapping is locked");
    let file_kib = std::fs::metadata(&client).unwrap().len().div_ceil(4096) * 4;
    assert_eq!(size, file_kib, "the whole file is mapped");
    assert_eq!(rss, size, "and all of it is resident");
}
