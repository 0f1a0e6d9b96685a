//! Keys to actions: one table, also what the footer shows. Only plain
//! keys (no mouse, no modifiers beyond Ctrl-C), so it works over SSH and
//! in tmux as it does locally.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::state::{Action, App, Screen};

/// The action of `key` where the user is (the dialog reads `y` and `f`,
/// which mean nothing elsewhere).
pub fn action(app: &App, key: KeyEvent) -> Option<Action> {
    if key.modifiers.contains(KeyModifiers::CONTROL) {
        return match key.code {
            KeyCode::Char('c') => Some(Action::Quit),
            KeyCode::Char('l') => Some(Action::Refresh),
            _ => None,
        };
    }
    let a = match key.code {
        KeyCode::Up | KeyCode::Char('k') => Action::Up,
        KeyCode::Down | KeyCode::Char('j') => Action::Down,
        KeyCode::PageUp => Action::PageUp,
        KeyCode::PageDown | KeyCode::Char(' ') => Action::PageDown,
        KeyCode::Home | KeyCode::Char('g') => Action::Top,
        KeyCode::End | KeyCode::Char('G') => Action::Bottom,
        KeyCode::Esc | KeyCode::Left | KeyCode::Backspace | KeyCode::Char('h') => Action::Back,
        KeyCode::Char('q') => Action::Quit,
        KeyCode::Char('y') if app.dialog.is_some() => Action::Confirm,
        KeyCode::Char('n') if app.dialog.is_some() => Action::Back,
        KeyCode::Enter | KeyCode::Right | KeyCode::Char('l') if app.dialog.is_none() => {
            Action::Open
        }
        KeyCode::Char('r') => Action::Rewind,
        KeyCode::Char('m') => Action::Merge,
        KeyCode::Char('R') => Action::Redo,
        KeyCode::Char('L') => Action::Ledger,
        KeyCode::Char('s') => Action::NextSession,
        _ => return None,
    };
    Some(a)
}

/// The keys of where the user is, as the footer lists them.
pub fn help(app: &App) -> &'static str {
    if let Some(d) = &app.dialog {
        return if d.blocked() {
            "esc close  ↑↓ scroll"
        } else if d.force {
            "y overwrite the edits  esc back"
        } else if d.conflicts() > 0
            && matches!(d.ask, crate::state::Ask::Rewind { merge: None, .. })
        {
            "m merge  y force…  esc cancel  ↑↓ scroll"
        } else if d.conflicts() > 0 {
            "y force…  esc cancel  ↑↓ scroll"
        } else {
            "y apply  esc cancel  ↑↓ scroll"
        };
    }
    match app.screens.last() {
        None => "↑↓ move  enter files  r rewind  m merge  R redo  L ledger  s session  q quit",
        Some(Screen::Files { .. }) => {
            "↑↓ move  enter diff  L file's ledger  r rewind  m merge  R redo  esc back"
        }
        Some(Screen::Diff { .. }) => "↑↓ pgup pgdn scroll  g/G top/end  esc back  q quit",
        Some(Screen::Ledger { .. }) => "↑↓ move  esc back  q quit",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::tests::{app, plan};
    use crate::state::Ask;

    fn key(c: KeyCode) -> KeyEvent {
        KeyEvent::new(c, KeyModifiers::NONE)
    }

    #[test]
    fn y_confirms_only_in_the_dialog() {
        let mut a = app();
        assert_eq!(action(&a, key(KeyCode::Char('y'))), None);
        assert_eq!(action(&a, key(KeyCode::Enter)), Some(Action::Open));
        a.on_plan(Ask::Redo, plan(true, 0));
        assert_eq!(action(&a, key(KeyCode::Char('y'))), Some(Action::Confirm));
        assert_eq!(action(&a, key(KeyCode::Char('n'))), Some(Action::Back));
        assert_eq!(
            action(&a, key(KeyCode::Enter)),
            None,
            "enter never confirms"
        );
    }

    #[test]
    fn ctrl_c_quits_everywhere() {
        let a = app();
        let k = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(action(&a, k), Some(Action::Quit));
        assert_eq!(action(&a, key(KeyCode::Char('R'))), Some(Action::Redo));
    }

    /// The footer fits 80 columns on every screen.
    #[test]
    fn every_footer_fits_80_columns() {
        let mut a = app();
        let mut footers = vec![help(&a)];
        a.on_show(crate::state::tests::detail());
        footers.push(help(&a));
        for conflicts in [0, 1] {
            a.on_plan(Ask::Redo, plan(true, conflicts));
            footers.push(help(&a));
            a.on_plan(
                Ask::Rewind {
                    turn: 1,
                    merge: None,
                },
                plan(false, conflicts),
            );
            footers.push(help(&a));
        }
        for f in footers {
            assert!(f.chars().count() <= 80, "{f:?}");
        }
    }
}
