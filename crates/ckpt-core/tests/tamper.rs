//! Paths and blobs that come out of the database are untrusted input. Rows
//! rewritten behind the core's back must never make a rewind write outside
//! the root, into `.git`, through a symlink, or write corrupt bytes.

mod common;

use ckpt_core::HashOf;
use ckpt_core::{Error, Hash, Project, RewindOptions, RewindOutcome, State};
use common::*;
use rusqlite::{params, Connection};

/// A project in a git repository with two turns. Turn 1 plants a symlink
/// `src -> <tmp>/outside`; turn 2 modifies `m.txt` (pre-image: a file) and
/// creates `c.txt` (pre-image: absent).
struct Setup {
    fx: Fx,
    t2: i64,
}

const M_ORIG: &[u8] = b"m original\n";
const M_AGENT: &[u8] = b"m by the agent\n";

fn setup() -> Setup {
    let fx = Fx::new();
    fx.write("m.txt", M_ORIG);
    fx.write("keep.txt", "keep\n");
    git(&fx.root, &["init", "-q"]);
    git(&fx.root, &["add", "-A"]);
    git(&fx.root, &["commit", "-q", "-m", "initial"]);
    let mut p = fx.open();
    sync(&mut p);
    start(&mut p, "plant");
    fx.symlink(fx.outside.as_os_str().as_encoded_bytes(), "src");
    end(&mut p);
    let t2 = start(&mut p, "edit");
    fx.write("m.txt", M_AGENT);
    fx.write("c.txt", "created by the agent\n");
    end(&mut p);
    drop(p);
    Setup { fx, t2 }
}

fn set_entry_path(fx: &Fx, turn: i64, from: &[u8], to: &[u8]) {
    let conn = Connection::open(fx.db_path()).expect("open db");
    let n = conn
        .execute(
            "UPDATE turn_entries SET path = ?1 WHERE turn = ?2 AND path = ?3",
            params![to, turn, from],
        )
        .expect("tamper");
    assert_eq!(n, 1, "turn {turn} has an entry for {}", show_path(from));
}

/// Asserts a rewind's result is an error, a refusal, or a rewind that did
/// not act on the tampered path; returns a short description.
fn refused_or_reported(res: &ckpt_core::Result<RewindOutcome>, bad: &[u8]) -> String {
    match res {
        Err(e) => format!("error: {e}"),
        Ok(RewindOutcome::Refused(plan)) => format!("refused: {:?}", plan.conflicts),
        Ok(RewindOutcome::Applied { plan, .. }) => {
            assert!(
                plan.actions.iter().all(|a| a.path.as_bytes() != bad),
                "tampered path {} was acted on: {plan:#?}",
                show_path(bad)
            );
            format!("applied without acting on it, skipped {:?}", plan.skipped)
        }
        Ok(RewindOutcome::DryRun(_)) => panic!("not a dry run"),
    }
}

/// Tampers one entry of turn 2, then tries a rewind and a forced rewind.
fn tampered_path_case(which: &str, bad: impl FnOnce(&Fx) -> Vec<u8>) {
    let Setup { fx, t2 } = setup();
    let bad = bad(&fx);
    let bad = bad.as_slice();
    set_entry_path(&fx, t2, which.as_bytes(), bad);
    let outside = fx.outside_world();
    let dotgit = fx.git_dir();
    let link = std::fs::read_link(fx.abs("src")).expect("src is a symlink");

    for force in [false, true] {
        let mut p = fx.open();
        sync(&mut p);
        let opts = RewindOptions {
            flags: ckpt_core::RewindFlags {
                force,
                ..Default::default()
            },
            ..Default::default()
        };
        let res = p.rewind(t2, opts);
        let what = refused_or_reported(&res, bad);
        eprintln!("{which} -> {} (force: {force}): {what}", show_path(bad));
        // Whatever happened, recovery must not do what the rewind refused to.
        drop(p);
        let mut p = fx.open();
        let _ = p.recover();
        drop(p);

        assert_tree(&outside, &fx.outside_world(), "outside the root");
        assert_tree(&dotgit, &fx.git_dir(), ".git");
        assert_eq!(
            std::fs::read_link(fx.abs("src")).expect("src still a symlink"),
            link
        );
        if matches!(res, Ok(RewindOutcome::Applied { .. })) {
            break;
        }
    }
}

fn outside_abs(fx: &Fx, name: &str) -> Vec<u8> {
    fx.outside
        .join(name)
        .as_os_str()
        .as_encoded_bytes()
        .to_vec()
}

// A tampered entry for m.txt would write the old bytes; one for c.txt would
// delete what is there (its pre-image is "absent").

#[test]
fn tampered_parent_escape_is_refused() {
    for which in ["m.txt", "c.txt"] {
        tampered_path_case(which, |_| b"../escape".to_vec());
    }
}

#[test]
fn tampered_absolute_path_is_refused() {
    for which in ["m.txt", "c.txt"] {
        // An absolute path to a sentinel we own, standing in for /etc/passwd.
        tampered_path_case(which, |fx| outside_abs(fx, "passwd"));
    }
}

#[test]
fn tampered_path_into_dot_git_is_refused() {
    for which in ["m.txt", "c.txt"] {
        tampered_path_case(which, |_| b".git/config".to_vec());
        tampered_path_case(which, |_| b".git/HEAD".to_vec());
    }
}

#[test]
fn tampered_path_through_a_symlinked_directory_is_refused() {
    for which in ["m.txt", "c.txt"] {
        // `src -> <tmp>/outside`, and `<tmp>/outside/x` exists.
        tampered_path_case(which, |_| b"src/x".to_vec());
        tampered_path_case(which, |_| b"src/new-file".to_vec());
    }
}

#[test]
fn tampered_redo_journal_path_is_refused() {
    let Setup { fx, t2 } = setup();
    let mut p = fx.open();
    rewind(&mut p, t2);
    drop(p);
    let conn = Connection::open(fx.db_path()).expect("open db");
    let n = conn
        .execute(
            "UPDATE rewind_actions SET path = ?1 WHERE path = ?2",
            params![&b"../escape"[..], &b"m.txt"[..]],
        )
        .expect("tamper");
    assert_eq!(n, 1, "the rewind journal has an action for m.txt");
    drop(conn);
    let outside = fx.outside_world();
    let dotgit = fx.git_dir();
    let mut p = fx.open();
    sync(&mut p);
    let res = p.redo(RewindOptions::default());
    eprintln!(
        "redo with ../escape: {}",
        refused_or_reported(&res, b"../escape")
    );
    drop(p);
    assert_tree(&outside, &fx.outside_world(), "outside the root");
    assert_tree(&dotgit, &fx.git_dir(), ".git");
}

/// The pre-image blob of m.txt.
fn m_pre_hash(p: &Project, t2: i64) -> Hash {
    let d = p.show(t2).expect("show");
    let e = d
        .entries
        .iter()
        .find(|e| e.path == rp("m.txt"))
        .expect("m.txt entry");
    match e.pre {
        State::File { hash, .. } => hash,
        ref other => panic!("m.txt pre-image is {other:?}"),
    }
}

fn corrupt_blob_case(corrupt: impl FnOnce(&Fx, Hash)) {
    let Setup { fx, t2 } = setup();
    let p = fx.open();
    let hash = m_pre_hash(&p, t2);
    assert_eq!(hash, Hash::of(M_ORIG));
    assert_eq!(p.read_blob(&hash).expect("intact blob"), M_ORIG);
    drop(p);

    corrupt(&fx, hash);

    let before = fx.tree();
    let mut p = fx.open();
    assert!(
        matches!(p.read_blob(&hash), Err(Error::CorruptBlob { .. })),
        "read_blob of a corrupt blob: {:?}",
        p.read_blob(&hash)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
    );
    sync(&mut p);
    let res = p.rewind(t2, RewindOptions::default());
    eprintln!(
        "rewind with a corrupt blob: {}",
        match &res {
            Ok(o) => format!("{o:?}"),
            Err(e) => format!("error: {e}"),
        }
    );
    drop(p);
    let mut p = fx.open();
    let _ = p.recover();
    drop(p);
    let m = fx.read("m.txt");
    assert!(
        m == M_AGENT || m == M_ORIG,
        "m.txt holds bytes that are neither the agent's nor the verified original: {:?}",
        String::from_utf8_lossy(&m)
    );
    if res.is_err() {
        assert_tree(
            &before,
            &fx.tree(),
            "a rewind that fails on a corrupt blob changes nothing",
        );
    }
}

#[test]
fn corrupt_inline_blob_is_never_written() {
    // A valid zstd frame (with its content size, as the store writes them)
    // of other bytes of the same length: the header and size agree with the
    // row, and only the content hash tells it apart.
    corrupt_blob_case(|fx, hash| {
        let conn = Connection::open(fx.db_path()).expect("open db");
        let evil_bytes = b"EVIL BYTES\n";
        assert_eq!(evil_bytes.len(), M_ORIG.len());
        let evil = zstd::bulk::compress(evil_bytes, 3).unwrap();
        let n = conn
            .execute(
                "UPDATE packs SET data = ?1
                 WHERE id = (SELECT pack FROM blobs WHERE hash = ?2) AND size = ?3",
                params![evil, &hash.0[..], evil_bytes.len() as i64],
            )
            .expect("tamper");
        assert_eq!(n, 1, "a small blob is stored in a pack of its own");
    });
}

#[test]
fn garbled_inline_blob_is_never_written() {
    corrupt_blob_case(|fx, hash| {
        let conn = Connection::open(fx.db_path()).expect("open db");
        let mut data: Vec<u8> = conn
            .query_row(
                "SELECT data FROM packs WHERE id = (SELECT pack FROM blobs WHERE hash = ?1)",
                params![&hash.0[..]],
                |r| r.get(0),
            )
            .expect("blob row");
        let last = data.len() - 1;
        data[last / 2] ^= 0x5a;
        data[last] ^= 0xff;
        conn.execute(
            "UPDATE packs SET data = ?1 WHERE id = (SELECT pack FROM blobs WHERE hash = ?2)",
            params![data, &hash.0[..]],
        )
        .expect("tamper");
    });
}

#[test]
fn corrupt_object_file_is_never_written() {
    // A blob too large to be inline lives in <store>/objects.
    let fx = Fx::new();
    let mut rng = Rng::new(7);
    // Incompressible, well over inline_max, and too big to be packed.
    let big = rng.bytes(300 << 10);
    fx.write("big.bin", &big);
    let mut p = fx.open();
    sync(&mut p);
    let t = start(&mut p, "edit");
    fx.write("big.bin", b"small now\n");
    end(&mut p);
    drop(p);

    let hex = Hash::of(&big).to_hex();
    let objects = snapshot_all(&fx.store.join("objects"));
    let found: Vec<&Vec<u8>> = objects
        .iter()
        .filter(|(k, v)| {
            matches!(v, Node::File { .. })
                && String::from_utf8_lossy(k).replace('/', "").contains(&hex)
        })
        .map(|(k, _)| k)
        .collect();
    assert_eq!(
        found.len(),
        1,
        "exactly one object file names blob {hex}: {:?}",
        objects.keys().map(|k| show_path(k)).collect::<Vec<_>>()
    );
    let path = fx
        .store
        .join("objects")
        .join(String::from_utf8_lossy(found[0]).as_ref());
    // Same length, one byte different, framed as the store frames blobs.
    let mut evil_bytes = big.clone();
    evil_bytes[1000] ^= 0xff;
    std::fs::write(&path, zstd::bulk::compress(&evil_bytes, 3).unwrap()).unwrap();

    let before = fx.tree();
    let mut p = fx.open();
    sync(&mut p);
    let res = p.rewind(t, RewindOptions::default());
    eprintln!(
        "rewind with a corrupt object file: {:?}",
        res.as_ref().map(|_| ())
    );
    drop(p);
    let mut p = fx.open();
    let _ = p.recover();
    drop(p);
    let now = fx.read("big.bin");
    assert!(
        now == b"small now\n" || now == big,
        "big.bin holds unverified bytes ({} bytes)",
        now.len()
    );
    if res.is_err() {
        assert_tree(
            &before,
            &fx.tree(),
            "a rewind that fails on a corrupt blob changes nothing",
        );
    }
}
