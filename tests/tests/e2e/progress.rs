//! Progress of long requests (issue 32 item 4): the daemon's progress
//! frames, sent only to a connection whose hello asks for them, and
//! `ckptctl`'s bar on stderr, only on a terminal and never with `--json`.

use std::path::{Path, PathBuf};

use ckpt_e2e::*;
use ckpt_proto::{
    read_frame, write_frame, Progress, ProgressOp, Redo, Request, Response, Rewind, RewindFlags,
    RewindTo, TurnEnd, TurnStart, WirePath,
};

use crate::git_output::on_terminal;

/// A project of `n` files of 1 KiB in 20 directories: a baseline the
/// debug daemon takes well over a second for.
fn tree(env: &Env, name: &str, n: usize) -> PathBuf {
    let root = env.dir(name);
    for i in 0..n {
        let dir = root.join(format!("d{}", i % 20));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("f{i}")), binary(i as u8, 1024)).unwrap();
    }
    root
}

/// Sends `req` on `s`; the progress frames before the reply, and the reply.
fn ask(s: &mut std::os::unix::net::UnixStream, req: &Request) -> (Vec<Progress>, Response) {
    write_frame(s, req).unwrap();
    let mut frames = Vec::new();
    loop {
        match read_frame::<_, Response>(s).unwrap() {
            Response::Progress(p) => frames.push(p),
            r => return (frames, r),
        }
    }
}

fn wire(p: &Path) -> WirePath {
    WirePath::from(p)
}

#[test]
fn the_daemon_sends_progress_frames_only_to_a_connection_that_asks() {
    let env = Env::new();
    let _d = env.start_daemon_with(&[("CKPT_TEST_PROGRESS_AT_ONCE", "1")]);
    let root = tree(&env, "p", 3000);
    let mut asking = hello_asking(&env.socket, true).unwrap();
    asking
        .set_read_timeout(Some(std::time::Duration::from_secs(300)))
        .unwrap();

    let (frames, reply) = ask(
        &mut asking,
        &Request::Watch {
            dir: wire(&root),
            discover: false,
        },
    );
    assert!(matches!(reply, Response::Watched(_)), "{reply:?}");
    assert!(
        !frames.is_empty(),
        "a baseline of 3,000 files sends progress"
    );
    assert!(frames
        .iter()
        .all(|p| p.op == ProgressOp::Scan && p.total.is_none()));
    assert!(
        frames
            .windows(2)
            .all(|w| w[0].done <= w[1].done && w[0].bytes <= w[1].bytes),
        "{frames:?}"
    );
    assert!(frames.last().unwrap().done <= 3020 && frames.last().unwrap().bytes > 0);

    // A turn that deletes every file, rewound: the apply's frames count
    // its paths against their total.
    let mut plain = hello(&env.socket).unwrap();
    let (none, r) = ask(
        &mut plain,
        &Request::TurnStart(TurnStart {
            dir: wire(&root),
            ..TurnStart::default()
        }),
    );
    assert!(
        none.is_empty() && matches!(r, Response::TurnStarted(_)),
        "{r:?}"
    );
    for i in 0..20 {
        std::fs::remove_dir_all(root.join(format!("d{i}"))).unwrap();
    }
    let (_, r) = ask(
        &mut plain,
        &Request::TurnEnd(TurnEnd {
            dir: wire(&root),
            ..TurnEnd::default()
        }),
    );
    assert!(matches!(r, Response::TurnEnded(_)), "{r:?}");
    let (frames, reply) = ask(
        &mut asking,
        &Request::Rewind(Rewind {
            dir: wire(&root),
            to: RewindTo::Before(1),
            paths: vec![],
            flags: RewindFlags::default(),
            merge: None,
            list: None,
        }),
    );
    assert!(matches!(reply, Response::Rewind(_)), "{reply:?}");
    let apply: Vec<_> = frames
        .iter()
        .filter(|p| p.op == ProgressOp::Apply)
        .collect();
    assert!(!apply.is_empty(), "a rewind of 3,020 paths sends progress");
    assert!(apply
        .iter()
        .all(|p| p.total == Some(3020) && p.done <= 3020));
    assert!(apply.last().unwrap().bytes > 0, "files were written");

    // The same work on a connection that did not ask: the reply alone.
    let (frames, reply) = ask(
        &mut plain,
        &Request::Redo(Redo {
            dir: wire(&root),
            flags: RewindFlags::default(),
            list: None,
        }),
    );
    assert!(matches!(reply, Response::Rewind(_)), "{reply:?}");
    assert!(frames.is_empty(), "{frames:?}");
}

#[test]
fn ckptctl_shows_progress_on_a_terminal_only_and_never_with_json() {
    let env = Env::new();
    let _d = env.start_daemon_with(&[("CKPT_TEST_PROGRESS_AT_ONCE", "1")]);

    let shown = tree(&env, "shown", 2000);
    let screen = on_terminal(&env, &shown, &["watch"], &[]);
    assert!(
        screen.contains("scanning…") && screen.contains(" entries, "),
        "{screen}"
    );
    assert!(screen.contains("watching "), "{screen}");

    let piped = tree(&env, "piped", 2000);
    let out = env.ctl(&piped, &["watch"]);
    assert_eq!(out.code(), 0, "{out:?}");
    assert!(out.stdout.contains("watching "), "{out:?}");
    assert!(!out.stderr.contains("scanning"), "{out:?}");

    let json = tree(&env, "json", 2000);
    let screen = on_terminal(&env, &json, &["--json", "watch"], &[]);
    assert!(!screen.contains("scanning"), "{screen}");
    let doc: serde_json::Value = serde_json::from_str(screen.trim()).unwrap();
    assert_eq!(doc["already"], false, "{doc}");
}
