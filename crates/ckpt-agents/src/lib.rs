//! The coding agents as the hook path knows them: their names and hook
//! events, what each agent's hook payload calls things, the record of each
//! agent's last hook call, and the conversation adapters that read (and
//! fork) an agent's session. `ckptctl` links this on every hook call; how
//! to install into the agents is `ckpt-hooks`, which the hook path never
//! links (Cargo, not the linker, keeps its config editors out).

mod agent;
pub mod calls;
pub mod conversation;
pub mod payload;
pub mod payloads;
pub mod workcopy_turn;

pub use agent::{claude_dir, codex_home, gemini_dir, Agent, Event, Home};
pub use payload::{HookInput, Payload};
