//! ckpt-types: plain values that the core, the protocol, the daemon and the
//! client share, each defined once. Serde only, no IO; with the `clap`
//! feature the command line takes them as they are, so a flag is declared
//! in one place from the command line to the core.

pub mod rewind;
pub mod time;

pub use rewind::{MergeMode, RewindFlags};
pub use time::now_ns;
