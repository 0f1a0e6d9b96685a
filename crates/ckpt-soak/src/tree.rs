//! The project as the soak models it: raw relative path → what is there.
//!
//! Invariant of a well-formed tree: every path's parent is a `Dir` in the
//! same tree (top-level paths have the root as parent). `.git` is never in
//! it. The same type holds the model and what a walk of the real disk finds,
//! so comparing them is `==` plus a readable list of differences.

use std::collections::BTreeMap;
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::rc::Rc;

use anyhow::Context;
use sha2::{Digest, Sha256};

/// One path's content. File bytes are shared, so snapshots are cheap.
#[derive(Clone, PartialEq, Eq)]
pub enum Node {
    Dir { mode: u32 },
    File { bytes: Rc<[u8]>, mode: u32 },
    Symlink { target: Vec<u8> },
}

impl Node {
    pub fn is_dir(&self) -> bool {
        matches!(self, Node::Dir { .. })
    }

    pub fn file(bytes: &[u8], mode: u32) -> Node {
        Node::File {
            bytes: Rc::from(bytes),
            mode,
        }
    }

    /// The protocol's view of this node, as the daemon reports pre- and
    /// post-images.
    pub fn to_state(n: Option<&Node>) -> ckpt_proto::State {
        match n {
            None => ckpt_proto::State::Absent,
            Some(Node::Dir { mode }) => ckpt_proto::State::Dir { mode: *mode },
            Some(Node::File { bytes, mode }) => ckpt_proto::State::File {
                hash: ckpt_proto::Hash(Sha256::digest(bytes).into()),
                size: bytes.len() as u64,
                mode: *mode,
            },
            Some(Node::Symlink { target }) => ckpt_proto::State::Symlink {
                target: target.clone(),
            },
        }
    }
}

impl fmt::Debug for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Node::Dir { mode } => write!(f, "dir {mode:o}"),
            Node::File { bytes, mode } => {
                let h = hex::encode(&Sha256::digest(bytes)[..4]);
                write!(f, "file {mode:o} {} bytes sha {h}", bytes.len())
            }
            Node::Symlink { target } => write!(f, "symlink -> {}", show(target)),
        }
    }
}

/// How a state prints in reports: `absent` or the node.
pub fn show_state(n: Option<&Node>) -> String {
    n.map_or_else(|| "absent".to_string(), |n| format!("{n:?}"))
}

/// A raw path, printable (non-UTF-8 bytes escaped).
pub fn show(p: &[u8]) -> String {
    p.escape_ascii().to_string()
}

pub type Tree = BTreeMap<Vec<u8>, Node>;

/// Whether ckpt leaves `p` alone by design: it is a dependency directory
/// (`node_modules`) or below one. Such paths are in the tree (the disk
/// must keep them) but in no turn, and no rewind may touch them.
pub fn uncaptured(p: &[u8]) -> bool {
    p.split(|&b| b == b'/').any(|c| c == b"node_modules") || over_cap(p)
}

/// Whether `p` is one of the soak's files over ckpt's 16 MiB size cap
/// (top-level `~big-*`): recorded as skipped, never restored, never
/// overwritten, so no rewind may touch them either.
pub fn over_cap(p: &[u8]) -> bool {
    p.starts_with(BIG_PREFIX)
}

pub const BIG_PREFIX: &[u8] = b"~big-";

/// `p`'s parent, or `None` for a top-level path.
pub fn parent(p: &[u8]) -> Option<&[u8]> {
    p.iter().rposition(|&b| b == b'/').map(|i| &p[..i])
}

/// Every proper ancestor of `p`, top-down.
pub fn ancestors(p: &[u8]) -> Vec<&[u8]> {
    let mut out: Vec<&[u8]> = p
        .iter()
        .enumerate()
        .filter(|&(_, &b)| b == b'/')
        .map(|(i, _)| &p[..i])
        .collect();
    out.sort_by_key(|a| a.len());
    out
}

/// `parent/name` (or `name` at the root, written as an empty parent).
pub fn join(parent: &[u8], name: &[u8]) -> Vec<u8> {
    if parent.is_empty() {
        name.to_vec()
    } else {
        let mut v = parent.to_vec();
        v.push(b'/');
        v.extend_from_slice(name);
        v
    }
}

/// Whether `q` lies strictly below `p`.
pub fn is_below(q: &[u8], p: &[u8]) -> bool {
    q.len() > p.len() && q.starts_with(p) && q[p.len()] == b'/'
}

/// Paths strictly below `p` ('/' sorts right before '0', so they form one
/// key range).
pub fn below<'a>(t: &'a Tree, p: &[u8]) -> impl Iterator<Item = (&'a Vec<u8>, &'a Node)> + 'a {
    let mut lo = p.to_vec();
    lo.push(b'/');
    let mut hi = p.to_vec();
    hi.push(b'0');
    t.range(lo..hi)
}

/// Removes `p` and everything below it.
pub fn remove_all(t: &mut Tree, p: &[u8]) {
    let doomed: Vec<Vec<u8>> = below(t, p).map(|(k, _)| k.clone()).collect();
    for k in doomed {
        t.remove(&k);
    }
    t.remove(p);
}

/// Moves `src` and its subtree to `dst` (which, with its subtree, is replaced).
pub fn rename(t: &mut Tree, src: &[u8], dst: &[u8]) {
    let mut moved: Vec<(Vec<u8>, Node)> = below(t, src)
        .map(|(k, v)| (k[src.len()..].to_vec(), v.clone()))
        .collect();
    if let Some(n) = t.get(src) {
        moved.push((Vec::new(), n.clone()));
    }
    remove_all(t, src);
    remove_all(t, dst);
    for (suffix, n) in moved {
        let mut k = dst.to_vec();
        k.extend_from_slice(&suffix);
        t.insert(k, n);
    }
}

/// The first path whose parent is not a directory of the tree, if any.
pub fn ill_formed(t: &Tree) -> Option<Vec<u8>> {
    t.keys()
        .find(|k| parent(k).is_some_and(|p| !t.get(p).is_some_and(Node::is_dir)))
        .cloned()
}

/// Every difference, as `path: expected X vs found Y`.
pub fn diff(expected: &Tree, found: &Tree) -> Vec<String> {
    let mut keys: Vec<&Vec<u8>> = expected.keys().chain(found.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut lines: Vec<String> = keys
        .into_iter()
        .filter(|k| expected.get(*k) != found.get(*k))
        .map(|k| {
            format!(
                "{}: expected {} vs found {}",
                show(k),
                show_state(expected.get(k)),
                show_state(found.get(k))
            )
        })
        .collect();
    // A burst gone wrong differs in hundreds of paths; the first ones say it.
    if lines.len() > MAX_DIFF_LINES {
        let more = lines.len() - MAX_DIFF_LINES;
        lines.truncate(MAX_DIFF_LINES);
        lines.push(format!("... and {more} more"));
    }
    lines
}

const MAX_DIFF_LINES: usize = 40;

/// Reads the real tree under `root`, never following a symlink; `.git` at
/// the top is left out (it is compared byte for byte on its own).
pub fn read_disk(root: &Path) -> anyhow::Result<Tree> {
    let mut t = Tree::new();
    walk(root, &[], &mut t)?;
    Ok(t)
}

fn walk(dir: &Path, rel: &[u8], out: &mut Tree) -> anyhow::Result<()> {
    for e in std::fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
        let e = e.with_context(|| format!("listing {}", dir.display()))?;
        let name = e.file_name();
        if rel.is_empty() && name == ".git" {
            continue;
        }
        let key = join(rel, name.as_bytes());
        let path = e.path();
        let meta = std::fs::symlink_metadata(&path)
            .with_context(|| format!("lstat {}", path.display()))?;
        let mode = meta.permissions().mode() & 0o7777;
        let ft = meta.file_type();
        if ft.is_symlink() {
            let target = std::fs::read_link(&path)
                .with_context(|| format!("readlink {}", path.display()))?;
            out.insert(
                key,
                Node::Symlink {
                    target: target.as_os_str().as_bytes().to_vec(),
                },
            );
        } else if ft.is_dir() {
            out.insert(key.clone(), Node::Dir { mode });
            walk(&path, &key, out)?;
        } else {
            let bytes = std::fs::read(&path).with_context(|| format!("read {}", path.display()))?;
            out.insert(key, Node::file(&bytes, mode));
        }
    }
    Ok(())
}

/// `.git` as bytes and modification times: it must never change at all.
pub fn read_git(root: &Path) -> anyhow::Result<BTreeMap<Vec<u8>, (Node, i64)>> {
    use std::os::unix::fs::MetadataExt;
    let mut t = Tree::new();
    let git = root.join(".git");
    walk(&git, b".git", &mut t)?;
    let mut out = BTreeMap::new();
    for (k, n) in t {
        let p = root.join(std::ffi::OsStr::from_bytes(&k));
        let m = std::fs::symlink_metadata(&p).with_context(|| format!("lstat {}", p.display()))?;
        // A directory's mtime moves with any entry, so only files' count.
        let mtime = if n.is_dir() {
            0
        } else {
            m.mtime() * 1_000_000_000 + m.mtime_nsec()
        };
        out.insert(k, (n, mtime));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn below_is_exactly_the_subtree() {
        let mut t = Tree::new();
        for k in ["a", "a b", "a/x", "a/x/y", "a0", "a-b", "ab"] {
            t.insert(k.as_bytes().to_vec(), Node::Dir { mode: 0o755 });
        }
        let got: Vec<&[u8]> = below(&t, b"a").map(|(k, _)| k.as_slice()).collect();
        assert_eq!(got, vec![&b"a/x"[..], b"a/x/y"]);
    }

    #[test]
    fn rename_moves_a_subtree_and_replaces_the_destination() {
        let mut t = Tree::new();
        t.insert(b"d".to_vec(), Node::Dir { mode: 0o755 });
        t.insert(b"d/f".to_vec(), Node::file(b"x", 0o644));
        t.insert(b"e".to_vec(), Node::file(b"old", 0o644));
        rename(&mut t, b"d", b"e");
        assert_eq!(
            t.keys().cloned().collect::<Vec<_>>(),
            vec![b"e".to_vec(), b"e/f".to_vec()]
        );
        assert!(ill_formed(&t).is_none());
    }

    #[test]
    fn ancestors_are_top_down() {
        assert_eq!(ancestors(b"a/b/c"), vec![&b"a"[..], b"a/b"]);
        assert!(ancestors(b"a").is_empty());
    }
}
