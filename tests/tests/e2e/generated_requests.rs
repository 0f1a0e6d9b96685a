//! Generated requests through the real daemon's dispatch: every variant,
//! with turn numbers anywhere in `i64` and paths that are relative, empty,
//! hold NUL or non-UTF-8 bytes, climb out with `..`, or point into `.git`.
//! Each request gets exactly one reply and none is an internal error (a
//! handler's panic); whatever the requests do, nothing outside the project
//! and nothing under its `.git` changes, and the daemon keeps serving.
//!
//! `CKPT_FUZZ_CASES=n` runs `n` request sequences (default 48).

use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

use ckpt_e2e::*;
use ckpt_proto::{
    write_frame, Bucket, ErrorKind, LedgerFilter, LedgerRecord, LedgerStatus, LineSpan, Request,
    Response, Severity, WirePath,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

/// Where the generated paths point, below the test's temp dir.
#[derive(Clone, Debug)]
enum Spot {
    Root,
    Sub,
    File,
    Git,
    GitConfig,
    Missing,
    DotDot,
    Outside,
    Nul,
    NonUtf8,
    Relative,
    Empty,
    Slash,
}

fn spot() -> impl Strategy<Value = Spot> {
    prop::sample::select(vec![
        Spot::Root,
        Spot::Sub,
        Spot::File,
        Spot::Git,
        Spot::GitConfig,
        Spot::Missing,
        Spot::DotDot,
        Spot::Outside,
        Spot::Nul,
        Spot::NonUtf8,
        Spot::Relative,
        Spot::Empty,
        Spot::Slash,
    ])
}

/// Spots a `watch` may be pointed at without scanning anything outside the
/// test's temp dir (ancestors of the data dir are refused by the daemon).
fn watch_spot() -> impl Strategy<Value = Spot> {
    prop::sample::select(vec![
        Spot::Root,
        Spot::Sub,
        Spot::Git,
        Spot::Missing,
        Spot::DotDot,
        Spot::Nul,
        Spot::NonUtf8,
        Spot::Relative,
        Spot::Empty,
        Spot::Slash,
    ])
}

fn path_of(proj: &Path, s: &Spot) -> WirePath {
    let mut b = proj.as_os_str().as_encoded_bytes().to_vec();
    let tail: &[u8] = match s {
        Spot::Root => b"",
        Spot::Sub => b"/sub",
        Spot::File => b"/a.txt",
        Spot::Git => b"/.git",
        Spot::GitConfig => b"/.git/config",
        Spot::Missing => b"/no/such/dir",
        Spot::DotDot => b"/../..",
        Spot::Outside => b"/../outside/o.txt",
        Spot::Nul => b"/a\0b",
        Spot::NonUtf8 => b"/\xff\xfe",
        Spot::Relative => return WirePath(b"sub/a.txt".to_vec()),
        Spot::Empty => return WirePath(Vec::new()),
        Spot::Slash => return WirePath(b"/".to_vec()),
    };
    b.extend_from_slice(tail);
    WirePath(b)
}

/// A request in terms of spots; made concrete per test env.
#[derive(Clone, Debug)]
enum Gen {
    Watch(Spot, bool),
    Unwatch(Spot, bool),
    /// The last field is the conversation position, opaque to the daemon.
    TurnStart(Spot, Option<String>, bool, Option<String>),
    TurnEnd(Spot, Option<u64>),
    Sync(Spot),
    Log(Spot, Option<usize>),
    Show(Spot, i64),
    Diff(Spot, i64, Vec<Spot>),
    Rewind(Spot, i64, Vec<Spot>, bool, bool),
    Redo(Spot, bool, bool),
    Hello(u32),
    Status,
    Projects,
    Activity(Spot),
    LedgerAdd(Spot, Spot, Option<(u32, u32)>, Bucket, f64),
    LedgerList(Spot, Option<Spot>, Option<LedgerStatus>),
    LedgerShow(Spot, i64),
    LedgerSetStatus(Spot, i64, LedgerStatus),
    LedgerImport(Spot, Vec<Imported>),
    Blame(Spot, Spot),
    Export(Spot, i64, i64, Spot),
    /// Source, then (path, whether base and copy name a file).
    CopyIn(Spot, Spot, Vec<(Vec<u8>, bool, bool)>),
    /// Start (or end) a tool call, with or without a session.
    Tool(Spot, bool, bool),
}

/// An imported entry: its relative path, span and bucket.
type Imported = (Vec<u8>, Option<(u32, u32)>, Bucket);

/// Ledger values of each kind. A misspelled one no longer reaches a
/// handler: the frame does not decode (`ckpt-proto`'s fuzz covers that).
fn bucket() -> impl Strategy<Value = Bucket> {
    prop::sample::select(Bucket::ALL.to_vec())
}

fn status() -> impl Strategy<Value = LedgerStatus> {
    prop::sample::select(LedgerStatus::ALL.to_vec())
}

/// Relative paths an import may carry, some of them hostile.
fn import_path() -> impl Strategy<Value = Vec<u8>> {
    prop::sample::select(vec![
        b"a.txt".to_vec(),
        b"sub/a.txt".to_vec(),
        b"../outside/o.txt".to_vec(),
        b".git/config".to_vec(),
        b"/etc/passwd".to_vec(),
        b"".to_vec(),
        b"a\0b".to_vec(),
        b"\xff".to_vec(),
    ])
}

fn turn() -> impl Strategy<Value = i64> {
    prop_oneof![4 => -1i64..5, 1 => any::<i64>()]
}

fn gen() -> impl Strategy<Value = Gen> {
    let spots = || proptest::collection::vec(spot(), 0..3);
    prop_oneof![
        (watch_spot(), any::<bool>()).prop_map(|(s, d)| Gen::Watch(s, d)),
        (spot(), any::<bool>()).prop_map(|(s, d)| Gen::Unwatch(s, d)),
        (
            watch_spot(),
            proptest::option::of(".{0,40}"),
            any::<bool>(),
            proptest::option::of(".{0,40}")
        )
            .prop_map(|(s, l, a, c)| Gen::TurnStart(s, l, a, c)),
        (spot(), proptest::option::of(0u64..3)).prop_map(|(s, l)| Gen::TurnEnd(s, l)),
        spot().prop_map(Gen::Sync),
        (spot(), any::<Option<usize>>()).prop_map(|(s, l)| Gen::Log(s, l)),
        (spot(), turn()).prop_map(|(s, t)| Gen::Show(s, t)),
        (spot(), turn(), spots()).prop_map(|(s, t, p)| Gen::Diff(s, t, p)),
        (spot(), turn(), spots(), any::<bool>(), any::<bool>())
            .prop_map(|(s, t, p, d, f)| Gen::Rewind(s, t, p, d, f)),
        (spot(), any::<bool>(), any::<bool>()).prop_map(|(s, d, f)| Gen::Redo(s, d, f)),
        any::<u32>().prop_map(Gen::Hello),
        Just(Gen::Status),
        Just(Gen::Projects),
        spot().prop_map(Gen::Activity),
        (
            spot(),
            spot(),
            proptest::option::of((0u32..6, 0u32..6)),
            bucket(),
            prop::sample::select(vec![0.5, 0.0, 1.0, -1.0, 2.0])
        )
            .prop_map(|(s, p, span, w, c)| Gen::LedgerAdd(s, p, span, w, c)),
        (
            spot(),
            proptest::option::of(spot()),
            proptest::option::of(status())
        )
            .prop_map(|(s, p, w)| Gen::LedgerList(s, p, w)),
        (spot(), turn()).prop_map(|(s, id)| Gen::LedgerShow(s, id)),
        (spot(), turn(), status()).prop_map(|(s, id, w)| Gen::LedgerSetStatus(s, id, w)),
        (
            spot(),
            proptest::collection::vec(
                (
                    import_path(),
                    proptest::option::of((0u32..6, 0u32..6)),
                    bucket()
                ),
                0..3
            )
        )
            .prop_map(|(s, e)| Gen::LedgerImport(s, e)),
        (spot(), spot()).prop_map(|(s, f)| Gen::Blame(s, f)),
        (spot(), turn(), turn(), spot()).prop_map(|(s, a, b, o)| Gen::Export(s, a, b, o)),
        (
            spot(),
            spot(),
            proptest::collection::vec((import_path(), any::<bool>(), any::<bool>()), 0..3)
        )
            .prop_map(|(s, src, paths)| Gen::CopyIn(s, src, paths)),
        (spot(), any::<bool>(), any::<bool>())
            .prop_map(|(s, start, named)| Gen::Tool(s, start, named)),
    ]
}

fn concrete(proj: &Path, g: &Gen) -> Request {
    let p = |s: &Spot| path_of(proj, s);
    let ps = |v: &Vec<Spot>| v.iter().map(|s| path_of(proj, s)).collect();
    match g {
        Gen::Watch(s, discover) => Request::Watch {
            dir: p(s),
            discover: *discover,
        },
        Gen::Unwatch(s, drop_data) => Request::Unwatch {
            dir: p(s),
            drop_data: *drop_data,
        },
        Gen::TurnStart(s, label, auto_watch, conversation) => {
            Request::TurnStart(ckpt_proto::TurnStart {
                dir: p(s),
                label: label.clone(),
                agent: None,
                session: None,
                transcript: None,
                auto_watch: *auto_watch,
                conversation: conversation.clone(),
            })
        }
        Gen::TurnEnd(s, list) => Request::TurnEnd(ckpt_proto::TurnEnd {
            dir: p(s),
            session: None,
            transcript: None,
            list: *list,
        }),
        Gen::Sync(s) => Request::Sync { dir: p(s) },
        Gen::Log(s, limit) => Request::Log(ckpt_proto::Log {
            dir: p(s),
            limit: *limit,
            session: None,
        }),
        Gen::Show(s, turn) => Request::Show {
            dir: p(s),
            turn: *turn,
            list: (*turn % 2 == 0).then_some(1),
        },
        Gen::Diff(s, turn, paths) => Request::Diff(ckpt_proto::Diff {
            dir: p(s),
            turn: *turn,
            paths: ps(paths),
        }),
        Gen::Rewind(s, turn, paths, dry_run, force) => Request::Rewind(ckpt_proto::Rewind {
            dir: p(s),
            // Both ways of naming a turn, `after` on the dry runs.
            to: if *dry_run {
                ckpt_proto::RewindTo::After(*turn)
            } else {
                ckpt_proto::RewindTo::Before(*turn)
            },
            paths: ps(paths),
            flags: ckpt_proto::RewindFlags {
                dry_run: *dry_run,
                force: *force,
            },
            merge: force.then_some(ckpt_proto::MergeMode::Markers),
            // Both a cut listing and a whole one.
            list: dry_run.then_some(*turn as u64 % 3),
        }),
        Gen::Redo(s, dry_run, force) => Request::Redo(ckpt_proto::Redo {
            dir: p(s),
            flags: ckpt_proto::RewindFlags {
                dry_run: *dry_run,
                force: *force,
            },
            list: force.then_some(1),
        }),
        Gen::Hello(v) => Request::Hello {
            version: *v,
            client: String::new(),
            progress: false,
        },
        Gen::Status => Request::Status,
        Gen::Projects => Request::Projects,
        Gen::Activity(s) => Request::Activity { dir: p(s) },
        Gen::LedgerAdd(s, path, span, word, confidence) => {
            Request::LedgerAdd(ckpt_proto::LedgerAdd {
                dir: p(s),
                path: p(path),
                span: span.map(|(start, end)| LineSpan { start, end }),
                bucket: *word,
                severity: Severity::Low,
                confidence: *confidence,
                owner: None,
                user: None,
                note: "generated".into(),
            })
        }
        Gen::LedgerList(s, path, word) => Request::LedgerList {
            dir: p(s),
            filter: LedgerFilter {
                path: path.as_ref().map(p),
                status: *word,
                ..LedgerFilter::default()
            },
        },
        Gen::LedgerShow(s, id) => Request::LedgerShow { dir: p(s), id: *id },
        Gen::LedgerSetStatus(s, id, word) => {
            Request::LedgerSetStatus(ckpt_proto::LedgerSetStatus {
                dir: p(s),
                id: *id,
                status: *word,
                who: None,
                why: "generated".into(),
            })
        }
        Gen::LedgerImport(s, entries) => Request::LedgerImport {
            dir: p(s),
            entries: entries
                .iter()
                .map(|(path, span, word)| LedgerRecord {
                    bucket: *word,
                    severity: Severity::High,
                    confidence: 0.5,
                    owner: "team".into(),
                    path: WirePath(path.clone()),
                    span: span.map(|(start, end)| LineSpan { start, end }),
                    span_text: span.map(|_| "a".into()),
                    note: "imported".into(),
                    agent: None,
                    session: None,
                    created_ns: 0,
                    history: None,
                })
                .collect(),
        },
        Gen::Blame(s, f) => Request::Blame {
            dir: p(s),
            path: p(f),
            at: None,
        },
        Gen::Export(s, from, to, out) => Request::Export(ckpt_proto::Export {
            dir: p(s),
            from: *from,
            to: *to,
            out: p(out),
        }),
        Gen::CopyIn(s, src, paths) => {
            let file = |yes: bool| {
                yes.then(|| ckpt_proto::Entry {
                    kind: ckpt_proto::EntryKind::File,
                    mode: 0o644,
                    sha256: "ab".repeat(32),
                })
            };
            Request::CopyIn(ckpt_proto::CopyIn {
                dir: p(s),
                source: p(src),
                paths: paths
                    .iter()
                    .map(|(path, base, copy)| ckpt_proto::CopyPath {
                        path: WirePath(path.clone()),
                        base: file(*base),
                        copy: file(*copy),
                    })
                    .collect(),
                label: None,
                agent: None,
                session: None,
                workcopy: None,
            })
        }
        Gen::Tool(s, start, named) => {
            let session = named.then(|| "s1".to_string());
            if *start {
                Request::ToolStart {
                    dir: p(s),
                    session,
                    command: None,
                }
            } else {
                Request::ToolEnd { dir: p(s), session }
            }
        }
    }
}

/// Between requests the agent may edit the tree.
#[derive(Clone, Debug)]
enum Step {
    Request(Gen),
    Edit(u8),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![4 => gen().prop_map(Step::Request), 1 => any::<u8>().prop_map(Step::Edit)]
}

fn edit(proj: &Path, n: u8) {
    let script = match n % 4 {
        0 => format!("echo {n} >> a.txt"),
        1 => format!("mkdir -p sub/d{n} && echo {n} > sub/d{n}/f"),
        2 => "rm -rf sub/d*".to_string(),
        _ => format!("echo {n} > sub/a.txt"),
    };
    sh(proj, &script);
}

/// The names directly in `dir`, sorted.
fn top_level(dir: &Path) -> Vec<std::ffi::OsString> {
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("dir entry").file_name())
        .collect();
    names.sort();
    names
}

fn cases() -> u32 {
    std::env::var("CKPT_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(48)
}

#[test]
fn generated_requests_get_one_reply_each_and_never_write_outside_the_project() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj: PathBuf = env.git_repo("app", &[("a.txt", b"a\n"), ("sub/a.txt", b"s\n")]);
    let outside = env.dir("outside");
    std::fs::write(outside.join("o.txt"), "keep\n").unwrap();
    env.ctl_ok(&proj, &["watch"]);
    let git_before = snapshot_git(&proj);
    let outside_before = snapshot(&outside);
    let beside_before = top_level(env.path());

    let mut runner = TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    });
    let served = std::cell::Cell::new(0u64);
    runner
        .run(&proptest::collection::vec(step(), 1..10), |steps| {
            let mut conn: UnixStream = hello(&env.socket).expect("the daemon answers");
            for s in &steps {
                match s {
                    Step::Edit(n) => edit(&proj, *n),
                    Step::Request(g) => {
                        let req = concrete(&proj, g);
                        write_frame(&mut conn, &req).expect("send");
                        let reply: Response = ckpt_proto::read_frame(&mut conn)
                            .unwrap_or_else(|e| panic!("no reply to {req:?}: {e}"));
                        served.set(served.get() + 1);
                        if let Response::Error { kind, message } = &reply {
                            prop_assert_ne!(*kind, ErrorKind::Internal, "{:?}: {}", req, message);
                        }
                    }
                }
            }
            prop_assert_eq!(&snapshot_git(&proj), &git_before, ".git changed");
            prop_assert_eq!(&snapshot(&outside), &outside_before, "outside changed");
            Ok(())
        })
        .unwrap();
    assert!(served.get() > 0);
    assert_eq!(
        top_level(env.path()),
        beside_before,
        "nothing appeared beside the project"
    );
    env.ctl_ok(env.path(), &["status"]);
}
