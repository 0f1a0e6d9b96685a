//! `blame FILE`: every line of a file as it is now, with the live turn that
//! last introduced it, or `baseline` / `between-turns`, and the open ledger
//! entries covering it.

use std::collections::HashMap;
use std::sync::Arc;

use ckpt_core::LineOrigin;
use ckpt_proto::{BlameBody, BlameLine, WirePath};

use super::gate::Gate;
use super::About;
use crate::daemon::Daemon;
use crate::error::ReqResult;

pub fn handle(
    d: &Arc<Daemon>,
    g: Gate,
    dir: &WirePath,
    path: &WirePath,
) -> ReqResult<About<BlameBody>> {
    let h = d.project_for(dir)?;
    h.ensure_available()?;
    let rel = Daemon::rel_path(&h, path)?;
    // The current content is the cache's: it must hold every edit made
    // before this request.
    g.pass(d, &h)?;
    let (blame, spans) = h.call(|p| Ok((p.blame(&rel)?, p.open_ledger_spans(&rel)?)))?;
    let turns: HashMap<i64, &ckpt_core::BlameTurn> =
        blame.turns.iter().map(|t| (t.id, t)).collect();
    let lines = blame
        .lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let line = i as u32 + 1;
            let mut out = BlameLine {
                line: line.into(),
                text: l.text.clone(),
                origin: ckpt_proto::LineOrigin::Baseline,
                turn: None,
                agent: None,
                session: None,
                label: None,
                time_ns: None,
                ledger: spans
                    .iter()
                    .filter(|(_, s)| s.start <= line && line <= s.end)
                    .map(|&(id, _)| id)
                    .collect(),
            };
            match l.origin {
                LineOrigin::Baseline => {}
                LineOrigin::BetweenTurns => out.origin = ckpt_proto::LineOrigin::BetweenTurns,
                LineOrigin::Turn(id) => {
                    out.origin = ckpt_proto::LineOrigin::Turn;
                    out.turn = Some(id);
                    if let Some(t) = turns.get(&id) {
                        out.agent = t.meta.agent.clone();
                        out.session = t.meta.session.clone();
                        out.label = t.meta.label.clone();
                        out.time_ns = Some(t.started_ns);
                    }
                }
            }
            out
        })
        .collect();
    let body = BlameBody {
        path: WirePath::from(&blame.path),
        lines,
    };
    Ok((h, body))
}
