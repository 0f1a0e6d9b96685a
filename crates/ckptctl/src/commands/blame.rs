//! `ckptctl blame FILE`: every line of a file with the turn that last
//! introduced it, like `git blame`.

use std::io::Write;
use std::path::{Path, PathBuf};

use ckpt_proto::{BlameLine, BlameReply, LineOrigin, Request};
use clap::Args;

use super::Ctx;
use crate::output;

/// Agent names and labels are cut to these many characters in text output.
const AGENT_WIDTH: usize = 12;
const LABEL_WIDTH: usize = 20;

/// The blame of `file`: the document `--json` prints.
pub fn query(ctx: &Ctx, file: &Path) -> anyhow::Result<BlameReply> {
    ctx.reply(&Request::Blame {
        dir: ctx.wire_dir(),
        path: ctx.wire_path(file)?,
        at: None,
    })
}

/// `ckptctl blame`'s arguments.
#[derive(Args, Debug)]
pub struct BlameArgs {
    /// A text file in the project, as it is now.
    pub file: PathBuf,
    /// The file as committed at REV (read with `git show`), its lines
    /// attributed to the turns that wrote them.
    #[arg(long, value_name = "REV", conflicts_with = "notes")]
    pub rev: Option<String>,
    /// Attribution from the git-ai notes under refs/notes/ai (written by
    /// `ckptctl trace notes write` here or elsewhere, or by git-ai), for
    /// the file at HEAD: needs no ckpt history.
    #[arg(long)]
    pub notes: bool,
}

pub fn run(ctx: &Ctx, args: BlameArgs) -> anyhow::Result<u8> {
    if args.rev.is_some() || args.notes {
        // They run git: ckpt-trace does.
        return super::sibling::forward(super::sibling::TRACE, "the provenance tool");
    }
    let b = query(ctx, &args.file)?;
    print(ctx, &b)
}

/// Prints a blame as `ckptctl blame` does.
pub fn print(ctx: &Ctx, b: &BlameReply) -> anyhow::Result<u8> {
    if ctx.g.json {
        output::json(b)?;
        return Ok(0);
    }
    let cols: Vec<[String; 3]> = b.lines.iter().map(columns).collect();
    let width = |i: usize| cols.iter().map(|c| c[i].chars().count()).max().unwrap_or(0);
    let (w_who, w_agent, w_label) = (width(0), width(1), width(2));
    let w_line = b.lines.len().to_string().len();
    let mut out = std::io::stdout().lock();
    let marks: Vec<String> = b.lines.iter().map(ledger_mark).collect();
    let w_mark = marks.iter().map(|m| m.len()).max().unwrap_or(0);
    for ((l, [who, agent, label]), mark) in b.lines.iter().zip(&cols).zip(&marks) {
        writeln!(
            out,
            "{:>w_line$} {who:<w_who$}  {agent:<w_agent$}  {label:<w_label$} {mark:<w_mark$}| {}",
            l.line, l.text
        )?;
    }
    Ok(0)
}

/// `#3,#5 ` for a line open ledger entries cover (`ckptctl ledger show 3`).
fn ledger_mark(l: &BlameLine) -> String {
    if l.ledger.is_empty() {
        return String::new();
    }
    let ids: Vec<String> = l.ledger.iter().map(|id| format!("#{id}")).collect();
    format!("{} ", ids.join(","))
}

/// Who (`t7`, `baseline`, `user`), the short agent and the cut label.
fn columns(l: &BlameLine) -> [String; 3] {
    let cut = |s: &Option<String>, n: usize| -> String {
        s.as_deref()
            .unwrap_or("")
            .replace(['\n', '\t'], " ")
            .chars()
            .take(n)
            .collect()
    };
    match l.origin {
        LineOrigin::Turn => [
            l.turn.map_or_else(|| "t?".into(), |t| format!("t{t}")),
            cut(&l.agent, AGENT_WIDTH),
            cut(&l.label, LABEL_WIDTH),
        ],
        LineOrigin::Baseline => ["baseline".into(), String::new(), String::new()],
        LineOrigin::BetweenTurns => ["user".into(), String::new(), String::new()],
        LineOrigin::Other => ["?".into(), String::new(), String::new()],
    }
}
