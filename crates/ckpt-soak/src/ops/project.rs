//! The project on disk and its model, and what the edits share: the
//! paths the model says are there, a fresh path in an existing directory,
//! `sh -c` run in the project, and `mv` and `rm -rf` done to disk and
//! model together.

use std::ffi::OsStr;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context};

use crate::rng::Rng;
use crate::tree::{self, join, show, Node, Tree};

/// Names are drawn from one small pool for files and directories alike, so
/// a name often comes back as the other kind: the planner's parent handling
/// is where bugs live.
pub(super) const NAMES: &[&[u8]] = &[
    b"a",
    b"b",
    b"src",
    b"lib",
    b"docs",
    b"x y",
    b"\xc3\xbcn\xc3\xaf",
    b"-d",
    b"data",
    b"f.txt",
    b"main.rs",
    b"notes md",
    b"-n",
    b"odd\xffbyte",
    b"q'uote",
    b"$x",
    b"*",
    b".hidden",
    b"a.b.c",
    b"tab\there",
    b"new\nline",
];

/// The project on disk and its model.
pub struct Project {
    pub root: PathBuf,
    pub tree: Tree,
    /// Paths the last edit made and removed again: the tree does not show
    /// them, yet the daemon may have seen them pass.
    pub transient: Vec<Vec<u8>>,
}

impl Project {
    pub fn full(&self, p: &[u8]) -> PathBuf {
        self.root.join(OsStr::from_bytes(p))
    }

    /// A path as a shell argument: `./p`, so a leading dash is no option.
    pub(super) fn arg(p: &[u8]) -> PathBuf {
        let mut v = b"./".to_vec();
        v.extend_from_slice(p);
        PathBuf::from(OsStr::from_bytes(&v))
    }

    /// `sh -c script sh args...` in the project, optional stdin; must succeed.
    pub(super) fn sh(
        &self,
        script: &str,
        args: &[&[u8]],
        stdin: Option<&[u8]>,
    ) -> anyhow::Result<()> {
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(script)
            .arg("sh")
            .args(args.iter().map(|a| Project::arg(a)))
            .current_dir(&self.root)
            .env("LC_ALL", "C")
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().context("spawning sh")?;
        if let (Some(bytes), Some(mut w)) = (stdin, child.stdin.take()) {
            w.write_all(bytes).context("writing to sh")?;
        }
        let out = child.wait_with_output().context("waiting for sh")?;
        if !out.status.success() {
            bail!(
                "sh -c {script:?} {:?} failed ({}): {}",
                args.iter().map(|a| show(a)).collect::<Vec<_>>(),
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(())
    }

    pub(super) fn dirs(&self) -> Vec<Vec<u8>> {
        let mut v: Vec<Vec<u8>> = vec![Vec::new()];
        v.extend(
            self.tree
                .iter()
                .filter(|(k, n)| n.is_dir() && !tree::uncaptured(k))
                .map(|(k, _)| k.clone()),
        );
        v
    }

    pub(super) fn files(&self) -> Vec<Vec<u8>> {
        self.tree
            .iter()
            .filter(|(k, n)| matches!(n, Node::File { .. }) && !tree::uncaptured(k))
            .map(|(k, _)| k.clone())
            .collect()
    }

    pub(super) fn of_kind(&self, f: impl Fn(&Node) -> bool) -> Vec<Vec<u8>> {
        self.tree
            .iter()
            .filter(|(k, n)| f(n) && !tree::uncaptured(k))
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// A path that does not exist, in an existing directory.
    pub fn new_path(&self, rng: &mut Rng) -> Option<Vec<u8>> {
        let dirs = self.dirs();
        for _ in 0..6 {
            let d = rng.pick(&dirs)?.clone();
            let name = rng.pick(NAMES)?;
            let p = join(&d, name);
            if !self.tree.contains_key(&p) {
                return Some(p);
            }
        }
        None
    }
}

pub(super) fn write(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    std::fs::write(path, bytes).with_context(|| format!("write {}", path.display()))
}

pub(super) fn mv(p: &mut Project, src: &[u8], dst: &[u8], shell: bool) -> anyhow::Result<()> {
    if shell {
        p.sh("mv -f -T \"$1\" \"$2\"", &[src, dst], None)?;
    } else {
        std::fs::rename(p.full(src), p.full(dst))
            .with_context(|| format!("mv {} {}", show(src), show(dst)))?;
    }
    tree::rename(&mut p.tree, src, dst);
    Ok(())
}

pub(super) fn rm_rf(p: &mut Project, path: &[u8], shell: bool) -> anyhow::Result<()> {
    if shell {
        p.sh("rm -rf \"$1\"", &[path], None)?;
    } else {
        std::fs::remove_dir_all(p.full(path)).with_context(|| format!("rm -rf {}", show(path)))?;
    }
    tree::remove_all(&mut p.tree, path);
    Ok(())
}

/// A symlink target for a link at `at`: a file of the tree (relative), the
/// file outside the project, or nothing at all.
pub(super) fn link_target(p: &Project, rng: &mut Rng, at: &[u8]) -> Vec<u8> {
    let depth = at.iter().filter(|&&b| b == b'/').count();
    let mut up = b"../".repeat(depth);
    match rng.below(4) {
        0 => match rng.pick(&p.files()) {
            Some(f) => {
                up.extend_from_slice(f);
                up
            }
            None => b"missing/nowhere".to_vec(),
        },
        1 => {
            up.extend_from_slice(b"../outside.txt");
            up
        }
        2 => b"missing/nowhere".to_vec(),
        _ => b"/nonexistent/abs".to_vec(),
    }
}
