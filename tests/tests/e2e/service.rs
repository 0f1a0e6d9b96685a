//! `ckptctl service install|uninstall` writes and removes the user service
//! file (systemd on Linux), pointing at the ckptd next to ckptctl.

use std::time::Duration;

use ckpt_e2e::*;

#[cfg(target_os = "linux")]
#[test]
fn service_install_writes_a_systemd_user_unit_and_uninstall_removes_it() {
    let env = Env::new();
    let config = env.path().join("config");
    let home = env.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let out = run(env
        .ctl_cmd(env.path(), &["service", "install", "--no-start"])
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", &config));
    assert!(out.status.success(), "{out:?}");
    let unit_path = config.join("systemd/user/ckptd.service");
    let unit = std::fs::read_to_string(&unit_path).expect("unit written");
    let ckptd = std::fs::canonicalize(bin("ckptd")).unwrap();
    assert!(
        unit.contains(&format!("ExecStart=\"{}\"", ckptd.display())),
        "ExecStart points at ckptd: {unit}"
    );
    // The socket and data dir this ckptctl uses are baked in.
    assert!(
        unit.contains(&format!("\"--socket\" \"{}\"", env.socket.display())),
        "{unit}"
    );
    assert!(
        unit.contains(&format!("\"--data-dir\" \"{}\"", env.data.display())),
        "{unit}"
    );
    assert!(!unit.contains('@'), "every placeholder filled: {unit}");
    assert!(unit.contains("WantedBy=default.target"));

    let out = run(env
        .ctl_cmd(env.path(), &["service", "uninstall"])
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", &config));
    assert!(out.status.success(), "{out:?}");
    assert!(!unit_path.exists(), "unit removed");
}

/// A `systemctl` on PATH that answers `daemon-reload` with `reload` and
/// `enable` with `enable` (each a shell exit status).
#[cfg(target_os = "linux")]
fn fake_systemctl(env: &Env, reload: u8, enable: u8) -> String {
    use std::os::unix::fs::PermissionsExt;
    let dir = env.path().join("fakebin");
    std::fs::create_dir_all(&dir).unwrap();
    let script = format!(
        "#!/bin/sh\ncase \"$*\" in\n  *daemon-reload*) [ {reload} = 0 ] || echo 'Failed to connect to bus: No medium found' >&2; exit {reload};;\n  *enable*) [ {enable} = 0 ] || echo 'Failed to enable unit' >&2; exit {enable};;\nesac\nexit 0\n"
    );
    let path = dir.join("systemctl");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    format!("{}:{}", dir.display(), std::env::var("PATH").unwrap())
}

#[cfg(target_os = "linux")]
fn daemon_pid(env: &Env) -> i64 {
    env.ctl_json(env.path(), &["status"])["daemon"]["pid"]
        .as_i64()
        .unwrap()
}

#[cfg(target_os = "linux")]
#[test]
fn service_install_without_a_service_manager_leaves_the_daemon_running_and_fails() {
    let env = Env::new();
    let d = env.start_daemon();
    let home = env.dir("home");
    let path = fake_systemctl(&env, 1, 0);
    let out = run(env
        .ctl_cmd(env.path(), &["service", "install"])
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", env.path().join("config"))
        .env("PATH", path));
    assert_eq!(out.code(), 1, "{out:?}");
    assert!(!out.stderr.contains("stopping"), "{out:?}");
    assert!(out.stderr.contains("does not answer"), "{out:?}");
    assert!(out.stderr.contains("left alone"), "{out:?}");
    assert_eq!(
        daemon_pid(&env),
        i64::from(d.pid()),
        "the same daemon serves"
    );
}

#[cfg(target_os = "linux")]
#[test]
fn service_install_whose_service_fails_to_start_brings_a_daemon_back() {
    let env = Env::new();
    // Autostarted, so not this test's child: a stopped one is reaped at once.
    let old = run(env
        .ctl_cmd(env.path(), &["--json", "status"])
        .env_remove("CKPT_NO_AUTOSTART"))
    .json()["daemon"]["pid"]
        .as_i64()
        .unwrap();
    let home = env.dir("home");
    let path = fake_systemctl(&env, 0, 1);
    let out = run(env
        .ctl_cmd(env.path(), &["service", "install"])
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", env.path().join("config"))
        .env("PATH", path)
        .env_remove("CKPT_NO_AUTOSTART"));
    assert_eq!(out.code(), 1, "{out:?}");
    assert!(out.stderr.contains("Failed to enable unit"), "{out:?}");
    let new = daemon_pid(&env);
    assert_ne!(new, old, "the old daemon was stopped for the service");
    // SAFETY: stopping the daemon this test's ckptctl started.
    unsafe { libc::kill(new as i32, libc::SIGTERM) };
    wait_for(
        "the restarted daemon to exit",
        Duration::from_secs(30),
        || {
            // SAFETY: signal 0 only probes whether the pid exists.
            unsafe { libc::kill(new as i32, 0) != 0 }
        },
    );
}
