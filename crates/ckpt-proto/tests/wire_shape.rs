//! The JSON of requests and replies whose Rust types moved (a request
//! struct per operation, `RewindFlags` flattened, `Reply<T>` around a
//! body) is byte for byte what the earlier one-struct-variant types wrote,
//! and that JSON still decodes.

use ckpt_proto::{
    BarrierMethod, MergeMode, Redo, Reply, Request, Response, Rewind, RewindFlags, SyncedBody,
    WirePath,
};

fn wire(p: &str) -> WirePath {
    WirePath::from(std::path::Path::new(p))
}

#[test]
fn a_rewind_request_is_written_as_the_struct_variant_was() {
    let req = Request::Rewind(Rewind {
        dir: wire("/p"),
        turn: 3,
        paths: vec![wire("/p/a")],
        flags: RewindFlags {
            dry_run: true,
            force: false,
        },
        merge: Some(MergeMode::Markers),
    });
    let json = serde_json::to_string(&req).unwrap();
    assert_eq!(
        json,
        r#"{"Rewind":{"dir":"/p","turn":3,"paths":["/p/a"],"dry_run":true,"force":false,"merge":"markers"}}"#
    );
}

#[test]
fn a_redo_request_of_an_older_client_without_flags_decodes_to_the_defaults() {
    let req: Request = serde_json::from_str(r#"{"Redo":{"dir":"/p"}}"#).unwrap();
    let Request::Redo(Redo { dir, flags }) = req else {
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
