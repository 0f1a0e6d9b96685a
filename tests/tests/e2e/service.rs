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

/// A `launchctl` on PATH that logs each call's arguments (one line each)
/// and fails `load` with `load` as its exit status.
fn fake_launchctl(env: &Env, load: u8) -> (String, std::path::PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let dir = env.path().join("fakebin");
    std::fs::create_dir_all(&dir).unwrap();
    let calls = env.path().join("launchctl.calls");
    let script = format!(
        "#!/bin/sh\necho \"$*\" >> '{}'\ncase \"$1\" in\n  load) [ {load} = 0 ] || echo 'Load failed: 5: Input/output error' >&2; exit {load};;\nesac\nexit 0\n",
        calls.display()
    );
    let path = dir.join("launchctl");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    let search = format!("{}:{}", dir.display(), std::env::var("PATH").unwrap());
    (search, calls)
}

/// macOS's path, driven here: `service install` writes a LaunchAgent plist
/// that launchd can read (ckptd with this ckptctl's socket and data dir,
/// started at load, restarted when it fails, logging under
/// `~/Library/Logs`) and loads it with `launchctl`; `uninstall` unloads
/// and removes it; a load that fails says so.
#[test]
fn service_install_for_launchd_writes_a_launch_agent_and_loads_it() {
    let env = Env::new();
    let home = env.dir("home");
    let (path, calls) = fake_launchctl(&env, 0);
    let ctl = |args: &[&str]| {
        run(env
            .ctl_cmd(env.path(), args)
            .env("HOME", &home)
            .env("PATH", &path))
    };
    let out = ctl(&["service", "install", "--manager", "launchd"]);
    assert!(out.status.success(), "{out:?}");
    let plist_path = home.join("Library/LaunchAgents/dev.ckpt.ckptd.plist");
    let agent = plist::Value::from_file(&plist_path).expect("a valid plist");
    let agent = agent.as_dictionary().expect("a dictionary");
    assert_eq!(agent["Label"].as_string(), Some("dev.ckpt.ckptd"));
    let args: Vec<&str> = agent["ProgramArguments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_string().unwrap())
        .collect();
    let ckptd = std::fs::canonicalize(bin("ckptd")).unwrap();
    let (socket, data) = (env.socket.to_str().unwrap(), env.data.to_str().unwrap());
    assert_eq!(
        args,
        [
            ckptd.to_str().unwrap(),
            "--socket",
            socket,
            "--data-dir",
            data
        ]
    );
    assert_eq!(agent["RunAtLoad"].as_boolean(), Some(true));
    let keep_alive = agent["KeepAlive"].as_dictionary().expect("KeepAlive rules");
    assert_eq!(keep_alive["SuccessfulExit"].as_boolean(), Some(false));
    let log = home.join("Library/Logs/ckpt/ckptd.log");
    for key in ["StandardOutPath", "StandardErrorPath"] {
        assert_eq!(agent[key].as_string(), log.to_str(), "{key}");
    }
    assert!(log.parent().unwrap().is_dir(), "launchd does not make it");
    let plist_arg = plist_path.to_str().unwrap();
    let logged = std::fs::read_to_string(&calls).unwrap();
    assert_eq!(logged, format!("list\nload -w {plist_arg}\n"));

    let out = ctl(&["service", "uninstall", "--manager", "launchd"]);
    assert!(out.status.success(), "{out:?}");
    assert!(!plist_path.exists());
    let logged = std::fs::read_to_string(&calls).unwrap();
    assert!(
        logged.ends_with(&format!("unload -w {plist_arg}\n")),
        "{logged}"
    );

    let (path, _) = fake_launchctl(&env, 5);
    let out = run(env
        .ctl_cmd(env.path(), &["service", "--manager", "launchd", "install"])
        .env("HOME", &home)
        .env("PATH", &path));
    assert_eq!(out.code(), 1, "{out:?}");
    assert!(out.stderr.contains("Load failed"), "{out:?}");
    assert!(plist_path.exists(), "the file is written, not loaded");
}
