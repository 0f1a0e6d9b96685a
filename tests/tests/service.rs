//! `ckptctl service install|uninstall` writes and removes the user service
//! file (systemd on Linux), pointing at the ckptd next to ckptctl.

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
