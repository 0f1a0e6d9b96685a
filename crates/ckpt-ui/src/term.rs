//! The terminal: raw mode and the alternate screen while the timeline
//! runs, given back on every way out. ratatui's `try_init` installs a
//! panic hook that restores the terminal before the panic message prints;
//! [`Screen`]'s drop restores it on a return or an error.

use ratatui::DefaultTerminal;

/// The terminal, taken over until dropped.
pub struct Screen {
    pub terminal: DefaultTerminal,
}

impl Screen {
    /// Raw mode, the alternate screen, the panic hook.
    pub fn enter() -> anyhow::Result<Screen> {
        use std::io::IsTerminal;
        anyhow::ensure!(
            std::io::stdout().is_terminal() && std::io::stdin().is_terminal(),
            "`ckptctl ui` needs a terminal; `ckptctl log` lists turns without one"
        );
        match ratatui::try_init() {
            Ok(terminal) => Ok(Screen { terminal }),
            Err(e) => {
                // Raw mode may be on already.
                ratatui::restore();
                Err(anyhow::Error::new(e).context("setting up the terminal"))
            }
        }
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        ratatui::restore();
    }
}
