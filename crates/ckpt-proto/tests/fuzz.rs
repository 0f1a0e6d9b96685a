//! Generated input for the frame and request decoders: arbitrary bytes,
//! headers that lie about the body, arbitrary JSON, and valid requests with
//! mutated fields. Every input must end in a value or an error: no panic, no
//! hang, and no buffer sized by a header's claim before the bytes arrive.
//!
//! `CKPT_FUZZ_CASES=n` runs `n` cases per property (default 256, for CI).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::ErrorKind as IoKind;

use ckpt_proto::{
    decode_body, encode, read_frame, AnchorState, Bucket, CopyPath, Entry, EntryKind, FrameError,
    LedgerEvent, LedgerFilter, LedgerRecord, LedgerStatus, LineSpan, MergeMode, Request, Response,
    Severity, WirePath, MAX_REQUEST, READ_AHEAD,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::Value;

/// Records the largest single allocation made on the current thread while
/// armed, so a test can tell a buffer sized by a header from one sized by
/// the bytes that arrived.
struct Counting;

thread_local! {
    static ARMED: Cell<bool> = const { Cell::new(false) };
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

fn note(size: usize) {
    let _ = ARMED.try_with(|armed| {
        if armed.get() {
            let _ = LARGEST.try_with(|l| l.set(l.get().max(size)));
        }
    });
}

// SAFETY: forwards every call to the system allocator unchanged; the
// bookkeeping touches only const-initialized thread-locals, which never
// allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Runs `f` and returns its result with the largest allocation it made.
fn largest_allocation<T>(f: impl FnOnce() -> T) -> (T, usize) {
    LARGEST.with(|l| l.set(0));
    ARMED.with(|a| a.set(true));
    let out = f();
    ARMED.with(|a| a.set(false));
    (out, LARGEST.with(Cell::get))
}

fn cases() -> u32 {
    std::env::var("CKPT_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

fn runner() -> TestRunner {
    TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    })
}

/// Reads frames of type `T` from `bytes` until the first error or the end,
/// as a connection does. Each frame read consumes at least its 4-byte
/// header, so this ends.
fn read_all<T: ckpt_proto::Message>(bytes: &[u8]) -> (usize, Option<FrameError>) {
    let mut r = bytes;
    let mut frames = 0;
    while !r.is_empty() {
        match read_frame::<_, T>(&mut r) {
            Ok(_) => frames += 1,
            Err(e) => return (frames, Some(e)),
        }
    }
    (frames, None)
}

#[test]
fn arbitrary_bytes_end_in_frames_or_an_error() {
    let bytes = prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..512),
        // A small header followed by whatever: the decoder gets past the
        // header more often than with uniform bytes.
        (0u32..600, proptest::collection::vec(any::<u8>(), 0..600)).prop_map(|(len, body)| {
            let mut v = len.to_be_bytes().to_vec();
            v.extend(body);
            v
        }),
    ];
    runner()
        .run(&bytes, |bytes| {
            read_all::<Request>(&bytes);
            read_all::<Response>(&bytes);
            Ok(())
        })
        .unwrap();
}

/// A header that may lie, and the bytes that actually follow it.
fn lying_frame() -> impl Strategy<Value = (u32, Vec<u8>)> {
    let body = prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..256),
        request().prop_map(|r| serde_json::to_vec(&r).expect("a request serializes")),
    ];
    (body, 0usize..8).prop_flat_map(|(body, pick)| {
        let n = body.len() as u32;
        let len = match pick {
            0 => Just(0).boxed(),
            1 => Just(n).boxed(),
            2 => (n.saturating_sub(8)..=n).boxed(),
            3 => (n..n + 64).boxed(),
            4 => Just(MAX_REQUEST as u32).boxed(),
            5 => Just(MAX_REQUEST as u32 + 1).boxed(),
            6 => Just(u32::MAX).boxed(),
            _ => any::<u32>().boxed(),
        };
        (len, Just(body))
    })
}

#[test]
fn a_lying_length_is_refused_or_read_as_it_arrives_never_allocated_up_front() {
    runner()
        .run(&lying_frame(), |(len, body)| {
            let mut bytes = len.to_be_bytes().to_vec();
            bytes.extend_from_slice(&body);
            let (got, largest) =
                largest_allocation(|| read_frame::<_, Request>(&mut bytes.as_slice()));
            let len = len as usize;
            match &got {
                Err(FrameError::TooLarge { .. }) => prop_assert!(len > MAX_REQUEST),
                Err(FrameError::Io(e)) => {
                    prop_assert_eq!(e.kind(), IoKind::UnexpectedEof);
                    prop_assert!(body.len() < len && len <= MAX_REQUEST);
                }
                Err(FrameError::Json(_)) | Ok(_) => prop_assert!(len <= body.len()),
            }
            // The body buffer may start at READ_AHEAD and then grows with
            // what arrived (doubling); JSON values are a small multiple of it.
            let bound = READ_AHEAD.max(8 * body.len()) + 4096;
            prop_assert!(
                largest <= bound,
                "header {len}, {} bytes sent: allocated {largest} at once (bound {bound})",
                body.len()
            );
            Ok(())
        })
        .unwrap();
}

fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        ".*".prop_map(Value::String),
        odd_name().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::btree_map(odd_name(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Variant and field names, real and not.
fn odd_name() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "Hello",
            "Watch",
            "Unwatch",
            "Projects",
            "TurnStart",
            "TurnEnd",
            "Sync",
            "Log",
            "Show",
            "Diff",
            "Rewind",
            "Redo",
            "Status",
            "Fsck",
            "Activity",
            "LedgerAdd",
            "LedgerList",
            "LedgerShow",
            "LedgerSetStatus",
            "LedgerImport",
            "Blame",
            "Export",
            "Error",
            "version",
            "client",
            "dir",
            "discover",
            "drop_data",
            "label",
            "agent",
            "session",
            "auto_watch",
            "limit",
            "turn",
            "paths",
            "dry_run",
            "force",
            "bucket",
            "severity",
            "confidence",
            "span",
            "filter",
            "entries",
            "from",
            "to",
            "out",
            "CopyIn",
            "ToolStart",
            "ToolEnd",
            "merge",
            "markers",
            "source",
            "base",
            "copy",
            "sha256",
            "mode",
            "kind",
            "message",
            "hello",
            "rewind",
            "",
        ])
        .prop_map(str::to_string),
        "[A-Za-z_]{0,12}",
    ]
}

#[test]
fn arbitrary_json_decodes_to_a_message_or_an_error() {
    runner()
        .run(&json(), |v| {
            let text = serde_json::to_vec(&v).expect("a value serializes");
            let _ = decode_body::<Request>(&text);
            let _ = decode_body::<Response>(&text);
            Ok(())
        })
        .unwrap();
}

/// Paths as a confused or hostile client might send them.
fn odd_path() -> impl Strategy<Value = WirePath> {
    let fixed: Vec<&[u8]> = vec![
        b"",
        b"/",
        b"/tmp/p",
        b"/tmp/p/../../..",
        b"/tmp/p/.git",
        b"/tmp/p/.git/config",
        b"relative/path",
        b"..",
        b"/tmp/p/a\0b",
        b"\0",
        b"/tmp/p/\xff\xfe",
        b"//tmp//p/./a",
    ];
    prop_oneof![
        prop::sample::select(fixed).prop_map(|b| WirePath(b.to_vec())),
        proptest::collection::vec(any::<u8>(), 0..64).prop_map(WirePath),
        "(/[a-z.]{0,3}){0,6}".prop_map(|s| WirePath(s.into_bytes())),
        (1usize..5000).prop_map(|n| WirePath(format!("/{}", "x/".repeat(n)).into_bytes())),
    ]
}

fn request() -> impl Strategy<Value = Request> {
    let opt = || proptest::option::of(".{0,16}");
    prop_oneof![
        (any::<u32>(), ".{0,16}").prop_map(|(version, client)| Request::Hello {
            version,
            client,
            progress: false,
        }),
        (odd_path(), any::<bool>()).prop_map(|(dir, discover)| Request::Watch { dir, discover }),
        (odd_path(), any::<bool>())
            .prop_map(|(dir, drop_data)| Request::Unwatch { dir, drop_data }),
        Just(Request::Projects),
        (odd_path(), opt(), opt(), opt(), opt(), any::<bool>(), opt()).prop_map(
            |(dir, label, agent, session, transcript, auto_watch, conversation)| {
                Request::TurnStart(ckpt_proto::TurnStart {
                    dir,
                    label,
                    agent,
                    session,
                    transcript,
                    auto_watch,
                    conversation,
                })
            }
        ),
        (
            odd_path(),
            proptest::option::of(odd_name()),
            opt(),
            any::<Option<u64>>()
        )
            .prop_map(|(dir, session, transcript, list)| Request::TurnEnd(
                ckpt_proto::TurnEnd {
                    dir,
                    session,
                    transcript,
                    list,
                }
            )),
        odd_path().prop_map(|dir| Request::Sync { dir }),
        (odd_path(), any::<Option<usize>>(), opt()).prop_map(|(dir, limit, session)| {
            Request::Log(ckpt_proto::Log {
                dir,
                limit,
                session,
            })
        }),
        (odd_path(), any::<i64>(), any::<Option<u64>>())
            .prop_map(|(dir, turn, list)| Request::Show { dir, turn, list }),
        (
            odd_path(),
            any::<i64>(),
            proptest::collection::vec(odd_path(), 0..4)
        )
            .prop_map(|(dir, turn, paths)| Request::Diff(ckpt_proto::Diff {
                dir,
                turn,
                paths
            })),
        (
            odd_path(),
            any::<i64>(),
            proptest::collection::vec(odd_path(), 0..4),
            any::<bool>(),
            any::<bool>(),
            proptest::option::of(prop_oneof![
                Just(MergeMode::Clean),
                Just(MergeMode::Markers)
            ])
        )
            .prop_map(|(dir, turn, paths, dry_run, force, merge)| Request::Rewind(
                ckpt_proto::Rewind {
                    dir,
                    to: if turn % 2 == 0 {
                        ckpt_proto::RewindTo::Before(turn)
                    } else {
                        ckpt_proto::RewindTo::After(turn)
                    },
                    paths,
                    flags: ckpt_proto::RewindFlags { dry_run, force },
                    merge,
                    list: None,
                }
            )),
        (odd_path(), any::<bool>(), any::<bool>()).prop_map(|(dir, dry_run, force)| {
            Request::Redo(ckpt_proto::Redo {
                dir,
                flags: ckpt_proto::RewindFlags { dry_run, force },
                list: None,
            })
        }),
        Just(Request::Status),
        odd_path().prop_map(|dir| Request::Fsck { dir }),
        odd_path().prop_map(|dir| Request::Activity { dir }),
        ledger_request(),
    ]
}

/// Ledger values, each of its kind (a misspelled one does not decode:
/// the mutated-field property covers that).
fn bucket() -> impl Strategy<Value = Bucket> {
    prop::sample::select(Bucket::ALL.to_vec())
}

fn severity() -> impl Strategy<Value = Severity> {
    prop::sample::select(Severity::ALL.to_vec())
}

fn status() -> impl Strategy<Value = LedgerStatus> {
    prop::sample::select(LedgerStatus::ALL.to_vec())
}

fn anchor() -> impl Strategy<Value = AnchorState> {
    prop::sample::select(AnchorState::ALL.to_vec())
}

/// Confidences that survive JSON exactly, in range or not.
fn confidence() -> impl Strategy<Value = f64> {
    prop_oneof![
        (0u32..=100).prop_map(|n| f64::from(n) / 100.0),
        prop::sample::select(vec![-1.0, 1.5, 1e300, -0.0]),
    ]
}

fn line_span() -> impl Strategy<Value = Option<LineSpan>> {
    proptest::option::of(
        (any::<u32>(), any::<u32>()).prop_map(|(start, end)| LineSpan { start, end }),
    )
}

fn ledger_record() -> impl Strategy<Value = LedgerRecord> {
    let opt = || proptest::option::of(".{0,16}");
    (
        (bucket(), severity(), confidence(), ".{0,12}", odd_path()),
        (line_span(), opt(), ".{0,16}", opt(), opt(), any::<i64>()),
        proptest::option::of(proptest::collection::vec(
            (status(), opt(), opt(), any::<i64>()).prop_map(|(status, who, why, at_ns)| {
                LedgerEvent {
                    status,
                    who,
                    why,
                    at_ns,
                }
            }),
            0..3,
        )),
    )
        .prop_map(
            |(
                (bucket, severity, confidence, owner, path),
                (span, span_text, note, agent, session, created_ns),
                history,
            )| LedgerRecord {
                bucket,
                severity,
                confidence,
                owner,
                path,
                span,
                span_text,
                note,
                agent,
                session,
                created_ns,
                history,
            },
        )
}

fn ledger_request() -> impl Strategy<Value = Request> {
    let opt = || proptest::option::of(".{0,16}");
    prop_oneof![
        (
            (odd_path(), odd_path(), line_span()),
            (bucket(), severity(), confidence()),
            (opt(), opt(), ".{0,16}")
        )
            .prop_map(
                |((dir, path, span), (bucket, severity, confidence), (owner, user, note))| {
                    Request::LedgerAdd(ckpt_proto::LedgerAdd {
                        dir,
                        path,
                        span,
                        bucket,
                        severity,
                        confidence,
                        owner,
                        user,
                        note,
                    })
                }
            ),
        (
            odd_path(),
            (
                proptest::option::of(bucket()),
                proptest::option::of(severity()),
                proptest::option::of(confidence())
            ),
            (
                proptest::option::of(odd_path()),
                any::<Option<i64>>(),
                opt(),
                opt()
            ),
            (
                proptest::option::of(status()),
                proptest::option::of(anchor()),
                any::<bool>()
            )
        )
            .prop_map(
                |(
                    dir,
                    (bucket, min_severity, min_confidence),
                    (path, turn, agent, owner),
                    (status, anchor, history),
                )| {
                    Request::LedgerList {
                        dir,
                        filter: LedgerFilter {
                            bucket,
                            min_severity,
                            min_confidence,
                            path,
                            turn,
                            agent,
                            owner,
                            status,
                            anchor,
                            history,
                        },
                    }
                }
            ),
        (odd_path(), any::<i64>()).prop_map(|(dir, id)| Request::LedgerShow { dir, id }),
        (odd_path(), any::<i64>(), status(), opt(), ".{0,16}").prop_map(
            |(dir, id, status, who, why)| Request::LedgerSetStatus(ckpt_proto::LedgerSetStatus {
                dir,
                id,
                status,
                who,
                why
            })
        ),
        (odd_path(), proptest::collection::vec(ledger_record(), 0..3))
            .prop_map(|(dir, entries)| Request::LedgerImport { dir, entries }),
        (odd_path(), odd_path()).prop_map(|(dir, path)| Request::Blame {
            dir,
            path,
            at: None,
        }),
        (odd_path(), any::<i64>(), any::<i64>(), odd_path()).prop_map(|(dir, from, to, out)| {
            Request::Export(ckpt_proto::Export { dir, from, to, out })
        }),
        (
            odd_path(),
            odd_path(),
            proptest::collection::vec(copy_path(), 0..4),
            opt(),
            opt(),
            opt()
        )
            .prop_map(
                |(dir, source, paths, label, agent, session)| Request::CopyIn(ckpt_proto::CopyIn {
                    dir,
                    source,
                    paths,
                    label,
                    agent,
                    session,
                    workcopy: None,
                })
            ),
        (odd_path(), opt(), opt()).prop_map(|(dir, session, command)| Request::ToolStart {
            dir,
            session,
            command
        }),
        (odd_path(), opt()).prop_map(|(dir, session)| Request::ToolEnd { dir, session }),
    ]
}

/// A path of a copy-in, with entries of every kind, real and not.
fn copy_path() -> impl Strategy<Value = CopyPath> {
    let entry = || {
        proptest::option::of(
            (
                prop::sample::select(vec![EntryKind::File, EntryKind::Dir, EntryKind::Symlink]),
                any::<u32>(),
                "[0-9a-f]{0,64}",
            )
                .prop_map(|(kind, mode, sha256)| Entry { kind, mode, sha256 }),
        )
    };
    (odd_path(), entry(), entry()).prop_map(|(path, base, copy)| CopyPath { path, base, copy })
}

#[test]
fn a_valid_request_survives_the_round_trip() {
    runner()
        .run(&request(), |req| {
            let frame = encode(&req).expect("a generated request fits a frame");
            let back: Request = read_frame(&mut frame.as_slice()).expect("decodes");
            prop_assert_eq!(encode(&back).expect("encodes again"), frame);
            Ok(())
        })
        .unwrap();
}

/// Ways to spoil one spot of a valid request's JSON.
#[derive(Clone, Debug)]
enum Mutation {
    Replace(Value),
    Remove,
    AddField(String, Value),
    RenameVariant(String),
    HugeNumber(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        json().prop_map(Mutation::Replace),
        Just(Mutation::Remove),
        (odd_name(), json()).prop_map(|(k, v)| Mutation::AddField(k, v)),
        odd_name().prop_map(Mutation::RenameVariant),
        (0usize..4).prop_map(Mutation::HugeNumber),
    ]
}

/// Applies `m` at the `at`-th node (pre-order) of `v`; returns whether it
/// found that node.
fn mutate(v: &mut Value, at: &mut usize, m: &Mutation) -> bool {
    if *at == 0 {
        match m {
            Mutation::Replace(new) => *v = new.clone(),
            Mutation::Remove => match v {
                Value::Object(o) => {
                    if let Some(k) = o.keys().next().cloned() {
                        o.remove(&k);
                    }
                }
                other => *other = Value::Null,
            },
            Mutation::AddField(k, new) => match v {
                Value::Object(o) => {
                    o.insert(k.clone(), new.clone());
                }
                other => *other = new.clone(),
            },
            Mutation::RenameVariant(name) => match v {
                Value::Object(o) => {
                    let fields: Vec<(String, Value)> = std::mem::take(o).into_iter().collect();
                    for (i, (k, val)) in fields.into_iter().enumerate() {
                        o.insert(if i == 0 { name.clone() } else { k }, val);
                    }
                }
                other => *other = Value::String(name.clone()),
            },
            Mutation::HugeNumber(i) => {
                let huge: Value = match i {
                    0 => serde_json::from_str("1e400").unwrap_or(Value::Null),
                    1 => Value::from(u64::MAX),
                    2 => Value::from(i64::MIN),
                    _ => serde_json::from_str("123456789012345678901234567890")
                        .unwrap_or(Value::Null),
                };
                *v = huge;
            }
        }
        return true;
    }
    *at -= 1;
    match v {
        Value::Array(a) => a.iter_mut().any(|x| mutate(x, at, m)),
        Value::Object(o) => o.values_mut().any(|x| mutate(x, at, m)),
        _ => false,
    }
}

#[test]
fn a_request_with_a_mutated_field_decodes_to_a_request_or_an_error() {
    let input = (
        request(),
        proptest::collection::vec((0usize..12, mutation()), 1..4),
    );
    runner()
        .run(&input, |(req, mutations)| {
            let mut v = serde_json::to_value(&req).expect("a request serializes");
            for (at, m) in &mutations {
                let mut at = *at;
                mutate(&mut v, &mut at, m);
            }
            let text = serde_json::to_vec(&v).expect("a value serializes");
            if let Ok(back) = decode_body::<Request>(&text) {
                // What decodes is a request like any other: it encodes again.
                let frame = encode(&back).expect("a decoded request encodes");
                let again: Request = read_frame(&mut frame.as_slice()).expect("and decodes");
                prop_assert_eq!(encode(&again).expect("encodes"), frame);
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn deeply_nested_json_is_an_error_not_a_stack_overflow() {
    for open in ["[", "{\"Watch\":", "{\"a\":["] {
        let text = open.repeat(200_000);
        assert!(decode_body::<Request>(text.as_bytes()).is_err());
        assert!(decode_body::<Response>(text.as_bytes()).is_err());
    }
}

#[test]
fn a_header_claiming_the_cap_costs_only_what_arrives() {
    let mut bytes = (MAX_REQUEST as u32).to_be_bytes().to_vec();
    bytes.extend_from_slice(b"{\"Status\"");
    let (got, largest) = largest_allocation(|| read_frame::<_, Request>(&mut bytes.as_slice()));
    assert!(matches!(got, Err(FrameError::Io(ref e)) if e.kind() == IoKind::UnexpectedEof));
    assert!(largest <= READ_AHEAD, "allocated {largest} bytes up front");
}
