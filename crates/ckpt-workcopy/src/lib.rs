//! Work copies: an agent works in an independent copy of a project made
//! from a recorded base, and its result is previewed against the original
//! before anything reaches it.
//!
//! The copy shares nothing with the original (no git objects, no hard
//! links, no remote); it is watched by ckpt as a project of its own; its
//! state file says what has been decided (see [`state`]).

pub mod apply;
pub mod assisted;
pub mod cli;
pub mod command;
pub mod commit;
pub mod contract;
pub mod create;
pub mod export;
pub mod fingerprint;
pub mod git;
pub mod head;
pub mod limits;
pub mod preview;
pub mod push;
pub mod remote;
pub mod run;
pub mod state;
pub mod symlinks;
pub mod tree;
