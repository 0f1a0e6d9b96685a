//! The JSON of requests and replies whose Rust types moved (a request
//! struct per operation, `RewindFlags` flattened, `Reply<T>` around a
//! body) is byte for byte what the earlier one-struct-variant types wrote,
//! and that JSON still decodes.

use ckpt_proto::{
    BarrierMethod, MergeMode, Redo, Reply, Request, Response, Rewind, RewindFlags, RewindTo,
    SyncedBody, WirePath,
};

fn wire(p: &str) -> WirePath {
    WirePath::from(std::path::Path::new(p))
}

#[test]
fn a_rewind_request_is_written_as_the_struct_variant_was() {
    let req = Request::Rewind(Rewind {
        dir: wire("/p"),
        to: RewindTo::Before(3),
        paths: vec![wire("/p/a")],
        flags: RewindFlags {
            dry_run: true,
            force: false,
        },
        merge: Some(MergeMode::Markers),
        list: None,
    });
    let json = serde_json::to_string(&req).unwrap();
    assert_eq!(
        json,
        r#"{"Rewind":{"dir":"/p","turn":3,"paths":["/p/a"],"dry_run":true,"force":false,"merge":"markers"}}"#
    );
}

/// `rewind --after N` is `"after": N` with no `turn`: a daemon that
/// predates it (its `Rewind` needs `turn`) refuses the request instead of
/// rewinding to before N; this one reads both.
#[test]
fn a_rewind_after_request_has_no_turn_so_an_older_daemon_refuses_it() {
    let req = Request::Rewind(Rewind {
        dir: wire("/p"),
        to: RewindTo::After(3),
        paths: vec![],
        flags: RewindFlags::default(),
        merge: None,
        list: None,
    });
    let json = serde_json::to_string(&req).unwrap();
    assert_eq!(
        json,
        r#"{"Rewind":{"dir":"/p","after":3,"paths":[],"dry_run":false,"force":false,"merge":null}}"#
    );
    #[derive(serde::Deserialize, Debug)]
    #[allow(dead_code)]
    struct OlderRewind {
        dir: WirePath,
        turn: i64,
    }
    #[derive(serde::Deserialize, Debug)]
    #[allow(dead_code)]
    enum OlderRequest {
        Rewind(OlderRewind),
    }
    let older = serde_json::from_str::<OlderRequest>(&json).unwrap_err();
    assert!(
        older.to_string().contains("missing field `turn`"),
        "{older}"
    );
    let back: Request = serde_json::from_str(&json).unwrap();
    assert!(matches!(
        back,
        Request::Rewind(Rewind {
            to: RewindTo::After(3),
            ..
        })
    ));
    let before: Request = serde_json::from_str(r#"{"Rewind":{"dir":"/p","turn":4}}"#).unwrap();
    assert!(matches!(
        before,
        Request::Rewind(Rewind {
            to: RewindTo::Before(4),
            ..
        })
    ));
}

#[test]
fn a_redo_request_of_an_older_client_without_flags_decodes_to_the_defaults() {
    let req: Request = serde_json::from_str(r#"{"Redo":{"dir":"/p"}}"#).unwrap();
    let Request::Redo(Redo { dir, flags, .. }) = req else {
        panic!("not a redo: {req:?}");
    };
    assert_eq!((dir, flags), (wire("/p"), RewindFlags::default()));
    let forced: Request = serde_json::from_str(r#"{"Redo":{"dir":"/p","force":true}}"#).unwrap();
    assert!(matches!(forced, Request::Redo(Redo { flags, .. }) if flags.force && !flags.dry_run));
}

#[test]
fn a_project_reply_puts_project_first_and_degraded_last_as_before() {
    let reply = |degraded: Option<&str>| {
        Response::Synced(Reply {
            project: wire("/p"),
            body: SyncedBody {
                method: BarrierMethod::Cookie,
                elapsed_ms: 5,
            },
            degraded: degraded.map(str::to_string),
        })
    };
    assert_eq!(
        serde_json::to_string(&reply(Some("watch limit"))).unwrap(),
        r#"{"Synced":{"project":"/p","method":"cookie","elapsed_ms":5,"degraded":"watch limit"}}"#
    );
    assert_eq!(
        serde_json::to_string(&reply(None)).unwrap(),
        r#"{"Synced":{"project":"/p","method":"cookie","elapsed_ms":5}}"#
    );
    let back: Response = serde_json::from_str(
        r#"{"Synced":{"project":"/p","method":"scan","elapsed_ms":7,"degraded":"x"}}"#,
    )
    .unwrap();
    let Response::Synced(s) = back else {
        panic!("not synced: {back:?}");
    };
    assert_eq!(
        (
            s.project.clone(),
            s.method,
            s.elapsed_ms,
            s.degraded.as_deref()
        ),
        (wire("/p"), BarrierMethod::Scan, 7, Some("x"))
    );
}

/// A hello that asks for progress frames, and a frame, go through the
/// framing and come back the same; a hook's hello (no progress) is
/// written as before the field existed, and a hello of an older client
/// (no field) reads as not asking.
#[test]
fn progress_frames_and_the_hello_that_asks_for_them_round_trip() {
    use ckpt_proto::{read_frame, write_frame, Progress, ProgressOp};
    let mut buf = Vec::new();
    let asking = Request::Hello {
        version: 1,
        client: "ckptctl".into(),
        progress: true,
    };
    write_frame(&mut buf, &asking).unwrap();
    let frame = Progress {
        op: ProgressOp::Apply,
        done: 12,
        total: Some(40),
        bytes: 4096,
    };
    write_frame(&mut buf, &Response::Progress(frame)).unwrap();
    let mut r = buf.as_slice();
    match read_frame::<_, Request>(&mut r).unwrap() {
        Request::Hello { progress, .. } => assert!(progress),
        other => panic!("unexpected {other:?}"),
    }
    match read_frame::<_, Response>(&mut r).unwrap() {
        Response::Progress(p) => assert_eq!(p, frame),
        other => panic!("unexpected {other:?}"),
    }

    let hook = Request::Hello {
        version: 1,
        client: "ckptctl".into(),
        progress: false,
    };
    assert_eq!(
        serde_json::to_string(&hook).unwrap(),
        r#"{"Hello":{"version":1,"client":"ckptctl"}}"#
    );
    let older: Request = serde_json::from_str(r#"{"Hello":{"version":1}}"#).unwrap();
    assert!(matches!(
        older,
        Request::Hello {
            progress: false,
            ..
        }
    ));
    let scan: Response =
        serde_json::from_str(r#"{"Progress":{"op":"scan","done":3,"bytes":9}}"#).unwrap();
    assert!(matches!(
        scan,
        Response::Progress(Progress {
            op: ProgressOp::Scan,
            done: 3,
            total: None,
            bytes: 9
        })
    ));
}

/// A turn-end without `list` is written as before it existed; with one,
/// `list` is a field an older daemon ignores (it lists every entry).
#[test]
fn a_turn_end_request_names_list_only_when_it_cuts() {
    let mut req = ckpt_proto::TurnEnd {
        dir: wire("/p"),
        ..ckpt_proto::TurnEnd::default()
    };
    assert_eq!(
        serde_json::to_string(&Request::TurnEnd(req.clone())).unwrap(),
        r#"{"TurnEnd":{"dir":"/p","session":null,"transcript":null}}"#
    );
    req.list = Some(0);
    assert_eq!(
        serde_json::to_string(&Request::TurnEnd(req)).unwrap(),
        r#"{"TurnEnd":{"dir":"/p","session":null,"transcript":null,"list":0}}"#
    );
}
