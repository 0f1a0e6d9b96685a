//! What every benchmarked system can do. Scenarios time these calls from
//! the outside with wall-clock timers; a system does all of its work (child
//! processes included) inside the call.

use std::path::Path;
use std::time::Duration;

use anyhow::Result;

pub trait System {
    /// Short name used in tables and JSON.
    fn name(&self) -> &'static str;

    /// The project tree this system works on (its own copy).
    fn root(&self) -> &Path;

    /// Untimed: throw away any history and get ready to track the tree from
    /// scratch (ckpt: a new daemon with an empty data dir; git: a new shadow repo).
    fn prepare_fresh(&mut self) -> Result<()>;

    /// Timed as "watch": start tracking the tree (ckpt: `watch`, returns once
    /// the baseline is complete; git: the first snapshot).
    fn init(&mut self) -> Result<()>;

    /// Marks the start of an agent turn; returns the turn's id.
    fn turn_start(&mut self) -> Result<u64>;

    /// Marks the end of the open turn; returns once it is fully captured.
    fn turn_end(&mut self) -> Result<()>;

    /// Restores the state from just before `turn` began.
    fn rewind(&mut self, turn: u64) -> Result<()>;

    /// Undoes the last rewind.
    fn redo(&mut self) -> Result<()>;

    /// Timed as "forget": stop tracking the tree and delete its history
    /// (ckpt: `unwatch --drop-data`; git: delete the shadow repository).
    /// The tree must stay as it is.
    fn forget(&mut self) -> Result<()>;

    /// Untimed: absorb activity caused by the bench itself (its verification
    /// reads) so it does not leak into the next timed call.
    fn settle(&mut self) -> Result<()>;

    /// Timed as "blame": every line of the file at `rel` (relative to the
    /// root) with the turn that last introduced it (ckpt: `ckptctl blame`;
    /// git: `git blame` of the last snapshot).
    fn blame(&mut self, rel: &Path) -> Result<Blamed>;

    /// Bytes the system's store takes on disk (apparent sizes).
    fn store_bytes(&self) -> StoreSize;

    /// Reference floors: named timings of the cheapest possible calls.
    fn floors(&mut self) -> Result<Vec<(&'static str, Duration)>>;

    /// The pid of a long-running helper process, if the system has one.
    fn daemon_pid(&self) -> Option<u32> {
        None
    }

    /// Warnings the system reported since the last call (e.g. "degraded").
    fn take_notes(&mut self) -> Vec<String> {
        Vec::new()
    }

    /// Stops helper processes.
    fn shutdown(&mut self) {}
}

/// A store's size, with the part that is a database write-ahead log shown apart.
#[derive(Clone, Copy, Debug, Default)]
pub struct StoreSize {
    pub total: u64,
    pub wal: u64,
}

/// What a blame reported, to check it against what the agent did.
#[derive(Clone, Copy, Debug, Default)]
pub struct Blamed {
    pub lines: usize,
    /// Lines attributed to a turn (not to the file's first version).
    pub from_turns: usize,
}
