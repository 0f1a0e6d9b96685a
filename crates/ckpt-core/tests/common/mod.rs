//! Helpers shared by the core's integration tests: temp project fixtures,
//! byte-exact tree snapshots, and small wrappers that play the daemon.
//!
//! Each test binary uses a different subset of these, hence the allow.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use ckpt_core::{
    Error, Options, Project, RelPath, RewindOptions, RewindOutcome, RewindPlan, TurnMeta,
    TurnStatus,
};

/// One entry of a snapshotted tree. Directories are entries too.
#[derive(Clone, PartialEq, Eq)]
pub enum Node {
    File {
        mode: u32,
        data: Vec<u8>,
    },
    Dir {
        mode: u32,
    },
    Symlink {
        target: Vec<u8>,
    },
    /// A fifo, socket or device: never expected in these tests.
    Other,
}

impl fmt::Debug for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Node::File { mode, data } => {
                let preview: Vec<u8> = data.iter().copied().take(24).collect();
                write!(
                    f,
                    "file {mode:o} {} bytes \"{}{}\"",
                    data.len(),
                    preview.escape_ascii(),
                    if data.len() > 24 { "…" } else { "" }
                )
            }
            Node::Dir { mode } => write!(f, "dir {mode:o}"),
            Node::Symlink { target } => write!(f, "symlink -> \"{}\"", target.escape_ascii()),
            Node::Other => write!(f, "special file"),
        }
    }
}

/// A tree: raw relative path bytes (`a/b`, no leading slash) → entry.
pub type Tree = BTreeMap<Vec<u8>, Node>;

/// Printable form of raw path bytes (`\xff`, `\n` escaped).
pub fn show_path(p: &[u8]) -> String {
    p.escape_ascii().to_string()
}

/// Snapshot of a project tree, skipping every entry named `.git` (at any
/// depth): those are compared separately with [`snapshot_all`].
pub fn snapshot(root: &Path) -> Tree {
    let mut out = Tree::new();
    walk(root, &[], true, &mut out);
    out
}

/// Snapshot of everything below `dir`, `.git` included.
pub fn snapshot_all(dir: &Path) -> Tree {
    let mut out = Tree::new();
    walk(dir, &[], false, &mut out);
    out
}

fn walk(base: &Path, rel: &[u8], skip_git: bool, out: &mut Tree) {
    let dir = if rel.is_empty() {
        base.to_path_buf()
    } else {
        base.join(OsStr::from_bytes(rel))
    };
    let rd = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("read_dir {}: {e}", dir.display()));
    for entry in rd {
        let entry = entry.expect("read_dir entry");
        let name = entry.file_name();
        let name = name.as_bytes();
        if skip_git && name == b".git" {
            continue;
        }
        let mut path = rel.to_vec();
        if !path.is_empty() {
            path.push(b'/');
        }
        path.extend_from_slice(name);
        let abs = base.join(OsStr::from_bytes(&path));
        let meta = std::fs::symlink_metadata(&abs).expect("lstat");
        let mode = meta.permissions().mode() & 0o7777;
        let ft = meta.file_type();
        if ft.is_symlink() {
            let target = std::fs::read_link(&abs).expect("readlink");
            out.insert(
                path,
                Node::Symlink {
                    target: target.as_os_str().as_bytes().to_vec(),
                },
            );
        } else if ft.is_dir() {
            out.insert(path.clone(), Node::Dir { mode });
            walk(base, &path, skip_git, out);
        } else if ft.is_file() {
            let data = std::fs::read(&abs).expect("read");
            out.insert(path, Node::File { mode, data });
        } else {
            out.insert(path, Node::Other);
        }
    }
}

/// Lines describing how `actual` differs from `expected`.
pub fn tree_diff(expected: &Tree, actual: &Tree) -> Vec<String> {
    let keys: BTreeSet<&Vec<u8>> = expected.keys().chain(actual.keys()).collect();
    let mut lines = Vec::new();
    for k in keys {
        match (expected.get(k), actual.get(k)) {
            (Some(e), Some(a)) if e == a => {}
            (Some(e), Some(a)) => {
                lines.push(format!("  {}: expected {e:?}, found {a:?}", show_path(k)))
            }
            (Some(e), None) => {
                lines.push(format!("  {}: expected {e:?}, found nothing", show_path(k)))
            }
            (None, Some(a)) => {
                lines.push(format!("  {}: expected nothing, found {a:?}", show_path(k)))
            }
            (None, None) => unreachable!(),
        }
    }
    lines
}

/// Panics with a readable per-path diff unless the trees are identical.
#[track_caller]
pub fn assert_tree(expected: &Tree, actual: &Tree, what: &str) {
    let diff = tree_diff(expected, actual);
    if !diff.is_empty() {
        panic!(
            "{what}: trees differ at {} path(s):\n{}",
            diff.len(),
            diff.join("\n")
        );
    }
}

/// A project root, a store and an "outside world" in one temp dir:
///
/// ```text
/// <tmp>/root      the project
/// <tmp>/store     the ckpt store (outside the root)
/// <tmp>/outside   sentinel files a bad restore could hit
/// <tmp>/escape    a sentinel file at root/../escape
/// ```
pub struct Fx {
    pub tmp: tempfile::TempDir,
    pub root: PathBuf,
    pub store: PathBuf,
    pub outside: PathBuf,
    pub opts: Options,
}

impl Fx {
    pub fn new() -> Fx {
        Fx::with_opts(test_opts())
    }

    pub fn with_opts(opts: Options) -> Fx {
        let tmp = tempfile::Builder::new()
            .prefix("ckpt-core-test")
            .tempdir()
            .expect("tempdir");
        let root = tmp.path().join("root");
        let store = tmp.path().join("store");
        let outside = tmp.path().join("outside");
        std::fs::create_dir(&root).expect("mkdir root");
        std::fs::create_dir(&store).expect("mkdir store");
        std::fs::create_dir(&outside).expect("mkdir outside");
        std::fs::write(outside.join("passwd"), b"root:x:0:0:sentinel\n").expect("sentinel");
        std::fs::write(outside.join("x"), b"outside x sentinel\n").expect("sentinel");
        std::fs::write(tmp.path().join("escape"), b"escape sentinel\n").expect("sentinel");
        Fx {
            tmp,
            root,
            store,
            outside,
            opts,
        }
    }

    pub fn open(&self) -> Project {
        Project::open(&self.store, &self.root, self.opts.clone()).expect("Project::open")
    }

    pub fn db_path(&self) -> PathBuf {
        self.store.join("ckpt.db")
    }

    pub fn abs(&self, rel: impl AsRef<[u8]>) -> PathBuf {
        self.root.join(OsStr::from_bytes(rel.as_ref()))
    }

    /// Writes a file (creating parent directories).
    pub fn write(&self, rel: impl AsRef<[u8]>, data: impl AsRef<[u8]>) {
        let p = self.abs(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).expect("mkdir -p");
        }
        std::fs::write(&p, data).unwrap_or_else(|e| panic!("write {}: {e}", p.display()));
    }

    pub fn append(&self, rel: impl AsRef<[u8]>, data: impl AsRef<[u8]>) {
        use std::io::Write;
        let p = self.abs(rel);
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&p)
            .expect("open for append");
        f.write_all(data.as_ref()).expect("append");
    }

    pub fn read(&self, rel: impl AsRef<[u8]>) -> Vec<u8> {
        std::fs::read(self.abs(rel)).expect("read")
    }

    pub fn rm(&self, rel: impl AsRef<[u8]>) {
        std::fs::remove_file(self.abs(rel)).expect("rm");
    }

    pub fn rm_rf(&self, rel: impl AsRef<[u8]>) {
        std::fs::remove_dir_all(self.abs(rel)).expect("rm -r");
    }

    pub fn mkdir(&self, rel: impl AsRef<[u8]>) {
        std::fs::create_dir_all(self.abs(rel)).expect("mkdir");
    }

    pub fn symlink(&self, target: impl AsRef<[u8]>, rel: impl AsRef<[u8]>) {
        std::os::unix::fs::symlink(OsStr::from_bytes(target.as_ref()), self.abs(rel))
            .expect("symlink");
    }

    pub fn chmod(&self, rel: impl AsRef<[u8]>, mode: u32) {
        std::fs::set_permissions(self.abs(rel), std::fs::Permissions::from_mode(mode))
            .expect("chmod");
    }

    /// The project tree (without `.git`).
    pub fn tree(&self) -> Tree {
        snapshot(&self.root)
    }

    /// Everything in the temp dir that is neither the project nor the store.
    pub fn outside_world(&self) -> Tree {
        snapshot_all(self.tmp.path())
            .into_iter()
            .filter(|(k, _)| {
                !(k.as_slice() == b"root"
                    || k.starts_with(b"root/")
                    || k.as_slice() == b"store"
                    || k.starts_with(b"store/"))
            })
            .collect()
    }

    /// The project's `.git`, byte for byte.
    pub fn git_dir(&self) -> Tree {
        snapshot_all(&self.root.join(".git"))
    }
}

/// Options for tests: the defaults, so tests exercise what users run.
pub fn test_opts() -> Options {
    Options::default()
}

/// A validated project-relative path.
#[track_caller]
pub fn rp(s: impl AsRef<[u8]>) -> RelPath {
    RelPath::new(s.as_ref().to_vec()).expect("valid RelPath")
}

/// The daemon's barrier: a full stat-compare scan.
#[track_caller]
pub fn sync(p: &mut Project) {
    p.reconcile().expect("reconcile");
}

/// Barrier, then open a turn.
#[track_caller]
pub fn start(p: &mut Project, label: &str) -> i64 {
    sync(p);
    p.turn_start(TurnMeta {
        label: Some(label.to_string()),
        agent: Some("test".into()),
        session: None,
        transcript: None,
        conversation: None,
    })
    .expect("turn_start")
}

/// Barrier, then close the open turn.
#[track_caller]
pub fn end(p: &mut Project) -> ckpt_core::TurnDetail {
    sync(p);
    p.turn_end().expect("turn_end")
}

/// A project with one closed turn, and the trees on either side of it.
pub struct Turned {
    pub fx: Fx,
    pub p: Project,
    pub turn: i64,
    /// The tree before the turn: what a rewind produces.
    pub target: Tree,
    /// The tree after the turn: what the rewind starts from.
    pub orig: Tree,
}

/// Opens `fx` (its tree already written) and records what `agent` does to
/// it as one turn, then passes a barrier, as the daemon does before a
/// rewind.
#[track_caller]
pub fn turned(fx: Fx, agent: impl FnOnce(&Fx)) -> Turned {
    let mut p = fx.open();
    sync(&mut p);
    let target = fx.tree();
    let turn = start(&mut p, "agent");
    agent(&fx);
    end(&mut p);
    sync(&mut p);
    let orig = fx.tree();
    Turned {
        fx,
        p,
        turn,
        target,
        orig,
    }
}

/// Where `tree` differs from each side of a rewind.
pub fn describe_sides(tree: &Tree, target: &Tree, orig: &Tree) -> String {
    format!(
        "differs from the target at:\n{}\nand from the original at:\n{}",
        tree_diff(target, tree).join("\n"),
        tree_diff(orig, tree).join("\n")
    )
}

/// Barrier, then rewind to `turn` with default options; must be applied.
#[track_caller]
pub fn rewind(p: &mut Project, turn: i64) -> RewindPlan {
    sync(p);
    applied(p.rewind(turn, RewindOptions::default()).expect("rewind"))
}

/// Barrier, then forced rewind; must be applied.
#[track_caller]
pub fn rewind_forced(p: &mut Project, turn: i64) -> RewindPlan {
    sync(p);
    let opts = RewindOptions {
        flags: ckpt_core::RewindFlags {
            force: true,
            ..Default::default()
        },
        ..Default::default()
    };
    applied(p.rewind(turn, opts).expect("forced rewind"))
}

/// Barrier, then redo; must be applied.
#[track_caller]
pub fn redo(p: &mut Project) -> RewindPlan {
    sync(p);
    applied(p.redo(RewindOptions::default()).expect("redo"))
}

#[track_caller]
pub fn applied(o: RewindOutcome) -> RewindPlan {
    match o {
        RewindOutcome::Applied { plan, .. } => plan,
        other => panic!("expected an applied rewind, got {other:#?}"),
    }
}

#[track_caller]
pub fn refused(o: RewindOutcome) -> RewindPlan {
    match o {
        RewindOutcome::Refused(plan) => plan,
        other => panic!("expected a refused rewind, got {other:#?}"),
    }
}

/// The plan a rewind of `turn` would apply (a dry run).
pub fn planned(p: &mut Project, turn: i64) -> RewindPlan {
    let opts = RewindOptions {
        flags: ckpt_core::RewindFlags {
            dry_run: true,
            ..Default::default()
        },
        ..Default::default()
    };
    match p.rewind(turn, opts).expect("dry run") {
        RewindOutcome::DryRun(plan) => plan,
        other => panic!("expected a dry run, got {other:#?}"),
    }
}

/// Options whose test hook fails filesystem operation `k` as if the
/// process had died there.
pub fn fail_at(k: usize) -> RewindOptions {
    RewindOptions {
        before_op: Some(Box::new(move |i| {
            if i == k {
                Err(Error::Injected(i))
            } else {
                Ok(())
            }
        })),
        ..Default::default()
    }
}

/// Turn id → status, from `log`.
pub fn statuses(p: &Project) -> BTreeMap<i64, TurnStatus> {
    p.log(1000)
        .expect("log")
        .into_iter()
        .map(|t| (t.id, t.status))
        .collect()
}

/// The paths of a turn's entries, as raw bytes.
pub fn entry_paths(p: &Project, turn: i64) -> BTreeSet<Vec<u8>> {
    p.show(turn)
        .expect("show")
        .entries
        .into_iter()
        .map(|e| e.path.as_bytes().to_vec())
        .collect()
}

pub fn byte_set<'a>(items: impl IntoIterator<Item = &'a [u8]>) -> BTreeSet<Vec<u8>> {
    items.into_iter().map(|s| s.to_vec()).collect()
}

/// Runs git in `dir` with a config isolated from the machine's, never taking
/// optional locks (so `git status` does not refresh the index).
#[track_caller]
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=ckpt test",
            "-c",
            "user.email=test@example.com",
            "-c",
            "init.defaultBranch=main",
            "-c",
            "commit.gpgsign=false",
            "--no-optional-locks",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_DATE", "2024-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2024-01-01T00:00:00Z")
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("git output is UTF-8")
}

/// A small deterministic PRNG (xorshift64*), so fixtures are reproducible.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next_u64() as u8).collect()
    }
}
