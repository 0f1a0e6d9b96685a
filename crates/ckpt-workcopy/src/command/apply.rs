//! `workcopy apply` and `workcopy commit`, and settling a state left at
//! `applying` or `committing` by looking at the original (`settle`).
//!
//! Each intent is saved durably before its action; the outcome replaces it
//! once known. After a crash the intent is judged from the original: its
//! files (with the daemon up, so an interrupted apply has been finished or
//! rolled back by its journal first) and its HEAD.

use anyhow::Context;
use ckpt_proto::{self as proto, Outcome, Request, Response, TurnStatus, WirePath};

use crate::apply::{self, Found};
use crate::commit::{self, CommitFound};
use crate::limits::{self, Limits};
use crate::state::{now_secs, ApplyRecord, Phase, Store, WorkCopy};
use crate::{contract, export, fingerprint, git, head, preview, tree};
use ckptctl::commands::{unexpected, Ctx};
use ckptctl::output;
use ckptctl::EXIT_CONFLICTS;

/// What an apply is held to: the last preview's token (or `token`), unless
/// `no_preview`.
pub struct Contract {
    pub token: Option<String>,
    pub no_preview: bool,
}

pub fn apply_cmd(ctx: &Ctx, store: &Store, wc: WorkCopy, contract: Contract) -> anyhow::Result<u8> {
    let mut wc = settle(ctx, store, wc)?;
    match wc.state {
        Phase::Ready => {}
        Phase::Applied if apply_turn_rewound(ctx, &wc)? => {}
        Phase::Applied => anyhow::bail!(
            "work copy '{}' is already applied as turn {turn} (`ckptctl rewind {turn}` in {} undoes it)",
            wc.name,
            wc.original.display(),
            turn = applied_turn(&wc),
        ),
        Phase::Committed | Phase::Pushed => {
            anyhow::bail!("work copy '{}' is already applied and committed", wc.name)
        }
        Phase::Applying | Phase::Committing | Phase::Pushing => unreachable!("settled above"),
    }
    limits::check(&wc.copy, &Limits::of(&wc.original), "apply")?;
    head::ensure_at_base(&wc, "apply")?;
    let base = store.load_manifest(&wc.name)?;
    let now = fingerprint::manifest(&wc.copy)?;
    let frozen = export::freeze(store, &wc, &base, &now)?;
    let expected = if contract.no_preview {
        tree::expected(&wc, &frozen)?
    } else {
        let target = contract::target(&wc.original);
        let found = contract::Found {
            patch_sha256: &export::sha256(&frozen.patch()),
            target: &target,
            now: now_secs(),
        };
        contract::check(
            &wc.name,
            wc.preview.as_ref(),
            contract.token.as_deref(),
            &found,
        )?;
        wc.preview.as_ref().and_then(|r| r.tree.clone())
    };
    let p = preview::preview_of(&wc, &base, now)?;
    if p.conflicts > 0 {
        if ctx.g.json {
            output::json(
                &serde_json::json!({ "workcopy": wc.name, "applied": false, "preview": p }),
            )?;
        } else {
            for c in p
                .changes
                .iter()
                .filter(|c| c.original == preview::Original::Conflict)
            {
                eprintln!("  conflict: {}", c.path);
            }
            eprintln!(
                "ckptctl: apply refused: {} changed in the original since the base \
                 (`ckptctl workcopy preview {}`); nothing was written",
                output::count(p.conflicts as u64, "path"),
                wc.name
            );
        }
        return Ok(EXIT_CONFLICTS);
    }
    if p.leaving_symlinks > 0 {
        if ctx.g.json {
            output::json(
                &serde_json::json!({ "workcopy": wc.name, "applied": false, "preview": p }),
            )?;
        } else {
            for c in &p.changes {
                if let Some(t) = &c.leaves_tree {
                    eprintln!("  refused: {} -> {t}", c.path);
                }
            }
            eprintln!(
                "ckptctl: apply refused: {} in the copy leaving the tree; nothing was written",
                output::count(p.leaving_symlinks as u64, "symlink")
            );
        }
        return Ok(EXIT_CONFLICTS);
    }
    let paths = apply::paths(&p);
    anyhow::ensure!(
        !paths.is_empty(),
        "nothing to apply: the original already holds every change of work copy '{}'",
        wc.name
    );
    let rec = ApplyRecord {
        session: crate::apply::session(&wc.name, ckpt_types::now_ns().unsigned_abs().into()),
        paths,
        copy_fingerprint: p.copy_fingerprint,
        head: git::head(&wc.original),
        turn: None,
        started: now_secs(),
        tree: expected,
        previewed: !contract.no_preview,
    };
    let request = Request::CopyIn(ckpt_proto::CopyIn {
        dir: wc.original.as_path().into(),
        source: wc.copy.as_path().into(),
        paths: rec
            .paths
            .iter()
            .map(|p| proto::CopyPath {
                path: WirePath(p.path.clone().into_bytes()),
                base: p.before.clone(),
                copy: p.after.clone(),
            })
            .collect(),
        label: Some(format!("workcopy apply {}", wc.name)),
        agent: Some(crate::apply::AGENT.into()),
        session: Some(rec.session.clone()),
        workcopy: Some(wc.name.clone()),
    });
    // The apply is a turn of the original's history: watch it (its baseline
    // taken now) before any state says an apply is under way.
    match ctx.request(&Request::Watch {
        dir: wc.original.as_path().into(),
        discover: false,
    }) {
        Ok(Response::Watched(_)) => {}
        Ok(other) => return Err(unexpected(other)),
        Err(e) => {
            return Err(e.context(format!(
                "watching the original {} failed; nothing was applied",
                wc.original.display()
            )))
        }
    }
    wc.state = Phase::Applying;
    wc.apply = Some(rec);
    // Taken with the intent: an apply cut short must not run twice on one
    // token. One that writes nothing gives it back (`give_back`).
    let took = !contract.no_preview;
    if took {
        if let Some(r) = wc.preview.as_mut() {
            r.used = true;
        }
    }
    store.save(&wc)?;
    match ctx.request_showing(&request, "applying") {
        Ok(Response::CopyIn(r)) if r.outcome == Outcome::Applied => {
            wc.state = Phase::Applied;
            wc.apply.as_mut().expect("set above").turn = r.turn;
            store.save(&wc)?;
            ctx.warn_if_degraded(&r);
            report_applied(ctx, &wc, r.actions.len(), &frozen.changed)
        }
        Ok(Response::CopyIn(r)) => {
            wc.state = Phase::Ready;
            wc.apply = None;
            give_back(&mut wc, took);
            store.save(&wc)?;
            if ctx.g.json {
                output::json(
                    &serde_json::json!({ "workcopy": wc.name, "applied": false, "refused": r }),
                )?;
            } else {
                for c in &r.conflicts {
                    eprintln!(
                        "  conflict: {} (changed in the original since the base)",
                        c.path.display()
                    );
                }
                for b in &r.blocked {
                    eprintln!("  blocked: {}: {}", b.path.display(), b.reason);
                }
                eprintln!("ckptctl: apply refused; nothing was written");
            }
            Ok(EXIT_CONFLICTS)
        }
        Ok(other) => Err(unexpected(other)),
        // The daemon may have written some or all of it: look.
        Err(e) => match settle(ctx, store, wc) {
            Ok(wc) if wc.state == Phase::Applied => report_applied(ctx, &wc, 0, &frozen.changed),
            Ok(mut wc) if wc.state == Phase::Ready => {
                give_back(&mut wc, took);
                store.save(&wc)?;
                Err(e.context("nothing was applied"))
            }
            Ok(wc) => Err(e.context(format!(
                "the apply may be cut short; `ckptctl workcopy status {}` looks again",
                wc.name
            ))),
            Err(e2) => Err(e.context(format!("and looking at the original failed: {e2:#}"))),
        },
    }
}

/// The preview's token, valid again after an apply that wrote nothing (a
/// refusal is not a use), if this apply `took` it.
fn give_back(wc: &mut WorkCopy, took: bool) {
    if let (true, Some(r)) = (took, wc.preview.as_mut()) {
        r.used = false;
    }
}

/// Reports an apply done, with the original's tree at the `changed` paths
/// checked against the one previewed (or computed from the patch).
fn report_applied(
    ctx: &Ctx,
    wc: &WorkCopy,
    actions: usize,
    changed: &[tree::Changed],
) -> anyhow::Result<u8> {
    let turn = applied_turn(wc);
    let rec = wc
        .apply
        .as_ref()
        .context("an applied work copy has its apply record")?;
    // No expected tree (outside git): nothing to check against.
    let found = match rec.tree {
        Some(_) => tree::of_original(wc, changed)?,
        None => None,
    };
    let matches = found == rec.tree;
    if ctx.g.json {
        output::json(&serde_json::json!({
            "workcopy": wc.name,
            "applied": true,
            "turn": turn,
            "actions": actions,
            "previewed": rec.previewed,
            "tree": { "expected": rec.tree, "found": found, "matches": matches },
            "state": wc,
        }))?;
    } else if !ctx.g.quiet {
        let paths = wc.apply.as_ref().map_or(0, |a| a.paths.len());
        println!(
            "applied work copy '{}' to {}: {paths} paths, turn {turn}",
            wc.name,
            wc.original.display()
        );
        if let (Some(t), true) = (&found, matches) {
            let how = if rec.previewed {
                "the tree the preview showed"
            } else {
                "the tree of the base with the patch applied"
            };
            println!("the original's git tree at the changed paths: {t}, {how}");
        }
        if !rec.previewed {
            println!("applied without a preview (--no-preview): nobody checked it against a reviewed diff");
        }
        println!(
            "`ckptctl rewind {turn}` there undoes it; `ckptctl workcopy commit {}` commits it",
            wc.name
        );
    }
    if !matches {
        check_tree_difference(wc, changed, found.as_deref(), rec.tree.as_deref())?;
    }
    Ok(0)
}

/// A tree after the apply that is not the one computed before it: a
/// warning when someone changed a path since (the apply is done either
/// way), an error when the original holds every changed path as the copy
/// does, for then the two trees were computed differently: ckpt's fault.
fn check_tree_difference(
    wc: &WorkCopy,
    changed: &[tree::Changed],
    found: Option<&str>,
    expected: Option<&str>,
) -> anyhow::Result<()> {
    let mut since = Vec::new();
    for (path, _, copy) in changed {
        if fingerprint::entry_of(&wc.original.join(path))? != *copy {
            since.push(path.as_str());
        }
    }
    let turn = applied_turn(wc);
    let (found, expected) = (found.unwrap_or("none"), expected.unwrap_or("none"));
    anyhow::ensure!(
        !since.is_empty(),
        "the original's git tree at the changed paths is {found}, not {expected} as computed \
         before the apply, though it holds every path as the copy does: a fault of ckpt's, \
         please report it (the apply is done as turn {turn}; `ckptctl rewind {turn}` in {} \
         undoes it)",
        wc.original.display()
    );
    eprintln!(
        "ckptctl: warning: the original's git tree at the changed paths is {found}, not \
         {expected}: {} changed since the apply ({}); `ckptctl rewind {turn}` in {} undoes the apply",
        output::count(since.len() as u64, "path"),
        since.join(", "),
        wc.original.display()
    );
    Ok(())
}

pub fn commit_cmd(
    ctx: &Ctx,
    store: &Store,
    wc: WorkCopy,
    message: Option<String>,
) -> anyhow::Result<u8> {
    let mut wc = settle(ctx, store, wc)?;
    match wc.state {
        Phase::Applied => {}
        Phase::Ready => anyhow::bail!(
            "work copy '{}' is not applied yet (`ckptctl workcopy apply {0}`)",
            wc.name
        ),
        Phase::Committed | Phase::Pushed => anyhow::bail!(
            "work copy '{}' is already committed as {}",
            wc.name,
            wc.commit
                .as_ref()
                .and_then(|c| c.commit.as_deref())
                .unwrap_or("?")
        ),
        Phase::Applying | Phase::Committing | Phase::Pushing => unreachable!("settled above"),
    }
    let turn = applied_turn(&wc);
    let rec = wc
        .apply
        .as_ref()
        .context("an applied work copy has its apply record")?;
    let message =
        message.unwrap_or_else(|| format!("Apply work copy {} (ckpt turn {turn})", wc.name));
    let mut plan = commit::prepare(&wc.original, rec, message)?;
    let co_authors = limits::settings(&wc.original).co_authored_by().to_vec();
    plan.trailers = crate::assisted::trailers(ctx, &wc.copy, &co_authors);
    wc.state = Phase::Committing;
    wc.commit = Some(plan);
    store.save(&wc)?;
    let plan = wc.commit.as_ref().expect("set above");
    let wc = match commit::run(&wc.original, plan) {
        Ok(head) => {
            wc.state = Phase::Committed;
            wc.commit.as_mut().expect("set above").commit = Some(head);
            store.save(&wc)?;
            wc
        }
        // A hook may have failed after git committed, or before: look.
        Err(e) => {
            let wc = settle(ctx, store, wc)?;
            if wc.state != Phase::Committed {
                return Err(e);
            }
            wc
        }
    };
    let c = wc.commit.as_ref().expect("committed");
    if ctx.g.json {
        output::json(&serde_json::json!({ "workcopy": wc.name, "commit": c }))?;
    } else if !ctx.g.quiet {
        println!(
            "committed {} in {} as {}",
            output::count(c.paths.len() as u64, "path"),
            wc.original.display(),
            c.commit.as_deref().unwrap_or("?")
        );
        for (path, why) in &c.left_out {
            println!("  left out {path}: {why}");
        }
    }
    Ok(0)
}

/// Replaces an `applying` or `committing` state by what the original
/// shows. An apply is judged with the daemon up and the original synced,
/// so one it journaled has been finished or rolled back; one that is
/// neither done nor undone stays `applying`, and this says why.
pub fn settle(ctx: &Ctx, store: &Store, mut wc: WorkCopy) -> anyhow::Result<WorkCopy> {
    match wc.state {
        Phase::Applying => {
            let rec = wc
                .apply
                .clone()
                .context("an applying work copy has its apply record")?;
            let dir: WirePath = wc.original.as_path().into();
            match ctx.request(&Request::Sync { dir: dir.clone() }) {
                Ok(Response::Synced(_)) => {}
                Ok(other) => return Err(unexpected(other)),
                Err(e) => {
                    return Err(e.context(format!(
                        "work copy '{}' was being applied; the daemon must be running to tell whether it was",
                        wc.name
                    )))
                }
            }
            match apply::inspect(&wc.original, &rec.paths)? {
                Found::Applied => {
                    let turn = find_turn(ctx, &dir, &rec.session)?.with_context(|| {
                        format!(
                            "the original holds work copy '{}''s changes, but no turn records them",
                            wc.name
                        )
                    })?;
                    wc.state = Phase::Applied;
                    wc.apply.as_mut().expect("checked").turn = Some(turn);
                }
                Found::NotApplied => {
                    wc.state = Phase::Ready;
                    wc.apply = None;
                }
                Found::Neither(paths) => anyhow::bail!(
                    "work copy '{}' was being applied, and the original holds neither the old nor \
                     the new content at {} paths ({}); look at them, then `ckptctl rewind` or \
                     `ckptctl workcopy remove`",
                    wc.name,
                    paths.len(),
                    paths.join(", ")
                ),
            }
            store.save(&wc)?;
        }
        Phase::Committing => {
            let rec = wc
                .commit
                .clone()
                .context("a committing work copy has its commit record")?;
            match commit::inspect(&wc.original, &rec) {
                CommitFound::Committed(head) => {
                    wc.state = Phase::Committed;
                    wc.commit.as_mut().expect("checked").commit = Some(head);
                }
                CommitFound::NotCommitted => {
                    wc.state = Phase::Applied;
                    wc.commit = None;
                }
                CommitFound::Other(head) => anyhow::bail!(
                    "work copy '{}' was being committed, and the original's HEAD is now {head}, \
                     which is not that commit; look at `git log` in {}",
                    wc.name,
                    wc.original.display()
                ),
            }
            store.save(&wc)?;
        }
        Phase::Pushing => crate::push::settle(store, &mut wc)?,
        Phase::Ready | Phase::Applied | Phase::Committed | Phase::Pushed => {}
    }
    Ok(wc)
}

/// The apply's turn in the original, found by its session.
fn find_turn(ctx: &Ctx, dir: &WirePath, session: &str) -> anyhow::Result<Option<i64>> {
    match ctx.request(&Request::Log(ckpt_proto::Log {
        dir: dir.clone(),
        limit: Some(1),
        session: Some(session.to_string()),
    }))? {
        Response::Log(log) => Ok(log
            .turns
            .iter()
            .find(|t| t.session.as_deref() == Some(session))
            .map(|t| t.id)),
        other => Err(unexpected(other)),
    }
}

/// Whether the applied turn was rewound since (then it may be applied again).
pub fn apply_turn_rewound(ctx: &Ctx, wc: &WorkCopy) -> anyhow::Result<bool> {
    match ctx.request(&Request::Show {
        dir: wc.original.as_path().into(),
        turn: applied_turn(wc),
        list: Some(0),
    })? {
        Response::Show(s) => Ok(s.turn.info.status == TurnStatus::Rewound),
        other => Err(unexpected(other)),
    }
}

pub fn applied_turn(wc: &WorkCopy) -> i64 {
    wc.apply.as_ref().and_then(|a| a.turn).unwrap_or(0)
}
