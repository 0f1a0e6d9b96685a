//! `rewind N --path P`: only the selected paths (and what is below them)
//! go back; the turns stay live, and a later full rewind or a redo still
//! sees them whole.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

use super::Seq;
use crate::rules;
use crate::tree::{parent, show};

impl Seq<'_> {
    pub(super) fn partial_rewind_step(&mut self) -> anyhow::Result<()> {
        let Some(n) = self.pick_rewind()? else {
            return Ok(());
        };
        let Some(paths) = self.pick_paths(n) else {
            return Ok(());
        };
        self.check_model(&format!("rewind {n} --path"))?;
        let force = self.rng.chance(15);
        let e = rules::rewind_paths(&self.proj.tree, &self.planned_turns(), n, force, &paths);
        let args = partial_args(n, &paths, force, false);
        let what = format!(
            "rewind {n} --path {}{}",
            paths
                .iter()
                .map(|p| show(p))
                .collect::<Vec<_>>()
                .join(" --path "),
            if force { " --force" } else { "" }
        );
        let c = self.world.ctl(&args)?;
        self.stats.rewinds += 1;
        self.stats.partials += 1;
        self.judge(&what, &c, &e, false, false)
    }

    /// One or two of the paths turn `n`'s session's live turns from `n`
    /// on touched, now and then a directory above one instead.
    pub(super) fn pick_paths(&mut self, n: i64) -> Option<Vec<Vec<u8>>> {
        let turns = self.planned_turns();
        let session = turns.iter().find(|t| t.id == n)?.session.clone();
        let touched: Vec<Vec<u8>> = turns
            .iter()
            .filter(|t| t.live && t.id >= n && t.session == session)
            .flat_map(|t| t.touched.keys().cloned())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let mut out = BTreeSet::new();
        for _ in 0..self.rng.range(1, 2) {
            let p = self.rng.pick(&touched)?.clone();
            let p = match parent(&p) {
                Some(up) if self.rng.chance(30) => up.to_vec(),
                _ => p,
            };
            out.insert(p);
        }
        Some(out.into_iter().collect())
    }
}

/// `--json rewind N --path=P… [--force] [--dry-run]`, paths as raw bytes
/// (`--path=` so a name starting with a dash is no option).
pub(super) fn partial_args(n: i64, paths: &[Vec<u8>], force: bool, dry: bool) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec!["--json".into(), "rewind".into(), n.to_string().into()];
    for p in paths {
        let mut a = b"--path=".to_vec();
        a.extend_from_slice(p);
        args.push(OsString::from_vec(a));
    }
    if force {
        args.push("--force".into());
    }
    if dry {
        args.push("--dry-run".into());
    }
    args
}
