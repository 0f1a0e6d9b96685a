//! Drawing the state: one function per view, all laid out alike (a title
//! line, the view, two lines about the selection, the result line, the
//! keys). Only the 16 basic colours and reverse video, so any terminal
//! over SSH shows it; with `NO_COLOR`, reverse and bold alone.

use ckpt_proto::{ChangeKind, LedgerEntry, State, TurnEntry, TurnInfo};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Row, Table, TableState, Wrap};
use ratatui::Frame;

use crate::keys;
use crate::state::{mark, App, Ask, Dialog, Filter, Screen, Status};

/// The parts of the screen every view shares.
struct Areas {
    title: Rect,
    body: Rect,
    detail: Rect,
    status: Rect,
    keys: Rect,
}

fn areas(area: Rect) -> Areas {
    let [title, body, detail, status, keys] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(3),
        Constraint::Length(2),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(area);
    Areas {
        title,
        body,
        detail,
        status,
        keys,
    }
}

pub fn draw(f: &mut Frame, app: &mut App) {
    let a = areas(f.area());
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let mut title = vec![Span::styled(title_text(app), bold)];
    if let Some(why) = &app.degraded {
        title.push(Span::styled(
            format!("  capture degraded: {why}"),
            fg(app.color, Color::Red).add_modifier(Modifier::BOLD),
        ));
    }
    f.render_widget(Line::from(title), a.title);
    match app.screens.len() {
        0 => timeline(f, app, &a),
        _ => screen(f, app, &a),
    }
    if let Some(s) = &app.status {
        let (text, style) = match s {
            Status::Info(t) => (t.as_str(), fg(app.color, Color::Green)),
            Status::Error(t) => (t.as_str(), fg(app.color, Color::Red)),
        };
        f.render_widget(
            Line::styled(cut(text, a.status.width.into()), style),
            a.status,
        );
    }
    f.render_widget(
        Line::styled(
            keys::help(app),
            Style::default().add_modifier(Modifier::REVERSED),
        ),
        a.keys,
    );
    if let Some(d) = &app.dialog {
        dialog(f, app, d);
    }
}

/// `Style` with a foreground colour, or none under `NO_COLOR`.
fn fg(color: bool, c: Color) -> Style {
    if color {
        Style::default().fg(c)
    } else {
        Style::default()
    }
}

fn title_text(app: &App) -> String {
    let project = app
        .project
        .as_ref()
        .map_or_else(|| "…".to_string(), |p| p.display());
    match app.screens.last() {
        None => {
            let filter = match &app.filter {
                Filter::All => "all sessions".to_string(),
                Filter::Session(Some(s)) => format!("session {s}"),
                Filter::Session(None) => "the default session".to_string(),
            };
            let n = app.visible().len();
            format!(
                "ckpt {project} · {} · {filter}",
                ckptctl::output::count(n as u64, "turn")
            )
        }
        Some(Screen::Files { detail, .. }) => format!(
            "turn {} · {}",
            detail.info.id,
            ckptctl::output::count(detail.entries.len() as u64, "path")
        ),
        Some(Screen::Diff { turn, path, .. }) => format!("turn {turn} · diff of {}", path.quoted()),
        Some(Screen::Ledger { path, entries, .. }) => format!(
            "ledger of {} · {}",
            path.as_ref().map_or(project, |p| p.quoted()),
            ckptctl::output::count(entries.len() as u64, "entry")
        ),
    }
}

/// `42s`, `12m`, `3h`, `4d`: an age in one unit.
pub fn age(secs: i64) -> String {
    match secs.max(0) {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86400),
    }
}

/// `42s`, `2m05`, `1h02`: a duration in five columns.
pub fn took(secs: i64) -> String {
    match secs.max(0) {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m{:02}", s / 60, s % 60),
        s if s < 86400 => format!("{}h{:02}", s / 3600, s / 60 % 60),
        s => format!("{}d", s / 86400),
    }
}

const NS: i64 = 1_000_000_000;

/// Marks the selected row in plain text too (a screen reader, a capture).
const SELECTED: &str = ">";

/// How long a turn took; an open one so far, with `+`.
fn turn_took(t: &TurnInfo, now_ns: i64) -> String {
    match t.ended_ns {
        Some(end) => took((end - t.started_ns) / NS),
        None => format!("{}+", took((now_ns - t.started_ns) / NS)),
    }
}

fn cut(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_string();
    }
    let mut out: String = s.chars().take(n.saturating_sub(1)).collect();
    out.push('…');
    out
}

fn mark_style(app: &App, m: &str) -> Style {
    match m {
        "open" => fg(app.color, Color::Green),
        "rewound" | "rewound*" => fg(app.color, Color::DarkGray).add_modifier(Modifier::DIM),
        "partial" => fg(app.color, Color::Yellow),
        "empty" => Style::default().add_modifier(Modifier::DIM),
        _ => Style::default(),
    }
}

fn timeline(f: &mut Frame, app: &mut App, a: &Areas) {
    let header = Row::new([
        "TURN", "STATE", "AGE", "TOOK", "CHANGES", "AGENT", "SESSION", "LABEL",
    ])
    .style(Style::default().add_modifier(Modifier::BOLD));
    let rows: Vec<Row> = app
        .visible()
        .into_iter()
        .map(|t| {
            let m = mark(t);
            let label = t.label.as_deref().unwrap_or("").replace('\n', " ");
            Row::new([
                format!("{:>4}", t.id),
                m.to_string(),
                age((app.now_ns - t.started_ns) / NS),
                turn_took(t, app.now_ns),
                ckptctl::output::counts(&t.counts),
                cut(t.agent.as_deref().unwrap_or("-"), 8),
                cut(t.session.as_deref().unwrap_or("-"), 8),
                label,
            ])
            .style(mark_style(app, m))
        })
        .collect();
    let empty = rows.is_empty();
    let widths = [
        Constraint::Length(4),
        Constraint::Length(8),
        Constraint::Length(3),
        Constraint::Length(5),
        Constraint::Length(10),
        Constraint::Length(8),
        Constraint::Length(8),
        Constraint::Fill(1),
    ];
    let table = Table::new(rows, widths)
        .header(header)
        .row_highlight_style(Style::default().add_modifier(Modifier::REVERSED))
        .highlight_symbol(SELECTED);
    f.render_stateful_widget(table, a.body, &mut app.table);
    if empty {
        let body = a.body.inner(ratatui::layout::Margin::new(0, 1));
        f.render_widget(
            Paragraph::new("no turns yet: they show here as an agent makes them"),
            body,
        );
    }
    if let Some(t) = app.selected_turn() {
        f.render_widget(
            Paragraph::new(turn_detail(t)).wrap(Wrap { trim: false }),
            a.detail,
        );
    }
}

/// Two lines about a turn: who, when, how long, what; its label.
fn turn_detail(t: &TurnInfo) -> Vec<Line<'static>> {
    let mut first = format!(
        "turn {} · {} · {} · {} · {}",
        t.id,
        t.agent.as_deref().unwrap_or("no agent"),
        t.session
            .as_deref()
            .map_or("default session".to_string(), |s| format!("session {s}")),
        ckptctl::output::time(t.started_ns),
        ckptctl::output::counts(&t.counts),
    );
    if t.ledger_entries > 0 {
        first.push_str(&ckptctl::output::ledger_entries(t.ledger_entries));
    }
    let mut second = t.label.as_deref().unwrap_or("").replace('\n', " ");
    if let Some(p) = &t.partial {
        second = format!(
            "[rewind {}: {} restored, {} left] {second}",
            ckptctl::output::ids(&p.rewinds),
            p.rewound.len(),
            p.left.len()
        );
    }
    vec![Line::from(first), Line::from(second)]
}

fn screen(f: &mut Frame, app: &mut App, a: &Areas) {
    let color = app.color;
    let stylist = |c: Color| fg(color, c);
    match app.screens.last_mut() {
        Some(Screen::Files { detail, selected }) => {
            let rows: Vec<Row> = detail
                .entries
                .iter()
                .map(|e| {
                    let (letter, c) = change(e);
                    Row::new([
                        letter.to_string(),
                        e.path.display(),
                        if e.shared { "shared" } else { "" }.to_string(),
                    ])
                    .style(stylist(c))
                })
                .collect();
            let widths = [
                Constraint::Length(1),
                Constraint::Fill(1),
                Constraint::Length(6),
            ];
            let table = Table::new(rows, widths)
                .header(
                    Row::new(["", "PATH", ""]).style(Style::default().add_modifier(Modifier::BOLD)),
                )
                .row_highlight_style(Style::default().add_modifier(Modifier::REVERSED))
                .highlight_symbol(SELECTED);
            let mut ts = TableState::default().with_selected(Some(*selected));
            f.render_stateful_widget(table, a.body, &mut ts);
            let mut lines = turn_detail(&detail.info);
            if let Some(e) = detail.entries.get(*selected) {
                lines[0] = Line::from(format!(
                    "{}: {} → {}{}",
                    e.path.quoted(),
                    ckptctl::output::state(&e.pre),
                    e.post
                        .as_ref()
                        .map_or("(turn open)".to_string(), ckptctl::output::state),
                    if e.shared {
                        " · shared: another session's turn was open too"
                    } else {
                        ""
                    }
                ));
            }
            f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), a.detail);
        }
        Some(Screen::Diff {
            lines,
            note,
            scroll,
            ..
        }) => {
            let text: Vec<Line> = match note {
                Some(n) if lines.is_empty() => vec![Line::from(format!("no text diff: {n}"))],
                _ => lines.iter().map(|l| diff_line(l, &stylist)).collect(),
            };
            let body = a.body.union(a.detail);
            f.render_widget(Paragraph::new(text).scroll((*scroll, 0)), body);
        }
        Some(Screen::Ledger {
            entries, selected, ..
        }) => {
            let rows: Vec<Row> = entries.iter().map(ledger_row).collect();
            let widths = [
                Constraint::Length(4),
                Constraint::Length(8),
                Constraint::Length(8),
                Constraint::Length(18),
                Constraint::Fill(1),
            ];
            let header = Row::new(["#", "STATUS", "SEVERITY", "BUCKET", "WHERE"])
                .style(Style::default().add_modifier(Modifier::BOLD));
            let table = Table::new(rows, widths)
                .header(header)
                .row_highlight_style(Style::default().add_modifier(Modifier::REVERSED))
                .highlight_symbol(SELECTED);
            let mut ts = TableState::default().with_selected(Some(*selected));
            f.render_stateful_widget(table, a.body, &mut ts);
            let text = match entries.get(*selected) {
                Some(e) => format!(
                    "{} · owner {} · turn {} · anchor {} · {}",
                    e.body.note.replace('\n', " "),
                    e.body.owner,
                    e.turn.map_or("-".to_string(), |t| t.to_string()),
                    e.anchor.state,
                    ckptctl::output::time(e.body.created_ns),
                ),
                None => "no ledger entries here (`ckptctl ledger add` records one)".to_string(),
            };
            f.render_widget(Paragraph::new(text).wrap(Wrap { trim: false }), a.detail);
        }
        None => {}
    }
}

fn change(e: &TurnEntry) -> (char, Color) {
    match e.change() {
        Some(ChangeKind::Added) => ('A', Color::Green),
        Some(ChangeKind::Modified) => ('M', Color::Yellow),
        Some(ChangeKind::Deleted) => ('D', Color::Red),
        Some(ChangeKind::Renamed) => ('R', Color::Cyan),
        Some(ChangeKind::Skipped) => ('S', Color::Magenta),
        None => ('*', Color::Cyan),
    }
}

fn diff_line<'a>(l: &'a str, stylist: &dyn Fn(Color) -> Style) -> Line<'a> {
    let style = if l.starts_with("+++") || l.starts_with("---") {
        Style::default().add_modifier(Modifier::BOLD)
    } else if l.starts_with('+') {
        stylist(Color::Green)
    } else if l.starts_with('-') {
        stylist(Color::Red)
    } else if l.starts_with("@@") {
        stylist(Color::Cyan)
    } else {
        Style::default()
    };
    Line::styled(l, style)
}

fn ledger_row(e: &LedgerEntry) -> Row<'static> {
    let at = match e.body.span {
        None => e.body.path.display(),
        Some(s) if s.start == s.end => format!("{}:{}", e.body.path, s.start),
        Some(s) => format!("{}:{}-{}", e.body.path, s.start, s.end),
    };
    Row::new([
        e.id.to_string(),
        e.status.to_string(),
        e.body.severity.to_string(),
        e.body.bucket.to_string(),
        at,
    ])
}

/// The confirm dialog over the view: what the plan does, its conflicts,
/// and what `y` will do.
fn dialog(f: &mut Frame, app: &App, d: &Dialog) {
    let red = fg(app.color, Color::Red);
    let p = &d.plan;
    let title = match &d.ask {
        Ask::Rewind { turn, merge } => format!(
            " rewind to before turn {turn}{}? ",
            if merge.is_some() { " --merge" } else { "" }
        ),
        Ask::Redo => format!(" redo the rewind to before turn {}? ", p.turn),
    };
    let mut lines: Vec<Line> = Vec::new();
    let verb = if p.redo { "brings back" } else { "undoes" };
    lines.push(Line::from(format!(
        "{verb} turn{} {}: {}",
        if p.turns.len() == 1 { "" } else { "s" },
        ckptctl::output::ids(&p.turns),
        ckptctl::output::count(p.counts().total(), "path")
    )));
    for a in &p.actions {
        let verb = match a.kind() {
            ckpt_proto::ActionKind::Restore => "restore ",
            ckpt_proto::ActionKind::Delete => "delete  ",
            ckpt_proto::ActionKind::Recreate => "recreate",
        };
        let dir = matches!(a.current, State::Dir { .. }) || matches!(a.target, State::Dir { .. });
        lines.push(Line::from(format!(
            "  {verb}  {}{}",
            a.path.quoted(),
            if dir { "/" } else { "" }
        )));
    }
    for m in &p.merged {
        let what = match m.outcome {
            ckpt_proto::MergeOutcome::Clean => "merge   ",
            ckpt_proto::MergeOutcome::Markers => "markers ",
            ckpt_proto::MergeOutcome::Overlapping => "overlaps: left as it is",
        };
        lines.push(Line::styled(
            format!("  {what}  {}", m.path.quoted()),
            fg(app.color, Color::Yellow),
        ));
    }
    for s in &p.skipped {
        lines.push(Line::from(format!(
            "  skipped   {}  ({})",
            s.path.quoted(),
            s.reason
        )));
    }
    for b in &p.blocked {
        lines.push(Line::styled(
            format!("  blocked   {}  ({})", b.path.quoted(), b.reason),
            red,
        ));
    }
    for c in &p.conflicts {
        let why = match &c.other {
            Some(o) => format!("also changed by turn {}", o.turn),
            None if p.redo => "changed since the rewind".to_string(),
            None => "edited after the agent".to_string(),
        };
        lines.push(Line::styled(
            format!("  conflict  {}: {why}", c.path.quoted()),
            red,
        ));
        if let Some(n) = &c.not_mergeable {
            lines.push(Line::styled(format!("            not merged: {n}"), red));
        }
    }
    lines.push(Line::from(""));
    let n = d.conflicts();
    let (ask, style) = if d.blocked() {
        (
            "it cannot put the tree back exactly: move the blocking paths away".to_string(),
            red,
        )
    } else if d.force {
        (
            format!(
                "y again overwrites {} (their content now is kept: R redoes)",
                ckptctl::output::count(n as u64, "edited path")
            ),
            red.add_modifier(Modifier::BOLD),
        )
    } else if n > 0 {
        (
            format!(
                "{} in conflict: refused unless forced{}",
                ckptctl::output::count(n as u64, "path"),
                match d.ask {
                    Ask::Rewind { merge: None, .. } => "; m plans it with --merge",
                    _ => "",
                }
            ),
            red,
        )
    } else {
        (
            "y applies it; esc cancels, nothing changed".to_string(),
            Style::default(),
        )
    };
    lines.push(Line::styled(ask, style));
    // As tall as its lines (each may wrap once), within the screen.
    let area = f.area();
    let w = area.width.saturating_sub(4).min(76);
    let wide = lines.iter().filter(|l| l.width() + 2 > w as usize).count();
    let want = u16::try_from(lines.len() + wide + 2).unwrap_or(u16::MAX);
    let h = area.height.saturating_sub(4).min(want);
    let rect = Rect::new(
        area.x + (area.width - w) / 2,
        area.y + ((area.height - h) / 2).saturating_sub(1),
        w,
        h,
    );
    let border = if d.force || d.blocked() {
        red
    } else {
        Style::default()
    };
    let block = Block::bordered()
        .title(title)
        .border_style(border)
        .title_bottom(Line::from(format!(" {} ", keys::help(app))));
    f.render_widget(Clear, rect);
    f.render_widget(
        Paragraph::new(lines)
            .block(block)
            .wrap(Wrap { trim: false })
            .scroll((d.scroll, 0)),
        rect,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::tests::{app, detail, diff, plan, reply, NOW, SEC};
    use crate::state::Action;
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    /// The screen as text, a line per row (trailing spaces trimmed).
    fn screen_of(app: &mut App) -> String {
        screen_sized(app, 80, 24)
    }

    fn screen_sized(app: &mut App, w: u16, h: u16) -> String {
        let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
        t.draw(|f| draw(f, app)).unwrap();
        let buf = t.backend().buffer();
        (0..h)
            .map(|y| {
                let row: String = (0..w).map(|x| buf[(x, y)].symbol().to_string()).collect();
                row.trim_end().to_string()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn row_with<'a>(screen: &'a str, needle: &str) -> &'a str {
        screen
            .lines()
            .find(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no line with {needle:?} in\n{screen}"))
    }

    #[test]
    fn ages_and_durations_are_short() {
        assert_eq!(age(42), "42s");
        assert_eq!(age(125), "2m");
        assert_eq!(age(7300), "2h");
        assert_eq!(age(200_000), "2d");
        assert_eq!(took(125), "2m05");
        assert_eq!(took(3720), "1h02");
        assert_eq!(cut("abcdefghij", 5), "abcd…");
    }

    #[test]
    fn the_timeline_lists_turns_newest_first_with_their_marks() {
        let mut a = app();
        let s = screen_of(&mut a);
        assert!(
            s.starts_with("ckpt /home/u/app · 4 turns · all sessions"),
            "{s}"
        );
        let head = row_with(&s, "TURN");
        for col in [
            "STATE", "AGE", "TOOK", "CHANGES", "AGENT", "SESSION", "LABEL",
        ] {
            assert!(head.contains(col), "{head}");
        }
        let rows: Vec<&str> = s.lines().skip(2).take(4).collect();
        assert!(rows[0].starts_with(">   4 open"), "the selected row: {s}");
        assert!(rows[0].contains("1h36+"), "an open turn's time so far: {s}");
        assert!(rows[1].trim_start().starts_with("3 rewound"), "{s}");
        assert!(
            rows[2].contains("+1 ~2 -0") && rows[2].contains("42s"),
            "{s}"
        );
        assert!(rows[3].contains("1h") && rows[3].contains("s1"), "{s}");
        assert!(
            rows[0].contains("claude-… s2") && rows[0].contains("task 4"),
            "{s}"
        );
        // The selected turn's details and the keys.
        assert!(s.contains("turn 4 · claude-code · session s2 ·"), "{s}");
        assert!(s
            .lines()
            .last()
            .unwrap()
            .starts_with("↑↓ move  enter files  r rewind"));
    }

    #[test]
    fn the_selected_row_is_reversed_and_degraded_capture_shows() {
        let mut a = app();
        a.apply(Action::Down);
        a.degraded = Some("watch limit".into());
        let mut t = Terminal::new(TestBackend::new(80, 24)).unwrap();
        t.draw(|f| draw(f, &mut a)).unwrap();
        let buf = t.backend().buffer();
        let reversed = |y: u16| buf[(2, y)].modifier.contains(Modifier::REVERSED);
        assert!(!reversed(2) && reversed(3), "turn 3's row is selected");
        let title: String = (0..80).map(|x| buf[(x, 0)].symbol().to_string()).collect();
        assert!(title.contains("capture degraded: watch limit"), "{title}");
    }

    #[test]
    fn the_session_filter_shows_in_the_title() {
        let mut a = app();
        a.apply(Action::NextSession);
        a.apply(Action::NextSession);
        let s = screen_of(&mut a);
        assert!(
            s.starts_with("ckpt /home/u/app · 2 turns · session s1"),
            "{s}"
        );
        assert!(!s.contains("task 4") && !s.contains("task 2"), "{s}");
    }

    #[test]
    fn no_turns_yet_says_so() {
        let mut a = App::new(Filter::All, true);
        a.on_log(reply(ckpt_proto::LogBody { turns: vec![] }), NOW);
        let s = screen_of(&mut a);
        assert!(s.contains("no turns yet"), "{s}");
    }

    #[test]
    fn the_files_view_lists_paths_with_how_they_changed() {
        let mut a = app();
        a.on_show(detail());
        let s = screen_of(&mut a);
        assert!(s.starts_with("turn 2 · 2 paths"), "{s}");
        assert!(row_with(&s, "src/a.txt").starts_with(">M src/a.txt"), "{s}");
        assert!(row_with(&s, "new.txt").contains("shared"), "{s}");
        assert!(
            s.contains("src/a.txt: file 8 B (010101010101) → file 10 B"),
            "{s}"
        );
        assert!(s.contains("enter diff"), "{s}");
    }

    #[test]
    fn the_diff_view_colours_its_lines_and_scrolls() {
        let mut a = app();
        a.on_diff(2, crate::state::tests::rel("src/a.txt"), diff());
        let mut t = Terminal::new(TestBackend::new(80, 24)).unwrap();
        t.draw(|f| draw(f, &mut a)).unwrap();
        let buf = t.backend().buffer().clone();
        let line =
            |y: u16| -> String { (0..80).map(|x| buf[(x, y)].symbol().to_string()).collect() };
        assert!(line(0).starts_with("turn 2 · diff of src/a.txt"));
        assert!(line(1).starts_with("--- a/src/a.txt"));
        assert!(line(5).starts_with("-old line"));
        assert_eq!(buf[(0, 5)].fg, Color::Red);
        assert!(line(6).starts_with("+new line"));
        assert_eq!(buf[(0, 6)].fg, Color::Green);
        assert_eq!(buf[(0, 3)].fg, Color::Cyan, "the hunk header");
        a.apply(Action::Down);
        a.apply(Action::Down);
        let s = screen_of(&mut a);
        assert!(s.lines().nth(1).unwrap().starts_with("@@ -1,2"), "{s}");
    }

    #[test]
    fn no_color_keeps_reverse_and_drops_colours() {
        let mut a = App::new(Filter::All, false);
        a.on_diff(2, crate::state::tests::rel("src/a.txt"), diff());
        let mut t = Terminal::new(TestBackend::new(80, 24)).unwrap();
        t.draw(|f| draw(f, &mut a)).unwrap();
        let buf = t.backend().buffer();
        assert_eq!(buf[(0, 5)].fg, Color::Reset);
        assert!(buf[(0, 23)].modifier.contains(Modifier::REVERSED));
    }

    #[test]
    fn the_ledger_view_lists_entries() {
        let entry: LedgerEntry = serde_json::from_value(serde_json::json!({
            "id": 7, "bucket": "compat-shim", "severity": "high", "confidence": 0.8,
            "owner": "agent:claude-code", "path": "src/a.txt", "span": {"start": 3, "end": 5},
            "note": "old API kept for one caller", "turn": 2, "status": "open",
            "anchor": {"state": "fresh", "span": {"start": 3, "end": 5}},
            "created_ns": NOW - 5 * SEC
        }))
        .unwrap();
        let mut a = app();
        a.on_ledger(
            Some(crate::state::tests::rel("src/a.txt")),
            reply(ckpt_proto::LedgerBody {
                entries: vec![entry],
            }),
        );
        let s = screen_of(&mut a);
        assert!(s.starts_with("ledger of src/a.txt · 1 entry"), "{s}");
        let row = row_with(&s, "compat-shim");
        assert!(
            row.contains("7") && row.contains("open") && row.contains("high"),
            "{s}"
        );
        assert!(row.contains("src/a.txt:3-5"), "{s}");
        assert!(
            s.contains("old API kept for one caller · owner agent:claude-code · turn 2"),
            "{s}"
        );
        a.screens.clear();
        a.on_ledger(None, reply(ckpt_proto::LedgerBody { entries: vec![] }));
        let s = screen_of(&mut a);
        assert!(s.starts_with("ledger of /home/u/app · 0 entries"), "{s}");
        assert!(s.contains("no ledger entries here"), "{s}");
    }

    #[test]
    fn the_dialog_shows_the_plan_and_asks() {
        let mut a = app();
        a.on_plan(
            Ask::Rewind {
                turn: 2,
                merge: None,
            },
            plan(false, 0),
        );
        let s = screen_of(&mut a);
        assert!(s.contains(" rewind to before turn 2? "), "{s}");
        assert!(s.contains("undoes turns 2, 4: 2 paths"), "{s}");
        assert!(s.contains("restore   src/a.txt"), "{s}");
        assert!(s.contains("delete    new.txt"), "{s}");
        assert!(
            s.contains("y applies it; esc cancels, nothing changed"),
            "{s}"
        );
        assert!(s.contains("y apply  esc cancel"), "{s}");
    }

    #[test]
    fn the_dialog_shows_conflicts_and_the_second_confirmation() {
        let mut a = app();
        a.on_plan(
            Ask::Rewind {
                turn: 2,
                merge: None,
            },
            plan(false, 2),
        );
        let s = screen_of(&mut a);
        assert!(
            s.contains("conflict  edited0.txt: edited after the agent"),
            "{s}"
        );
        assert!(
            s.contains("2 paths in conflict: refused unless forced; m plans it with --merge"),
            "{s}"
        );
        assert!(s.contains("m merge  y force…  esc cancel"), "{s}");
        a.apply(Action::Confirm);
        let s = screen_of(&mut a);
        assert!(s.contains("y again overwrites 2 edited paths"), "{s}");
        assert!(s.contains("y overwrite the edits  esc back"), "{s}");
    }

    #[test]
    fn the_redo_dialog_names_what_it_brings_back() {
        let mut a = app();
        a.on_plan(Ask::Redo, plan(true, 1));
        let s = screen_of(&mut a);
        assert!(s.contains(" redo the rewind to before turn 2? "), "{s}");
        assert!(s.contains("brings back turns 2, 4: 2 paths"), "{s}");
        assert!(s.contains("edited0.txt: changed since the rewind"), "{s}");
        assert!(!s.contains("--merge"), "{s}");
    }

    #[test]
    fn the_result_line_shows_after_a_rewind() {
        let mut a = app();
        let mut done = plan(false, 0);
        done.outcome = ckpt_proto::Outcome::Applied;
        a.on_applied(
            Ask::Rewind {
                turn: 2,
                merge: None,
            },
            done,
        );
        let s = screen_of(&mut a);
        assert!(
            s.lines()
                .nth(22)
                .unwrap()
                .starts_with("rewound to before turn 2 (turns 2, 4): 2 paths in 7 ms"),
            "{s}"
        );
    }

    /// A terminal smaller than 80×24 still draws (nothing panics).
    #[test]
    fn small_terminals_do_not_panic() {
        for (w, h) in [(80, 24), (40, 10), (20, 6), (10, 3)] {
            let mut a = app();
            screen_sized(&mut a, w, h);
            a.on_plan(Ask::Redo, plan(true, 3));
            screen_sized(&mut a, w, h);
        }
    }
}
