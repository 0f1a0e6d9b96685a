//! How a rewind or a redo is asked for.

use serde::{Deserialize, Serialize};

/// Whether a rewind (or redo) only plans, and whether it overwrites what
/// was edited after the agent. On the wire, as fields of the request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct RewindFlags {
    /// Show what would change; change nothing.
    #[serde(default)]
    #[cfg_attr(feature = "clap", arg(long))]
    pub dry_run: bool,
    /// Overwrite paths edited after the agent (or by another session).
    #[serde(default)]
    #[cfg_attr(feature = "clap", arg(long))]
    pub force: bool,
}

/// How `rewind --merge` treats a text file changed since the rewound turns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
// (Plain comments: as doc comments clap would list them in `--help`.)
pub enum MergeMode {
    // Write clean merges; leave a file whose changes overlap as it is.
    Clean,
    // Write overlapping changes with conflict markers too.
    Markers,
}
