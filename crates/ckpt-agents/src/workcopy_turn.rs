//! How a work copy's apply shows in the original's log: a turn of its own
//! agent and session, which `rewind --last` and `log` tell apart from an
//! agent's turns (the apply itself is `ckpt-workcopy`'s).

/// The agent an apply's turn names: the user applied it, as they run
/// `ckptctl run`, so `rewind --last` treats it as one of the user's turns.
pub const AGENT: &str = "workcopy";

/// The session an apply's turn is made in: its own, so a rewind of it
/// undoes that apply alone.
pub fn session(name: &str, nanos: u128) -> String {
    format!("workcopy:{name}:{nanos}")
}

/// Whether `t` is a work copy's apply.
pub fn is_apply(t: &ckpt_proto::TurnInfo) -> bool {
    t.agent.as_deref() == Some(AGENT)
        && t.session
            .as_deref()
            .is_some_and(|s| s.starts_with("workcopy:"))
}
