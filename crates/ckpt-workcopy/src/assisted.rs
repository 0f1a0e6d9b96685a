//! Who a work copy's commit says assisted: an `Assisted-by: AGENT:MODEL`
//! trailer for each agent whose live turns in the copy made its changes
//! (kernel style, `Documentation/process/coding-assistants.rst`: an agent
//! never signs off), the model as the agent's transcript names it, else
//! the agent alone; and the `Co-authored-by` trailers the
//! `workcopy.co_authored_by` setting names, only those.

use std::path::Path;

use ckpt_agents::conversation::model_of;
use ckpt_proto::TurnStatus;
use ckptctl::commands::{log, Ctx};

/// The trailers for a commit of the copy at `copy`; a copy no agent's
/// hook watched has no turns, and so no `Assisted-by`.
pub fn trailers(ctx: &Ctx, copy: &Path, co_authors: &[String]) -> Vec<String> {
    let mut out: Vec<String> = assistants(ctx, copy)
        .into_iter()
        .map(|who| format!("Assisted-by: {who}"))
        .collect();
    out.extend(co_authors.iter().map(|c| format!("Co-authored-by: {c}")));
    out
}

/// `AGENT:MODEL` (or `AGENT`) of each agent with a live turn in the copy,
/// oldest first, each once.
fn assistants(ctx: &Ctx, copy: &Path) -> Vec<String> {
    let mut g = ctx.g.clone();
    g.dir = Some(copy.to_path_buf());
    // A copy that is not watched (no agent's hook ran there) has no turns.
    let Ok(log) = Ctx::new(g).and_then(|c| log::query(&c, 100_000, None)) else {
        return Vec::new();
    };
    let mut out: Vec<String> = Vec::new();
    for t in log.turns.iter().rev() {
        let Some(agent) = t.agent.as_deref() else {
            continue;
        };
        if t.status == TurnStatus::Rewound || crate::apply::is_apply(t) {
            continue;
        }
        let model = t.transcript.as_deref().and_then(|p| model_of(Path::new(p)));
        let who = match model {
            Some(m) => format!("{agent}:{m}"),
            None => agent.to_string(),
        };
        if !out.contains(&who) {
            out.push(who);
        }
    }
    out
}
