//! Colour and the pager: what a person at a terminal sees, and never what a
//! script reads. Colour follows `--color`, then `NO_COLOR`/`CLICOLOR_FORCE`
//! and whether stdout is a terminal (anstream decides, as for clap's own
//! help); the pager runs only when stdout is a terminal, as git's does.

use std::io::{IsTerminal, Write};
use std::process::{Child, Command, Stdio};

use anstyle::{AnsiColor, Style};

/// `--color`'s values.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum When {
    /// On a terminal, unless NO_COLOR is set (or CLICOLOR_FORCE forces it).
    #[default]
    Auto,
    Always,
    Never,
}

/// Sets the process-wide colour choice from `--color` (call once, early).
pub fn init(when: Option<When>) {
    let choice = match when.unwrap_or_default() {
        When::Auto => return,
        When::Always => anstream::ColorChoice::Always,
        When::Never => anstream::ColorChoice::Never,
    };
    choice.write_global();
}

pub const ADDED: Style = AnsiColor::Green.on_default();
pub const REMOVED: Style = AnsiColor::Red.on_default();
pub const CHANGED: Style = AnsiColor::Yellow.on_default();
pub const META: Style = Style::new().bold();
pub const HUNK: Style = AnsiColor::Cyan.on_default();
pub const TURN: Style = AnsiColor::Yellow.on_default();
pub const DIM: Style = Style::new().dimmed();
pub const WARN: Style = AnsiColor::Red.on_default().bold();

/// `text` in `style` (the escapes are dropped on the way out when colour
/// is off).
pub fn paint(style: Style, text: impl std::fmt::Display) -> String {
    format!("{style}{text}{style:#}")
}

/// Where a command's human output goes: stdout, or the pager.
pub struct Output {
    out: anstream::AutoStream<Box<dyn Write>>,
    pager: Option<Child>,
}

impl Output {
    /// Stdout, through the pager when `page` and stdout is a terminal.
    pub fn new(page: bool) -> Output {
        let stdout = std::io::stdout();
        // Decided on the real stdout: the pager's pipe is no terminal.
        let choice = anstream::AutoStream::choice(&stdout);
        if page && stdout.is_terminal() {
            if let Some((child, stdin)) = spawn_pager() {
                return Output {
                    out: anstream::AutoStream::new(Box::new(stdin), choice),
                    pager: Some(child),
                };
            }
        }
        Output {
            out: anstream::AutoStream::new(Box::new(stdout), choice),
            pager: None,
        }
    }

    /// Flushes, and waits for the pager to be quit.
    pub fn finish(mut self) -> anyhow::Result<()> {
        self.out.flush()?;
        if let Some(mut child) = self.pager.take() {
            // Closing its stdin ends its input.
            drop(self.out);
            child.wait()?;
        }
        Ok(())
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.out.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// `$CKPT_PAGER`, else `$PAGER`, else `less`, run by the shell as git runs
/// its pager, with `LESS=FRX` unless set: quit when the text fits one
/// screen, pass colours, leave the text on the screen. `cat` or an empty
/// value means no pager.
fn spawn_pager() -> Option<(Child, std::process::ChildStdin)> {
    let var = |name| std::env::var(name).ok();
    let cmd = var("CKPT_PAGER")
        .or_else(|| var("PAGER"))
        .unwrap_or_else(|| "less".into());
    if cmd.trim().is_empty() || cmd.trim() == "cat" {
        return None;
    }
    let mut c = Command::new("sh");
    c.arg("-c").arg(&cmd).stdin(Stdio::piped());
    if std::env::var_os("LESS").is_none() {
        c.env("LESS", "FRX");
    }
    // A pager that cannot start leaves the text on stdout.
    let mut child = c.spawn().ok()?;
    let stdin = child.stdin.take()?;
    Some((child, stdin))
}
