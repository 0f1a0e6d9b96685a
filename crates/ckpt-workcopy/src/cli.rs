//! `ckptctl workcopy …`'s command line, parsed only when that
//! family runs (`ckptctl::cli::Family`).

use std::path::PathBuf;

use clap::Subcommand;

ckptctl::family_cli!(
    WorkcopyCli,
    "ckptctl workcopy",
    WorkcopyAction,
    "Work copies: an independent copy of the project for an agent to work in."
);

#[derive(Subcommand, Debug)]
pub enum WorkcopyAction {
    /// Copy the project (-C's, else the current directory's git top level)
    /// into an independent copy and watch it.
    Create {
        /// HEAD: a clone at the commit (refused with uncommitted changes);
        /// current: the tree as ckpt captures it, untracked and ignored
        /// files too, but not what ckpt excludes (node_modules, target,
        /// .ckptignore) or files over its size cap.
        #[arg(long, value_enum, default_value = "HEAD")]
        base: crate::state::BaseKind,
        /// [default: <project's name>-<n>]
        #[arg(long)]
        name: Option<String>,
        /// Where the copy goes [default: <data dir>-workcopies/NAME].
        #[arg(long, value_name = "DIR")]
        path: Option<PathBuf>,
    },
    /// Every work copy: name, state, base, path, original.
    List,
    /// State, base, paths changed, conflicts with the original.
    Status {
        /// The work copy [default: the one holding the current directory, else the only one].
        name: Option<String>,
    },
    /// Unified diff of the copy against its base.
    Diff {
        /// The work copy [default: the one holding the current directory, else the only one].
        name: Option<String>,
    },
    /// What applying would change in the original, and the git tree it
    /// gives; exits 3 on conflicts. Writes nothing in the original; issues
    /// the token `apply` takes (valid 10 minutes, once).
    Preview {
        /// The work copy [default: the one holding the current directory, else the only one].
        name: Option<String>,
    },
    /// Write the copy's changes into the original as one ckpt turn there
    /// (`ckptctl rewind` undoes it); refused on conflicts (exit 3), and
    /// unless what is applied is what the last preview showed.
    Apply {
        /// The work copy [default: the one holding the current directory, else the only one].
        name: Option<String>,
        /// The token the preview printed [default: the last preview's].
        #[arg(long, value_name = "T", conflicts_with = "no_preview")]
        token: Option<String>,
        /// Apply without a preview (for scripts that accept the risk): the
        /// output says so.
        #[arg(long)]
        no_preview: bool,
    },
    /// Commit exactly the applied paths in the original's repository, with
    /// your git config and hooks; refused if its HEAD or those paths moved
    /// since the apply. Pushing stays yours.
    Commit {
        /// The work copy [default: the one holding the current directory, else the only one].
        name: Option<String>,
        /// The commit message [default: "Apply work copy NAME (ckpt turn N)"].
        #[arg(short, long)]
        message: Option<String>,
    },
    /// Push the work copy's commit to the original's remote: never forced,
    /// never asking for a password; refused if the remote's branch moved
    /// ahead or its URL holds credentials.
    Push {
        /// The work copy [default: the one holding the current directory, else the only one].
        name: Option<String>,
        /// The remote [default: the branch's upstream remote, else origin].
        #[arg(long, value_name = "R")]
        remote: Option<String>,
        /// The remote branch [default: the original's current branch].
        #[arg(long, value_name = "B")]
        branch: Option<String>,
    },
    /// Freeze the copy's changes against its base: changes.patch,
    /// files.zip, report.md and manifest.json in DIR.
    Export {
        /// The work copy [default: the one holding the current directory, else the only one].
        name: Option<String>,
        /// A directory outside the original and the copy: created if
        /// missing, else it must be empty.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
    /// Run a check in the copy (no shell, stdin closed, output to a log).
    Run {
        /// The work copy [default: the one holding -C's or the current
        /// directory, else the only one].
        name: Option<String>,
        /// Kill the command's whole process group after SECS seconds (0:
        /// never) [default: the setting `workcopy.run_timeout_secs`, 300].
        #[arg(long, value_name = "SECS")]
        timeout: Option<u64>,
        /// The program and its arguments (after `--`).
        #[arg(required = true, last = true)]
        command: Vec<std::ffi::OsString>,
    },
    /// Stop watching the copy and delete it and its state.
    Remove {
        /// The work copy [default: the one holding the current directory, else the only one].
        name: Option<String>,
        /// Even if it holds changes not applied.
        #[arg(long)]
        force: bool,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every argument says what it is in `--help` (as `ckptctl::cli`'s
    /// `every_argument_has_help` checks for the rest of the command line).
    #[test]
    fn every_argument_has_help() {
        use clap::CommandFactory;
        let missing = ckptctl::cli::args_without_help(&WorkcopyCli::command());
        assert!(missing.is_empty(), "arguments without help: {missing:#?}");
    }
}
