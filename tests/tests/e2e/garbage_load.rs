//! Many connections sending garbage — random bytes, truncated frames, a
//! header claiming 1 GiB, JSON of the wrong shape, garbage after a good
//! hello, frames trickled a byte at a time — while one client keeps making
//! normal calls: every normal call succeeds, the daemon stays up, and the
//! turns it recorded meanwhile still rewind exactly.
//!
//! `CKPT_FUZZ_CONNECTIONS=n` makes each garbage thread open `n` connections
//! (default 60).

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ckpt_e2e::*;
use ckpt_proto::{write_frame, ErrorKind, Request, Response, MAX_REQUEST};

/// xorshift64*: deterministic per thread, so a failure can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

fn frame(body: &[u8]) -> Vec<u8> {
    let mut v = (body.len() as u32).to_be_bytes().to_vec();
    v.extend_from_slice(body);
    v
}

fn hello_frame() -> Vec<u8> {
    ckpt_proto::encode(&Request::Hello {
        version: ckpt_proto::PROTOCOL_VERSION,
        client: "garbage".into(),
        progress: false,
    })
    .expect("hello encodes")
}

/// Well-formed JSON that is not a request (or not a valid one).
const WRONG_SHAPES: &[&str] = &[
    "[1,2,3]",
    "{}",
    "null",
    "\"Watch\"",
    r#"{"Watch":{"dir":5}}"#,
    r#"{"Rewind":{"dir":"/","turn":"one"}}"#,
    r#"{"Show":{"dir":"/tmp","turn":1e400}}"#,
    r#"{"Log":{"dir":"/tmp","limit":-1}}"#,
    r#"{"NoSuchRequest":{}}"#,
    r#"{"Status":null,"Projects":null}"#,
    r#"{"Hello":{"version":18446744073709551616}}"#,
];

/// Reads whatever the daemon answers until it closes or goes quiet; counts
/// the error replies of kind `BadFrame`, and fails on a reply that says
/// a handler panicked.
fn drain(s: &mut UnixStream) -> u64 {
    let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
    let mut bad_frames = 0;
    loop {
        match ckpt_proto::read_frame::<_, Response>(s) {
            Ok(Response::Error { kind, message }) => {
                assert_ne!(
                    kind,
                    ErrorKind::Internal,
                    "a garbage frame hit a bug: {message}"
                );
                bad_frames += u64::from(kind == ErrorKind::BadFrame);
            }
            Ok(_) => {}
            Err(_) => return bad_frames,
        }
    }
}

/// One garbage connection of a kind picked by `rng`; returns the error
/// replies it got.
fn garbage_connection(socket: &Path, rng: &mut Rng) -> u64 {
    let mut s = UnixStream::connect(socket).expect("connect");
    let kind = rng.below(8);
    let mut out = Vec::new();
    match kind {
        // Random bytes.
        0 => {
            let n = rng.below(2000) as usize;
            out = rng.bytes(n);
        }
        // A frame cut short.
        1 => {
            out.extend(hello_frame());
            let body = br#"{"Sync":{"dir":"/tmp"}}"#;
            let cut = rng.below(body.len() as u64) as usize;
            out.extend_from_slice(&(body.len() as u32).to_be_bytes());
            out.extend_from_slice(&body[..cut]);
        }
        // A header claiming 1 GiB, then the end.
        2 => out.extend_from_slice(&(1u32 << 30).to_be_bytes()),
        // A header claiming exactly the cap, and a few bytes of it.
        3 => {
            out.extend(hello_frame());
            out.extend_from_slice(&(MAX_REQUEST as u32).to_be_bytes());
            out.extend(rng.bytes(100));
        }
        // JSON of the wrong shape, with and without a hello first.
        4 | 5 => {
            if kind == 5 {
                out.extend(hello_frame());
            }
            for _ in 0..=rng.below(4) {
                let pick = rng.below(WRONG_SHAPES.len() as u64) as usize;
                out.extend(frame(WRONG_SHAPES[pick].as_bytes()));
            }
        }
        // A good hello, then garbage bodies in good frames.
        6 => {
            out.extend(hello_frame());
            for _ in 0..=rng.below(4) {
                let n = rng.below(300) as usize;
                out.extend(frame(&rng.bytes(n)));
            }
        }
        // Slow loris: a frame trickled a byte at a time, then dropped.
        _ => {
            let _ = s.write_all(&hello_frame());
            let body = br#"{"Status"}"#;
            let mut slow = (body.len() as u32 + 50).to_be_bytes().to_vec();
            slow.extend_from_slice(body);
            for b in slow {
                if s.write_all(&[b]).is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            return 0;
        }
    }
    // The daemon may close before reading it all; that is its right.
    let _ = s.write_all(&out);
    let _ = s.shutdown(std::net::Shutdown::Write);
    drain(&mut s)
}

#[test]
fn garbage_connections_do_not_disturb_normal_calls_or_data() {
    let env = Env::new();
    let d = env.start_daemon();
    let proj = env.git_repo("app", &[("a.txt", b"a0\n"), ("lib/b.rs", b"fn b() {}\n")]);
    env.ctl_ok(&proj, &["watch"]);
    let before = snapshot_work(&proj);

    let per_thread: u64 = std::env::var("CKPT_FUZZ_CONNECTIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60);
    let stop = Arc::new(AtomicBool::new(false));
    let errors_seen = Arc::new(AtomicU64::new(0));
    // Connections that stay open mid-frame for the whole test.
    let mut hanging = Vec::new();
    for i in 0..8u8 {
        let mut s = UnixStream::connect(&env.socket).expect("connect");
        let mut partial = hello_frame();
        partial.extend_from_slice(&[0, 0, 1]);
        partial.truncate(partial.len() - usize::from(i % 3));
        s.write_all(&partial).expect("write partial frame");
        hanging.push(s);
    }
    let attackers: Vec<_> = (0..4u64)
        .map(|t| {
            let socket = env.socket.clone();
            let stop = Arc::clone(&stop);
            let errors_seen = Arc::clone(&errors_seen);
            std::thread::spawn(move || {
                let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (t + 1));
                for _ in 0..per_thread {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let n = garbage_connection(&socket, &mut rng);
                    errors_seen.fetch_add(n, Ordering::Relaxed);
                }
            })
        })
        .collect();

    // Meanwhile, an agent works turn after turn.
    let mut turns = 0;
    while turns < 6 || attackers.iter().any(|a| !a.is_finished()) {
        turns += 1;
        env.ctl_ok(&proj, &["status"]);
        env.ctl_ok(&proj, &["turn-start"]);
        sh(
            &proj,
            &format!("echo turn{turns} >> a.txt && echo {turns} > n{turns}.txt"),
        );
        let ended = env.ctl_json(&proj, &["turn-end"]);
        let paths: Vec<&str> = ended["turn"]["entries"]
            .as_array()
            .expect("entries")
            .iter()
            .filter_map(|e| e["path"].as_str())
            .collect();
        assert_eq!(
            paths,
            ["a.txt".to_string(), format!("n{turns}.txt")],
            "turn {turns} saw exactly its own changes"
        );
        if turns > 200 {
            stop.store(true, Ordering::Relaxed);
        }
    }
    for a in attackers {
        a.join().expect("a garbage thread panicked");
    }
    assert!(
        errors_seen.load(Ordering::Relaxed) > 0,
        "the garbage got error replies"
    );

    // Hanging connections get nothing, and cost nothing to the rest.
    for s in &mut hanging {
        assert!(
            matches!(recv(s), Response::Hello(_)),
            "the whole hello is answered"
        );
        s.set_read_timeout(Some(Duration::from_millis(10))).unwrap();
        let mut buf = [0u8; 4];
        let got = s.read(&mut buf);
        assert!(
            matches!(&got, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
            "a half-sent frame is waited for, not answered: {got:?}"
        );
    }
    let mut s = hello(&env.socket).expect("the daemon still answers");
    write_frame(&mut s, &Request::Status).unwrap();
    assert!(matches!(recv(&mut s), Response::Status(_)));
    drop(hanging);

    let after = snapshot_work(&proj);
    let r = env.ctl_json(&proj, &["rewind", "1"]);
    assert_eq!(r["outcome"], "applied", "{r:#}");
    assert_same_tree("every turn rewound", &before, &snapshot_work(&proj));
    env.ctl_ok(&proj, &["redo"]);
    assert_same_tree("redone", &after, &snapshot_work(&proj));
    let log = std::fs::read_to_string(env.log_path()).unwrap_or_default();
    assert!(!log.contains("panicked"), "the daemon log shows a panic");
    assert!(d.terminate().success(), "the daemon shuts down cleanly");
}
