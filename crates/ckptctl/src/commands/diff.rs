//! `ckptctl diff N [PATH…]`: unified diff of a turn; binary files named.

use std::io::Write;
use std::path::PathBuf;

use ckpt_proto::{ChangeKind, DiffReply, FileDiff, Request, WirePath};
use clap::Args;

use super::Ctx;
use crate::cli::turn_id;
use crate::output;
use crate::term;

/// The diff of a turn (only `paths`, when given): the document `--json` prints.
pub fn query(ctx: &Ctx, turn: i64, paths: Vec<WirePath>) -> anyhow::Result<DiffReply> {
    ctx.reply(&Request::Diff(ckpt_proto::Diff {
        dir: ctx.wire_dir(),
        turn,
        paths,
    }))
}

/// `ckptctl diff`'s arguments.
#[derive(Args, Debug)]
pub struct DiffArgs {
    /// A turn id, as `ckptctl log` lists them.
    #[arg(value_parser = turn_id)]
    pub turn: i64,
    /// Only these paths (and what is below them).
    pub paths: Vec<PathBuf>,
    #[command(flatten)]
    pub format: Format,
}

/// What `diff` prints instead of the patch (git's flags).
#[derive(Args, Debug, Clone, Copy, Default)]
#[group(multiple = false)]
pub struct Format {
    /// Lines added and removed per file, and a total, instead of the patch.
    #[arg(long)]
    pub stat: bool,
    /// Only the names of the changed files.
    #[arg(long)]
    pub name_only: bool,
    /// The names with how each changed: A, M, D, R100 (renamed, percent
    /// similar), S (not captured).
    #[arg(long)]
    pub name_status: bool,
}

pub fn run(ctx: &Ctx, args: DiffArgs) -> anyhow::Result<u8> {
    let DiffArgs {
        turn,
        paths,
        format,
    } = args;
    let paths = paths
        .iter()
        .map(|p| ctx.wire_path(p))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let d = query(ctx, turn, paths)?;
    if ctx.g.json {
        output::json(&d)?;
        return Ok(0);
    }
    let mut out = ctx.paged();
    if format.name_only {
        for f in &d.files {
            writeln!(out, "{}", f.path.quoted())?;
        }
    } else if format.name_status {
        for f in &d.files {
            let (letter, style) = status_letter(f);
            match &f.from {
                Some(from) => writeln!(
                    out,
                    "{}\t{}\t{}",
                    term::paint(style, letter),
                    from.path.quoted(),
                    f.path.quoted()
                )?,
                None => writeln!(out, "{}\t{}", term::paint(style, letter), f.path.quoted())?,
            }
        }
    } else if format.stat {
        stat(&mut out, &d.files)?;
    } else {
        patch(&mut out, &d.files)?;
    }
    out.finish()?;
    Ok(0)
}

/// git's `--name-status` letter of a file, and its colour.
fn status_letter(f: &FileDiff) -> (String, anstyle::Style) {
    match (f.kind, &f.from) {
        (ChangeKind::Renamed, Some(from)) => (format!("R{:03}", from.similarity), term::CHANGED),
        (ChangeKind::Added, _) => ("A".into(), term::ADDED),
        (ChangeKind::Deleted, _) => ("D".into(), term::REMOVED),
        (ChangeKind::Skipped, _) => ("S".into(), term::DIM),
        _ => ("M".into(), term::CHANGED),
    }
}

/// The name `--stat` shows: `old => new` for a rename.
fn stat_name(f: &FileDiff) -> String {
    match &f.from {
        Some(from) => format!("{} => {}", from.path.quoted(), f.path.quoted()),
        None => f.path.quoted(),
    }
}

/// Lines added and removed, from the unified text (headers excluded).
fn line_counts(unified: &str) -> (u64, u64) {
    let (mut plus, mut minus) = (0, 0);
    let mut in_hunk = false;
    for line in unified.lines() {
        if line.starts_with("@@") {
            in_hunk = true;
        } else if in_hunk && line.starts_with('+') {
            plus += 1;
        } else if in_hunk && line.starts_with('-') {
            minus += 1;
        }
    }
    (plus, minus)
}

/// A `--stat` row: the name, lines added and removed (none for binary).
type StatRow<'a> = (String, Option<(u64, u64)>, &'a FileDiff);

/// git's `--stat`: ` path | 3 ++-`, scaled to fit, then a total line.
fn stat(out: &mut impl Write, files: &[FileDiff]) -> anyhow::Result<()> {
    const BAR: u64 = 40;
    let rows: Vec<StatRow> = files
        .iter()
        .map(|f| (stat_name(f), f.unified.as_deref().map(line_counts), f))
        .collect();
    let width = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(0);
    let most = rows
        .iter()
        .filter_map(|r| r.1.map(|(p, m)| p + m))
        .max()
        .unwrap_or(0);
    let num_width = most.to_string().len();
    let (mut total_plus, mut total_minus) = (0, 0);
    for (name, counts, f) in &rows {
        let pad = width - name.chars().count();
        match counts {
            Some((plus, minus)) => {
                total_plus += plus;
                total_minus += minus;
                let n = plus + minus;
                // Scaled as git does: the biggest change fills the bar.
                let (bp, bm) = if most > BAR {
                    let scale = |x: u64| if x == 0 { 0 } else { (x * BAR / most).max(1) };
                    (scale(*plus), scale(*minus))
                } else {
                    (*plus, *minus)
                };
                let bar = match n {
                    0 => String::new(),
                    _ => format!(
                        " {}{}",
                        term::paint(term::ADDED, "+".repeat(bp as usize)),
                        term::paint(term::REMOVED, "-".repeat(bm as usize)),
                    ),
                };
                writeln!(out, " {name}{:pad$} | {n:>num_width$}{bar}", "")?;
            }
            None => {
                let what = f.note.as_deref().unwrap_or("no text diff");
                let what = match what.strip_prefix("binary file (") {
                    Some(sizes) => format!("Bin {}", sizes.trim_end_matches(')')),
                    None => what.to_string(),
                };
                writeln!(out, " {name}{:pad$} | {what}", "")?;
            }
        }
    }
    let mut total = output::count(files.len() as u64, "file");
    total.push_str(" changed");
    if total_plus > 0 || total_minus == 0 {
        total.push_str(&format!(
            ", {total_plus} insertion{}(+)",
            if total_plus == 1 { "" } else { "s" }
        ));
    }
    if total_minus > 0 || total_plus == 0 {
        total.push_str(&format!(
            ", {total_minus} deletion{}(-)",
            if total_minus == 1 { "" } else { "s" }
        ));
    }
    writeln!(out, " {total}")?;
    Ok(())
}

/// A file's mode as git writes it (`100755`).
fn git_mode(m: u32) -> String {
    format!("{:o}", 0o100000 | (m & 0o7777))
}

/// The patch, git's way: a `diff --git` line, the mode and rename lines,
/// then the unified diff, coloured on a terminal.
fn patch(out: &mut impl Write, files: &[FileDiff]) -> anyhow::Result<()> {
    for f in files {
        let old = f.from.as_ref().map_or(&f.path, |r| &r.path);
        let header = format!("diff --git a/{} b/{}", old, f.path);
        writeln!(out, "{}", term::paint(term::META, header))?;
        if let Some(m) = &f.mode {
            writeln!(
                out,
                "{}",
                term::paint(term::META, format!("old mode {}", git_mode(m.old)))
            )?;
            writeln!(
                out,
                "{}",
                term::paint(term::META, format!("new mode {}", git_mode(m.new)))
            )?;
        }
        if let Some(r) = &f.from {
            for line in [
                format!("similarity index {}%", r.similarity),
                format!("rename from {}", r.path),
                format!("rename to {}", f.path),
            ] {
                writeln!(out, "{}", term::paint(term::META, line))?;
            }
        }
        match &f.unified {
            Some(text) => {
                if let Some(note) = &f.note {
                    writeln!(out, "# {}: {note}", f.path.quoted())?;
                }
                for line in text.lines() {
                    let style = if line.starts_with("+++") || line.starts_with("---") {
                        term::META
                    } else if line.starts_with("@@") {
                        term::HUNK
                    } else if line.starts_with('+') {
                        term::ADDED
                    } else if line.starts_with('-') {
                        term::REMOVED
                    } else {
                        anstyle::Style::new()
                    };
                    writeln!(out, "{}", term::paint(style, line))?;
                }
            }
            None => {
                let note = f.note.as_deref().unwrap_or("no text diff");
                if let Some(sizes) = note.strip_prefix("binary file") {
                    let a = match f.kind {
                        ChangeKind::Added => "/dev/null".to_string(),
                        _ => format!("a/{old}"),
                    };
                    let b = match f.kind {
                        ChangeKind::Deleted => "/dev/null".to_string(),
                        _ => format!("b/{}", f.path),
                    };
                    let sizes = sizes.trim().trim_start_matches('(').trim_end_matches(')');
                    writeln!(out, "Binary files {a} and {b} differ ({sizes})")?;
                } else {
                    writeln!(out, "# {}: {note}; no diff", f.path.quoted())?;
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_counts_skip_the_headers() {
        let u = "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n-a\n+b\n+c\n ---\n";
        assert_eq!(line_counts(u), (2, 1));
    }
}
