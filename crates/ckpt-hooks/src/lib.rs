//! `ckpt-hooks`, run as `ckptctl hooks …`: installs ckpt into coding
//! agents' configs (their hooks and MCP server), uninstalls it, shows its
//! status. Every file is planned before any is written (`install`); edits
//! keep the rest of a config as the user wrote it (`edit`).

pub mod agents;
pub mod cli;
pub mod command;
pub mod detect;
pub mod edit;
pub mod files;
pub mod install;
pub mod shell;
