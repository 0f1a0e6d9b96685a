//! Dry runs between other steps: `rewind N --dry-run` (whole, `--path`,
//! `--last --session S`) and `redo --dry-run` must change neither the tree
//! nor the turn table (`log --json` before and after are equal), and exit
//! as the real run would (3 when it would be refused); now and then the
//! real run follows and must exit the same.

use std::ffi::OsString;

use super::partial::partial_args;
use super::{mismatch, Seq};
use crate::rules;

impl Seq<'_> {
    pub(super) fn dry_run_step(&mut self) -> anyhow::Result<()> {
        let redo = !self.applied.is_empty() && self.rng.chance(35);
        let plan = if redo {
            self.dry_redo_plan()
        } else {
            self.dry_rewind_plan()?
        };
        let Some((args, e, what)) = plan else {
            return Ok(());
        };
        self.check_model(&what)?;
        let c = self.world.ctl(&args)?;
        self.stats.dry_runs += 1;
        self.judge(&what, &c, &e, redo, true)?;
        // The table read after the first dry run's barrier (an open turn's
        // counts catch up with capture until then), around a second one.
        let before = self.turn_table()?;
        let again = self.world.ctl(&args)?;
        self.stats.dry_runs += 1;
        let after = self.turn_table()?;
        if before != after {
            return mismatch(format!(
                "{what} changed the turn table:\n  before: {before}\n  after:  {after}"
            ));
        }
        if again.code != c.code {
            return mismatch(format!(
                "{what} exited {:?}, then {}",
                c.code,
                again.describe()
            ));
        }
        self.check_tree(&what, &self.proj.tree.clone())?;
        if !self.rng.chance(40) {
            return Ok(());
        }
        let real: Vec<OsString> = args.into_iter().filter(|a| a != "--dry-run").collect();
        let what_real = what.replace(" --dry-run", "");
        let r = self.world.ctl(&real)?;
        if redo {
            self.stats.redos += 1;
        } else {
            self.stats.rewinds += 1;
        }
        if r.code != c.code {
            return mismatch(format!(
                "{what} exited {:?}, the real run {}",
                c.code,
                r.describe()
            ));
        }
        self.judge(&what_real, &r, &e, redo, false)
    }

    /// `redo [--force] --dry-run` of the last applied rewind.
    fn dry_redo_plan(&mut self) -> Option<(Vec<OsString>, rules::Expect, String)> {
        let last = self.applied.last()?.clone();
        let force = self.rng.chance(25);
        let e = rules::redo(&self.proj.tree, &last, force);
        let mut args: Vec<OsString> = vec!["--json".into(), "redo".into()];
        if force {
            args.push("--force".into());
        }
        args.push("--dry-run".into());
        let what = if force {
            "redo --force --dry-run"
        } else {
            "redo --dry-run"
        };
        Some((args, e, what.into()))
    }

    /// `rewind N --dry-run`, with `--path` or as `--last --session S` now
    /// and then.
    fn dry_rewind_plan(
        &mut self,
    ) -> anyhow::Result<Option<(Vec<OsString>, rules::Expect, String)>> {
        let Some(n) = self.pick_rewind()? else {
            return Ok(None);
        };
        let force = self.rng.chance(15);
        let paths = if self.rng.chance(30) {
            self.pick_paths(n).unwrap_or_default()
        } else {
            Vec::new()
        };
        let e = rules::rewind_paths(&self.proj.tree, &self.planned_turns(), n, force, &paths);
        let mut args = partial_args(n, &paths, force, true);
        let session = self
            .turns
            .iter()
            .find(|t| t.id == n)
            .and_then(|t| t.session.clone());
        let newest = self
            .planned_turns()
            .iter()
            .filter(|t| t.live && t.session == session)
            .map(|t| t.id)
            .max();
        // The newest turn of a named session, by name.
        if let (Some(s), true, true) = (&session, newest == Some(n), paths.is_empty()) {
            if self.rng.chance(50) {
                args[2] = "--last".into();
                args.insert(3, "--session".into());
                args.insert(4, s.into());
            }
        }
        let what = args[1..]
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ");
        Ok(Some((args, e, what)))
    }

    /// The turn table as `log --json` prints it.
    fn turn_table(&self) -> anyhow::Result<String> {
        let c = self.world.ctl(&["--json", "log", "--all"])?;
        if c.code != Some(0) {
            return mismatch(format!("log --all failed: {}", c.describe()));
        }
        Ok(c.stdout)
    }
}
