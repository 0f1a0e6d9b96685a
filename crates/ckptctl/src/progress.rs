//! Progress of a long request on stderr (a first watch, a scan after lost
//! events, a rewind, a redo, a work copy's apply), from the daemon's
//! progress frames, drawn by `indicatif`. Only on a terminal, never with
//! `--json` or `-q`, and never for a hook's call (those ask for no frames).

use std::io::IsTerminal;
use std::time::Duration;

use ckpt_proto::{Progress, ProgressOp};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::output;

/// A spinner (a bar once a total is known) on stderr.
pub struct Bar {
    pb: ProgressBar,
    /// The kind of the last frame drawn: a barrier's scan, then the apply.
    op: Option<ProgressOp>,
    /// What the command does ("rewinding"), before the step's name.
    what: String,
    shown: bool,
}

/// Whether a command with these flags shows progress.
pub fn wanted(json: bool, quiet: bool) -> bool {
    !json && !quiet && std::io::stderr().is_terminal()
}

impl Bar {
    /// A hidden bar saying `what`, drawn from the first frame on (the
    /// daemon sends none for a request done within 100 ms, nor does a
    /// daemon that predates them), ticking on between frames.
    pub fn start(what: &str) -> Bar {
        Bar {
            pb: ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden()),
            op: None,
            what: what.to_string(),
            shown: false,
        }
    }

    /// Draws one progress frame.
    pub fn update(&mut self, p: &Progress) {
        if !self.shown {
            self.shown = true;
            self.pb
                .set_draw_target(ProgressDrawTarget::stderr_with_hz(10));
            self.pb.enable_steady_tick(Duration::from_millis(100));
        }
        if self.op != Some(p.op) {
            self.op = Some(p.op);
            let (prefix, template) = match (p.op, p.total) {
                (ProgressOp::Scan, _) => ("scanning", "{spinner} {prefix}… {elapsed} {msg}"),
                (_, Some(_)) => (
                    "writing",
                    "{spinner} {prefix} [{bar:24}] {pos}/{len} paths, {msg}",
                ),
                (_, None) => ("writing", "{spinner} {prefix}… {elapsed} {msg}"),
            };
            self.pb.set_style(style(template));
            self.pb.set_prefix(format!("{}: {prefix}", self.what));
        }
        if let Some(total) = p.total {
            self.pb.set_length(total);
        }
        self.pb.set_position(p.done);
        self.pb.set_message(match p.op {
            ProgressOp::Scan => format!(
                "{}, {} hashed",
                output::count(p.done, "entry"),
                output::bytes(p.bytes)
            ),
            _ => format!("{} written", output::bytes(p.bytes)),
        });
    }

    /// Clears the line: what the command prints next takes its place.
    pub fn finish(self) {
        self.pb.finish_and_clear();
    }
}

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template)
        .unwrap_or_else(|_| ProgressStyle::default_spinner())
        .progress_chars("=> ")
}
