//! `report.md`: the range for a person to read — turns, what happened to
//! each path, what the patch could not carry, ledger entries.

use std::fmt::Write;
use std::path::Path;

use super::{ExportManifest, ExportRange};
use crate::state::State;

/// What happened to a path, in words.
fn what(pre: &State, post: &State) -> String {
    use State::*;
    match (pre, post) {
        (Skipped { .. }, _) | (_, Skipped { .. }) => "not captured".into(),
        (Absent, Absent) => "created and removed".into(),
        (Absent, File { .. }) => "added".into(),
        (Absent, Dir { .. }) => "added (directory)".into(),
        (Absent, Symlink { .. }) => "added (symlink)".into(),
        (_, Absent) => "deleted".into(),
        (
            File {
                hash: h1, mode: m1, ..
            },
            File {
                hash: h2, mode: m2, ..
            },
        ) => match (h1 == h2, m1 == m2) {
            (true, true) => "unchanged".into(),
            (false, true) => "modified".into(),
            (true, false) => format!("mode {:o} → {:o}", m1 & 0o7777, m2 & 0o7777),
            (false, false) => {
                format!("modified, mode {:o} → {:o}", m1 & 0o7777, m2 & 0o7777)
            }
        },
        (Symlink { target: a }, Symlink { target: b }) if a == b => "unchanged".into(),
        (Symlink { .. }, Symlink { .. }) => "symlink retargeted".into(),
        (Dir { mode: a }, Dir { mode: b }) if a == b => "unchanged".into(),
        (Dir { mode: a }, Dir { mode: b }) => format!("mode {:o} → {:o}", a, b),
        (_, Symlink { .. }) => "replaced by a symlink".into(),
        (_, Dir { .. }) => "replaced by a directory".into(),
        (_, File { .. }) => "replaced by a file".into(),
    }
}

/// UTC `YYYY-MM-DD HH:MM:SS` of nanoseconds since the epoch.
pub(crate) fn utc(ns: i64) -> String {
    let [y, m, d, h, mi, s] = utc_fields(ns.div_euclid(1_000_000_000));
    format!("{y:04}-{m:02}-{d:02} {h:02}:{mi:02}:{s:02} UTC")
}

/// Year, month, day, hour, minute, second (UTC) of seconds since the
/// epoch; the client names files with them too.
pub fn utc_fields(secs: i64) -> [i64; 6] {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    [y, m, d, rem / 3600, rem % 3600 / 60, rem % 60]
}

/// Markdown table cells hold no `|` or line breaks.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace(['\n', '\r'], " ")
}

pub(crate) fn render(root: &Path, range: &ExportRange, m: &ExportManifest) -> String {
    let mut r = String::new();
    let _ = writeln!(r, "# ckpt export: turns {}..{}\n", m.from, m.to);
    let _ = writeln!(r, "Project: `{}`  ", root.display());
    let _ = writeln!(r, "ckpt {}  ", m.tool_version);
    let _ = writeln!(r, "Base fingerprint: `{}`  ", m.base_fingerprint);
    let _ = writeln!(r, "Result fingerprint: `{}`  ", m.result_fingerprint);
    let _ = writeln!(
        r,
        "Live tree matches the result: {}\n",
        if m.live_matches_result { "yes" } else { "no" }
    );
    let _ = writeln!(r, "## Turns\n");
    let _ = writeln!(r, "| turn | label | agent | session | started | ended |");
    let _ = writeln!(r, "|---|---|---|---|---|---|");
    for t in &range.turns {
        let opt = |s: &Option<String>| cell(s.as_deref().unwrap_or("—"));
        let _ = writeln!(
            r,
            "| {} | {} | {} | {} | {} | {} |",
            t.id,
            opt(&t.label),
            opt(&t.agent),
            opt(&t.session),
            utc(t.started_ns),
            t.ended_ns.map_or("—".into(), utc),
        );
    }
    let _ = writeln!(r, "\n## Paths\n");
    if range.paths.is_empty() {
        let _ = writeln!(r, "No path was touched.");
    } else {
        let _ = writeln!(r, "| path | what happened |");
        let _ = writeln!(r, "|---|---|");
        for p in &range.paths {
            let _ = writeln!(
                r,
                "| `{}` | {} |",
                cell(&p.path.display()),
                what(&p.pre, &p.post)
            );
        }
    }
    let _ = writeln!(r, "\n## Skipped\n");
    if m.skipped.is_empty() {
        let _ = writeln!(r, "Nothing: the patch carries every touched path.");
    } else {
        let _ = writeln!(
            r,
            "These are not in the patch (nor, if not captured, in the ZIP):\n"
        );
        for s in &m.skipped {
            let _ = writeln!(r, "- `{}`: {}", s.path, s.reason);
        }
    }
    if !range.between.is_empty() {
        let _ = writeln!(r, "\n## Changed between turns\n");
        let _ = writeln!(
            r,
            "These changed outside any turn between two turns of the range; the export includes that change:\n"
        );
        for (p, a, b) in &range.between {
            let _ = writeln!(r, "- `{}` between turns {a} and {b}", p.display());
        }
    }
    let _ = writeln!(r, "\n## Ledger\n");
    if range.ledger.is_empty() {
        let _ = writeln!(r, "No slop-ledger entry was recorded in these turns.");
    } else {
        let _ = writeln!(
            r,
            "| id | turn | path | bucket | severity | status | note |"
        );
        let _ = writeln!(r, "|---|---|---|---|---|---|---|");
        for e in &range.ledger {
            let (id, turn, status, e) = (e.id, e.turn, e.status, &e.body);
            let span = e
                .span
                .map_or(String::new(), |s| format!(":{}-{}", s.start, s.end));
            let _ = writeln!(
                r,
                "| #{} | {} | `{}{}` | {} | {} | {} | {} |",
                id,
                turn.map_or("—".into(), |t| t.to_string()),
                cell(&e.path.display()),
                span,
                e.bucket.as_str(),
                e.severity.as_str(),
                status.as_str(),
                cell(&e.note),
            );
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_utc_calendar_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(
            utc(1_709_210_096 * 1_000_000_000),
            "2024-02-29 12:34:56 UTC"
        );
    }
}
