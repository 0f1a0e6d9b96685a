//! ckpt-ui: the terminal timeline, run as `ckptctl ui` (an executable of
//! its own, so the hook path never links ratatui). It talks to `ckptd`
//! with ckptctl's client, like every other command.
//!
//! ```text
//! ckptctl ui                  # the timeline of the project here
//! ckptctl ui --session s1     # one session's turns first
//! ```
//!
//! - [`state`]: what is shown and where the user is; keys become actions,
//!   actions become effects (daemon calls), answers come back.
//! - [`render`]: one function per view, over ratatui.
//! - [`keys`]: the key table and the footer that shows it.
//! - [`daemon`]: the requests, over one kept connection.
//! - [`term`]: the terminal taken and given back (panic hook included).
//! - [`app`]: the loop that ties them.

pub mod app;
pub mod cli;
pub mod daemon;
pub mod keys;
pub mod render;
pub mod state;
pub mod term;
