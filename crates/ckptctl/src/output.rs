//! Printing: JSON documents, human tables, sizes, times, warnings.

use ckpt_proto::{
    Capture, Caveats, Counts, Effect, Gap, Integrity, PartialRewind, RelPath, RewindKind,
    RewindRecord, State, TurnEntry, TurnInfo, TurnStatus, WirePath,
};
use std::io::Write;

use serde::Serialize;

use crate::term;

/// Prints one JSON document on stdout.
pub fn json<T: Serialize>(value: &T) -> anyhow::Result<()> {
    println!("{}", json_text(value)?);
    Ok(())
}

/// One JSON document as `--json` prints it.
pub fn json_text<T: Serialize>(value: &T) -> anyhow::Result<String> {
    Ok(serde_json::to_string_pretty(value)?)
}

/// A failure as the CLI reports it: the error and its causes, on one line.
pub fn error_message(e: &anyhow::Error) -> String {
    format!("{e:#}")
}

/// The warning that capture for `project` is degraded, on stderr
/// ([`Ctx::warn_if_degraded`](crate::commands::Ctx::warn_if_degraded)
/// decides when).
pub fn warn_degraded(project: &WirePath, reason: &str) {
    eprintln!("ckptctl: warning: capture for {project} is degraded: {reason}");
}

pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

pub fn duration(secs: u64) -> String {
    let (d, h, m, s) = (secs / 86400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    if d > 0 {
        format!("{d}d {h}h")
    } else if h > 0 {
        format!("{h}h {m}m")
    } else if m > 0 {
        format!("{m}m {s}s")
    } else {
        format!("{s}s")
    }
}

/// Local wall-clock time of a Unix timestamp in nanoseconds.
pub fn time(ns: i64) -> String {
    let secs = ns.div_euclid(1_000_000_000) as libc::time_t;
    // SAFETY: localtime_r writes only into `tm`, which lives on our stack.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let ok = unsafe { !libc::localtime_r(&secs, &mut tm).is_null() };
    if !ok {
        return format!("@{secs}");
    }
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec
    )
}

pub fn status(s: TurnStatus) -> &'static str {
    match s {
        TurnStatus::Open => "open",
        TurnStatus::Closed => "closed",
        TurnStatus::Rewound => "rewound",
    }
}

/// A turn's state as `log` shows it: its status, or how a rewind left it
/// in part (`partly rewound`: some of its paths restored by `--path`, the
/// turn live; `rewound, 2 left`: rewound with paths left as they were).
pub fn turn_state(t: &TurnInfo) -> String {
    match (&t.partial, t.status) {
        (Some(p), TurnStatus::Rewound) => format!("rewound, {} left", p.left.len()),
        (Some(_), _) => "partly rewound".to_string(),
        (None, s) => status(s).to_string(),
    }
}

/// Who made a turn, in a few characters: its session (shortened), `apply`
/// for a work copy's apply, `-` for the default session.
pub fn session_of(t: &TurnInfo) -> String {
    if ckpt_agents::workcopy_turn::is_apply(t) {
        return "apply".to_string();
    }
    match t.session.as_deref() {
        None => "-".to_string(),
        Some(s) if s.chars().count() > 12 => {
            let head: String = s.chars().take(11).collect();
            format!("{head}…")
        }
        Some(s) => s.to_string(),
    }
}

/// Turn or rewind ids as a list: `3, 4`.
pub fn ids(list: &[i64]) -> String {
    list.iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// What rewinds did to a turn in part, a line each (`show`).
pub fn partial(out: &mut impl Write, p: &PartialRewind) -> std::io::Result<()> {
    let by = ids(&p.rewinds);
    if !p.rewound.is_empty() {
        let paths: Vec<String> = p.rewound.iter().map(RelPath::quoted).collect();
        writeln!(
            out,
            "partly rewound by rewind {by} (`ckptctl rewinds`): {} restored; its other paths are as the turn left them",
            paths.join(", ")
        )?;
    }
    for s in &p.left {
        writeln!(
            out,
            "left as it was by the rewind: {}  ({})",
            s.path.quoted(),
            s.reason
        )?;
    }
    Ok(())
}

/// What `log` marks a turn with before its label: a capture that is not
/// complete, commands with effects outside the tree.
pub fn marks(t: &TurnInfo) -> String {
    let mut m = String::new();
    match t.integrity.capture {
        Capture::Complete => {}
        Capture::Rescanned => m.push_str("[rescanned] "),
        Capture::Partial => m.push_str("[partial capture] "),
    }
    let mut kinds: Vec<&str> = t.effects.iter().map(|e| e.category.as_str()).collect();
    kinds.dedup();
    if !kinds.is_empty() {
        m.push_str(&format!("[outside: {}] ", kinds.join(", ")));
    }
    m
}

/// A command as a line quotes it: one line, cut when long.
fn command_text(c: &str) -> String {
    const MAX: usize = 200;
    let one: String = c.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() > MAX {
        format!("{}…", one.chars().take(MAX).collect::<String>())
    } else {
        one
    }
}

/// `turn 7 ran `git push --force origin main`: a rewind does not undo that`.
pub fn effect(e: &Effect) -> String {
    format!(
        "turn {} ran `{}`: a rewind does not undo that ({}: {})",
        e.turn,
        command_text(&e.command),
        e.category.as_str(),
        e.reason
    )
}

/// One gap of a turn's capture, as a line.
fn gap(g: &Gap) -> String {
    let what = match &g.path {
        Some(p) => p.quoted(),
        None => g.kind.as_str().replace('_', " "),
    };
    format!("{what}: {}", g.detail)
}

/// A turn's capture, for `show`: complete, after a rescan, or partial with
/// what a rewind cannot restore.
pub fn integrity(out: &mut impl Write, i: &Integrity) -> std::io::Result<()> {
    match i.capture {
        Capture::Complete => writeln!(out, "capture: complete"),
        Capture::Rescanned => writeln!(
            out,
            "capture: complete after {} (events were lost; a full scan found every change)",
            count(u64::from(i.rescans), "rescan")
        ),
        Capture::Partial => {
            writeln!(out, "capture: PARTIAL; a rewind cannot restore:")?;
            for g in &i.gaps {
                writeln!(out, "  {}", gap(g))?;
            }
            Ok(())
        }
    }
}

/// What a rewind does not undo and cannot restore, said before its plan.
pub fn caveats(out: &mut impl Write, c: &Caveats) -> std::io::Result<()> {
    for e in &c.effects {
        writeln!(out, "{}", effect(e))?;
    }
    for p in &c.partial_capture {
        for g in &p.gaps {
            writeln!(
                out,
                "turn {}'s capture is partial: a rewind cannot restore {}",
                p.turn,
                gap(g)
            )?;
        }
    }
    Ok(())
}

/// `1 path`, `2 paths`, `1 entry`, `3 entries`.
pub fn count(n: u64, noun: &str) -> String {
    // English's regular plurals: entry → entries, watch → watches.
    let sibilant = ["s", "x", "z", "ch", "sh"]
        .iter()
        .any(|e| noun.ends_with(e));
    match (n, noun.strip_suffix('y')) {
        (1, _) => format!("1 {noun}"),
        (n, Some(stem)) => format!("{n} {stem}ies"),
        (n, None) if sibilant => format!("{n} {noun}es"),
        (n, None) => format!("{n} {noun}s"),
    }
}

/// What a rewind or a redo did and to which turns: "rewind 3 to before
/// turn 6 (turns 6, 7)", "redo 4 of rewind 3 (turns 6, 7)"; without
/// `numbered`, no id of its own ("rewind to before turn 6 (…)").
pub fn rewind_what(r: &RewindRecord, numbered: bool) -> String {
    let turns = ids(&r.turns);
    let id = if numbered {
        format!(" {}", r.id)
    } else {
        String::new()
    };
    match (r.kind(), r.redoes) {
        (RewindKind::Redo, Some(of)) => format!("redo{id} of rewind {of} (turns {turns})"),
        _ => format!("rewind{id} to before turn {} (turns {turns})", r.turn),
    }
}

pub fn counts(c: &Counts) -> String {
    let mut s = format!("+{} ~{} -{}", c.added, c.modified, c.deleted);
    if c.skipped > 0 {
        s.push_str(&format!(" !{}", c.skipped));
    }
    s
}

/// ", 2 slop-ledger entries" after a turn's counts; nothing for none.
pub fn ledger_entries(n: u64) -> String {
    match n {
        0 => String::new(),
        1 => ", 1 slop-ledger entry".to_string(),
        n => format!(", {n} slop-ledger entries"),
    }
}

pub fn counts_long(c: &Counts) -> String {
    format!(
        "{} added, {} modified, {} deleted, {} skipped",
        c.added, c.modified, c.deleted, c.skipped
    )
}

/// A short description of a state: `file 1.2 KiB`, `absent`, `dir`, …
pub fn state(s: &State) -> String {
    match s {
        State::Absent => "absent".into(),
        State::File { size, hash, .. } => {
            format!("file {} ({})", bytes(*size), &hash.to_hex()[..12])
        }
        State::Dir { .. } => "directory".into(),
        State::Symlink { target } => {
            format!("symlink -> {}", String::from_utf8_lossy(target))
        }
        State::Skipped { reason } => format!("not captured ({reason})"),
    }
}

/// How many paths a long listing shows before it summarises (unless
/// `-v`); a listing of up to [`WHOLE`] paths is shown whole.
pub const LISTED: usize = 10;
pub const WHOLE: usize = 20;

/// The part of `list` to print: all of it with `verbose` or when short,
/// else the first [`LISTED`]; and how many are left out.
pub fn listed<T>(list: &[T], verbose: bool) -> (&[T], usize) {
    listed_of(list, list.len(), verbose)
}

/// As [`listed`], of a listing of `total` paths of which `list` holds the
/// first (at least [`WHOLE`] of them, or all).
pub fn listed_of<T>(list: &[T], total: usize, verbose: bool) -> (&[T], usize) {
    if verbose || total <= WHOLE {
        (list, total.saturating_sub(list.len()))
    } else {
        let shown = &list[..LISTED.min(list.len())];
        (shown, total - shown.len())
    }
}

/// How many paths to ask the daemon to list, for a listing printed by
/// [`listed_of`]: all for `--json` or `-v`, none when nothing is printed
/// (`-q`, a hook call), else [`WHOLE`]: a 50,000-file rewind lists its
/// actions in 21 MB of JSON, and a turn-end's whole list took its client
/// to 78.5 MiB.
pub fn to_list(json: bool, quiet: bool, verbose: bool) -> Option<u64> {
    if json || verbose {
        None
    } else if quiet {
        Some(0)
    } else {
        Some(WHOLE as u64)
    }
}

/// `… and 2,812 more: HINT` after a summarised listing.
pub fn more(out: &mut impl Write, left_out: usize, hint: &str) -> std::io::Result<()> {
    if left_out > 0 {
        writeln!(out, "  … and {} more: {hint}", thousands(left_out as u64))?;
    }
    Ok(())
}

/// `2812` as `2,812`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// One line per entry of a turn: change letter, path, skip reason, and
/// whether it is shared with another session's turn; a long list is cut
/// to its first paths unless `verbose` (`show TURN -v` lists them all).
pub fn entries(
    out: &mut impl Write,
    list: &[TurnEntry],
    turn: i64,
    verbose: bool,
) -> std::io::Result<()> {
    entries_of(out, list, list.len(), turn, verbose)
}

/// As [`entries`], of a turn of `total` entries of which `list` holds the
/// first (see [`listed_of`]).
pub fn entries_of(
    out: &mut impl Write,
    list: &[TurnEntry],
    total: usize,
    turn: i64,
    verbose: bool,
) -> std::io::Result<()> {
    let (shown, left_out) = listed_of(list, total, verbose);
    for e in shown {
        let (letter, style) = match e.change() {
            Some(ckpt_proto::ChangeKind::Added) => ("A", term::ADDED),
            Some(ckpt_proto::ChangeKind::Modified | ckpt_proto::ChangeKind::Renamed) => {
                ("M", term::CHANGED)
            }
            Some(ckpt_proto::ChangeKind::Deleted) => ("D", term::REMOVED),
            Some(ckpt_proto::ChangeKind::Skipped) => ("S", term::WARN),
            None => ("*", term::DIM),
        };
        let dir = matches!(e.post.as_ref().unwrap_or(&e.pre), State::Dir { .. })
            || (matches!(e.pre, State::Dir { .. }) && matches!(e.post, Some(State::Absent)));
        let slash = if dir { "/" } else { "" };
        let reason = [Some(&e.pre), e.post.as_ref()]
            .into_iter()
            .flatten()
            .find_map(|s| match s {
                State::Skipped { reason } => Some(format!("  ({reason})")),
                _ => None,
            })
            .unwrap_or_default();
        let shared = if e.shared {
            "  (shared: another session's turn was open too)"
        } else {
            ""
        };
        writeln!(
            out,
            "  {}  {}{slash}{reason}{shared}",
            term::paint(style, letter),
            e.path.quoted()
        )?;
    }
    more(out, left_out, &format!("`ckptctl show {turn} -v`"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The daemon lists what is printed: every path for `--json` and
    /// `-v`, none for `-q`, else enough for a summarised listing.
    #[test]
    fn the_listing_asked_for_is_what_is_printed() {
        assert_eq!(to_list(true, true, false), None);
        assert_eq!(to_list(false, false, true), None);
        assert_eq!(to_list(false, true, false), Some(0));
        assert_eq!(to_list(false, false, false), Some(WHOLE as u64));
        let total = 30;
        let first: Vec<u32> = (0..WHOLE as u32).collect();
        assert_eq!(listed_of(&first, total, false), (&first[..LISTED], 20));
    }

    /// Counts read as English: "1 path", "3 paths", "2 entries" (issue 31
    /// item 36 found "1 paths").
    #[test]
    fn counts_read_as_english() {
        assert_eq!(count(1, "path"), "1 path");
        assert_eq!(count(0, "path"), "0 paths");
        assert_eq!(count(3, "path"), "3 paths");
        assert_eq!(count(1, "entry"), "1 entry");
        assert_eq!(count(2, "entry"), "2 entries");
        assert_eq!(count(2, "watch"), "2 watches");
        assert_eq!(count(1, "watch"), "1 watch");
        assert_eq!(count(3, "box"), "3 boxes");
    }

    #[test]
    fn long_listings_are_cut_to_their_first_paths() {
        let list: Vec<u32> = (0..2822).collect();
        assert_eq!(listed(&list, false), (&list[..LISTED], 2812));
        assert_eq!(listed(&list, true), (&list[..], 0));
        assert_eq!(listed(&list[..WHOLE], false), (&list[..WHOLE], 0));
        assert_eq!(thousands(2812), "2,812");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
