//! The end-to-end tests, one module per area, linked into one test binary
//! (one link per `cargo test` instead of one per file). Run one area with
//! `cargo test -p ckpt-e2e --test e2e -- rewind::`.

mod assisted;
mod blame;
mod bursts;
mod capture;
mod cli_args;
mod cli_output;
mod config;
mod conversation;
mod degraded;
mod doctor;
mod effects;
mod export;
mod fsck;
mod full_disk;
mod garbage_load;
mod generated_requests;
mod git_output;
mod git_safety;
mod hooks;
mod ledger;
mod mcp;
mod planning;
mod process;
mod progress;
mod protocol;
mod real_claude_code;
mod real_codex;
mod real_gemini;
mod real_opencode;
mod restart;
mod retention;
mod rewind;
mod seed;
mod service;
mod sessions;
mod snapshots;
mod trace;
mod ui;
mod watches;
mod workcopy;
mod workcopy_hub;
