//! The daemon's front door: locks, sockets, frames, versions, clean exits.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::time::Duration;

use ckpt_e2e::*;
use ckpt_proto::{write_frame, ErrorKind, Request, Response, PROTOCOL_VERSION};

#[test]
fn second_daemon_is_refused_naming_the_holder() {
    let env = Env::new();
    let first = env.start_daemon();
    let mut second = env.spawn_daemon(&[]);
    let status = wait_timeout(&mut second, Duration::from_secs(30)).expect("second ckptd exits");
    assert!(!status.success(), "second daemon must fail");
    let log = std::fs::read_to_string(env.log_path()).unwrap();
    assert!(
        log.contains(&format!("pid {}", first.pid())) && log.contains("already running"),
        "second daemon must name the running pid:\n{log}"
    );
    // The first one is untouched and still answers.
    hello(&env.socket).expect("first daemon still answers");
}

#[test]
fn stale_socket_is_reclaimed() {
    let env = Env::new();
    std::fs::create_dir_all(env.socket.parent().unwrap()).unwrap();
    std::fs::set_permissions(
        env.socket.parent().unwrap(),
        std::fs::Permissions::from_mode(0o700),
    )
    .unwrap();
    // A socket file nobody listens on, as a crashed daemon leaves behind.
    drop(UnixListener::bind(&env.socket).unwrap());
    assert!(env.socket.exists());
    assert!(UnixStream::connect(&env.socket).is_err());
    let _d = env.start_daemon();
    hello(&env.socket).expect("new daemon answers on the reclaimed socket");
}

/// A runtime and data dir deeper than a socket address holds (macOS's
/// `~/Library/...` passes its 103 bytes easily) still serve: the daemon
/// binds a short stand-in that `ckptctl` derives alike, and removes it when
/// it stops.
#[test]
fn a_socket_path_too_long_for_an_address_is_served_at_a_short_stand_in() {
    let mut env = Env::new();
    let deep = env.path().join("d".repeat(100)).join("e".repeat(60));
    env.socket = deep.join("run").join("ckptd.sock");
    env.data = deep.join("data");
    assert!(env.socket.as_os_str().len() > ckpt_proto::paths::MAX_SOCKET_PATH);
    let d = env.start_daemon();
    let address = ckpt_proto::paths::socket_address(&env.socket);
    assert_ne!(address, env.socket);
    assert!(address.as_os_str().len() <= ckpt_proto::paths::MAX_SOCKET_PATH);
    let mode = std::fs::metadata(address.parent().unwrap())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700, "the stand-in's directory is private");

    let proj = env.git_repo("p", &[("a.txt", b"a\n")]);
    env.ctl_ok(&proj, &["watch"]);
    let status = env.ctl_json(&proj, &["status"]);
    assert_eq!(status["daemon"]["socket"], env.socket.to_str().unwrap());
    assert_eq!(status["daemon"]["data_dir"], env.data.to_str().unwrap());
    assert!(d.terminate().success());
    assert!(!address.exists(), "the stand-in is removed at exit");
}

#[test]
fn live_socket_is_never_stolen() {
    let env = Env::new();
    let dir = env.socket.parent().unwrap();
    std::fs::create_dir_all(dir).unwrap();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    // Someone (not holding our lock) listens on the socket path.
    let listener = UnixListener::bind(&env.socket).unwrap();
    let mut d = env.spawn_daemon(&[]);
    let status = wait_timeout(&mut d, Duration::from_secs(30)).expect("ckptd exits");
    assert!(!status.success());
    let log = std::fs::read_to_string(env.log_path()).unwrap();
    assert!(log.contains("already listening"), "{log}");
    // The listener still owns its socket.
    let _client = UnixStream::connect(&env.socket).expect("socket still served");
    let (_conn, _) = listener.accept().expect("listener still accepts");
}

#[test]
fn socket_dir_is_private() {
    let env = Env::new();
    let _d = env.start_daemon();
    let dir = env.socket.parent().unwrap();
    let mode = std::fs::metadata(dir).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "socket dir mode {mode:o}");
}

#[test]
fn loose_socket_dir_is_refused() {
    let env = Env::new();
    let dir = env.socket.parent().unwrap();
    std::fs::create_dir_all(dir).unwrap();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let mut d = env.spawn_daemon(&[]);
    let status = wait_timeout(&mut d, Duration::from_secs(30)).expect("ckptd exits");
    assert!(!status.success());
    let log = std::fs::read_to_string(env.log_path()).unwrap();
    assert!(log.contains("must be private"), "{log}");
}

#[test]
fn garbage_and_oversized_frames_get_errors_while_others_are_served() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.dir("p");
    std::fs::write(proj.join("a"), "a").unwrap();
    env.ctl_ok(&proj, &["watch"]);

    // Garbage body after a proper hello: an error reply, and the connection
    // keeps working because the framing is intact.
    let mut bad = hello(&env.socket).unwrap();
    send_raw(&mut bad, &[0, 0, 0, 9]);
    send_raw(&mut bad, b"\xffgarbage!");
    match recv(&mut bad) {
        Response::Error { kind, message } => {
            assert_eq!(kind, ErrorKind::BadFrame);
            assert!(message.contains("malformed"), "{message}");
        }
        other => panic!("expected an error, got {other:?}"),
    }
    write_frame(&mut bad, &Request::Status).unwrap();
    assert!(matches!(recv(&mut bad), Response::Status(_)));

    // Meanwhile another client is served normally.
    env.ctl_ok(&proj, &["sync"]);

    // An oversized frame: error, then the connection is closed.
    let mut big = hello(&env.socket).unwrap();
    send_raw(&mut big, &u32::MAX.to_be_bytes());
    match recv(&mut big) {
        Response::Error { kind, message } => {
            assert_eq!(kind, ErrorKind::BadFrame);
            assert!(message.contains("exceeds"), "{message}");
        }
        other => panic!("expected an error, got {other:?}"),
    }
    assert!(
        closed(&mut big),
        "connection closed after an oversized frame"
    );

    // A truncated frame: the daemon drops that connection only.
    let mut cut = hello(&env.socket).unwrap();
    send_raw(&mut cut, &[0, 0, 1, 0, b'{']);
    drop(cut);

    // Garbage before any hello: an error and a closed connection.
    let mut raw = UnixStream::connect(&env.socket).unwrap();
    send_raw(&mut raw, &[0, 0, 0, 4, b'n', b'o', b'p', b'e']);
    assert!(matches!(
        recv(&mut raw),
        Response::Error {
            kind: ErrorKind::BadFrame,
            ..
        }
    ));
    assert!(closed(&mut raw));

    // A request before the hello is refused too.
    let mut early = UnixStream::connect(&env.socket).unwrap();
    write_frame(&mut early, &Request::Status).unwrap();
    match recv(&mut early) {
        Response::Error { kind, message } => {
            assert_eq!(kind, ErrorKind::BadFrame);
            assert!(message.contains("Hello"), "{message}");
        }
        other => panic!("expected an error, got {other:?}"),
    }

    // Still alive and well for everyone.
    env.ctl_ok(&proj, &["status"]);
    let out = env.ctl(&proj, &["sync"]);
    assert!(out.status.success(), "{out:?}");
}

/// Ledger values travel as the enums they are: a raw client's misspelled
/// one is refused at decoding, naming every accepted value, and the
/// connection goes on.
#[test]
fn a_misspelled_ledger_value_is_refused_naming_every_accepted_one() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.dir("p");
    std::fs::write(proj.join("a.rs"), "a\n").unwrap();
    env.ctl_ok(&proj, &["watch"]);
    let add = Request::LedgerAdd(ckpt_proto::LedgerAdd {
        dir: proj.as_path().into(),
        path: proj.join("a.rs").into(),
        span: None,
        bucket: ckpt_proto::Bucket::CompatShim,
        severity: ckpt_proto::Severity::High,
        confidence: 0.5,
        owner: None,
        user: None,
        note: "n".into(),
    });
    let good = serde_json::to_string(&add).unwrap();
    assert!(good.contains(r#""bucket":"compat-shim""#), "{good}");
    let mut conn = hello(&env.socket).unwrap();
    for (from, to, want) in [
        (
            r#""compat-shim""#,
            r#""shim""#,
            "unknown bucket 'shim' (one of: compat-shim,",
        ),
        (
            r#""high""#,
            r#""urgent""#,
            "unknown severity 'urgent' (one of: low, medium, high, critical)",
        ),
    ] {
        let bad = good.replace(from, to);
        send_raw(&mut conn, &(bad.len() as u32).to_be_bytes());
        send_raw(&mut conn, bad.as_bytes());
        match recv(&mut conn) {
            Response::Error { kind, message } => {
                assert_eq!(kind, ErrorKind::BadFrame);
                assert!(message.contains(want), "{message}");
            }
            other => panic!("expected an error, got {other:?}"),
        }
    }
    write_frame(&mut conn, &add).unwrap();
    assert!(matches!(recv(&mut conn), Response::LedgerAdded(_)));
}

#[test]
fn version_mismatch_is_refused_clearly() {
    let env = Env::new();
    let _d = env.start_daemon();
    let mut s = UnixStream::connect(&env.socket).unwrap();
    write_frame(
        &mut s,
        &Request::Hello {
            version: PROTOCOL_VERSION + 41,
            client: "future".into(),
            progress: false,
        },
    )
    .unwrap();
    match recv(&mut s) {
        Response::Error { kind, message } => {
            assert_eq!(kind, ErrorKind::Version);
            assert!(message.contains("protocol"), "{message}");
            assert!(
                message.contains(&(PROTOCOL_VERSION + 41).to_string()),
                "{message}"
            );
        }
        other => panic!("expected a version error, got {other:?}"),
    }
}

/// A fake daemon on `env`'s socket: reads one connection's hello, answers
/// `reply` and hangs up without reading more.
fn fake_daemon(env: &Env, reply: Response) -> std::thread::JoinHandle<()> {
    std::fs::create_dir_all(env.socket.parent().unwrap()).unwrap();
    let listener = UnixListener::bind(&env.socket).unwrap();
    std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let _: Request = ckpt_proto::read_frame(&mut conn).unwrap();
        write_frame(&mut conn, &reply).unwrap();
        conn.shutdown(std::net::Shutdown::Both).unwrap();
    })
}

#[test]
fn ckptctl_reports_a_daemon_of_another_protocol_version() {
    let env = Env::new();
    // A daemon from the future.
    let server = fake_daemon(
        &env,
        Response::Hello(ckpt_proto::HelloReply {
            version: 99,
            daemon_version: "9.9.9".into(),
            pid: 4242,
        }),
    );
    let out = env.ctl(env.path(), &["status"]);
    server.join().unwrap();
    assert_eq!(out.code(), 1, "{out:?}");
    assert!(
        out.stderr.contains("protocol 99")
            && out.stderr.contains(&format!("speaks {PROTOCOL_VERSION}")),
        "{}",
        out.stderr
    );
}

/// ckptctl sends its request right behind the hello; a daemon that refuses
/// the hello and hangs up before reading the request still gets its reason
/// shown, not a broken pipe.
#[test]
fn ckptctl_shows_a_refused_hello_even_when_the_daemon_hangs_up() {
    let env = Env::new();
    let server = fake_daemon(
        &env,
        Response::Error {
            kind: ErrorKind::Version,
            message: "protocol version mismatch: fake daemon".into(),
        },
    );
    // A request of 1 MB (5,000 paths of 200 bytes) cannot sit in the
    // socket buffer: the send fails.
    let paths: Vec<String> = (0..5000).map(|i| format!("{i:0>200}")).collect();
    let mut args = vec!["diff", "1"];
    args.extend(paths.iter().map(String::as_str));
    let out = env.ctl(env.path(), &args);
    server.join().unwrap();
    assert_eq!(out.code(), 1, "{out:?}");
    assert!(out.stderr.contains("fake daemon"), "{}", out.stderr);
}

#[test]
fn no_daemon_and_no_autostart_is_a_clear_error() {
    let env = Env::new();
    let out = env.ctl(env.path(), &["status"]);
    assert_eq!(out.code(), 1, "{out:?}");
    assert!(out.stderr.contains("no ckptd is running"), "{}", out.stderr);
    let out = env.ctl(env.path(), &["--json", "status"]);
    assert_eq!(out.code(), 1);
    assert!(out.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("no ckptd"));
}

#[test]
fn autostart_spawns_a_daemon_on_the_same_socket_and_data_dir() {
    let env = Env::new();
    let proj = env.dir("p");
    std::fs::write(proj.join("f"), "1").unwrap();
    let out = run(env
        .ctl_cmd(&proj, &["--json", "status"])
        .env_remove("CKPT_NO_AUTOSTART"));
    assert!(out.status.success(), "{out:?}");
    let status = out.json();
    let pid = status["daemon"]["pid"].as_i64().unwrap() as i32;
    assert_eq!(status["daemon"]["socket"], env.socket.to_str().unwrap());
    assert_eq!(status["daemon"]["data_dir"], env.data.to_str().unwrap());
    // Its log went to the data dir.
    assert!(env.data.join("ckptd.log").exists());
    // It keeps running for the next call.
    let again = env.ctl_json(&proj, &["status"]);
    assert_eq!(again["daemon"]["pid"].as_i64().unwrap() as i32, pid);
    // SAFETY: stopping the daemon this test started.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    wait_for(
        "the autostarted daemon to exit",
        Duration::from_secs(30),
        || {
            // SAFETY: signal 0 only probes whether the pid exists.
            unsafe { libc::kill(pid, 0) != 0 }
        },
    );
}

#[test]
fn sigterm_shuts_down_cleanly() {
    let env = Env::new();
    let d = env.start_daemon();
    let status = d.terminate();
    assert!(status.success(), "ckptd exit status {status}");
    assert!(!env.socket.exists(), "socket removed on shutdown");
    // And a new daemon starts on the same socket and data dir.
    let _d2 = env.start_daemon();
}

#[test]
fn usage_errors_exit_2() {
    let env = Env::new();
    let out = env.ctl(env.path(), &["rewind"]);
    assert_eq!(out.code(), 2, "{out:?}");
    let out = env.ctl(env.path(), &["no-such-command"]);
    assert_eq!(out.code(), 2, "{out:?}");
    // Each bad value is the command line's fault, told before any daemon is
    // asked (none runs here).
    for args in [
        &["export", "abc", "--out", "x"][..],
        &["export", "3..", "--out", "x"],
        &["rewind", "--", "-1"],
        &["rewind", "0"],
        &["show", "x"],
        &["diff", "0"],
        &[
            "ledger",
            "add",
            "a.txt",
            "--bucket",
            "bad",
            "--severity",
            "low",
            "--confidence",
            "0.5",
            "--note",
            "n",
        ],
        &[
            "ledger",
            "add",
            "a.txt",
            "--bucket",
            "tool-gap",
            "--severity",
            "huge",
            "--confidence",
            "0.5",
            "--note",
            "n",
        ],
        &[
            "ledger",
            "add",
            "a.txt",
            "--bucket",
            "tool-gap",
            "--severity",
            "low",
            "--confidence",
            "1.5",
            "--note",
            "n",
        ],
        &["ledger", "list", "--min-confidence", "-0.1"],
    ] {
        let out = env.ctl(env.path(), args);
        assert_eq!(out.code(), 2, "{args:?}: {out:?}");
        assert!(!out.stderr.contains("no ckptd"), "{args:?}: {out:?}");
    }
}

#[test]
fn options_set_by_the_environment_are_not_shown_as_required() {
    let env = Env::new();
    // env.ctl sets CKPT_SOCKET and CKPT_DATA_DIR.
    let out = env.ctl(env.path(), &["rewind"]);
    assert_eq!(out.code(), 2, "{out:?}");
    let usage = out
        .stderr
        .lines()
        .find(|l| l.starts_with("Usage:"))
        .expect("a usage line");
    assert_eq!(usage, "Usage: ckptctl rewind <TURN>", "{out:?}");
}

#[test]
fn connections_from_another_user_are_refused() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root to run a client as another user");
        return;
    }
    let env = Env::new();
    let _d = env.start_daemon();
    // Open the way to the socket on purpose (the daemon never does), so that
    // only the peer-credential check stands between another user and it.
    for dir in [env.path(), env.socket.parent().unwrap()] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::set_permissions(&env.socket, std::fs::Permissions::from_mode(0o777)).unwrap();
    let mut cmd = env.ctl_cmd(std::path::Path::new("/"), &["status"]);
    std::os::unix::process::CommandExt::uid(&mut cmd, 65534);
    let out = run(&mut cmd);
    assert_eq!(out.code(), 1, "{out:?}");
    assert!(
        !out.stdout.contains("ckptd"),
        "another user must get nothing: {out:?}"
    );
    let log = std::fs::read_to_string(env.log_path()).unwrap();
    assert!(
        log.contains("refusing a connection from another user"),
        "{log}"
    );
    // Our own user is still served.
    let st = env.ctl_json(env.path(), &["status"]);
    assert!(st["daemon"]["pid"].is_number());
}

#[test]
fn concurrent_autostarts_end_with_one_daemon_serving_everyone() {
    let env = Env::new();
    let children: Vec<_> = (0..4)
        .map(|_| {
            let mut cmd = env.ctl_cmd(env.path(), &["--json", "status"]);
            cmd.env_remove("CKPT_NO_AUTOSTART")
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped());
            cmd.spawn().unwrap()
        })
        .collect();
    let mut pids = Vec::new();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success(), "{out:?}");
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        pids.push(doc["daemon"]["pid"].as_i64().unwrap());
    }
    pids.dedup();
    assert_eq!(pids.len(), 1, "one daemon answered everyone: {pids:?}");
    let pid = pids[0] as i32;
    // SAFETY: stopping the daemon this test started.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    wait_for("the daemon to exit", Duration::from_secs(30), || {
        // SAFETY: signal 0 only probes whether the pid exists.
        unsafe { libc::kill(pid, 0) != 0 }
    });
}

/// More silent clients than the daemon has threads (512), half of them
/// stuck before their hello and half between requests (an MCP server's
/// shape), hold up nobody: a hook call is answered, and so is each idle
/// client when it speaks again.
#[test]
fn idle_connections_beyond_the_thread_pool_do_not_hold_up_a_hook_call() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.dir("p");
    std::fs::write(proj.join("a.txt"), "a\n").unwrap();
    env.ctl_ok(&proj, &["watch"]);
    let mut silent = Vec::new();
    let mut greeted = Vec::new();
    for _ in 0..300 {
        silent.push(UnixStream::connect(&env.socket).unwrap());
        greeted.push(hello(&env.socket).unwrap());
    }
    env.ctl_ok(&proj, &["turn-start"]);
    std::fs::write(proj.join("a.txt"), "b\n").unwrap();
    let ended = env.ctl_json(&proj, &["turn-end"]);
    assert_eq!(ended["turn"]["entries"].as_array().map(Vec::len), Some(1));
    for s in greeted.iter_mut().step_by(50) {
        write_frame(s, &Request::Status).unwrap();
        assert!(matches!(recv(s), Response::Status(_)));
    }
    for s in silent.iter_mut().step_by(50) {
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        write_frame(
            s,
            &Request::Hello {
                version: PROTOCOL_VERSION,
                client: "late".into(),
                progress: false,
            },
        )
        .unwrap();
        assert!(matches!(recv(s), Response::Hello(_)));
    }
}

/// A client that waits between requests (longer than a connection keeps
/// its thread) is answered each time, on the same connection.
#[test]
fn a_connection_silent_between_requests_is_answered_each_time() {
    let env = Env::new();
    let _d = env.start_daemon();
    let mut s = hello(&env.socket).unwrap();
    for pause in [0, 300, 1200] {
        std::thread::sleep(Duration::from_millis(pause));
        write_frame(&mut s, &Request::Status).unwrap();
        assert!(
            matches!(recv(&mut s), Response::Status(_)),
            "after {pause} ms"
        );
    }
    // Closing a parked connection frees it: the daemon stays up.
    drop(s);
    hello(&env.socket).expect("the daemon still answers");
}
