//! Turns, rewinds and redos over several turns: oldest pre-image wins, redo is
//! exact, conflicts refuse, between-turn changes belong to no turn.

mod common;

use ckpt_core::{Error, HashOf, Project, RewindOptions, RewindOutcome, TurnStatus};
use common::*;

/// Three turns over overlapping files, with a snapshot before each.
struct Three {
    fx: Fx,
    p: Project,
    turns: [i64; 3],
    /// `before[i]`: the tree when turn `i` started; `before[3]`: after the last.
    before: [Tree; 4],
}

fn three_turns() -> Three {
    let fx = Fx::new();
    fx.write("a.txt", "a v0\n");
    fx.write("c.txt", "c v0\n");
    fx.write("keep.txt", "nobody touches this\n");
    fx.write("lib/util.rs", "pub fn util() {}\n");
    let mut p = fx.open();
    sync(&mut p);

    let b0 = fx.tree();
    let t1 = start(&mut p, "one");
    fx.write("a.txt", "a v1\n");
    fx.write("b.txt", "b v1\n");
    fx.write("lib/util.rs", "pub fn util() { one() }\n");
    end(&mut p);

    let b1 = fx.tree();
    let t2 = start(&mut p, "two");
    fx.write("a.txt", "a v2 — longer now\n");
    fx.write("b.txt", "b v2\n");
    fx.rm("c.txt");
    fx.chmod("lib/util.rs", 0o755);
    end(&mut p);

    let b2 = fx.tree();
    let t3 = start(&mut p, "three");
    fx.write("a.txt", "a3\n");
    fx.write("c.txt", "c reborn\n");
    fx.rm("b.txt");
    fx.write("lib/new/mod.rs", "mod x;\n");
    fx.rm("lib/util.rs");
    end(&mut p);
    let b3 = fx.tree();

    // Every turn changed something, so the snapshots are all distinct.
    assert_ne!(b0, b1);
    assert_ne!(b1, b2);
    assert_ne!(b2, b3);
    Three {
        fx,
        p,
        turns: [t1, t2, t3],
        before: [b0, b1, b2, b3],
    }
}

#[test]
fn rewinding_the_first_of_three_overlapping_turns_restores_the_oldest_pre_images() {
    let Three {
        fx,
        mut p,
        turns,
        before,
    } = three_turns();
    let plan = rewind(&mut p, turns[0]);
    assert_eq!(
        plan.turns
            .iter()
            .copied()
            .collect::<std::collections::BTreeSet<_>>(),
        std::collections::BTreeSet::from(turns)
    );
    assert_tree(&before[0], &fx.tree(), "rewind of turn 1");
    let st = statuses(&p);
    for t in turns {
        assert_eq!(st[&t], TurnStatus::Rewound, "turn {t}");
    }
}

#[test]
fn rewinding_the_second_turn_keeps_the_first_turns_work() {
    let Three {
        fx,
        mut p,
        turns,
        before,
    } = three_turns();
    let plan = rewind(&mut p, turns[1]);
    assert!(!plan.turns.contains(&turns[0]), "{:?}", plan.turns);
    assert_tree(&before[1], &fx.tree(), "rewind of turn 2");
    assert_eq!(fx.read("a.txt"), b"a v1\n");
    assert_eq!(fx.read("b.txt"), b"b v1\n");
    let st = statuses(&p);
    assert_eq!(st[&turns[0]], TurnStatus::Closed);
    assert_eq!(st[&turns[1]], TurnStatus::Rewound);
    assert_eq!(st[&turns[2]], TurnStatus::Rewound);
}

#[test]
fn rewinding_the_last_turn_only_undoes_it() {
    let Three {
        fx,
        mut p,
        turns,
        before,
    } = three_turns();
    rewind(&mut p, turns[2]);
    assert_tree(&before[2], &fx.tree(), "rewind of turn 3");
}

#[test]
fn redo_gives_back_the_exact_pre_rewind_tree_and_revives_the_turns() {
    let Three {
        fx,
        mut p,
        turns,
        before,
    } = three_turns();
    for (i, &t) in turns.iter().enumerate() {
        rewind(&mut p, t);
        assert_tree(&before[i], &fx.tree(), &format!("rewind of turn {}", i + 1));
        let st = statuses(&p);
        for (j, &u) in turns.iter().enumerate() {
            let want = if j >= i {
                TurnStatus::Rewound
            } else {
                TurnStatus::Closed
            };
            assert_eq!(
                st[&u],
                want,
                "after rewinding turn {}, turn {}",
                i + 1,
                j + 1
            );
        }
        redo(&mut p);
        assert_tree(
            &before[3],
            &fx.tree(),
            &format!("redo after rewinding turn {}", i + 1),
        );
        let st = statuses(&p);
        for &u in &turns {
            assert_eq!(st[&u], TurnStatus::Closed, "after redo, turn {u}");
        }
    }
    // Nothing left to redo.
    sync(&mut p);
    assert!(matches!(
        p.redo(RewindOptions::default()),
        Err(Error::NothingToRedo)
    ));
}

#[test]
fn a_rewound_turn_cannot_be_rewound_again_and_an_unknown_turn_is_an_error() {
    let Three {
        fx, mut p, turns, ..
    } = three_turns();
    rewind(&mut p, turns[1]);
    let tree = fx.tree();
    sync(&mut p);
    assert!(
        matches!(p.rewind(turns[2], RewindOptions::default()), Err(Error::TurnRewound(t)) if t == turns[2]),
        "rewinding an already rewound turn must fail with TurnRewound"
    );
    assert!(matches!(
        p.rewind(9999, RewindOptions::default()),
        Err(Error::UnknownTurn(9999))
    ));
    assert_tree(&tree, &fx.tree(), "failed rewinds change nothing");
}

#[test]
fn a_new_turn_after_a_rewind_can_itself_be_rewound() {
    let Three {
        fx,
        mut p,
        turns,
        before,
    } = three_turns();
    rewind(&mut p, turns[1]);
    let b = fx.tree();
    let t4 = start(&mut p, "four");
    fx.write("a.txt", "a v4\n");
    fx.write("d.txt", "d\n");
    end(&mut p);
    rewind(&mut p, t4);
    assert_tree(&b, &fx.tree(), "rewind of the turn after a rewind");
    assert_tree(&before[1], &fx.tree(), "still the tree before turn 2");
    // Turn 1 is still live and can be rewound.
    rewind(&mut p, turns[0]);
    assert_tree(&before[0], &fx.tree(), "rewind of turn 1 afterwards");
}

#[test]
fn dry_run_returns_the_plan_and_changes_nothing() {
    let Three {
        fx,
        mut p,
        turns,
        before,
    } = three_turns();
    sync(&mut p);
    let out = p
        .rewind(
            turns[0],
            RewindOptions {
                flags: ckpt_core::RewindFlags {
                    dry_run: true,
                    ..Default::default()
                },
                ..Default::default()
            },
        )
        .expect("dry run");
    let RewindOutcome::DryRun(plan) = out else {
        panic!("expected DryRun, got {out:#?}")
    };
    assert_tree(&before[3], &fx.tree(), "after dry run");
    // b.txt was created by turn 1 and deleted by turn 3: already as it was,
    // so an action for it (if any) must be a no-op.
    let mut paths: Vec<String> = plan
        .actions
        .iter()
        .filter(|a| a.current != a.target)
        .map(|a| a.path.display())
        .collect();
    paths.sort();
    assert_eq!(
        paths,
        ["a.txt", "c.txt", "lib/new", "lib/new/mod.rs", "lib/util.rs"],
        "planned actions"
    );
    assert!(plan
        .actions
        .iter()
        .all(|a| a.current != a.target || a.path == rp("b.txt")));
    assert!(plan.conflicts.is_empty(), "{:?}", plan.conflicts);
    // The dry run did not mark anything.
    assert!(statuses(&p).values().all(|s| *s == TurnStatus::Closed));
}

#[test]
fn partial_rewind_restores_only_the_given_paths() {
    let Three {
        fx,
        mut p,
        turns,
        before,
    } = three_turns();
    sync(&mut p);
    let plan = applied(
        p.rewind(
            turns[0],
            RewindOptions {
                paths: vec![rp("a.txt"), rp("lib")],
                ..Default::default()
            },
        )
        .expect("partial rewind"),
    );
    for a in &plan.actions {
        assert!(
            a.path.starts_with(&rp("a.txt")) || a.path.starts_with(&rp("lib")),
            "action outside the requested paths: {}",
            a.path
        );
    }
    let mut want = before[3].clone();
    for (k, v) in &before[0] {
        if k.as_slice() == b"a.txt" || k.starts_with(b"lib/") {
            want.insert(k.clone(), v.clone());
        }
    }
    want.retain(|k, _| !k.starts_with(b"lib/") || before[0].contains_key(k));
    assert_tree(&want, &fx.tree(), "after partial rewind");
}

#[test]
fn conflicting_user_edit_refuses_then_force_proceeds_and_redo_restores_the_edit() {
    let fx = Fx::new();
    fx.write("main.rs", "fn main() {}\n");
    fx.write("other.rs", "// other\n");
    let mut p = fx.open();
    sync(&mut p);
    let before = fx.tree();
    let t = start(&mut p, "agent");
    fx.write("main.rs", "fn main() { agent(); }\n");
    fx.write("other.rs", "// other, by the agent\n");
    fx.write("added.rs", "// new\n");
    end(&mut p);

    // The user edits one of the agent's files after the turn.
    fx.write("main.rs", "fn main() { agent(); user(); }\n");
    let edited = fx.tree();

    sync(&mut p);
    let plan = refused(p.rewind(t, RewindOptions::default()).expect("rewind"));
    let conflicts: Vec<String> = plan.conflicts.iter().map(|c| c.path.display()).collect();
    assert_eq!(conflicts, ["main.rs"]);
    let c = &plan.conflicts[0];
    assert_ne!(c.expected, c.current);
    assert_tree(&edited, &fx.tree(), "a refused rewind changes nothing");
    assert_eq!(
        statuses(&p)[&t],
        TurnStatus::Closed,
        "a refused rewind marks nothing"
    );

    rewind_forced(&mut p, t);
    assert_tree(&before, &fx.tree(), "after forced rewind");

    redo(&mut p);
    assert_tree(&edited, &fx.tree(), "redo brings the user's edit back");
}

#[test]
fn changes_between_turns_belong_to_no_turn() {
    let fx = Fx::new();
    fx.write("a.txt", "a0\n");
    fx.write("b.txt", "b0\n");
    fx.write("shared.txt", "s0\n");
    let mut p = fx.open();
    sync(&mut p);

    let t1 = start(&mut p, "one");
    fx.write("a.txt", "a1\n");
    fx.write("shared.txt", "s1 (turn 1)\n");
    end(&mut p);

    // The user, between turns: edits a file no turn touched, creates one, and
    // edits a file turn 1 touched and turn 2 will touch.
    fx.write("b.txt", "b by the user\n");
    fx.write("user-new.txt", "mine\n");
    fx.write("shared.txt", "s (user)\n");

    let t2 = start(&mut p, "two");
    let before_t2 = fx.tree();
    fx.write("a.txt", "a2\n");
    fx.write("shared.txt", "s2 (turn 2)\n");
    fx.write("d.txt", "d2\n");
    end(&mut p);

    let mut want_t2 = ["a.txt", "d.txt", "shared.txt"]
        .map(|s| s.as_bytes().to_vec())
        .to_vec();
    want_t2.sort();
    assert_eq!(entry_paths(&p, t2).into_iter().collect::<Vec<_>>(), want_t2);
    let mut want_t1 = ["a.txt", "shared.txt"]
        .map(|s| s.as_bytes().to_vec())
        .to_vec();
    want_t1.sort();
    assert_eq!(entry_paths(&p, t1).into_iter().collect::<Vec<_>>(), want_t1);

    rewind(&mut p, t2);
    assert_tree(&before_t2, &fx.tree(), "rewind of turn 2");
    assert_eq!(fx.read("b.txt"), b"b by the user\n");
    assert_eq!(fx.read("user-new.txt"), b"mine\n");
    assert_eq!(
        fx.read("shared.txt"),
        b"s (user)\n",
        "turn 2's pre-image is the user's version"
    );
}

#[test]
fn reopening_the_store_keeps_turns_and_rewinds_still_work() {
    let fx = Fx::new();
    fx.write("a.txt", "a0\n");
    let mut p = fx.open();
    sync(&mut p);
    let before = fx.tree();
    let t = start(&mut p, "one");
    fx.write("a.txt", "a1\n");
    fx.write("n/b.txt", "b1\n");
    end(&mut p);
    let after = fx.tree();
    drop(p);

    let mut p = Project::open_existing(&fx.store, fx.opts.clone()).expect("open_existing");
    assert_eq!(
        std::fs::canonicalize(p.root()).unwrap(),
        std::fs::canonicalize(&fx.root).unwrap()
    );
    let log = p.log(10).expect("log");
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].id, t);
    assert_eq!(log[0].label.as_deref(), Some("one"));
    assert!(p.open_turn().expect("open_turn").is_none());
    rewind(&mut p, t);
    assert_tree(&before, &fx.tree(), "rewind after reopen");
    drop(p);

    let mut p = fx.open();
    redo(&mut p);
    assert_tree(&after, &fx.tree(), "redo after another reopen");
}

#[test]
fn a_store_refuses_another_root() {
    let fx = Fx::new();
    let mut p = fx.open();
    sync(&mut p);
    drop(p);
    let other = fx.tmp.path().join("other-root");
    std::fs::create_dir(&other).unwrap();
    assert!(matches!(
        Project::open(&fx.store, &other, fx.opts.clone()),
        Err(Error::WrongProject { .. })
    ));
}

#[test]
fn open_turn_log_and_status_follow_the_turns() {
    let fx = Fx::new();
    fx.write("a.txt", "a\n");
    let mut p = fx.open();
    sync(&mut p);
    assert!(p.open_turn().unwrap().is_none());
    let t1 = start(&mut p, "first");
    assert_eq!(p.open_turn().unwrap(), Some(t1));
    assert_eq!(p.status().unwrap().open_turn, Some(t1));
    fx.write("a.txt", "a1\n");
    fx.write("b.txt", "b1\n");
    // turn_start closes an open turn first.
    let t2 = start(&mut p, "second");
    assert_ne!(t1, t2);
    assert_eq!(statuses(&p)[&t1], TurnStatus::Closed);
    let d1 = p.show(t1).unwrap();
    assert_eq!(d1.entries.len(), 2);
    assert!(
        d1.entries.iter().all(|e| e.post.is_some()),
        "closed turn has post-images"
    );
    assert_eq!(d1.info.counts.added, 1);
    assert_eq!(d1.info.counts.modified, 1);
    end(&mut p);
    assert!(matches!(p.turn_end(), Err(Error::NoOpenTurn)));
    let log = p.log(10).unwrap();
    assert_eq!(
        log.iter().map(|t| t.id).collect::<Vec<_>>(),
        [t2, t1],
        "newest first"
    );
    assert_eq!(p.log(1).unwrap().len(), 1);
    let st = p.status().unwrap();
    assert_eq!(st.turns, 2);
    assert_eq!(st.entries, 2, "a.txt and b.txt");
    assert!(st.blobs >= 3, "a, a1, b1 stored: {st:?}");
    assert!(st.store_bytes > 0);
}

#[test]
fn diff_shows_the_turns_change() {
    let fx = Fx::new();
    fx.write("a.txt", "one\ntwo\nthree\n");
    fx.write("bin", [0u8, 1, 2, 255]);
    let mut p = fx.open();
    sync(&mut p);
    let t = start(&mut p, "edit");
    fx.write("a.txt", "one\n2\nthree\n");
    fx.write("bin", [0u8, 1, 3, 255]);
    end(&mut p);
    let diffs = p.diff(t, &[]).expect("diff");
    assert_eq!(diffs.len(), 2);
    let a = diffs
        .iter()
        .find(|d| d.path == rp("a.txt"))
        .expect("a.txt diff");
    let text = a.unified.as_deref().expect("text diff");
    assert!(text.contains("-two") && text.contains("+2"), "{text}");
    let only = p.diff(t, &[rp("a.txt")]).expect("diff of one path");
    assert_eq!(only.len(), 1);
}

/// Right after a barrier the rewind skips re-hashing what the barrier
/// checked, yet a user's edit that lands after the barrier (its event not yet
/// processed) still changes the file's stat, so it is checked and refused
/// as a conflict, never overwritten.
#[test]
fn edit_after_the_barrier_is_still_a_conflict() {
    let fx = Fx::new();
    fx.write("main.rs", "fn main() {}\n");
    let mut p = fx.open();
    sync(&mut p);
    let t = start(&mut p, "agent");
    fx.write("main.rs", "fn main() { agent(); }\n");
    end(&mut p);
    // No sync: the edit is known only to the disk.
    fx.write("main.rs", "fn main() { agent(); user(); }\n");
    let edited = fx.tree();
    let opts = RewindOptions {
        after_barrier: true,
        ..Default::default()
    };
    let plan = refused(p.rewind(t, opts).expect("rewind"));
    let conflicts: Vec<String> = plan.conflicts.iter().map(|c| c.path.display()).collect();
    assert_eq!(conflicts, ["main.rs"]);
    assert_tree(&edited, &fx.tree(), "a refused rewind changes nothing");
}

/// The conversation position a client records is kept as it was given,
/// shown with the turn and in the log, and survives the turn's rewind.
#[test]
fn a_turns_conversation_position_is_kept_as_given() {
    let fx = Fx::new();
    fx.write("a.txt", "a\n");
    let mut p = fx.open();
    sync(&mut p);
    let position = r#"{"bytes":1234,"last":"u-7"}"#;
    let t = p
        .turn_start(ckpt_core::TurnMeta {
            agent: Some("claude-code".into()),
            transcript: Some("/t/s.jsonl".into()),
            conversation: Some(position.into()),
            ..Default::default()
        })
        .unwrap();
    fx.write("a.txt", "b\n");
    end(&mut p);
    let plain = start(&mut p, "no position");
    end(&mut p);
    // Kept as the adapter's text, shown as the JSON it holds.
    let shown = Some(ckpt_types::turn::conversation_of(position));
    assert_eq!(p.show(t).unwrap().info.conversation, shown);
    assert_eq!(p.show(plain).unwrap().info.conversation, None);
    rewind(&mut p, t);
    let log = p.log(10).unwrap();
    let info = log.iter().find(|i| i.id == t).unwrap();
    assert_eq!(info.status, TurnStatus::Rewound);
    assert_eq!(info.conversation, shown);
}

/// Barrier, then open a turn of `session`.
fn start_of(p: &mut Project, session: &str) -> i64 {
    sync(p);
    p.turn_start(ckpt_core::TurnMeta {
        session: Some(session.to_string()),
        ..Default::default()
    })
    .expect("turn_start")
}

/// Barrier, then close `session`'s turn: its paths, each with `shared`.
fn end_of(p: &mut Project, session: &str) -> Vec<(String, bool)> {
    sync(p);
    let t = p
        .turn_end_of(Some(session), None, None)
        .expect("turn_end_of");
    t.entries
        .iter()
        .map(|e| {
            (
                String::from_utf8_lossy(e.path.as_bytes()).into_owned(),
                e.shared,
            )
        })
        .collect()
}

/// A tool call running when the store is closed (a daemon killed) is still
/// running when it is opened again: the change it makes then is its
/// session's alone, and its tool-end is counted against it.
#[test]
fn a_running_tool_call_is_loaded_again_when_the_store_is_reopened() {
    let fx = Fx::new();
    fx.write("a.txt", "one\n");
    let mut p = fx.open();
    sync(&mut p);
    start_of(&mut p, "A");
    start_of(&mut p, "B");
    assert_eq!(p.tool_start(Some("A")).unwrap(), 1);
    drop(p);

    let mut p = fx.open();
    fx.write("a.txt", "two\n");
    sync(&mut p);
    assert_eq!(p.tool_end(Some("A")).unwrap(), 0, "the reopened count");
    assert_eq!(end_of(&mut p, "A"), [("a.txt".to_string(), false)]);
    assert_eq!(end_of(&mut p, "B"), []);
}

/// A rewind that ends the open turns and continues each in a new one keeps
/// the session's running tool call on its new turn; a turn-start of the
/// session ends it.
#[test]
fn a_tool_window_follows_its_session_into_the_turn_a_rewind_continues() {
    let fx = Fx::new();
    fx.write("a.txt", "one\n");
    let mut p = fx.open();
    sync(&mut p);
    let ta = start_of(&mut p, "A");
    start_of(&mut p, "B");
    assert_eq!(p.tool_start(Some("A")).unwrap(), 1);
    fx.write("a.txt", "two\n");
    rewind(&mut p, ta);
    assert_ne!(p.open_turn_of(Some("A")).unwrap(), Some(ta), "continued");
    fx.write("b.txt", "A's tool\n");
    sync(&mut p);
    assert_eq!(p.tool_end(Some("A")).unwrap(), 0);
    assert_eq!(end_of(&mut p, "A"), [("b.txt".to_string(), false)]);
    assert_eq!(end_of(&mut p, "B"), []);

    // A session's next turn starts with no tool call running.
    start_of(&mut p, "A");
    start_of(&mut p, "B");
    assert_eq!(p.tool_start(Some("A")).unwrap(), 1);
    start_of(&mut p, "A");
    fx.write("c.txt", "either\n");
    assert_eq!(end_of(&mut p, "B"), [("c.txt".to_string(), true)]);
}

/// `rewind_after(1)` keeps turn 1 and undoes 2 and 3: the tree is the one
/// turn 1 left; redo brings 2 and 3 back.
#[test]
fn rewind_after_keeps_the_turn_and_undoes_the_later_ones() {
    let Three {
        fx,
        mut p,
        turns: [t1, t2, t3],
        before,
    } = three_turns();
    sync(&mut p);
    let plan = applied(p.rewind_after(t1, RewindOptions::default()).unwrap());
    assert_eq!(plan.turns, vec![t2, t3]);
    assert_tree(&before[1], &fx.tree(), "after rewind_after(1)");
    let st = statuses(&p);
    assert_eq!(st[&t1], TurnStatus::Closed);
    assert_eq!(st[&t2], TurnStatus::Rewound);
    assert_eq!(st[&t3], TurnStatus::Rewound);
    redo(&mut p);
    assert_tree(&before[3], &fx.tree(), "after redo");
}

/// Nothing after the last turn: an error that says so, and nothing changes.
#[test]
fn rewind_after_the_last_turn_is_an_error_and_changes_nothing() {
    let Three {
        fx,
        mut p,
        turns: [_, t2, t3],
        before,
    } = three_turns();
    sync(&mut p);
    let e = p.rewind_after(t3, RewindOptions::default()).unwrap_err();
    assert!(matches!(e, Error::NothingAfter(t) if t == t3), "{e}");
    assert!(e.to_string().contains("nothing after it"), "{e}");
    assert_tree(&before[3], &fx.tree(), "after the refused rewind_after");
    // A rewound turn has no "after" of its own.
    rewind(&mut p, t2);
    let e = p.rewind_after(t3, RewindOptions::default()).unwrap_err();
    assert!(matches!(e, Error::TurnRewound(_)), "{e}");
    let e = p.rewind_after(999, RewindOptions::default()).unwrap_err();
    assert!(matches!(e, Error::UnknownTurn(999)), "{e}");
}

/// Only the same session's turns after N are undone: another session's
/// later turn stays, and a path it changed after N's session touched it is
/// a conflict as for any rewind.
#[test]
fn rewind_after_undoes_only_its_sessions_later_turns() {
    let fx = Fx::new();
    fx.write("a.txt", "a0\n");
    fx.write("o.txt", "o0\n");
    let mut p = fx.open();
    sync(&mut p);
    let a1 = start_of(&mut p, "A");
    fx.write("a.txt", "a1\n");
    end_of(&mut p, "A");
    let kept = fx.tree();
    let a2 = start_of(&mut p, "A");
    fx.write("a.txt", "a2\n");
    end_of(&mut p, "A");
    let b1 = start_of(&mut p, "B");
    fx.write("o.txt", "o by B\n");
    end_of(&mut p, "B");
    sync(&mut p);
    let plan = applied(p.rewind_after(a1, RewindOptions::default()).unwrap());
    assert_eq!(plan.turns, vec![a2]);
    assert_eq!(fx.read("a.txt"), b"a1\n");
    assert_eq!(fx.read("o.txt"), b"o by B\n");
    assert_ne!(kept, fx.tree());
    assert_eq!(statuses(&p)[&b1], TurnStatus::Closed);
    // B's only turn has nothing after it in B, though A's redo would.
    let e = p.rewind_after(b1, RewindOptions::default()).unwrap_err();
    assert!(matches!(e, Error::NothingAfter(_)), "{e}");
}

/// An edit after the undone turns is a conflict: refused, nothing changed.
#[test]
fn rewind_after_refuses_an_edit_made_after_the_agent() {
    let Three {
        fx,
        mut p,
        turns: [t1, _, _],
        ..
    } = three_turns();
    fx.write("a.txt", "mine\n");
    sync(&mut p);
    let before = fx.tree();
    let plan = refused(p.rewind_after(t1, RewindOptions::default()).unwrap());
    assert_eq!(plan.conflicts.len(), 1, "{:?}", plan.conflicts);
    assert_tree(&before, &fx.tree(), "after the refused rewind_after");
}

/// `show_listing(turn, Some(n))` against the listing of every entry: the
/// same turn info (counts, gaps, partial rewinds), the first `n` entries,
/// and `total_entries` only when some were left out; `log` says the same.
#[track_caller]
fn listing_matches_the_whole(p: &Project, turn: i64) -> ckpt_core::TurnDetail {
    let all = p.show(turn).expect("show");
    assert_eq!(all.total_entries, None);
    let n = all.entries.len();
    let info = serde_json::to_value(&all.info).expect("info");
    for list in 0..=n as u64 + 1 {
        let cut = p.show_listing(turn, Some(list)).expect("show_listing");
        assert_eq!(
            serde_json::to_value(&cut.info).expect("info"),
            info,
            "list {list}"
        );
        assert_eq!(
            cut.entries,
            all.entries[..n.min(list as usize)],
            "list {list}"
        );
        let total = (list < n as u64).then_some(n as u64);
        assert_eq!(cut.total_entries, total, "list {list}");
        assert_eq!(cut.total_entries(), n);
        assert_eq!(cut.commands, all.commands);
    }
    let none = p.show_listing(turn, None).expect("show_listing");
    assert_eq!(none.entries, all.entries);
    let logged = p.log(100).expect("log");
    let logged = logged
        .iter()
        .find(|t| t.id == turn)
        .expect("the turn is logged");
    assert_eq!(serde_json::to_value(logged).expect("info"), info);
    all
}

#[test]
fn a_listed_turn_counts_every_entry_and_keeps_only_those_listed() {
    let fx = Fx::with_opts(ckpt_core::Options {
        max_file_size: 4096,
        ..test_opts()
    });
    fx.write("big.bin", vec![b'b'; 8192]);
    fx.write("del.txt", "going\n");
    fx.write("mod.txt", "before\n");
    fx.write("keep.txt", "nobody touches this\n");
    let mut p = fx.open();
    sync(&mut p);
    let t = start(&mut p, "mixed");
    fx.write("add.txt", "new\n");
    fx.write("sub/one.txt", "one\n");
    fx.write("sub/two.txt", "two\n");
    fx.write("mod.txt", "after\n");
    fx.rm("del.txt");
    fx.write("big.bin", vec![b'c'; 9000]);
    end(&mut p);

    let all = listing_matches_the_whole(&p, t);
    let c = all.info.counts;
    assert_eq!(
        (c.added, c.modified, c.deleted, c.skipped),
        (4, 1, 1, 1),
        "{c:?}"
    );
    let gaps: Vec<_> = all
        .info
        .integrity
        .gaps
        .iter()
        .map(|g| g.path.clone())
        .collect();
    assert_eq!(gaps, [Some(rp("big.bin"))]);
    assert!(all.info.partial.is_none());

    // A rewind limited to `sub`: the turn stays live, partly rewound.
    sync(&mut p);
    let opts = RewindOptions {
        paths: vec![rp("sub")],
        ..Default::default()
    };
    applied(p.rewind(t, opts).expect("partial rewind"));
    let all = listing_matches_the_whole(&p, t);
    let partial = all.info.partial.expect("partly rewound");
    assert_eq!(
        partial.rewound,
        [rp("sub"), rp("sub/one.txt"), rp("sub/two.txt")]
    );
    assert_eq!(partial.rewinds.len(), 1);

    // The rest of it, whole: the skipped file is left as it was.
    rewind_forced(&mut p, t);
    let all = listing_matches_the_whole(&p, t);
    assert_eq!(all.info.status, TurnStatus::Rewound);
    let partial = all.info.partial.expect("a rewind left a path");
    let left: Vec<_> = partial.left.iter().map(|s| s.path.clone()).collect();
    assert_eq!(left, [rp("big.bin")]);
    assert!(partial.rewound.is_empty(), "{partial:?}");
}

/// Each path of `turn` (open or not) with the content it ends with (`None`:
/// not a file).
fn posts_of(p: &Project, turn: i64) -> Vec<(String, Option<ckpt_core::Hash>)> {
    let detail = p.show(turn).unwrap();
    detail
        .entries
        .iter()
        .map(|e| {
            let post = e.post.as_ref().expect("a post-image");
            (e.path.to_string(), post.hash())
        })
        .collect()
}

/// A turn, open or closed, ends with each of its paths as the hash cache
/// has it at its end, whoever changed it last: a forced rewind of another
/// session's turn, another session's tool call (which records the change
/// in that session's turn alone), or its directory becoming a cache
/// directory.
#[test]
fn a_turn_ends_with_each_paths_state_at_its_end_whoever_changed_it() {
    let fx = Fx::new();
    for f in ["a.txt", "d.txt", "keep/c.txt"] {
        fx.write(f, "one\n");
    }
    let mut p = fx.open();
    sync(&mut p);
    let ta = start_of(&mut p, "A");
    let tb = start_of(&mut p, "B");
    let one = Some(ckpt_core::Hash::of(b"one\n"));
    let two = Some(ckpt_core::Hash::of(b"two\n"));
    // Both turns record it; a forced rewind of A's turn puts it back.
    fx.write("a.txt", "two\n");
    sync(&mut p);
    assert_eq!(posts_of(&p, tb), [("a.txt".to_string(), two)]);
    rewind_forced(&mut p, ta);
    assert_eq!(fx.read("a.txt"), b"one\n");
    assert_eq!(posts_of(&p, tb), [("a.txt".to_string(), one)]);
    // Within A's tool call the change is A's alone.
    fx.write("d.txt", "two\n");
    fx.write("keep/c.txt", "two\n");
    sync(&mut p);
    assert_eq!(p.tool_start(Some("A")).unwrap(), 1);
    fx.write("d.txt", "three\n");
    sync(&mut p);
    let three = Some(ckpt_core::Hash::of(b"three\n"));
    assert_eq!(posts_of(&p, tb)[1], ("d.txt".to_string(), three));
    assert_eq!(p.tool_end(Some("A")).unwrap(), 0);
    // keep/ becomes a cache directory (its event, as the watcher sends
    // it): its file leaves the cache.
    fx.write(
        "keep/CACHEDIR.TAG",
        "Signature: 8a477f597d28d172789f06886806bc55\n",
    );
    p.check_paths([rp("keep/CACHEDIR.TAG")]).unwrap();
    assert_eq!(posts_of(&p, tb)[2], ("keep/c.txt".to_string(), None));

    sync(&mut p);
    p.turn_end_of(Some("B"), None, None).unwrap();
    assert_eq!(
        posts_of(&p, tb),
        [
            // a.txt ended as it began: it goes.
            ("d.txt".to_string(), three),
            ("keep/c.txt".to_string(), None),
        ]
    );
}
