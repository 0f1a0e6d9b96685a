//! Work copies: `workcopy create --base current` copies exactly what ckpt
//! captures, edits in the copy, `workcopy apply` writes them into the tree
//! as one turn (of a session of its own), and a rewind of that turn undoes
//! it like any other.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Context;

use super::{mismatch, Seq};
use crate::ops::{self, Project};
use crate::rules::{self, Turn};
use crate::tree::{self, show, Node, Tree};

impl Seq<'_> {
    pub(super) fn workcopy_step(&mut self) -> anyhow::Result<()> {
        if self.open.is_some() {
            self.turn_end()?;
        }
        self.remove_leaving_links()?;
        // KNOWN: a work copy refuses a name that is not UTF-8 (a limit the
        // guide states). Half the time the user moves them away.
        let non_utf8 = self.non_utf8_paths();
        if !non_utf8.is_empty() && self.rng.chance(50) {
            self.remove_non_utf8(&non_utf8)?;
        }
        let refused = !self.non_utf8_paths().is_empty();
        let name = format!("wc{}", self.step_no);
        let dir = self.world.dir.join(&name);
        let dir_s = dir.to_string_lossy().into_owned();
        let c = self.world.ctl(&[
            "--json", "workcopy", "create", "--base", "current", "--name", &name, "--path", &dir_s,
        ])?;
        self.note(format!(
            "workcopy create --base current --name {name} -> exit {:?}",
            c.code
        ));
        if refused {
            if c.code != Some(1) || dir.exists() {
                return mismatch(format!(
                    "workcopy create of a tree with a non-UTF-8 name: expected a clean refusal (exit 1, no copy), got {} (copy left: {})",
                    c.describe(),
                    dir.exists()
                ));
            }
            return self.check_tree("a refused workcopy create", &self.proj.tree.clone());
        }
        if c.code != Some(0) {
            return mismatch(format!("workcopy create failed: {}", c.describe()));
        }
        // Exactly what ckpt captures: not node_modules, not files over the cap.
        let base: Tree = self
            .proj
            .tree
            .iter()
            .filter(|(k, _)| !tree::uncaptured(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let found = tree::read_disk(&dir)?;
        if found != base {
            return mismatch(format!(
                "workcopy {name} is not the captured tree:\n  {}",
                tree::diff(&base, &found).join("\n  ")
            ));
        }
        let mut copy = Project {
            root: dir,
            tree: base.clone(),
            transient: Vec::new(),
        };
        for _ in 0..self.rng.range(1, 4) {
            if let Some(line) = copy_edit(&mut copy, &mut self.rng)? {
                self.note(format!("in {name}: {line}"));
            }
        }
        self.apply_workcopy(&name, &base, &copy.tree)
    }

    /// `workcopy apply NAME`: the copy's changes land in the tree as one
    /// turn; now and then that turn is rewound.
    fn apply_workcopy(&mut self, name: &str, base: &Tree, copy: &Tree) -> anyhow::Result<()> {
        self.check_model(&format!("workcopy apply {name}"))?;
        let changes = rules::touched(base, copy);
        if changes.is_empty() {
            // Nothing to apply: an error, and nothing changes.
            self.preview_token(name)?;
            let c = self.world.ctl(&["--json", "workcopy", "apply", name])?;
            if c.code != Some(1) {
                return mismatch(format!(
                    "workcopy apply {name} of an unchanged copy: {}",
                    c.describe()
                ));
            }
            self.note(format!(
                "workcopy apply {name} -> exit 1 (nothing to apply)"
            ));
            return self.check_tree("an empty workcopy apply", &self.proj.tree.clone());
        }
        let killed = if self.rng.chance(35) {
            self.killed_apply(name, &changes)?
        } else {
            None
        };
        let (id, session) = match killed {
            Some(done) => done,
            None => self.plain_apply(name)?,
        };
        self.note(format!(
            "workcopy apply {name} -> turn {id} ({} paths)",
            changes.len()
        ));
        self.proj.tree = applied(&self.proj.tree, &changes);
        self.check_tree(&format!("workcopy apply {name}"), &self.proj.tree.clone())?;
        self.check_turn_entries(id, &changes)?;
        let started = self.tick();
        let ended = self.tick();
        self.turns.push(Turn {
            id,
            live: true,
            touched: changes,
            session: Some(session),
            started,
            ended,
        });
        self.stats.turns += 1;
        self.stats.workcopies += 1;
        if self.rng.chance(60) {
            let e = rules::rewind(&self.proj.tree, &self.planned_turns(), id, false);
            let c = self.call(&["--json".into(), "rewind".into(), id.to_string()])?;
            self.stats.rewinds += 1;
            self.judge(&format!("rewind {id} (the apply)"), &c, &e, false, false)?;
        }
        // --force: a rewound apply leaves the copy's changes not applied.
        let c = self.world.ctl(&["workcopy", "remove", "--force", name])?;
        if c.code != Some(0) {
            return mismatch(format!("workcopy remove {name} failed: {}", c.describe()));
        }
        Ok(())
    }

    /// `workcopy preview NAME`, as a user does before an apply: its token.
    fn preview_token(&mut self, name: &str) -> anyhow::Result<String> {
        let c = self.world.ctl(&["--json", "workcopy", "preview", name])?;
        if c.code != Some(0) {
            return mismatch(format!("workcopy preview {name} failed: {}", c.describe()));
        }
        let v: serde_json::Value = c.parse()?;
        match v["token"].as_str() {
            Some(t) => Ok(t.to_string()),
            None => mismatch(format!("workcopy preview {name}: no token in {}", c.stdout)),
        }
    }

    /// `workcopy apply NAME`, not interrupted: the new turn and its session.
    fn plain_apply(&mut self, name: &str) -> anyhow::Result<(i64, String)> {
        let token = self.preview_token(name)?;
        let c = self
            .world
            .ctl(&["--json", "workcopy", "apply", name, "--token", &token])?;
        if c.code != Some(0) {
            return mismatch(format!("workcopy apply {name} failed: {}", c.describe()));
        }
        let v: serde_json::Value = c.parse()?;
        // The original is a git repository: the apply reports the tree it
        // computed before and the one the original then holds, equal.
        let t = &v["tree"];
        if t["matches"] != serde_json::Value::Bool(true) || t["expected"].is_null() {
            return mismatch(format!(
                "workcopy apply {name}: the original's git tree is not the one computed before the apply: {t}; stderr: {}",
                c.stderr
            ));
        }
        match applied_turn(&v["state"]) {
            Some(t) => Ok(t),
            None => mismatch(format!("workcopy apply {name}: no turn in {}", c.stdout)),
        }
    }

    /// `workcopy apply NAME` with the daemon killed after a random delay:
    /// after a restart the tree is the one before (then `None`: it is
    /// applied again) or the one after, whole, with its turn recorded.
    fn killed_apply(
        &mut self,
        name: &str,
        changes: &BTreeMap<Vec<u8>, rules::Change>,
    ) -> anyhow::Result<Option<(i64, String)>> {
        let token = self.preview_token(name)?;
        let args = ["--json", "workcopy", "apply", name, "--token", &token];
        // Up to the time a debug build's apply takes.
        let delay = self.rng.below(150);
        let child = self.world.spawn_ctl(&args)?;
        std::thread::sleep(Duration::from_millis(delay as u64));
        self.world.kill()?;
        self.stats.kills += 1;
        let c = self.world.finish_ctl(child, &args)?;
        self.world.start(&[])?;
        let st = self.world.ctl(&["--json", "workcopy", "status", name])?;
        let v: serde_json::Value = st.parse()?;
        let state = &v["workcopy"];
        let disk = tree::read_disk(&self.proj.root)?;
        let after = applied(&self.proj.tree, changes);
        self.note(format!(
            "workcopy apply {name} with the daemon killed after {delay} ms -> exit {:?}, state {}",
            c.code, state["state"]
        ));
        if disk == self.proj.tree {
            self.note("  recovered: not applied".into());
            return Ok(None);
        }
        if disk != after {
            return mismatch(format!(
                "workcopy apply {name} killed mid-way: the tree is neither before nor after:\n  vs after:\n  {}",
                tree::diff(&after, &disk).join("\n  ")
            ));
        }
        match applied_turn(state) {
            Some(t) => {
                self.note("  recovered: applied".into());
                Ok(Some(t))
            }
            None => mismatch(format!(
                "workcopy apply {name} killed mid-way: the tree is applied but status records no turn: {}",
                st.stdout
            )),
        }
    }

    /// Captured paths whose names are not UTF-8, topmost first.
    fn non_utf8_paths(&self) -> Vec<Vec<u8>> {
        self.proj
            .tree
            .keys()
            .filter(|k| !tree::uncaptured(k) && std::str::from_utf8(k).is_err())
            .cloned()
            .collect()
    }

    fn remove_non_utf8(&mut self, paths: &[Vec<u8>]) -> anyhow::Result<()> {
        for p in paths {
            // Gone with a directory above it already.
            let Some(n) = self.proj.tree.get(p) else {
                continue;
            };
            if n.is_dir() {
                std::fs::remove_dir_all(self.proj.full(p))
            } else {
                std::fs::remove_file(self.proj.full(p))
            }
            .with_context(|| format!("rm {}", show(p)))?;
            tree::remove_all(&mut self.proj.tree, p);
            self.note(format!("user: fs: rm -rf {} (not UTF-8)", show(p)));
        }
        Ok(())
    }

    /// A work copy refuses symlinks that leave the tree: the user removes
    /// them first.
    fn remove_leaving_links(&mut self) -> anyhow::Result<()> {
        let leaving: Vec<Vec<u8>> = self
            .proj
            .tree
            .iter()
            .filter(|(k, n)| matches!(n, Node::Symlink { target } if leaves(k, target)))
            .map(|(k, _)| k.clone())
            .collect();
        for p in leaving {
            std::fs::remove_file(self.proj.full(&p)).with_context(|| format!("rm {}", show(&p)))?;
            self.proj.tree.remove(&p);
            self.note(format!(
                "user: fs: rm {} (a symlink out of the tree)",
                show(&p)
            ));
        }
        Ok(())
    }
}

/// Whether symlink `at -> target` points out of the tree (read lexically).
fn leaves(at: &[u8], target: &[u8]) -> bool {
    if target.starts_with(b"/") {
        return true;
    }
    let mut depth = at.iter().filter(|&&b| b == b'/').count() as i64;
    for c in target.split(|&b| b == b'/') {
        match c {
            b".." => depth -= 1,
            b"" | b"." => {}
            _ => depth += 1,
        }
        if depth < 0 {
            return true;
        }
    }
    false
}

/// An edit in a work copy: files only (a directory removed there could
/// hold what the original does not capture).
fn copy_edit(p: &mut Project, rng: &mut crate::rng::Rng) -> anyhow::Result<Option<String>> {
    let files = p
        .tree
        .iter()
        .filter(|(_, n)| matches!(n, Node::File { .. }))
        .map(|(k, _)| k.clone())
        .collect::<Vec<_>>();
    match rng.below(4) {
        0 => {
            let Some(path) = p.new_path(rng) else {
                return Ok(None);
            };
            // KNOWN: a work copy refuses a name that is not UTF-8.
            if std::str::from_utf8(&path).is_err() {
                return Ok(None);
            }
            let bytes = ops::content(rng);
            std::fs::write(p.full(&path), &bytes).context("write in the copy")?;
            p.tree.insert(path.clone(), Node::file(&bytes, 0o644));
            Ok(Some(format!("create {}", show(&path))))
        }
        1 => {
            let Some(path) = rng.pick(&files).cloned() else {
                return Ok(None);
            };
            ops::line_edit(p, rng, &path)
        }
        2 => {
            let Some(path) = rng.pick(&files).cloned() else {
                return Ok(None);
            };
            std::fs::remove_file(p.full(&path)).context("rm in the copy")?;
            p.tree.remove(&path);
            Ok(Some(format!("rm {}", show(&path))))
        }
        _ => {
            let Some(path) = rng.pick(&files).cloned() else {
                return Ok(None);
            };
            let Some(Node::File { mode, .. }) = p.tree.get(&path).cloned() else {
                return Ok(None);
            };
            let bytes = ops::content(rng);
            std::fs::write(p.full(&path), &bytes).context("overwrite in the copy")?;
            p.tree.insert(path.clone(), Node::file(&bytes, mode));
            Ok(Some(format!("overwrite {}", show(&path))))
        }
    }
}

/// The apply's turn and session in a work copy's state document.
fn applied_turn(state: &serde_json::Value) -> Option<(i64, String)> {
    let a = &state["apply"];
    Some((a["turn"].as_i64()?, a["session"].as_str()?.to_string()))
}

/// `tree` with a work copy's changes written in.
fn applied(tree: &Tree, changes: &BTreeMap<Vec<u8>, rules::Change>) -> Tree {
    let mut t = tree.clone();
    for (p, (_, post)) in changes {
        match post {
            Some(n) => t.insert(p.clone(), n.clone()),
            None => t.remove(p),
        };
    }
    t
}
