//! Request handlers, one file each, behind one central `match`: each takes
//! its request whole, and the barrier its request declares ([`Gate`]). Handlers are
//! synchronous: the server runs each on its connection's own thread, so
//! one project's long call never holds up another project or `status`.

use std::sync::Arc;

use ckpt_proto::{Reply, Request, Response, WirePath};

use crate::daemon::Daemon;
use crate::error::ReqError;
use crate::project::ProjectHandle;
use gate::Gate;

mod activity;
mod blame;
mod copy_in;
mod diff;
mod export;
mod fsck;
mod gate;
mod ledger;
mod log;
mod projects;
mod retention;
mod rewind;
mod show;
mod status;
mod sync;
mod tool;
mod turn_end;
mod turn_start;
mod unwatch;
mod watch;

pub fn handle(d: &Arc<Daemon>, req: Request) -> Response {
    d.wait_registered();
    let g = Gate::of(&req);
    let result = match req {
        Request::Hello { .. } => Err(ReqError::bad_request("hello was already exchanged")),
        Request::Watch { dir, discover } => {
            watch::handle(d, &dir, discover).map(about(Response::Watched))
        }
        Request::Unwatch { dir, drop_data } => {
            unwatch::handle(d, g, &dir, drop_data).map(Response::Unwatched)
        }
        Request::Projects => Ok(Response::Projects(projects::handle(d))),
        Request::TurnStart(r) => turn_start::handle(d, g, r).map(about(Response::TurnStarted)),
        Request::TurnEnd(r) => turn_end::handle(d, g, r).map(about(Response::TurnEnded)),
        Request::Sync { dir } => sync::handle(d, g, &dir).map(about(Response::Synced)),
        Request::Log(r) => log::handle(d, r).map(about(Response::Log)),
        Request::Show { dir, turn, list } => {
            show::handle(d, g, &dir, turn, list).map(about(Response::Show))
        }
        Request::Diff(r) => diff::handle(d, g, r).map(about(Response::Diff)),
        Request::Rewind(r) => rewind::rewind(d, g, r).map(about(Response::Rewind)),
        Request::Redo(r) => rewind::redo(d, g, r).map(about(Response::Rewind)),
        Request::Rewinds { dir, limit } => {
            rewind::list(d, &dir, limit).map(about(Response::Rewinds))
        }
        Request::Status => Ok(Response::Status(status::handle(d))),
        Request::Fsck { dir } => fsck::handle(d, &dir).map(about(Response::Fsck)),
        Request::Activity { dir } => activity::handle(d, &dir).map(about(Response::Activity)),
        Request::LedgerAdd(r) => ledger::add(d, g, r).map(about(Response::LedgerAdded)),
        Request::LedgerList { dir, filter } => {
            ledger::list(d, &dir, &filter).map(about(Response::Ledger))
        }
        Request::LedgerShow { dir, id } => {
            ledger::show(d, &dir, id).map(about(Response::LedgerEntry))
        }
        Request::LedgerSetStatus(r) => ledger::set_status(d, r).map(about(Response::LedgerEntry)),
        Request::LedgerImport { dir, entries } => {
            ledger::import(d, &dir, &entries).map(about(Response::LedgerImported))
        }
        Request::Blame { dir, path, at } => {
            blame::handle(d, g, &dir, &path, at.as_ref()).map(about(Response::Blame))
        }
        Request::Export(r) => export::handle(d, g, r).map(about(Response::Export)),
        Request::CopyIn(r) => copy_in::handle(d, g, r).map(about(Response::CopyIn)),
        Request::ToolStart {
            dir,
            session,
            command,
        } => tool::handle(d, g, &dir, session, Some(command)).map(about(Response::Tool)),
        Request::ToolEnd { dir, session } => {
            tool::handle(d, g, &dir, session, None).map(about(Response::Tool))
        }
        Request::Pin { dir, turn, pinned } => {
            retention::pin(d, &dir, turn, pinned).map(about(Response::Pinned))
        }
        Request::ReleaseWorkcopy { dir, name } => {
            retention::release_workcopy(d, &dir, &name).map(about(Response::Released))
        }
        Request::Gc { dir, dry_run } => retention::gc(d, &dir, dry_run).map(about(Response::Gc)),
    };
    result.unwrap_or_else(Response::from)
}

/// What a handler of a project's request returns: the project, and the
/// body of its reply.
pub type About<T> = (Arc<ProjectHandle>, T);

/// The reply about a project: the one place that names it and says
/// whether its capture is degraded (read once the request is done).
fn about<T>(variant: fn(Reply<T>) -> Response) -> impl FnOnce(About<T>) -> Response {
    move |(h, body)| {
        variant(Reply {
            project: WirePath::from(h.root.as_path()),
            body,
            degraded: h.degraded_reason(),
        })
    }
}
