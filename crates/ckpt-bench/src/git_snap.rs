//! The git-snapshot technique used by today's agent tools (Cline, OpenCode,
//! Gemini `/restore`, …), driven through the `git` binary.
//!
//! A shadow repository (its own `GIT_DIR`, `--work-tree` = the project) so
//! the user's `.git` is never touched. A snapshot is `git add -A -f` (forced,
//! so ignored files such as `.env` are captured too, as ckpt does), then
//! `write-tree` and `commit-tree`. Two index policies:
//!
//! * [`IndexMode::Fresh`]: a new temporary `GIT_INDEX_FILE` per snapshot, so
//!   every file is read and hashed every time. Restore: snapshot the current
//!   state, `diff-tree` it against the target, delete the paths the target
//!   lacks, `read-tree` the target into a temporary index and
//!   `checkout-index -f` the changed paths.
//! * [`IndexMode::Kept`]: one private index file kept between snapshots, so
//!   `add -A` only re-hashes files whose stat changed (the fastest honest git
//!   variant). Restore: snapshot, then `read-tree -m -u <current> <target>`,
//!   which diffs, checks out, deletes and keeps the index fresh in one step.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::cmd::{git, run_ok, Timed};
use crate::system::{Blamed, StoreSize, System};
use crate::tree::dir_bytes;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum IndexMode {
    Fresh,
    Kept,
}

#[derive(Clone, Debug)]
struct Snap {
    tree: String,
}

pub struct GitSnap {
    mode: IndexMode,
    root: PathBuf,
    /// Scratch dir of this system (shadow repos, temporary index files).
    work: PathBuf,
    shadow: PathBuf,
    generation: usize,
    counter: usize,
    parent: Option<String>,
    /// Pre-turn snapshot of each turn, by turn id.
    turns: Vec<Snap>,
    redo: Option<Snap>,
    timeout: Duration,
}

impl GitSnap {
    pub fn new(mode: IndexMode, root: &Path, work: &Path, timeout: Duration) -> Result<Self> {
        fs::create_dir_all(work).with_context(|| format!("creating {}", work.display()))?;
        Ok(Self {
            mode,
            root: root.to_path_buf(),
            work: work.to_path_buf(),
            shadow: work.join("shadow-0"),
            generation: 0,
            counter: 0,
            parent: None,
            turns: Vec::new(),
            redo: None,
            timeout,
        })
    }

    fn cmd(&self, index: Option<&Path>) -> Command {
        let mut c = git();
        c.arg("-C")
            .arg(&self.root)
            .env("GIT_DIR", &self.shadow)
            .env("GIT_WORK_TREE", &self.root);
        if let Some(i) = index {
            c.env("GIT_INDEX_FILE", i);
        }
        c
    }

    fn run(&self, index: Option<&Path>, args: &[&str], input: Option<&[u8]>) -> Result<Timed> {
        run_ok(self.cmd(index).args(args), input, self.timeout)
    }

    fn temp_index(&mut self) -> PathBuf {
        self.counter += 1;
        self.work.join(format!("index-{}", self.counter))
    }

    fn snapshot(&mut self, msg: &str) -> Result<Snap> {
        let idx = match self.mode {
            IndexMode::Fresh => Some(self.temp_index()),
            IndexMode::Kept => None,
        };
        let idx = idx.as_deref();
        self.run(idx, &["add", "-A", "-f"], None)?;
        let tree = self
            .run(idx, &["write-tree"], None)?
            .stdout()
            .trim()
            .to_string();
        let mut args = vec!["commit-tree", tree.as_str(), "-m", msg];
        let parent = self.parent.clone();
        if let Some(p) = parent.as_deref() {
            args.extend(["-p", p]);
        }
        let commit = self.run(None, &args, None)?.stdout().trim().to_string();
        if let Some(i) = idx {
            fs::remove_file(i).with_context(|| format!("removing {}", i.display()))?;
        }
        if tree.is_empty() || commit.is_empty() {
            bail!("git printed no tree or commit id");
        }
        self.parent = Some(commit);
        Ok(Snap { tree })
    }

    /// Puts the work tree into `target`'s state; returns the snapshot of the
    /// state it replaced.
    fn restore(&mut self, target: &Snap) -> Result<Snap> {
        let cur = self.snapshot("before restore")?;
        match self.mode {
            IndexMode::Kept => {
                self.run(
                    None,
                    &["read-tree", "-m", "-u", &cur.tree, &target.tree],
                    None,
                )?;
            }
            IndexMode::Fresh => self.restore_by_checkout(&cur, target)?,
        }
        Ok(cur)
    }

    fn restore_by_checkout(&mut self, cur: &Snap, target: &Snap) -> Result<()> {
        let out = self.run(
            None,
            &[
                "diff-tree",
                "-r",
                "-z",
                "--no-renames",
                "--name-status",
                &cur.tree,
                &target.tree,
            ],
            None,
        )?;
        let mut deletes = Vec::new();
        let mut checkout = Vec::new();
        let mut it = out.out.stdout.split(|b| *b == 0).filter(|s| !s.is_empty());
        while let (Some(status), Some(path)) = (it.next(), it.next()) {
            let path = String::from_utf8_lossy(path).into_owned();
            match status.first() {
                // In the current tree, not in the target.
                Some(b'D') => deletes.push(path),
                _ => checkout.push(path),
            }
        }
        for p in &deletes {
            let abs = self.root.join(p);
            match fs::symlink_metadata(&abs) {
                Ok(md) if md.is_dir() => fs::remove_dir_all(&abs)?,
                Ok(_) => fs::remove_file(&abs)?,
                Err(_) => continue,
            }
            // Directories that became empty were created after the target.
            let mut dir = abs.parent();
            while let Some(d) = dir {
                if d == self.root || fs::remove_dir(d).is_err() {
                    break;
                }
                dir = d.parent();
            }
        }
        if !checkout.is_empty() {
            let idx = self.temp_index();
            self.run(Some(&idx), &["read-tree", &target.tree], None)?;
            let mut input = Vec::new();
            for p in &checkout {
                input.extend_from_slice(p.as_bytes());
                input.push(0);
            }
            self.run(
                Some(&idx),
                &["checkout-index", "-f", "-z", "--stdin"],
                Some(&input),
            )?;
            fs::remove_file(&idx).with_context(|| format!("removing {}", idx.display()))?;
        }
        Ok(())
    }
}

impl System for GitSnap {
    fn name(&self) -> &'static str {
        match self.mode {
            IndexMode::Fresh => "git-fresh",
            IndexMode::Kept => "git-kept",
        }
    }

    fn root(&self) -> &Path {
        &self.root
    }

    fn prepare_fresh(&mut self) -> Result<()> {
        if self.shadow.exists() {
            fs::remove_dir_all(&self.shadow)
                .with_context(|| format!("removing {}", self.shadow.display()))?;
        }
        self.generation += 1;
        self.shadow = self.work.join(format!("shadow-{}", self.generation));
        let st = git()
            .args(["init", "-q", "--bare"])
            .arg(&self.shadow)
            .status()
            .context("running git init")?;
        if !st.success() {
            bail!("git init {} failed", self.shadow.display());
        }
        self.run(None, &["config", "core.bare", "false"], None)?;
        self.parent = None;
        self.turns.clear();
        self.redo = None;
        Ok(())
    }

    fn init(&mut self) -> Result<()> {
        self.snapshot("baseline").map(|_| ())
    }

    fn forget(&mut self) -> Result<()> {
        fs::remove_dir_all(&self.shadow)
            .with_context(|| format!("removing {}", self.shadow.display()))?;
        self.parent = None;
        self.turns.clear();
        self.redo = None;
        Ok(())
    }

    fn turn_start(&mut self) -> Result<u64> {
        let s = self.snapshot("turn start")?;
        self.turns.push(s);
        Ok((self.turns.len() - 1) as u64)
    }

    fn turn_end(&mut self) -> Result<()> {
        self.snapshot("turn end").map(|_| ())
    }

    fn rewind(&mut self, turn: u64) -> Result<()> {
        let target = self
            .turns
            .get(turn as usize)
            .cloned()
            .with_context(|| format!("no turn {turn}"))?;
        let cur = self.restore(&target)?;
        self.redo = Some(cur);
        Ok(())
    }

    fn redo(&mut self) -> Result<()> {
        let target = self.redo.take().context("nothing to redo")?;
        self.restore(&target).map(|_| ())
    }

    fn blame(&mut self, rel: &Path) -> Result<Blamed> {
        let head = self.parent.clone().context("no snapshot to blame")?;
        let rel = rel.to_str().context("a UTF-8 bench path")?;
        let out = self
            .run(None, &["blame", "-s", &head, "--", rel], None)?
            .stdout();
        // One line per line of the file, led by its commit (`^` marks the
        // root commit); the file's first version is the most common one.
        let mut by_commit = std::collections::HashMap::<&str, usize>::new();
        for l in out.lines() {
            let commit = l.split_whitespace().next().unwrap_or("");
            *by_commit.entry(commit.trim_start_matches('^')).or_default() += 1;
        }
        let lines: usize = by_commit.values().sum();
        let first = by_commit.values().copied().max().unwrap_or(0);
        Ok(Blamed {
            lines,
            from_turns: lines - first,
        })
    }

    fn settle(&mut self) -> Result<()> {
        Ok(())
    }

    fn store_bytes(&self) -> StoreSize {
        StoreSize {
            total: dir_bytes(&self.shadow.join("objects"), &|_| false),
            wal: 0,
        }
    }

    fn floors(&mut self) -> Result<Vec<(&'static str, Duration)>> {
        let t = run_ok(git().arg("--version"), None, self.timeout)?;
        Ok(vec![("spawn", t.elapsed)])
    }
}
