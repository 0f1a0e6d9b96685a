//! Files of an unusual sort, each in an episode of its own that leaves
//! the tree as the rest of the sequence models it:
//!
//! * hard links inside the project: a write through one name changes the
//!   other, the turn records both, a rewind gives each its content back;
//! * files over the 16 MiB size cap: recorded as skipped, and a forced
//!   rewind over one never overwrites or removes it.

use std::os::unix::fs::MetadataExt;

use anyhow::Context;

use super::{mismatch, Seq};
use crate::ops;
use crate::rules;
use crate::tree::{self, show, Node};

/// Just over ckpt's default cap.
const OVER_CAP: usize = 16 * 1024 * 1024 + 1;

impl Seq<'_> {
    /// A file and a second name for it (the user's), an agent's turn that
    /// writes through one name in place, then a rewind of that turn.
    pub(super) fn hard_link_step(&mut self) -> anyhow::Result<()> {
        if self.open.is_some() {
            self.turn_end()?;
        }
        let Some(a) = self.proj.new_path(&mut self.rng) else {
            return Ok(());
        };
        let bytes = ops::content(&mut self.rng);
        std::fs::write(self.proj.full(&a), &bytes).context("write the first name")?;
        self.proj.tree.insert(a.clone(), Node::file(&bytes, 0o644));
        let Some(b) = self.proj.new_path(&mut self.rng) else {
            return Ok(());
        };
        std::fs::hard_link(self.proj.full(&a), self.proj.full(&b)).context("ln")?;
        self.proj.tree.insert(b.clone(), Node::file(&bytes, 0o644));
        self.note(format!(
            "user: fs: create {} and ln it {}",
            show(&a),
            show(&b)
        ));
        self.turn_start()?;
        let (via, other) = if self.rng.chance(50) {
            (&a, &b)
        } else {
            (&b, &a)
        };
        let new = ops::content(&mut self.rng);
        // In place (O_TRUNC): the inode both names share.
        std::fs::write(self.proj.full(via), &new).context("write through a link")?;
        for p in [via, other] {
            self.proj.tree.insert(p.clone(), Node::file(&new, 0o644));
        }
        self.note(format!(
            "agent: fs: overwrite {} in place ({} bytes; {} is the same file)",
            show(via),
            new.len(),
            show(other)
        ));
        let Some((n, _)) = self.open.clone() else {
            return Ok(());
        };
        self.turn_end()?;
        self.stats.links += 1;
        self.check_model(&format!("rewind {n} of a hard-linked write"))?;
        let e = rules::rewind(&self.proj.tree, &self.planned_turns(), n, false);
        let c = self.call(&["--json".into(), "rewind".into(), n.to_string()])?;
        self.stats.rewinds += 1;
        self.judge(&format!("rewind {n}"), &c, &e, false, false)?;
        self.unlink_names(&a, &b)
    }

    /// Gives `b` an inode of its own if it still shares `a`'s (a rewind
    /// that did not run): the model has no links.
    fn unlink_names(&mut self, a: &[u8], b: &[u8]) -> anyhow::Result<()> {
        let (Ok(ma), Ok(mb)) = (
            std::fs::symlink_metadata(self.proj.full(a)),
            std::fs::symlink_metadata(self.proj.full(b)),
        ) else {
            return Ok(());
        };
        if ma.ino() != mb.ino() || !ma.is_file() {
            return Ok(());
        }
        let tmp = tree::join(tree::parent(b).unwrap_or(b""), b".unlink~tmp");
        std::fs::copy(self.proj.full(b), self.proj.full(&tmp)).context("copy a link")?;
        std::fs::rename(self.proj.full(&tmp), self.proj.full(b)).context("rename over a link")?;
        self.note(format!("user: fs: {} made a file of its own", show(b)));
        Ok(())
    }

    /// A file over the size cap the user made (or the agent makes), an
    /// agent's turn that rewrites it and edits others, then a forced
    /// rewind: the big file is reported skipped and stays as it is.
    pub(super) fn big_file_step(&mut self) -> anyhow::Result<()> {
        if self.open.is_some() {
            self.turn_end()?;
        }
        let Some(big) = (0..100)
            .map(|i| [tree::BIG_PREFIX, format!("{i}.bin").as_bytes()].concat())
            .find(|p| !self.proj.tree.contains_key(p))
        else {
            return Ok(());
        };
        let by_agent = self.rng.chance(40);
        if !by_agent {
            self.write_big(&big, "user")?;
        }
        self.turn_start()?;
        self.write_big(&big, "agent")?;
        self.edit()?;
        let Some((n, _)) = self.open.clone() else {
            return Ok(());
        };
        self.turn_end()?;
        self.stats.big_files += 1;
        self.check_model(&format!("rewind {n} --force over a big file"))?;
        let e = rules::rewind(&self.proj.tree, &self.planned_turns(), n, true);
        let c = self.call(&[
            "--json".into(),
            "rewind".into(),
            n.to_string(),
            "--force".into(),
        ])?;
        self.stats.rewinds += 1;
        self.judge(&format!("rewind {n} --force"), &c, &e, false, false)?;
        if let Ok(r) = c.parse::<ckpt_proto::RewindReply>() {
            if !r.skipped.iter().any(|s| s.path.as_bytes() == big) {
                return mismatch(format!(
                    "rewind {n} --force: {} (over the size cap) is not reported skipped",
                    show(&big)
                ));
            }
        }
        std::fs::remove_file(self.proj.full(&big)).context("rm the big file")?;
        self.proj.tree.remove(&big);
        self.note(format!("user: fs: rm {}", show(&big)));
        Ok(())
    }

    fn write_big(&mut self, big: &[u8], who: &str) -> anyhow::Result<()> {
        let len = OVER_CAP + self.rng.below(4096);
        let fill = b'a' + self.rng.below(26) as u8;
        let bytes = vec![fill; len];
        std::fs::write(self.proj.full(big), &bytes).context("write a big file")?;
        self.proj
            .tree
            .insert(big.to_vec(), Node::file(&bytes, 0o644));
        self.note(format!(
            "{who}: fs: write {} ({len} bytes, over the cap)",
            show(big)
        ));
        Ok(())
    }
}
