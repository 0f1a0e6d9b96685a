//! Filesystem access confined to a project root.
//!
//! Every operation walks from the root's directory handle one component at a
//! time with `O_NOFOLLOW | O_DIRECTORY`, so a symlink anywhere on the way
//! (say an agent planted `src -> /etc`) is refused instead of followed, and
//! the final name is then acted on relative to its parent's handle. Paths are
//! `RelPath`s, which cannot hold `..`, absolute parts or `.git`. A rewind
//! walks to each directory once and keeps its handle (`Dirs`).
//!
//! `Root` (`root.rs`) holds the single operations; `Dirs` (`writer.rs`) is
//! the batched writer a rewind uses, which recycles the files it replaces
//! (`spares.rs`); `durability.rs` makes a batch durable.

mod durability;
mod root;
mod spares;
mod writer;

pub(crate) use durability::{sync_beside, sync_while, WholeFs};
#[cfg(test)]
pub(crate) use durability::{FILE_FSYNCS, SYNCFS_CALLS};
pub(crate) use root::{KeptParent, Root, Stat, StatKind};
#[cfg(test)]
pub(crate) use writer::SPARES_CUT;
pub(crate) use writer::{Dirs, Staged};
