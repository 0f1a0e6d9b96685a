//! What the timeline shows and where the user is in it. Always true: the
//! state changes only through [`App::apply`] (a key's [`Action`]) and the
//! `on_*` methods (a daemon's answer); neither talks to the daemon. What
//! needs the daemon comes back from `apply` as an [`Effect`] for the loop
//! to run, so every view can be driven and rendered in a test without one.

use ckpt_proto::{
    LedgerEntry, LedgerReply, LogReply, MergeMode, Outcome, RelPath, RewindReply, ShowReply,
    TurnDetail, TurnInfo, TurnStatus, WirePath,
};
use ratatui::widgets::TableState;

/// Which turns the timeline lists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Filter {
    All,
    /// One session's turns; `None` is the default session (no `--session`).
    Session(Option<String>),
}

impl Filter {
    pub fn keeps(&self, t: &TurnInfo) -> bool {
        match self {
            Filter::All => true,
            Filter::Session(s) => t.session == *s,
        }
    }
}

/// A rewind or redo the user asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ask {
    Rewind { turn: i64, merge: Option<MergeMode> },
    Redo,
}

/// The confirm dialog: the plan (a dry run) and how far the user is.
#[derive(Clone, Debug)]
pub struct Dialog {
    pub ask: Ask,
    pub plan: RewindReply,
    /// `y` was pressed on a plan with conflicts: a second `y` overwrites them.
    pub force: bool,
    pub scroll: u16,
}

impl Dialog {
    /// Nothing can make it apply (a redo that cannot put the tree back).
    pub fn blocked(&self) -> bool {
        !self.plan.blocked.is_empty()
    }

    pub fn conflicts(&self) -> usize {
        self.plan.conflicts.len()
    }
}

/// A screen over the timeline; Esc goes back one.
#[derive(Clone, Debug)]
pub enum Screen {
    /// One turn's paths.
    Files {
        detail: Box<TurnDetail>,
        selected: usize,
    },
    /// One path's diff in a turn.
    Diff {
        turn: i64,
        path: RelPath,
        /// The unified diff's lines; empty when `note` says why there is none.
        lines: Vec<String>,
        note: Option<String>,
        scroll: u16,
    },
    /// The slop ledger of the project, or of one path.
    Ledger {
        path: Option<RelPath>,
        entries: Vec<LedgerEntry>,
        selected: usize,
    },
}

/// The line above the keys: what just happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    Info(String),
    Error(String),
}

/// What a key asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Up,
    Down,
    PageUp,
    PageDown,
    Top,
    Bottom,
    /// Enter: a turn's files, a file's diff.
    Open,
    /// Esc: back one screen, or out of the dialog.
    Back,
    Quit,
    Rewind,
    Merge,
    Redo,
    Ledger,
    NextSession,
    /// `y` in the dialog.
    Confirm,
    Refresh,
}

/// What the loop asks the daemon for; its answer comes back through an
/// `on_*` method.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    Log,
    Show(i64),
    Diff {
        turn: i64,
        path: RelPath,
    },
    /// The dry run of `ask`: [`App::on_plan`].
    Plan(Ask),
    /// The real run: [`App::on_applied`].
    Apply {
        ask: Ask,
        force: bool,
    },
    Ledger(Option<RelPath>),
}

/// `--merge` as the timeline asks for it: clean hunks only, a file whose
/// changes overlap left as it is (the dialog says which).
pub const MERGE: MergeMode = MergeMode::Clean;

/// Lines a page key moves.
const PAGE: usize = 10;

pub struct App {
    /// The project root, once the daemon named it.
    pub project: Option<WirePath>,
    pub degraded: Option<String>,
    /// Every turn, newest first.
    pub turns: Vec<TurnInfo>,
    pub filter: Filter,
    /// The selected row of the timeline (an index into [`App::visible`]).
    pub table: TableState,
    /// The selected turn, kept across refreshes while rows move.
    selected_id: Option<i64>,
    pub screens: Vec<Screen>,
    pub dialog: Option<Dialog>,
    pub status: Option<Status>,
    /// When the turns were read (unix ns): ages count from it.
    pub now_ns: i64,
    /// Colours, unless `NO_COLOR` is set.
    pub color: bool,
    pub quit: bool,
}

impl App {
    pub fn new(filter: Filter, color: bool) -> App {
        App {
            project: None,
            degraded: None,
            turns: Vec::new(),
            filter,
            table: TableState::default(),
            selected_id: None,
            screens: Vec::new(),
            dialog: None,
            status: None,
            now_ns: 0,
            color,
            quit: false,
        }
    }

    /// The turns the filter keeps, newest first.
    pub fn visible(&self) -> Vec<&TurnInfo> {
        self.turns.iter().filter(|t| self.filter.keeps(t)).collect()
    }

    /// The turn selected in the timeline.
    pub fn selected_turn(&self) -> Option<&TurnInfo> {
        let i = self.table.selected()?;
        self.visible().get(i).copied()
    }

    /// The sessions of the turns, newest first, each once.
    pub fn sessions(&self) -> Vec<Option<String>> {
        let mut out: Vec<Option<String>> = Vec::new();
        for t in &self.turns {
            if !out.contains(&t.session) {
                out.push(t.session.clone());
            }
        }
        out
    }

    /// The turn the current screen is about: the open Files screen's, else
    /// the timeline's selection.
    fn current_turn(&self) -> Option<i64> {
        for s in self.screens.iter().rev() {
            if let Screen::Files { detail, .. } = s {
                return Some(detail.info.id);
            }
        }
        self.selected_turn().map(|t| t.id)
    }

    /// A key's action; returns what to ask the daemon, if anything.
    pub fn apply(&mut self, action: Action) -> Option<Effect> {
        if action == Action::Quit {
            self.quit = true;
            return None;
        }
        if self.dialog.is_some() {
            return self.apply_dialog(action);
        }
        match self.screens.last_mut() {
            None => self.apply_timeline(action),
            Some(Screen::Files { detail, selected }) => {
                let len = detail.entries.len();
                match action {
                    Action::Open => {
                        let path = detail.entries.get(*selected)?.path.clone();
                        Some(Effect::Diff {
                            turn: detail.info.id,
                            path,
                        })
                    }
                    Action::Ledger => {
                        let path = detail.entries.get(*selected)?.path.clone();
                        Some(Effect::Ledger(Some(path)))
                    }
                    other => self.apply_common(other, len),
                }
            }
            Some(Screen::Diff { lines, scroll, .. }) => {
                let last = u16::try_from(lines.len().saturating_sub(1)).unwrap_or(u16::MAX);
                let page = PAGE as u16;
                match action {
                    Action::Up => *scroll = scroll.saturating_sub(1),
                    Action::Down => *scroll = (*scroll + 1).min(last),
                    Action::PageUp => *scroll = scroll.saturating_sub(page),
                    Action::PageDown => *scroll = scroll.saturating_add(page).min(last),
                    Action::Top => *scroll = 0,
                    Action::Bottom => *scroll = last,
                    other => return self.apply_common(other, 0),
                }
                None
            }
            Some(Screen::Ledger { entries, .. }) => {
                let len = entries.len();
                self.apply_common(action, len)
            }
        }
    }

    /// What every screen over the timeline does alike: move in its list
    /// of `len` rows, go back, rewind or redo.
    fn apply_common(&mut self, action: Action, len: usize) -> Option<Effect> {
        match action {
            Action::Back => {
                self.screens.pop();
                None
            }
            Action::Up | Action::Down | Action::PageUp | Action::PageDown => {
                if let Some(sel) = self.screen_selection() {
                    *sel = moved(*sel, action, len);
                }
                None
            }
            Action::Top | Action::Bottom => {
                if let Some(sel) = self.screen_selection() {
                    *sel = moved(*sel, action, len);
                }
                None
            }
            Action::Rewind | Action::Merge => self.plan_rewind(action == Action::Merge),
            Action::Redo => Some(Effect::Plan(Ask::Redo)),
            Action::Refresh => Some(Effect::Log),
            _ => None,
        }
    }

    fn screen_selection(&mut self) -> Option<&mut usize> {
        match self.screens.last_mut()? {
            Screen::Files { selected, .. } | Screen::Ledger { selected, .. } => Some(selected),
            Screen::Diff { .. } => None,
        }
    }

    fn plan_rewind(&mut self, merge: bool) -> Option<Effect> {
        let Some(turn) = self.current_turn() else {
            self.status = Some(Status::Error("no turn selected".into()));
            return None;
        };
        Some(Effect::Plan(Ask::Rewind {
            turn,
            merge: merge.then_some(MERGE),
        }))
    }

    fn apply_timeline(&mut self, action: Action) -> Option<Effect> {
        let len = self.visible().len();
        match action {
            Action::Up
            | Action::Down
            | Action::PageUp
            | Action::PageDown
            | Action::Top
            | Action::Bottom => {
                let at = self.table.selected().unwrap_or(0);
                self.select(moved(at, action, len));
                None
            }
            Action::Open => self.selected_turn().map(|t| Effect::Show(t.id)),
            Action::Back => None,
            Action::Ledger => Some(Effect::Ledger(None)),
            Action::NextSession => {
                self.next_session();
                None
            }
            other => self.apply_common(other, len),
        }
    }

    fn apply_dialog(&mut self, action: Action) -> Option<Effect> {
        let d = self.dialog.as_mut()?;
        match action {
            Action::Back => {
                // Out of the second confirmation back to the plan; out of
                // the plan, nothing done.
                if d.force {
                    d.force = false;
                } else {
                    self.dialog = None;
                    self.status = Some(Status::Info("cancelled: nothing changed".into()));
                }
                None
            }
            Action::Up => {
                d.scroll = d.scroll.saturating_sub(1);
                None
            }
            Action::Down => {
                d.scroll = d.scroll.saturating_add(1);
                None
            }
            Action::Merge => match d.ask {
                // The same rewind, planned again with --merge.
                Ask::Rewind { turn, merge: None } => Some(Effect::Plan(Ask::Rewind {
                    turn,
                    merge: Some(MERGE),
                })),
                _ => None,
            },
            Action::Confirm if d.blocked() => None,
            Action::Confirm if d.conflicts() > 0 && !d.force => {
                d.force = true;
                None
            }
            Action::Confirm => {
                let force = d.force;
                let ask = d.ask.clone();
                Some(Effect::Apply { ask, force })
            }
            _ => None,
        }
    }

    fn select(&mut self, i: usize) {
        let visible = self.visible();
        if visible.is_empty() {
            self.table.select(None);
            self.selected_id = None;
            return;
        }
        let i = i.min(visible.len() - 1);
        self.selected_id = Some(visible[i].id);
        self.table.select(Some(i));
    }

    /// The next session in the filter's cycle: all, then each session.
    fn next_session(&mut self) {
        let sessions = self.sessions();
        self.filter = match &self.filter {
            Filter::All => sessions
                .first()
                .cloned()
                .map_or(Filter::All, Filter::Session),
            Filter::Session(s) => match sessions.iter().position(|x| x == s) {
                Some(i) if i + 1 < sessions.len() => Filter::Session(sessions[i + 1].clone()),
                _ => Filter::All,
            },
        };
        self.reselect();
    }

    /// Keeps the selected turn selected after the rows changed; else the
    /// nearest row.
    fn reselect(&mut self) {
        let visible = self.visible();
        let at = self
            .selected_id
            .and_then(|id| visible.iter().position(|t| t.id == id));
        let at = at.unwrap_or_else(|| self.table.selected().unwrap_or(0));
        self.select(at);
    }

    /// The log arrived (at `now_ns`).
    pub fn on_log(&mut self, log: LogReply, now_ns: i64) {
        self.project = Some(log.project.clone());
        self.degraded = log.degraded.clone();
        self.turns = log.body.turns;
        self.now_ns = now_ns;
        self.reselect();
    }

    pub fn on_show(&mut self, r: ShowReply) {
        self.screens.push(Screen::Files {
            detail: Box::new(r.body.turn),
            selected: 0,
        });
    }

    pub fn on_diff(&mut self, turn: i64, path: RelPath, r: ckpt_proto::DiffReply) {
        let file = r.body.files.into_iter().find(|f| f.path == path);
        let (lines, note) = match file {
            Some(f) => (
                f.unified
                    .as_deref()
                    .unwrap_or("")
                    .lines()
                    .map(str::to_string)
                    .collect(),
                f.note,
            ),
            None => (
                Vec::new(),
                Some("no change to this path in the turn".into()),
            ),
        };
        self.screens.push(Screen::Diff {
            turn,
            path,
            lines,
            note,
            scroll: 0,
        });
    }

    pub fn on_ledger(&mut self, path: Option<RelPath>, r: LedgerReply) {
        self.screens.push(Screen::Ledger {
            path,
            entries: r.body.entries,
            selected: 0,
        });
    }

    /// The plan of `ask` arrived: the dialog opens on it.
    pub fn on_plan(&mut self, ask: Ask, plan: RewindReply) {
        self.status = None;
        self.dialog = Some(Dialog {
            ask,
            plan,
            force: false,
            scroll: 0,
        });
    }

    /// The real run answered. Applied: the dialog closes and the result
    /// line says what changed. Refused (the tree changed since the plan):
    /// the dialog shows the new conflicts.
    pub fn on_applied(&mut self, ask: Ask, reply: RewindReply) {
        if reply.outcome == Outcome::Applied {
            self.dialog = None;
            self.status = Some(Status::Info(result_line(&reply)));
        } else {
            self.on_plan(ask, reply);
            self.status = Some(Status::Error(
                "refused: the files changed since the plan; nothing changed".into(),
            ));
        }
    }

    pub fn on_error(&mut self, e: &anyhow::Error) {
        self.status = Some(Status::Error(format!("{e:#}")));
    }
}

/// A selection moved by `action` in a list of `len` rows.
fn moved(at: usize, action: Action, len: usize) -> usize {
    let last = len.saturating_sub(1);
    match action {
        Action::Up => at.saturating_sub(1),
        Action::Down => (at + 1).min(last),
        Action::PageUp => at.saturating_sub(PAGE),
        Action::PageDown => (at + PAGE).min(last),
        Action::Top => 0,
        Action::Bottom => last,
        _ => at,
    }
}

/// `rewound to before turn 3 (turns 3, 4): 2 paths in 5 ms: a.txt, b/`.
pub fn result_line(r: &RewindReply) -> String {
    let turns = ckptctl::output::ids(&r.turns);
    let what = if r.redo {
        format!("redid the rewind to before turn {} (turns {turns})", r.turn)
    } else {
        format!("rewound to before turn {} (turns {turns})", r.turn)
    };
    let paths: Vec<String> = r.actions.iter().map(|a| a.path.quoted()).collect();
    let mut line = format!(
        "{what}: {} in {} ms{}",
        ckptctl::output::count(r.counts().total(), "path"),
        r.elapsed_ms,
        if r.redo { "" } else { " (R redoes)" }
    );
    if !paths.is_empty() {
        line.push_str(": ");
        line.push_str(&paths.join(", "));
    }
    line
}

/// A turn's marks, in a word: open, rewound (`rewound*` when it left some
/// paths as they were), partial (some paths rewound, the turn live), empty.
pub fn mark(t: &TurnInfo) -> &'static str {
    let c = &t.counts;
    let empty = c.added + c.modified + c.deleted + c.skipped == 0;
    match (t.status, &t.partial) {
        (TurnStatus::Open, _) => "open",
        (TurnStatus::Rewound, Some(p)) if !p.left.is_empty() => "rewound*",
        (TurnStatus::Rewound, _) => "rewound",
        (_, Some(_)) => "partial",
        (TurnStatus::Closed, None) if empty => "empty",
        (TurnStatus::Closed, None) => "",
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use ckpt_proto::{
        Action as PathAction, Conflict, Counts, DiffBody, FileDiff, LogBody, PartialRewind, Reply,
        RewindBody, ShowBody, Skipped, State, TurnEntry,
    };

    pub fn rel(p: &str) -> RelPath {
        RelPath::new(p).unwrap()
    }

    pub fn reply<T>(body: T) -> Reply<T> {
        Reply {
            project: WirePath::from(std::path::Path::new("/home/u/app")),
            body,
            degraded: None,
        }
    }

    pub const SEC: i64 = 1_000_000_000;
    /// "Now" in the tests: ages count from here.
    pub const NOW: i64 = 1_000_000 * SEC;

    pub fn turn(id: i64, session: Option<&str>, status: TurnStatus) -> TurnInfo {
        TurnInfo {
            id,
            started_ns: NOW - (100 - id) * 60 * SEC,
            ended_ns: (status != TurnStatus::Open)
                .then_some(NOW - (100 - id) * 60 * SEC + 42 * SEC),
            label: Some(format!("task {id}")),
            agent: Some("claude-code".into()),
            session: session.map(str::to_string),
            transcript: None,
            status,
            counts: Counts {
                added: 1,
                modified: 2,
                deleted: 0,
                skipped: 0,
            },
            ledger_entries: 0,
            conversation: None,
            partial: None,
            integrity: Default::default(),
            effects: Vec::new(),
        }
    }

    /// Turns 1..=4, newest first: 4 open (s2), 3 rewound (s1), 2 closed
    /// (default session), 1 closed (s1).
    pub fn app() -> App {
        let mut a = App::new(Filter::All, true);
        a.on_log(
            reply(LogBody {
                turns: vec![
                    turn(4, Some("s2"), TurnStatus::Open),
                    turn(3, Some("s1"), TurnStatus::Rewound),
                    turn(2, None, TurnStatus::Closed),
                    turn(1, Some("s1"), TurnStatus::Closed),
                ],
            }),
            NOW,
        );
        a
    }

    pub fn file(hash: u8, size: u64) -> State {
        State::File {
            hash: ckpt_proto::Hash([hash; 32]),
            size,
            mode: 0o644,
        }
    }

    pub fn plan(redo: bool, conflicts: usize) -> RewindReply {
        reply(RewindBody {
            redo,
            outcome: Outcome::DryRun,
            rewind_id: None,
            turn: 2,
            turns: vec![2, 4],
            actions: vec![
                PathAction {
                    path: rel("src/a.txt"),
                    current: file(2, 10),
                    target: file(1, 8),
                },
                PathAction {
                    path: rel("new.txt"),
                    current: file(3, 5),
                    target: State::Absent,
                },
            ],
            counts: None,
            conflicts: (0..conflicts)
                .map(|i| Conflict {
                    path: rel(&format!("edited{i}.txt")),
                    expected: file(4, 3),
                    current: file(5, 4),
                    other: None,
                    not_mergeable: None,
                })
                .collect(),
            skipped: Vec::new(),
            blocked: Vec::new(),
            merged: Vec::new(),
            continued: Vec::new(),
            caveats: Default::default(),
            elapsed_ms: 7,
        })
    }

    pub fn detail() -> ShowReply {
        reply(ShowBody {
            turn: TurnDetail {
                info: turn(2, None, TurnStatus::Closed),
                entries: vec![
                    TurnEntry {
                        path: rel("src/a.txt"),
                        pre: file(1, 8),
                        post: Some(file(2, 10)),
                        shared: false,
                    },
                    TurnEntry {
                        path: rel("new.txt"),
                        pre: State::Absent,
                        post: Some(file(3, 5)),
                        shared: true,
                    },
                ],
                commands: Vec::new(),
                total_entries: None,
            },
        })
    }

    pub fn diff() -> ckpt_proto::DiffReply {
        reply(DiffBody {
            turn: 2,
            files: vec![FileDiff {
                path: rel("src/a.txt"),
                kind: ckpt_proto::ChangeKind::Modified,
                unified: Some(
                    "--- a/src/a.txt\n+++ b/src/a.txt\n@@ -1,2 +1,2 @@\n keep\n-old line\n+new line\n"
                        .into(),
                ),
                note: None,
                from: None,
                mode: None,
            }],
        })
    }

    #[test]
    fn marks_say_open_rewound_partial_and_empty() {
        let mut t = turn(1, None, TurnStatus::Closed);
        assert_eq!(mark(&t), "");
        t.counts = Counts::default();
        assert_eq!(mark(&t), "empty");
        t.partial = Some(PartialRewind {
            rewinds: vec![1],
            rewound: vec![rel("a")],
            left: Vec::new(),
        });
        assert_eq!(mark(&t), "partial");
        t.status = TurnStatus::Rewound;
        assert_eq!(mark(&t), "rewound");
        t.partial.as_mut().unwrap().left.push(Skipped {
            path: rel("b"),
            reason: "overlap".into(),
        });
        assert_eq!(mark(&t), "rewound*");
        t.status = TurnStatus::Open;
        assert_eq!(mark(&t), "open");
    }

    #[test]
    fn the_selection_follows_its_turn_when_new_turns_arrive() {
        let mut a = app();
        a.apply(Action::Down);
        assert_eq!(a.selected_turn().unwrap().id, 3);
        let mut turns = a.turns.clone();
        turns.insert(0, turn(5, None, TurnStatus::Open));
        a.on_log(reply(LogBody { turns }), NOW);
        assert_eq!(a.selected_turn().unwrap().id, 3);
        assert_eq!(a.table.selected(), Some(2));
    }

    #[test]
    fn sessions_filter_in_a_cycle() {
        let mut a = app();
        assert_eq!(a.visible().len(), 4);
        a.apply(Action::NextSession);
        assert_eq!(a.filter, Filter::Session(Some("s2".into())));
        assert_eq!(a.visible().len(), 1);
        a.apply(Action::NextSession);
        assert_eq!(a.filter, Filter::Session(Some("s1".into())));
        let ids: Vec<i64> = a.visible().iter().map(|t| t.id).collect();
        assert_eq!(ids, [3, 1]);
        a.apply(Action::NextSession);
        assert_eq!(a.filter, Filter::Session(None), "the default session");
        assert_eq!(a.selected_turn().unwrap().id, 2);
        a.apply(Action::NextSession);
        assert_eq!(a.filter, Filter::All);
    }

    #[test]
    fn enter_opens_files_then_a_diff_and_esc_comes_back() {
        let mut a = app();
        a.apply(Action::Down);
        a.apply(Action::Down);
        assert_eq!(a.apply(Action::Open), Some(Effect::Show(2)));
        a.on_show(detail());
        a.apply(Action::Down);
        assert_eq!(
            a.apply(Action::Open),
            Some(Effect::Diff {
                turn: 2,
                path: rel("new.txt")
            })
        );
        a.apply(Action::Up);
        assert_eq!(
            a.apply(Action::Ledger),
            Some(Effect::Ledger(Some(rel("src/a.txt"))))
        );
        a.on_diff(2, rel("src/a.txt"), diff());
        let Some(Screen::Diff { lines, .. }) = a.screens.last() else {
            panic!("a diff screen");
        };
        assert_eq!(lines.len(), 6);
        a.apply(Action::Bottom);
        assert!(matches!(
            a.screens.last(),
            Some(Screen::Diff { scroll: 5, .. })
        ));
        a.apply(Action::Back);
        a.apply(Action::Back);
        assert!(a.screens.is_empty());
        assert_eq!(a.selected_turn().unwrap().id, 2);
    }

    #[test]
    fn nothing_is_applied_without_confirmation() {
        let mut a = app();
        assert_eq!(
            a.apply(Action::Rewind),
            Some(Effect::Plan(Ask::Rewind {
                turn: 4,
                merge: None
            }))
        );
        let ask = Ask::Rewind {
            turn: 4,
            merge: None,
        };
        a.on_plan(ask.clone(), plan(false, 0));
        for key in [Action::Rewind, Action::Redo, Action::Open, Action::Ledger] {
            assert_eq!(a.apply(key), None, "{key:?} in the dialog");
        }
        assert_eq!(a.apply(Action::Back), None);
        assert!(a.dialog.is_none(), "esc cancels");
        a.on_plan(ask.clone(), plan(false, 0));
        assert_eq!(
            a.apply(Action::Confirm),
            Some(Effect::Apply {
                ask: ask.clone(),
                force: false
            })
        );
        let mut done = plan(false, 0);
        done.outcome = Outcome::Applied;
        a.on_applied(ask, done);
        assert!(a.dialog.is_none());
        assert_eq!(
            a.status,
            Some(Status::Info(
                "rewound to before turn 2 (turns 2, 4): 2 paths in 7 ms (R redoes): src/a.txt, new.txt"
                    .into()
            ))
        );
    }

    #[test]
    fn a_forced_rewind_takes_a_second_confirmation() {
        let mut a = app();
        let ask = Ask::Rewind {
            turn: 2,
            merge: None,
        };
        a.on_plan(ask.clone(), plan(false, 2));
        assert_eq!(
            a.apply(Action::Confirm),
            None,
            "the first y only asks again"
        );
        assert!(a.dialog.as_ref().unwrap().force);
        assert_eq!(a.apply(Action::Back), None);
        assert!(
            !a.dialog.as_ref().unwrap().force,
            "esc steps back to the plan"
        );
        a.apply(Action::Confirm);
        assert_eq!(
            a.apply(Action::Confirm),
            Some(Effect::Apply { ask, force: true })
        );
    }

    #[test]
    fn merge_plans_the_same_rewind_again() {
        let mut a = app();
        a.on_plan(
            Ask::Rewind {
                turn: 2,
                merge: None,
            },
            plan(false, 1),
        );
        assert_eq!(
            a.apply(Action::Merge),
            Some(Effect::Plan(Ask::Rewind {
                turn: 2,
                merge: Some(MergeMode::Clean)
            }))
        );
    }

    #[test]
    fn a_blocked_redo_cannot_be_confirmed() {
        let mut a = app();
        let mut p = plan(true, 1);
        p.blocked.push(Skipped {
            path: rel("d"),
            reason: "a file is there now".into(),
        });
        a.on_plan(Ask::Redo, p);
        assert_eq!(a.apply(Action::Confirm), None);
        assert_eq!(a.apply(Action::Confirm), None);
        assert!(!a.dialog.as_ref().unwrap().force);
    }

    #[test]
    fn a_refused_apply_shows_the_new_conflicts() {
        let mut a = app();
        let ask = Ask::Redo;
        a.on_plan(ask.clone(), plan(true, 0));
        let mut refused = plan(true, 1);
        refused.outcome = Outcome::Refused;
        a.on_applied(ask, refused);
        assert_eq!(a.dialog.as_ref().unwrap().conflicts(), 1);
        assert!(matches!(a.status, Some(Status::Error(_))));
    }

    #[test]
    fn rewind_from_the_files_screen_is_of_its_turn() {
        let mut a = app();
        a.on_show(detail());
        assert_eq!(
            a.apply(Action::Merge),
            Some(Effect::Plan(Ask::Rewind {
                turn: 2,
                merge: Some(MergeMode::Clean)
            }))
        );
        assert_eq!(a.apply(Action::Redo), Some(Effect::Plan(Ask::Redo)));
    }
}
