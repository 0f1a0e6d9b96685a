//! Running git for work copies: non-interactive; hooks off, except for the
//! user's own commit ([`user_cmd`]).

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::Context;

pub fn cmd(dir: &Path) -> Command {
    let mut c = user_cmd(dir);
    c.args(["-c", "core.hooksPath=/dev/null"]);
    c
}

/// git as the user runs it (their config and hooks), but never asking:
/// no terminal prompt, no editor, stdin closed.
pub fn user_cmd(dir: &Path) -> Command {
    let mut c = Command::new("git");
    c.current_dir(dir)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_EDITOR", "true")
        .stdin(Stdio::null());
    c
}

/// Runs git in `dir`; its stdout, or an error with its stderr.
pub fn out(dir: &Path, args: &[&str]) -> anyhow::Result<Vec<u8>> {
    let o = cmd(dir)
        .args(args)
        .output()
        .with_context(|| format!("running git {} in {}", args.join(" "), dir.display()))?;
    anyhow::ensure!(
        o.status.success(),
        "git {} in {} failed: {}",
        args.join(" "),
        dir.display(),
        String::from_utf8_lossy(&o.stderr).trim()
    );
    Ok(o.stdout)
}

pub fn text(dir: &Path, args: &[&str]) -> anyhow::Result<String> {
    // Only the end: `status --porcelain` starts its first line with a space.
    Ok(String::from_utf8_lossy(&out(dir, args)?)
        .trim_end()
        .to_string())
}

/// The top level of the repository holding `dir`, if any.
pub fn toplevel(dir: &Path) -> Option<std::path::PathBuf> {
    text(dir, &["rev-parse", "--show-toplevel"])
        .ok()
        .map(std::path::PathBuf::from)
}

/// The commit HEAD names, if there is one.
pub fn head(dir: &Path) -> Option<String> {
    text(dir, &["rev-parse", "--verify", "-q", "HEAD^{commit}"]).ok()
}
