//! `ckptctl workcopy create|list|status|diff|preview|apply|commit|export|
//! run|remove`: the commands over [`crate::workcopy`].

mod apply;

pub use apply::settle;

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use ckpt_proto::{Request, Response};
use serde_json::json;

use crate::cli::WorkcopyAction;
use crate::contract::{self, PreviewRecord};
use crate::create::{self, BaseReader};
use crate::fingerprint::Kind;
use crate::limits::{self, Limits};
use crate::preview::{self, Change, Original};
use crate::run as run_check;
use crate::state::{Phase, Store, WorkCopy};
use crate::{fingerprint, git, head};
use ckptctl::commands::{unexpected, Ctx};
use ckptctl::output;
use ckptctl::EXIT_CONFLICTS;

pub fn run(ctx: &Ctx, action: WorkcopyAction) -> anyhow::Result<u8> {
    let store = Store::new(&ctx.g.data_dir()?);
    match action {
        WorkcopyAction::Create { base, name, path } => {
            create_cmd(ctx, &store, create::Options { base, name, path })
        }
        WorkcopyAction::List => list(ctx, &store),
        WorkcopyAction::Status { name } => {
            let wc = apply::settle(ctx, &store, pick(ctx, &store, name)?)?;
            status(ctx, &store, &wc)
        }
        WorkcopyAction::Diff { name } => diff(ctx, &store, &pick(ctx, &store, name)?),
        WorkcopyAction::Preview { name } => preview_cmd(ctx, &store, &pick(ctx, &store, name)?),
        WorkcopyAction::Apply {
            name,
            token,
            no_preview,
        } => apply::apply_cmd(
            ctx,
            &store,
            pick(ctx, &store, name)?,
            apply::Contract { token, no_preview },
        ),
        WorkcopyAction::Push {
            name,
            remote,
            branch,
        } => crate::push::push_cmd(ctx, &store, pick(ctx, &store, name)?, remote, branch),
        WorkcopyAction::Commit { name, message } => {
            apply::commit_cmd(ctx, &store, pick(ctx, &store, name)?, message)
        }
        WorkcopyAction::Export { name, out } => {
            export_cmd(ctx, &store, &pick(ctx, &store, name)?, &out)
        }
        WorkcopyAction::Run {
            name,
            timeout,
            command,
        } => {
            let wc = pick(ctx, &store, name)?;
            let timeout = match timeout {
                Some(secs) => Duration::from_secs(secs),
                None => limits::settings(&wc.original).workcopy_run_timeout(),
            };
            let timeout = (!timeout.is_zero()).then_some(timeout);
            run_cmd(ctx, &store, wc, timeout, &command)
        }
        WorkcopyAction::Remove { name, force } => {
            remove(ctx, &store, &pick(ctx, &store, name)?, force)
        }
    }
}

/// The named work copy, else the one whose copy holds the current (or -C)
/// directory, else the only one.
fn pick(ctx: &Ctx, store: &Store, name: Option<String>) -> anyhow::Result<WorkCopy> {
    if let Some(name) = name {
        return store.load(&name);
    }
    let all = store.list()?;
    let here = ctx.dir.canonicalize().unwrap_or_else(|_| ctx.dir.clone());
    if let Some(wc) = all.iter().find(|wc| here.starts_with(&wc.copy)) {
        return Ok(wc.clone());
    }
    match all.len() {
        1 => Ok(all.into_iter().next().expect("one")),
        0 => anyhow::bail!("no work copies (`ckptctl workcopy create`)"),
        n => anyhow::bail!("{n} work copies; name one (`ckptctl workcopy list`)"),
    }
}

fn create_cmd(ctx: &Ctx, store: &Store, opts: create::Options) -> anyhow::Result<u8> {
    let original = git::toplevel(&ctx.dir).unwrap_or_else(|| ctx.dir.clone());
    let wc = create::create(store, &original, opts)?;
    let watched = ctx.request(&Request::Watch {
        dir: wc.copy.as_path().into(),
        discover: false,
    });
    let watched = match watched {
        Ok(Response::Watched(w)) => w,
        Ok(other) => return Err(unexpected(other)),
        Err(e) => {
            // A copy whose turns are not recorded is not what was asked for.
            discard(store, &wc)?;
            return Err(e.context(format!(
                "watching the copy failed, so work copy '{}' was not kept",
                wc.name
            )));
        }
    };
    ctx.warn_if_degraded(&watched);
    if ctx.g.json {
        output::json(&wc)?;
    } else if !ctx.g.quiet {
        println!(
            "work copy '{}' of {} at {}",
            wc.name,
            wc.original.display(),
            wc.copy.display()
        );
        println!(
            "base {}{}, fingerprint {}; watched ({})",
            wc.base.as_str(),
            wc.base_commit
                .as_deref()
                .map(|c| format!(" {}", &c[..c.len().min(12)]))
                .unwrap_or_default(),
            &wc.base_fingerprint[..16],
            output::count(watched.scan.entries, "entry")
        );
        if !wc.left_out.is_empty() {
            println!("not copied, as ckpt does not capture them:");
            for (path, why) in &wc.left_out {
                println!("  {path}  ({why})");
            }
        }
    }
    Ok(0)
}

fn list(ctx: &Ctx, store: &Store) -> anyhow::Result<u8> {
    let all = store.list()?;
    if ctx.g.json {
        output::json(&json!({ "workcopies": all }))?;
        return Ok(0);
    }
    if !ctx.g.quiet {
        if all.is_empty() {
            println!("no work copies (`ckptctl workcopy create` makes one)");
        }
        for wc in &all {
            println!(
                "{}\t{}\t{}\t{}\t{}",
                wc.name,
                wc.state.as_str(),
                wc.base.as_str(),
                wc.copy.display(),
                wc.original.display()
            );
        }
    }
    Ok(0)
}

fn status(ctx: &Ctx, store: &Store, wc: &WorkCopy) -> anyhow::Result<u8> {
    let lim = Limits::of(&wc.original);
    let usage = limits::measure(&wc.copy)?;
    let over = usage.over(&lim);
    let moved = head::moved(wc)?;
    if let Some(over) = &over {
        // Not hashed: that is what the limits are for.
        if ctx.g.json {
            output::json(&json!({
                "workcopy": wc,
                "usage": usage,
                "limits": lim,
                "over_limits": over,
                "head_moved": moved,
            }))?;
        } else if !ctx.g.quiet {
            println!("{}: {}", wc.name, wc.state.as_str());
            println!(
                "the copy {} holds {over}: preview, export and apply refuse it",
                wc.copy.display()
            );
        }
        return Ok(0);
    }
    let base = store.load_manifest(&wc.name)?;
    let p = preview::preview(wc, &base)?;
    let last_run = wc.runs.last();
    let rewound = match wc.state {
        Phase::Applied | Phase::Committed | Phase::Pushed => apply::apply_turn_rewound(ctx, wc)?,
        _ => false,
    };
    let token = wc.preview.as_ref().map(|r| {
        let age = crate::state::now_secs().saturating_sub(r.issued);
        let left = limits::PREVIEW_LIFETIME.as_secs().saturating_sub(age);
        if r.used {
            "used".to_string()
        } else if left == 0 {
            "expired".to_string()
        } else {
            format!("valid {} more minute(s)", left.div_ceil(60))
        }
    });
    if ctx.g.json {
        output::json(&json!({
            "workcopy": wc,
            "apply_rewound": rewound,
            "changed": p.changes.len(),
            "conflicts": p.conflicts,
            "original_matches_base": p.original_matches_base(),
            "original_as_copy": p.count(Original::AsCopy),
            "original_head_moved_to": p.head_moved_to,
            "copy_fingerprint": p.copy_fingerprint,
            "usage": usage,
            "limits": lim,
            "head_moved": moved,
            "preview_token": token,
        }))?;
    } else if !ctx.g.quiet {
        println!("{}: {}", wc.name, wc.state.as_str());
        println!(
            "base {}{} of {}",
            wc.base.as_str(),
            wc.base_commit
                .as_deref()
                .map(|c| format!(" {c}"))
                .unwrap_or_default(),
            wc.original.display()
        );
        println!(
            "copy {}: {} changed",
            wc.copy.display(),
            output::count(p.changes.len() as u64, "path")
        );
        let as_copy = p.count(Original::AsCopy);
        if p.original_matches_base() {
            println!("the original still matches the base at those paths");
        } else if as_copy == p.changes.len() {
            println!("the original already holds the copy's version of every one of them");
        } else if as_copy > 0 {
            println!("the original holds the copy's version of {as_copy} of them");
        }
        if p.conflicts > 0 {
            println!(
                "{} of them changed in the original since the base (`workcopy preview`)",
                p.conflicts
            );
        }
        if let Some(now) = &p.head_moved_to {
            println!("the original's HEAD moved since the base, to {now}");
        }
        if let Some(m) = &moved {
            println!("{}", m.refusal(wc, "preview, export and apply are"));
        }
        println!(
            "the copy holds {} files, {} (limits {}, {})",
            usage.files,
            output::bytes(usage.bytes),
            lim.max_files,
            output::bytes(lim.max_bytes)
        );
        if let Some(t) = &token {
            println!("last preview's token: {t}");
        }
        if let Some(a) = &wc.apply {
            let turn = apply::applied_turn(wc);
            println!(
                "applied as turn {turn} in the original ({})",
                output::count(a.paths.len() as u64, "path")
            );
            if rewound {
                println!("that turn was rewound since: `ckptctl redo` there brings it back, `ckptctl workcopy apply` applies again");
            }
        }
        if let Some(c) = wc.commit.as_ref().and_then(|c| c.commit.as_deref()) {
            println!("committed as {c}");
        }
        if let Some(push) = &wc.push {
            let done = if wc.state == Phase::Pushed {
                "pushed"
            } else {
                "being pushed"
            };
            println!("{done} to {} {}", push.remote, push.branch);
        }
        if let Some(r) = last_run {
            println!(
                "last run: {} → {}; log {}",
                r.command.join(" "),
                r.outcome(),
                r.log.display()
            );
        }
    }
    Ok(0)
}

fn diff(ctx: &Ctx, store: &Store, wc: &WorkCopy) -> anyhow::Result<u8> {
    let base = store.load_manifest(&wc.name)?;
    let now = fingerprint::manifest(&wc.copy)?;
    let changed = preview::changed(&base, &now);
    let mut files = Vec::new();
    let mut reader = BaseReader::new(store, wc);
    for (path, b, c) in &changed {
        let old = match b {
            Some(e) if e.kind != Kind::Dir => Some(reader.bytes(path, e)?),
            _ => None,
        };
        let new = match c {
            Some(e) if e.kind == Kind::File => Some(
                std::fs::read(wc.copy.join(path))
                    .with_context(|| format!("reading {}", wc.copy.join(path).display()))?,
            ),
            Some(e) if e.kind == Kind::Symlink => Some(
                std::fs::read_link(wc.copy.join(path))
                    .map(|t| t.into_os_string().into_encoded_bytes())
                    .with_context(|| format!("reading {}", wc.copy.join(path).display()))?,
            ),
            _ => None,
        };
        files.push((path, b, c, unified(path, old.as_deref(), new.as_deref())));
    }
    if ctx.g.json {
        let docs: Vec<_> = files
            .iter()
            .map(
                |(path, b, c, text)| json!({ "path": path, "base": b, "copy": c, "unified": text }),
            )
            .collect();
        output::json(&json!({ "workcopy": wc.name, "files": docs }))?;
        return Ok(0);
    }
    let mut out = std::io::stdout().lock();
    for (path, b, c, text) in files {
        match text {
            Some(t) => out.write_all(t.as_bytes())?,
            None => match (b, c) {
                (Some(b), Some(c)) if b.kind == c.kind && b.sha256 == c.sha256 => {
                    writeln!(out, "# {path}: mode {:o} → {:o}", b.mode, c.mode)?
                }
                (_, Some(c)) if c.kind == Kind::Dir => writeln!(out, "# {path}/: directory added")?,
                (Some(b), None) if b.kind == Kind::Dir => {
                    writeln!(out, "# {path}/: directory deleted")?
                }
                _ => writeln!(out, "Binary files a/{path} and b/{path} differ")?,
            },
        }
    }
    Ok(0)
}

/// A unified diff of two versions (`None`: absent), or `None` if either is
/// not text or nothing differs in the bytes.
fn unified(path: &str, old: Option<&[u8]>, new: Option<&[u8]>) -> Option<String> {
    if old == new {
        return None;
    }
    let old_text = std::str::from_utf8(old.unwrap_or_default()).ok()?;
    let new_text = std::str::from_utf8(new.unwrap_or_default()).ok()?;
    let a = if old.is_some() {
        format!("a/{path}")
    } else {
        "/dev/null".into()
    };
    let b = if new.is_some() {
        format!("b/{path}")
    } else {
        "/dev/null".into()
    };
    let d = similar::TextDiff::from_lines(old_text, new_text);
    let mut text = format!("--- {a}\n+++ {b}\n");
    for hunk in d.unified_diff().context_radius(3).iter_hunks() {
        text.push_str(&hunk.to_string());
    }
    Some(text)
}

fn preview_cmd(ctx: &Ctx, store: &Store, wc: &WorkCopy) -> anyhow::Result<u8> {
    let lim = Limits::of(&wc.original);
    let usage = limits::check(&wc.copy, &lim, "preview")?;
    head::ensure_at_base(wc, "preview")?;
    let base = store.load_manifest(&wc.name)?;
    let now = fingerprint::manifest(&wc.copy)?;
    let frozen = crate::export::freeze(store, wc, &base, &now)?;
    let patch_sha256 = crate::export::sha256(&frozen.patch());
    let p = preview::preview_of(wc, &base, now)?;
    let tree = crate::tree::expected(wc, &frozen)?;
    let refused = p.conflicts > 0 || p.leaving_symlinks > 0;
    // A token only for what apply would take.
    let issued = if refused {
        None
    } else {
        let rec = PreviewRecord {
            token: contract::new_token()?,
            issued: crate::state::now_secs(),
            patch_sha256: patch_sha256.clone(),
            tree: tree.clone(),
            target: contract::target(&wc.original),
            used: false,
        };
        // Read again: a `workcopy run` may have recorded itself meanwhile.
        let mut fresh = store.load(&wc.name)?;
        fresh.preview = Some(rec.clone());
        store.save(&fresh)?;
        Some(rec)
    };
    if ctx.g.json {
        output::json(&json!({
            "workcopy": wc.name,
            "original": wc.original,
            "preview": p,
            "tree": tree,
            "patch_sha256": patch_sha256,
            "usage": usage,
            "limits": lim,
            "token": issued.as_ref().map(|r| &r.token),
            "expires": issued.as_ref().map(|r| r.issued + limits::PREVIEW_LIFETIME.as_secs()),
            "target": issued.as_ref().map(|r| &r.target),
        }))?;
    } else if !ctx.g.quiet {
        println!(
            "applying '{}' would change {} in {}:",
            wc.name,
            output::count(p.changes.len() as u64, "path"),
            wc.original.display()
        );
        for c in &p.changes {
            let what = match c.change {
                Change::Added => "added",
                Change::Modified => "modified",
                Change::Deleted => "deleted",
            };
            let note = match c.original {
                Original::AsBase => "",
                Original::AsCopy => "  (already so in the original)",
                Original::Conflict => "  CONFLICT: changed in the original since the base",
            };
            match &c.leaves_tree {
                Some(t) => println!(
                    "  {what:<8} {}{note}  REFUSED: symlink to {t} leaves the tree",
                    c.path
                ),
                None => println!("  {what:<8} {}{note}", c.path),
            }
        }
        if let Some(now) = &p.head_moved_to {
            println!("the original's HEAD moved since the base, to {now}");
        }
        if let Some(t) = &tree {
            println!("git tree after the apply: {t} (the base with the patch applied)");
        }
        println!(
            "patch SHA-256 {}; the copy holds {} files, {} (limits {}, {})",
            patch_sha256,
            usage.files,
            output::bytes(usage.bytes),
            lim.max_files,
            output::bytes(lim.max_bytes)
        );
        if let Some(r) = &issued {
            println!(
                "into branch {}{}",
                r.target.branch.as_deref().unwrap_or("(detached HEAD)"),
                r.target
                    .remote
                    .as_ref()
                    .map(|m| format!(", remote {} ({})", m.name, m.url))
                    .unwrap_or_default()
            );
            println!(
                "token {} (once, for {} minutes): `ckptctl workcopy apply {} --token {}`",
                r.token,
                limits::PREVIEW_LIFETIME.as_secs() / 60,
                wc.name,
                r.token
            );
        }
    }
    if !ctx.g.json {
        if p.leaving_symlinks > 0 {
            eprintln!(
                "ckptctl: {} leaving the tree: apply refuses them",
                output::count(p.leaving_symlinks as u64, "symlink")
            );
        }
        if p.conflicts > 0 {
            eprintln!(
                "ckptctl: {}: the original changed those paths since the base",
                output::count(p.conflicts as u64, "conflict")
            );
        }
    }
    if refused {
        return Ok(EXIT_CONFLICTS);
    }
    Ok(0)
}

fn run_cmd(
    ctx: &Ctx,
    store: &Store,
    wc: WorkCopy,
    timeout: Option<Duration>,
    command: &[std::ffi::OsString],
) -> anyhow::Result<u8> {
    let log = store.files(&wc.name).join("logs").join(format!(
        "run-{}-{}.log",
        crate::state::now_secs(),
        std::process::id()
    ));
    let r = run_check::run(&wc.copy, command, timeout, &log)?;
    // Read again: the state may have moved while the check ran.
    let mut wc = store.load(&wc.name)?;
    wc.runs.push(r.clone());
    store.save(&wc)?;
    if ctx.g.json {
        output::json(&r)?;
    } else if !ctx.g.quiet {
        println!(
            "{} → {}; log {}",
            r.command.join(" "),
            r.outcome(),
            r.log.display()
        );
    }
    Ok(if r.timed_out {
        124
    } else if r.interrupted {
        130
    } else {
        match (r.exit_code, r.signal) {
            (Some(c), _) => c.clamp(0, 255) as u8,
            (None, Some(s)) => (128 + s).clamp(0, 255) as u8,
            _ => 1,
        }
    })
}

fn export_cmd(ctx: &Ctx, store: &Store, wc: &WorkCopy, out: &Path) -> anyhow::Result<u8> {
    limits::check(&wc.copy, &Limits::of(&wc.original), "export")?;
    head::ensure_at_base(wc, "export")?;
    let out = ckptctl::commands::absolute(out)?;
    let existed = out.exists();
    std::fs::create_dir_all(&out)
        .with_context(|| format!("creating the export directory {}", out.display()))?;
    let m = match crate::export::export(store, wc, &out) {
        Ok(m) => m,
        Err(e) => {
            if !existed {
                // Only if still empty: nothing of ours or anyone's is lost.
                let _ = std::fs::remove_dir(&out);
            }
            return Err(e);
        }
    };
    if ctx.g.json {
        output::json(&json!({ "out": out, "manifest": m }))?;
    } else if !ctx.g.quiet {
        println!(
            "exported work copy '{}' ({}) to {}",
            wc.name,
            output::count(m.paths.len() as u64, "path"),
            out.display()
        );
        println!("result fingerprint {}", m.result_fingerprint);
        for s in &m.skipped {
            println!("  not in the patch: {}: {}", s.path, s.reason);
        }
    }
    Ok(0)
}

fn remove(ctx: &Ctx, store: &Store, wc: &WorkCopy, force: bool) -> anyhow::Result<u8> {
    // Its changes are in no tree but the copy's while it is not applied, or
    // its apply was rewound.
    let unapplied = match wc.state {
        Phase::Ready => true,
        Phase::Applied | Phase::Committed | Phase::Pushed => apply::apply_turn_rewound(ctx, wc)?,
        Phase::Applying | Phase::Committing | Phase::Pushing => false,
    };
    if !force && unapplied && wc.copy.exists() {
        let base = store.load_manifest(&wc.name)?;
        let now = fingerprint::manifest(&wc.copy)?;
        let n = preview::changed(&base, &now).len();
        anyhow::ensure!(
            n == 0,
            "work copy '{}' has {n} changed paths not applied; `ckptctl workcopy diff {}` shows them, --force deletes them",
            wc.name,
            wc.name
        );
    }
    if wc.copy.exists() {
        match ctx.request(&Request::Unwatch {
            dir: wc.copy.as_path().into(),
            drop_data: true,
        }) {
            Ok(Response::Unwatched(_)) => {}
            Ok(other) => return Err(unexpected(other)),
            Err(e) if force => eprintln!("ckptctl: warning: {}", output::error_message(&e)),
            Err(e) => {
                return Err(e.context(format!(
                    "unwatching {} (--force removes it anyway)",
                    wc.copy.display()
                )))
            }
        }
    }
    if wc.apply.is_some() {
        // Its applies' turns were kept for it (gc keeps a work copy's
        // apply undoable and inspectable while the copy is kept).
        match ctx.request(&Request::ReleaseWorkcopy {
            dir: wc.original.as_path().into(),
            name: wc.name.clone(),
        }) {
            Ok(Response::Released(_)) => {}
            Ok(other) => return Err(unexpected(other)),
            Err(e) if force => eprintln!(
                "ckptctl: warning: the original {} keeps the apply's turn past retention: {}",
                wc.original.display(),
                output::error_message(&e)
            ),
            Err(e) => {
                return Err(e.context(format!(
                    "releasing the apply's turns in {} (--force removes it anyway)",
                    wc.original.display()
                )))
            }
        }
    }
    discard(store, wc)?;
    if ctx.g.json {
        output::json(&json!({ "removed": wc.name, "copy": wc.copy }))?;
    } else if !ctx.g.quiet {
        println!("removed work copy '{}' ({})", wc.name, wc.copy.display());
    }
    Ok(0)
}

/// Deletes the copy, the files kept with it, and its state file last.
fn discard(store: &Store, wc: &WorkCopy) -> anyhow::Result<()> {
    if wc.copy.exists() {
        remove_tree(&wc.copy)?;
    }
    let files = store.files(&wc.name);
    if files.exists() {
        remove_tree(&files)?;
    }
    let state = store.state_file(&wc.name);
    std::fs::remove_file(&state).with_context(|| format!("removing {}", state.display()))
}

/// Removes a tree, making read-only directories writable first.
fn remove_tree(dir: &Path) -> anyhow::Result<()> {
    if std::fs::remove_dir_all(dir).is_ok() {
        return Ok(());
    }
    use std::os::unix::fs::PermissionsExt;
    let (paths, _) = ckpt_core::captured_paths(dir, &[]);
    for p in paths {
        let abs = dir.join(p.as_path());
        if abs.symlink_metadata().map(|m| m.is_dir()).unwrap_or(false) {
            let _ = std::fs::set_permissions(&abs, std::fs::Permissions::from_mode(0o700));
        }
    }
    std::fs::remove_dir_all(dir).with_context(|| format!("removing {}", dir.display()))
}
