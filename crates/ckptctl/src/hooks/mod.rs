//! Installing ckpt into agents: their hook and MCP configs.

pub mod edit;
