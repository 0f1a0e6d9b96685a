//! The slop ledger's unit tests.
use super::*;
use crate::model::{RewindOptions, TurnMeta};
use crate::project::tests::reconciled;

fn span(start: u32, end: u32) -> Option<LineSpan> {
    Some(LineSpan { start, end })
}

fn new(path: &str, s: Option<LineSpan>) -> NewLedgerEntry {
    NewLedgerEntry {
        path: RelPath::new(path).unwrap(),
        span: s,
        bucket: Bucket::CompatShim,
        severity: Severity::High,
        confidence: 0.8,
        owner: None,
        user: Some("ana".into()),
        note: "old name kept for callers".into(),
    }
}

#[test]
fn anchors_follow_the_lines() {
    let was = Some("b\nc");
    let a = |now: Option<&str>| anchor(span(2, 3), was, now);
    assert_eq!(a(Some("a\nb\nc\nd\n")).state, AnchorState::Fresh);
    let moved = a(Some("x\ny\na\nb\nc\n"));
    assert_eq!(moved.state, AnchorState::Moved);
    assert_eq!(moved.span, span(4, 5));
    assert_eq!(a(Some("a\nb\nC\n")).state, AnchorState::Changed);
    assert_eq!(a(Some("a\nz\n")).state, AnchorState::Gone);
    assert_eq!(a(None).state, AnchorState::Gone);
    // Blank lines alone do not keep an entry "changed".
    assert_eq!(
        anchor(span(1, 2), Some("x\n"), Some("\n\ny\n")).state,
        AnchorState::Gone
    );
    // An entry on a blank line stays where it was while that line is blank
    // (it was `gone` the moment it was added).
    assert_eq!(
        anchor(span(2, 2), Some(""), Some("a\n\nb\n")).state,
        AnchorState::Fresh
    );
    let blank_and_text = anchor(span(2, 3), Some("\nb"), Some("a\n\nb\n"));
    assert_eq!(blank_and_text.state, AnchorState::Fresh);
    assert_eq!(blank_and_text.span, span(2, 3));
    // Whole files: there or not.
    assert_eq!(anchor(None, None, Some("")).state, AnchorState::Fresh);
    assert_eq!(anchor(None, None, None).state, AnchorState::Gone);
    // The nearest copy wins.
    let two = anchor(span(4, 4), Some("k"), Some("k\nx\ny\nz\nk\n"));
    assert_eq!(two.span, span(5, 5));
}

#[test]
fn spellings_read_back_and_severities_are_ordered() {
    for b in Bucket::ALL {
        assert_eq!(Bucket::parse(b.as_str()).unwrap(), *b);
    }
    assert!(Severity::Low < Severity::Medium && Severity::High < Severity::Critical);
    let e = Bucket::parse("shim").unwrap_err().to_string();
    assert!(
        e.contains("unknown bucket 'shim'") && e.contains("tool-gap"),
        "{e}"
    );
}

#[test]
fn an_entry_belongs_to_the_open_turn_and_is_rewound_with_it() {
    let (_t, root, mut p) = reconciled(&[("a.rs", "fn a() {}\nfn b() {}\nfn c() {}\n")]);
    let meta = TurnMeta {
        agent: Some("claude".into()),
        session: Some("s1".into()),
        ..TurnMeta::default()
    };
    let turn = p.turn_start(meta).unwrap();
    std::fs::write(root.join("b.rs"), "x\n").unwrap();
    p.reconcile().unwrap();
    let id = p.ledger_add(new("a.rs", span(2, 2))).unwrap();
    p.turn_end().unwrap();
    let e = p.ledger_show(id).unwrap();
    assert_eq!(e.turn, Some(turn));
    assert_eq!(e.body.owner, "agent:claude");
    assert_eq!(
        (e.body.agent.as_deref(), e.body.session.as_deref()),
        (Some("claude"), Some("s1"))
    );
    assert_eq!(e.body.span_text.as_deref(), Some("fn b() {}"));
    assert_eq!(e.status, LedgerStatus::Open);
    assert_eq!(e.history.map(|h| h.len()), Some(1));
    assert_eq!(p.ledger_count_for_turn(turn).unwrap(), 1);
    assert_eq!(
        p.open_ledger_spans(&RelPath::new("a.rs").unwrap()).unwrap(),
        vec![(id, LineSpan { start: 2, end: 2 })]
    );

    let out = p.rewind(turn, RewindOptions::default()).unwrap();
    let crate::model::RewindOutcome::Applied { rewind_id, .. } = out else {
        panic!("not applied: {out:?}")
    };
    let e = p.ledger_show(id).unwrap();
    assert_eq!(
        (e.status, e.rewound_by),
        (LedgerStatus::Rewound, Some(rewind_id))
    );
    assert!(p
        .open_ledger_spans(&RelPath::new("a.rs").unwrap())
        .unwrap()
        .is_empty());
    p.redo(RewindOptions::default()).unwrap();
    assert_eq!(p.ledger_show(id).unwrap().status, LedgerStatus::Open);
}

#[test]
fn status_changes_are_appended_with_who_and_why() {
    let (_t, _root, mut p) = reconciled(&[("a.rs", "x\n")]);
    let id = p.ledger_add(new("a.rs", None)).unwrap();
    assert_eq!(
        p.ledger_show(id).unwrap().body.owner,
        "ana",
        "no turn: the user"
    );
    let e = p
        .ledger_set_status(
            id,
            LedgerStatus::Resolved,
            Some("bo".into()),
            "fixed".into(),
        )
        .unwrap();
    assert_eq!(e.status, LedgerStatus::Resolved);
    let e = p
        .ledger_set_status(id, LedgerStatus::Open, None, "came back".into())
        .unwrap();
    let h: Vec<_> = e
        .history
        .iter()
        .flatten()
        .map(|h| (h.status, h.why.clone()))
        .collect();
    assert_eq!(
        h,
        vec![
            (LedgerStatus::Open, Some("added".into())),
            (LedgerStatus::Resolved, Some("fixed".into())),
            (LedgerStatus::Open, Some("came back".into())),
        ]
    );
    assert_eq!(e.history.unwrap()[1].who.as_deref(), Some("bo"));
    for bad in [
        p.ledger_set_status(id, LedgerStatus::Open, None, "again".into()),
        p.ledger_set_status(id, LedgerStatus::Resolved, None, " ".into()),
        p.ledger_set_status(id, LedgerStatus::Rewound, None, "x".into()),
        p.ledger_set_status(99, LedgerStatus::Resolved, None, "x".into()),
    ] {
        assert!(matches!(bad, Err(Error::BadInput(_))), "{bad:?}");
    }
    assert_eq!(p.ledger_show(id).unwrap().history.map(|h| h.len()), Some(3));
}

#[test]
fn bad_entries_are_refused_and_write_nothing() {
    let (_t, root, mut p) = reconciled(&[("a.rs", "1\n2\n3\n")]);
    std::fs::create_dir(root.join("d")).unwrap();
    let cases = [
        (new("a.rs", span(3, 4)), "past the end"),
        (new("a.rs", span(0, 1)), "from 1"),
        (new("a.rs", span(3, 2)), "starts after"),
        (new("missing.rs", None), "does not exist"),
        (new("d", None), "not a regular file"),
        (
            NewLedgerEntry {
                confidence: 1.5,
                ..new("a.rs", None)
            },
            "between 0 and 1",
        ),
        (
            NewLedgerEntry {
                confidence: f64::NAN,
                ..new("a.rs", None)
            },
            "between 0 and 1",
        ),
        (
            NewLedgerEntry {
                note: "  ".into(),
                ..new("a.rs", None)
            },
            "note is empty",
        ),
    ];
    for (e, want) in cases {
        let err = p.ledger_add(e).unwrap_err().to_string();
        assert!(err.contains(want), "{err} (wanted {want})");
    }
    assert!(p.ledger_list(&LedgerFilter::default()).unwrap().is_empty());
}

#[test]
fn filters_select_entries() {
    let (_t, root, mut p) = reconciled(&[("src/a.rs", "1\n2\n"), ("b.md", "doc\n")]);
    let a = p.ledger_add(new("src/a.rs", span(1, 1))).unwrap();
    let b = p
        .ledger_add(NewLedgerEntry {
            bucket: Bucket::StaleDocsTests,
            severity: Severity::Low,
            confidence: 0.3,
            owner: Some("docs-team".into()),
            ..new("b.md", None)
        })
        .unwrap();
    std::fs::write(root.join("src/a.rs"), "9\n").unwrap();
    let ids =
        |f: LedgerFilter| -> Vec<i64> { p.ledger_list(&f).unwrap().iter().map(|e| e.id).collect() };
    assert_eq!(ids(LedgerFilter::default()), vec![a, b]);
    assert_eq!(
        ids(LedgerFilter {
            bucket: Some(Bucket::StaleDocsTests),
            ..Default::default()
        }),
        vec![b]
    );
    assert_eq!(
        ids(LedgerFilter {
            min_severity: Some(Severity::Medium),
            ..Default::default()
        }),
        vec![a]
    );
    assert_eq!(
        ids(LedgerFilter {
            min_confidence: Some(0.5),
            ..Default::default()
        }),
        vec![a]
    );
    assert_eq!(
        ids(LedgerFilter {
            path_prefix: Some(RelPath::new("src").unwrap()),
            ..Default::default()
        }),
        vec![a]
    );
    assert_eq!(
        ids(LedgerFilter {
            owner: Some("docs-team".into()),
            ..Default::default()
        }),
        vec![b]
    );
    assert_eq!(
        ids(LedgerFilter {
            anchor: Some(AnchorState::Gone),
            ..Default::default()
        }),
        vec![a]
    );
}

#[test]
fn an_import_skips_what_is_already_here_and_keeps_history() {
    let (_t, _root, mut p) = reconciled(&[("a.rs", "1\n2\n")]);
    let id = p.ledger_add(new("a.rs", span(2, 2))).unwrap();
    let e = p.ledger_show(id).unwrap();
    let record = |note: &str| LedgerRecord {
        body: EntryBody {
            note: note.into(),
            agent: None,
            session: None,
            created_ns: 5,
            ..e.body.clone()
        },
        history: vec![
            LedgerEvent {
                status: LedgerStatus::Open,
                who: None,
                why: Some("added".into()),
                at_ns: 5,
            },
            LedgerEvent {
                status: LedgerStatus::WontFix,
                who: Some("cy".into()),
                why: Some("kept on purpose".into()),
                at_ns: 6,
            },
        ],
    };
    let r = p
        .ledger_import(&[record(&e.body.note), record("another")])
        .unwrap();
    assert_eq!(
        r,
        ImportReport {
            added: 1,
            skipped: 1
        }
    );
    let all = p.ledger_list(&LedgerFilter::default()).unwrap();
    let new = p.ledger_show(all[1].id).unwrap();
    assert_eq!((new.status, new.turn), (LedgerStatus::WontFix, None));
    assert_eq!(new.history.map(|h| h.len()), Some(2));
    // A bad record refuses the whole import.
    let mut bad = record("third");
    bad.body.confidence = -1.0;
    assert!(p.ledger_import(&[record("fourth"), bad]).is_err());
    assert_eq!(p.ledger_list(&LedgerFilter::default()).unwrap().len(), 2);
}
