//! fsck finds each kind of damage, names what is damaged, and changes
//! nothing: a store with every storage form (packed, inline, object file,
//! deltas over a packed and over an object-file base) and a rewind journal,
//! then one corruption per test.

mod common;

use ckpt_core::HashOf;
use std::path::{Path, PathBuf};

use ckpt_core::{fsck, FindingKind, FsckOptions, FsckReport, Hash};
use common::*;
use rusqlite::{params, Connection};

/// A store holding every form a blob can take, a closed turn, a rewind of
/// it and the redo of that rewind.
struct Rich {
    fx: Fx,
    turn: i64,
}

/// Compressible, over the pack limit (256 KiB), small once compressed:
/// stored inline in its row.
fn inline_text() -> Vec<u8> {
    (0..9000)
        .map(|i| format!("line {i:05} of a long and repetitive text file\n"))
        .collect::<String>()
        .into_bytes()
}

fn rich() -> Rich {
    let fx = Fx::new();
    for i in 0..40 {
        fx.write(
            format!("src/f{i}.rs"),
            format!("fn f{i}() -> u32 {{ {i} }}\n").repeat(1 + i % 7),
        );
    }
    fx.write("inline.txt", inline_text());
    let mut rng = Rng::new(11);
    // Incompressible and over the inline limit: an object file.
    fx.write("big.bin", rng.bytes(300 << 10));
    // Over the delta threshold (64 KiB), under the pack limit: packed, and
    // a delta once changed.
    fx.write(
        "log.txt",
        (0..3000)
            .map(|i| format!("{i:06} event\n"))
            .collect::<String>(),
    );
    let mut p = fx.open();
    sync(&mut p);
    let turn = start(&mut p, "agent");
    fx.append("log.txt", "one more event\n");
    fx.append("big.bin", "appended\n");
    fx.write("src/new.rs", "fn new() {}\n");
    fx.rm("src/f3.rs");
    end(&mut p);
    rewind(&mut p, turn);
    redo(&mut p);
    drop(p);
    Rich { fx, turn }
}

fn conn(fx: &Fx) -> Connection {
    Connection::open(fx.db_path()).expect("open db")
}

fn check(fx: &Fx) -> FsckReport {
    fsck(&fx.store, &FsckOptions::default()).expect("fsck runs")
}

/// A blob stored in the form `condition` describes (SQL over `blobs`).
fn blob_where(fx: &Fx, condition: &str) -> Hash {
    let raw: Vec<u8> = conn(fx)
        .query_row(
            &format!("SELECT hash FROM blobs WHERE {condition} LIMIT 1"),
            [],
            |r| r.get(0),
        )
        .unwrap_or_else(|e| panic!("no blob where {condition}: {e}"));
    Hash::from_slice(&raw).expect("32-byte name")
}

fn object_path(fx: &Fx, h: &Hash) -> PathBuf {
    let hex = h.to_hex();
    fx.store.join("objects").join(&hex[..2]).join(&hex[2..])
}

/// Asserts a problem of `kind` about exactly `subject`; returns its detail.
#[track_caller]
fn assert_problem(r: &FsckReport, kind: FindingKind, subject: &str) -> String {
    assert!(!r.ok(), "fsck says ok: {r:#?}");
    r.problems
        .iter()
        .find(|p| p.kind == kind && p.subject == subject)
        .unwrap_or_else(|| panic!("no {kind:?} problem about {subject:?}: {:#?}", r.problems))
        .detail
        .clone()
}

/// Everything in the store, byte for byte, except SQLite's shared-memory
/// index, which readers write to by design.
fn store_bytes(dir: &Path) -> Tree {
    let mut tree = snapshot_all(dir);
    tree.retain(|path, _| !path.ends_with(b"-shm"));
    tree
}

#[test]
fn a_sound_store_passes_and_fsck_changes_nothing() {
    let Rich { fx, .. } = rich();
    // Every storage form is there, so each is checked.
    for form in [
        "pack IS NOT NULL",
        "data IS NOT NULL AND base IS NULL",
        "data IS NULL AND pack IS NULL AND base IS NULL",
        "base IS NOT NULL",
    ] {
        blob_where(&fx, form);
    }
    let before = store_bytes(&fx.store);
    let r = check(&fx);
    assert!(r.ok(), "{r:#?}");
    assert!(r.warnings.is_empty(), "{:#?}", r.warnings);
    assert_eq!(r.root, fx.root);
    let c = &r.checked;
    let blobs: i64 = conn(&fx)
        .query_row("SELECT count(*) FROM blobs", [], |r| r.get(0))
        .unwrap();
    assert_eq!(c.blobs, blobs as u64, "every blob is checked");
    assert!(c.packs > 0 && c.objects > 0, "{c:?}");
    assert!(
        c.cache_rows > 40 && c.turn_entries >= 4 && c.rewind_actions >= 4,
        "{c:?}"
    );
    assert_eq!(before, store_bytes(&fx.store), "fsck wrote to the store");
}

#[test]
fn a_flipped_byte_in_an_inline_blob_is_found() {
    let Rich { fx, .. } = rich();
    let h = Hash::of(&inline_text());
    let c = conn(&fx);
    let mut data: Vec<u8> = c
        .query_row(
            "SELECT data FROM blobs WHERE hash = ?1 AND pack IS NULL",
            [&h.0[..]],
            |r| r.get(0),
        )
        .expect("inline.txt is an inline row");
    let mid = data.len() / 2;
    data[mid] ^= 0x20;
    c.execute(
        "UPDATE blobs SET data = ?1 WHERE hash = ?2",
        params![data, &h.0[..]],
    )
    .unwrap();
    assert_problem(&check(&fx), FindingKind::CorruptBlob, &format!("blob {h}"));
}

#[test]
fn a_flipped_byte_in_a_pack_is_found() {
    let Rich { fx, .. } = rich();
    let h = blob_where(&fx, "pack IS NOT NULL AND size < 1000");
    let c = conn(&fx);
    let (pack, mut data): (i64, Vec<u8>) = c
        .query_row(
            "SELECT id, data FROM packs WHERE id = (SELECT pack FROM blobs WHERE hash = ?1)",
            [&h.0[..]],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let mid = data.len() / 2;
    data[mid] ^= 0xff;
    c.execute(
        "UPDATE packs SET data = ?1 WHERE id = ?2",
        params![data, pack],
    )
    .unwrap();
    let r = check(&fx);
    let members: Vec<String> = c
        .prepare("SELECT hash FROM blobs WHERE pack = ?1")
        .unwrap()
        .query_map([pack], |r| r.get::<_, Vec<u8>>(0))
        .unwrap()
        .map(|h| format!("blob {}", hex_of(&h.unwrap())))
        .collect();
    // Either the frame no longer decodes, or it decodes to other bytes
    // that some blob of the pack no longer hashes to.
    let named = r.problems.iter().any(|p| {
        (p.kind == FindingKind::CorruptPack && p.subject == format!("pack {pack}"))
            || (p.kind == FindingKind::CorruptBlob && members.contains(&p.subject))
    });
    assert!(named, "pack {pack} or one of its blobs: {:#?}", r.problems);
}

fn hex_of(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn a_packed_blob_outside_its_pack_is_found() {
    let Rich { fx, .. } = rich();
    let h = blob_where(&fx, "pack IS NOT NULL");
    conn(&fx)
        .execute(
            "UPDATE blobs SET pack_offset = (SELECT size FROM packs WHERE id = blobs.pack)
             WHERE hash = ?1",
            [&h.0[..]],
        )
        .unwrap();
    assert_problem(
        &check(&fx),
        FindingKind::BlobOutsidePack,
        &format!("blob {h}"),
    );
}

#[test]
fn a_flipped_byte_in_an_object_file_is_found() {
    let Rich { fx, .. } = rich();
    let h = blob_where(&fx, "data IS NULL AND pack IS NULL AND base IS NULL");
    let path = object_path(&fx, &h);
    let mut bytes = std::fs::read(&path).expect("object file");
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x01;
    std::fs::write(&path, bytes).unwrap();
    let r = check(&fx);
    assert_problem(&r, FindingKind::CorruptBlob, &format!("blob {h}"));
    // The next version of big.bin is a delta over it: unreadable too.
    let delta = blob_where(&fx, &format!("base = x'{}'", h.to_hex()));
    assert_problem(&r, FindingKind::CorruptBlob, &format!("blob {delta}"));
}

#[test]
fn a_deleted_object_file_is_found() {
    let Rich { fx, .. } = rich();
    let h = blob_where(&fx, "data IS NULL AND pack IS NULL AND base IS NULL");
    std::fs::remove_file(object_path(&fx, &h)).unwrap();
    let detail = assert_problem(
        &check(&fx),
        FindingKind::MissingObject,
        &format!("blob {h}"),
    );
    assert!(
        detail.contains(&h.to_hex()[2..]),
        "names the file: {detail}"
    );
}

#[test]
fn a_cache_row_naming_a_missing_blob_is_found() {
    let Rich { fx, .. } = rich();
    let nowhere = Hash::of(b"stored nowhere");
    let n = conn(&fx)
        .execute(
            "UPDATE files SET data = ?1 WHERE path = CAST('src/f1.rs' AS BLOB) AND kind = 1",
            [&nowhere.0[..]],
        )
        .unwrap();
    assert_eq!(n, 1);
    let detail = assert_problem(&check(&fx), FindingKind::MissingBlob, "cache src/f1.rs");
    assert!(detail.contains(&nowhere.to_hex()), "{detail}");
}

#[test]
fn a_turn_entry_naming_a_missing_blob_is_found() {
    let Rich { fx, turn } = rich();
    let nowhere = Hash::of(b"stored nowhere");
    let n = conn(&fx)
        .execute(
            "UPDATE turn_entries SET post_data = ?1
             WHERE turn = ?2 AND path = CAST('log.txt' AS BLOB) AND post_kind = 1",
            params![&nowhere.0[..], turn],
        )
        .unwrap();
    assert_eq!(n, 1);
    assert_problem(
        &check(&fx),
        FindingKind::MissingBlob,
        &format!("turn {turn} log.txt"),
    );
}

#[test]
fn a_rewind_action_naming_a_missing_blob_is_found() {
    let Rich { fx, .. } = rich();
    let nowhere = Hash::of(b"stored nowhere");
    let (rewind, seq): (i64, i64) = conn(&fx)
        .query_row(
            "SELECT rewind, seq FROM rewind_actions WHERE path = CAST('log.txt' AS BLOB)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    conn(&fx)
        .execute(
            "UPDATE rewind_actions SET tgt_data = ?1 WHERE rewind = ?2 AND seq = ?3",
            params![&nowhere.0[..], rewind, seq],
        )
        .unwrap();
    assert_problem(
        &check(&fx),
        FindingKind::MissingBlob,
        &format!("rewind {rewind} action {seq} log.txt"),
    );
}

#[test]
fn a_broken_delta_base_is_found() {
    let Rich { fx, .. } = rich();
    let delta = blob_where(&fx, "base IS NOT NULL");
    let nowhere = Hash::of(b"stored nowhere");
    conn(&fx)
        .execute(
            "UPDATE blobs SET base = ?1 WHERE hash = ?2",
            params![&nowhere.0[..], &delta.0[..]],
        )
        .unwrap();
    let detail = assert_problem(
        &check(&fx),
        FindingKind::BrokenDelta,
        &format!("blob {delta}"),
    );
    assert!(detail.contains(&nowhere.to_hex()), "{detail}");
}

#[test]
fn a_delta_chain_tampered_into_a_cycle_is_reported_not_followed() {
    let Rich { fx, turn } = rich();
    let delta = blob_where(&fx, "base IS NOT NULL");
    conn(&fx)
        .execute(
            "UPDATE blobs SET base = hash WHERE hash = ?1",
            [&delta.0[..]],
        )
        .unwrap();
    assert_problem(
        &check(&fx),
        FindingKind::BrokenDelta,
        &format!("blob {delta}"),
    );
    // Reading it (the turn's diff reads every post-image) fails cleanly
    // instead of following the loop until the stack overflows.
    let p = fx.open();
    match p.diff(turn, &[]) {
        Err(ckpt_core::Error::CorruptBlob { hash, reason }) => {
            assert_eq!(hash, delta.to_hex());
            assert!(reason.contains("delta chain"), "{reason}");
        }
        other => panic!("expected a corrupt blob, got {other:?}"),
    }
}

#[test]
fn a_bad_journal_status_is_found() {
    let Rich { fx, .. } = rich();
    let id: i64 = conn(&fx)
        .query_row("SELECT max(id) FROM rewinds", [], |r| r.get(0))
        .unwrap();
    conn(&fx)
        .execute(
            "UPDATE rewinds SET status = 'half-done' WHERE id = ?1",
            [id],
        )
        .unwrap();
    let detail = assert_problem(
        &check(&fx),
        FindingKind::BadJournal,
        &format!("rewind {id}"),
    );
    assert!(detail.contains("half-done"), "{detail}");
}

#[test]
fn two_unfinished_rewinds_and_a_dangling_rewound_turn_are_found() {
    let Rich { fx, turn } = rich();
    let c = conn(&fx);
    let id: i64 = c
        .query_row("SELECT max(id) FROM rewinds", [], |r| r.get(0))
        .unwrap();
    c.execute(
        "INSERT INTO rewinds (created_ns, turn, turns, status) VALUES (0, ?1, '[]', 'pending')",
        [turn],
    )
    .unwrap();
    c.execute("UPDATE rewinds SET status = 'redoing' WHERE id = ?1", [id])
        .unwrap();
    c.execute(
        "UPDATE turns SET status = 'rewound', rewound_by = 999 WHERE id = ?1",
        [turn],
    )
    .unwrap();
    let r = check(&fx);
    assert_problem(
        &r,
        FindingKind::BadJournal,
        &format!("rewinds [{id}, {}]", id + 1),
    );
    let detail = assert_problem(&r, FindingKind::BadTurn, &format!("turn {turn}"));
    assert!(detail.contains("999"), "{detail}");
}

#[test]
fn unnamed_and_temp_files_in_objects_are_warnings_and_stay() {
    let Rich { fx, .. } = rich();
    let stray = Hash::of(b"no row names this");
    let path = object_path(&fx, &stray);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, b"whatever").unwrap();
    let tmp = path.parent().unwrap().join(".tmp-1-2-3");
    std::fs::write(&tmp, b"half").unwrap();
    let r = check(&fx);
    assert!(r.ok(), "warnings only: {:#?}", r.problems);
    let hex = stray.to_hex();
    let subject = format!("objects/{}/{}", &hex[..2], &hex[2..]);
    assert!(
        r.warnings
            .iter()
            .any(|w| w.kind == FindingKind::UnnamedObject && w.subject == subject),
        "{:#?}",
        r.warnings
    );
    assert!(
        r.warnings.iter().any(|w| w.kind == FindingKind::TempFile),
        "{:#?}",
        r.warnings
    );
    assert!(path.exists() && tmp.exists(), "fsck deletes nothing");
}

#[test]
fn a_damaged_database_page_is_reported() {
    let Rich { fx, .. } = rich();
    let c = conn(&fx);
    let (root, page_size): (i64, i64) = c
        .query_row(
            "SELECT rootpage, (SELECT page_size FROM pragma_page_size)
             FROM sqlite_schema WHERE name = 'turns'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    // The last connection's close moves the WAL into the file.
    drop(c);
    assert!(root > 1);
    let mut bytes = std::fs::read(fx.db_path()).unwrap();
    // The page's type byte: no b-tree page is of type 0xff.
    bytes[((root - 1) * page_size) as usize] = 0xff;
    std::fs::write(fx.db_path(), bytes).unwrap();
    let r = check(&fx);
    assert!(
        r.problems
            .iter()
            .any(|p| p.kind == FindingKind::Database && p.subject == "quick_check"),
        "{:#?}",
        r.problems
    );
}

#[test]
fn findings_beyond_the_limit_are_counted_not_listed() {
    let Rich { fx, .. } = rich();
    let nowhere = Hash::of(b"stored nowhere");
    let n = conn(&fx)
        .execute(
            "UPDATE files SET data = ?1 WHERE kind = 1",
            [&nowhere.0[..]],
        )
        .unwrap();
    let r = fsck(&fx.store, &FsckOptions { max_listed: 5 }).unwrap();
    assert_eq!(r.problems.len(), 5);
    assert!(r.problems_unlisted as usize >= n - 5, "{r:#?}");
    assert!(!r.ok());
}

#[test]
fn an_applied_redo_whose_rewind_is_not_redone_is_found() {
    let Rich { fx, .. } = rich();
    let c = conn(&fx);
    // The fixture ends with a redo: its row names the rewind it undid.
    let (redo, undone): (i64, i64) = c
        .query_row(
            "SELECT id, redoes FROM rewinds WHERE redoes IS NOT NULL",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert!(check(&fx).problems.is_empty());
    c.execute(
        "UPDATE rewinds SET status = 'applied' WHERE id = ?1",
        [undone],
    )
    .unwrap();
    let detail = assert_problem(
        &check(&fx),
        FindingKind::BadJournal,
        &format!("rewind {redo}"),
    );
    assert!(detail.contains("applied"), "{detail}");
    c.execute("DELETE FROM rewind_actions WHERE rewind = ?1", [undone])
        .unwrap();
    c.execute("DELETE FROM rewinds WHERE id = ?1", [undone])
        .unwrap();
    let detail = assert_problem(
        &check(&fx),
        FindingKind::BadJournal,
        &format!("rewind {redo}"),
    );
    assert!(detail.contains("not there"), "{detail}");
}

/// At most one open turn per session: two sessions' open turns are sound,
/// two of one session are not.
#[test]
fn two_open_turns_of_one_session_are_found_and_of_two_sessions_are_not() {
    let Rich { fx, .. } = rich();
    let c = conn(&fx);
    let open = |session: Option<&str>| -> i64 {
        c.execute(
            "INSERT INTO turns (started_ns, session, status) VALUES (1, ?1, 'open')",
            params![session],
        )
        .unwrap();
        c.last_insert_rowid()
    };
    let a = open(Some("A"));
    open(Some("B"));
    open(None);
    let r = check(&fx);
    assert!(r.ok(), "one open turn per session: {:#?}", r.problems);
    let a2 = open(Some("A"));
    let r = check(&fx);
    let detail = assert_problem(&r, FindingKind::BadTurn, &format!("turns [{a}, {a2}]"));
    assert!(detail.contains("\"A\""), "{detail}");
}

/// A persisted tool window belongs to an open turn: running tool calls on
/// an open turn are sound, on a closed one (or a negative count) are not.
#[test]
fn a_tool_window_on_a_turn_that_is_not_open_is_found() {
    let Rich { fx, .. } = rich();
    let c = conn(&fx);
    c.execute(
        "INSERT INTO turns (started_ns, session, status, tools) VALUES (1, 'A', 'open', 2)",
        [],
    )
    .unwrap();
    let r = check(&fx);
    assert!(r.ok(), "a window of an open turn: {:#?}", r.problems);
    c.execute(
        "INSERT INTO turns (started_ns, ended_ns, session, status, tools)
         VALUES (1, 2, 'B', 'closed', 1)",
        [],
    )
    .unwrap();
    let closed = c.last_insert_rowid();
    let detail = assert_problem(&check(&fx), FindingKind::BadTurn, &format!("turn {closed}"));
    assert!(detail.contains("closed but records 1 running"), "{detail}");
    c.execute("UPDATE turns SET tools = -1 WHERE id = ?1", [closed])
        .unwrap();
    let detail = assert_problem(&check(&fx), FindingKind::BadTurn, &format!("turn {closed}"));
    assert!(detail.contains("-1 running"), "{detail}");
}
