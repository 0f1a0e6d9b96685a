//! The executables that ship next to `ckptctl` from the same build:
//! `ckpt-mcp` (the MCP server), `ckpt-hooks` (`hooks install` and
//! friends), `ckpt-doctor` (`status`, `doctor`), `ckpt-workcopy` (`workcopy …`), `ckpt-ui` (`ui`) and `ckpt-trace`
//! (`trace …`, `blame --rev|--notes`, `ledger export --format sarif`). They hold what `ckptctl`, started on every hook call, should
//! not link (docs/measurements.md, issue 18).

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;

use anyhow::Context;

/// `name` next to this executable.
pub fn path(name: &str) -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe().context("finding this executable's path")?;
    let dir = exe
        .parent()
        .with_context(|| format!("{} has no parent directory", exe.display()))?;
    Ok(dir.join(name))
}

/// Replaces this process with `cmd`, the sibling `name` (`what` says what
/// it is); returns only on failure.
pub fn exec(mut cmd: Command, name: &str, what: &str) -> anyhow::Result<u8> {
    let exe = PathBuf::from(cmd.get_program());
    let e = cmd.exec();
    if e.kind() == std::io::ErrorKind::NotFound {
        anyhow::bail!(
            "{what} {} is missing: install {name} next to ckptctl, from the same build",
            exe.display()
        );
    }
    Err(e).with_context(|| format!("starting {what} {}", exe.display()))
}

/// `ckptctl hooks …` and `ckptctl workcopy …`: runs the sibling `name`
/// (`what` it is) with this command line as it is.
pub fn forward(name: &str, what: &str) -> anyhow::Result<u8> {
    let mut cmd = Command::new(path(name)?);
    cmd.args(std::env::args_os().skip(1));
    exec(cmd, name, what)
}

pub const HOOKS: &str = "ckpt-hooks";
pub const DOCTOR: &str = "ckpt-doctor";
pub const WORKCOPY: &str = "ckpt-workcopy";
pub const CONFIG: &str = "ckpt-config";
pub const UI: &str = "ckpt-ui";
pub const TRACE: &str = "ckpt-trace";
