//! Request handlers, one file each, behind one central `match`. Handlers are
//! synchronous: the server runs them on the blocking pool, so one project's
//! long call never holds up another project or `status`.

use std::sync::Arc;

use ckpt_proto::{Request, Response};

use crate::daemon::Daemon;
use crate::error::ReqError;

mod activity;
mod blame;
mod copy_in;
mod diff;
mod export;
mod fsck;
mod ledger;
mod log;
mod projects;
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
    let result = match req {
        Request::Hello { .. } => Err(ReqError::bad_request("hello was already exchanged")),
        Request::Watch { dir, discover } => watch::handle(d, &dir, discover).map(Response::Watched),
        Request::Unwatch { dir, drop_data } => {
            unwatch::handle(d, &dir, drop_data).map(Response::Unwatched)
        }
        Request::Projects => Ok(Response::Projects(projects::handle(d))),
        Request::TurnStart {
            dir,
            label,
            agent,
            session,
            transcript,
            auto_watch,
            conversation,
        } => {
            let meta = ckpt_core::TurnMeta {
                label,
                agent,
                session,
                transcript,
                conversation,
            };
            turn_start::handle(d, &dir, meta, auto_watch).map(Response::TurnStarted)
        }
        Request::TurnEnd {
            dir,
            session,
            transcript,
        } => turn_end::handle(d, &dir, session.as_deref(), transcript.as_deref())
            .map(Response::TurnEnded),
        Request::Sync { dir } => sync::handle(d, &dir).map(Response::Synced),
        Request::Log {
            dir,
            limit,
            session,
        } => log::handle(d, &dir, limit, session.as_deref()).map(Response::Log),
        Request::Show { dir, turn } => show::handle(d, &dir, turn).map(Response::Show),
        Request::Diff { dir, turn, paths } => {
            diff::handle(d, &dir, turn, &paths).map(Response::Diff)
        }
        Request::Rewind {
            dir,
            turn,
            paths,
            dry_run,
            force,
            merge,
        } => rewind::rewind(d, &dir, turn, &paths, dry_run, force, merge).map(Response::Rewind),
        Request::Redo {
            dir,
            dry_run,
            force,
        } => rewind::redo(d, &dir, dry_run, force).map(Response::Rewind),
        Request::Rewinds { dir, limit } => rewind::list(d, &dir, limit).map(Response::Rewinds),
        Request::Status => Ok(Response::Status(status::handle(d))),
        Request::Fsck { dir } => fsck::handle(d, &dir).map(Response::Fsck),
        Request::Activity { dir } => activity::handle(d, &dir).map(Response::Activity),
        Request::LedgerAdd {
            dir,
            path,
            span,
            bucket,
            severity,
            confidence,
            owner,
            user,
            note,
        } => {
            let add = ledger::Add {
                path,
                span,
                bucket,
                severity,
                confidence,
                owner,
                user,
                note,
            };
            ledger::add(d, &dir, add).map(Response::LedgerAdded)
        }
        Request::LedgerList { dir, filter } => ledger::list(d, &dir, &filter).map(Response::Ledger),
        Request::LedgerShow { dir, id } => ledger::show(d, &dir, id).map(Response::LedgerEntry),
        Request::LedgerSetStatus {
            dir,
            id,
            status,
            who,
            why,
        } => ledger::set_status(d, &dir, id, &status, who, why).map(Response::LedgerEntry),
        Request::LedgerImport { dir, entries } => {
            ledger::import(d, &dir, &entries).map(Response::LedgerImported)
        }
        Request::Blame { dir, path } => blame::handle(d, &dir, &path).map(Response::Blame),
        Request::Export { dir, from, to, out } => {
            export::handle(d, &dir, from, to, &out).map(Response::Export)
        }
        Request::CopyIn {
            dir,
            source,
            paths,
            label,
            agent,
            session,
        } => {
            let meta = ckpt_core::TurnMeta {
                label,
                agent,
                session,
                ..ckpt_core::TurnMeta::default()
            };
            copy_in::handle(d, &dir, &source, &paths, meta).map(Response::CopyIn)
        }
        Request::ToolStart { dir, session } => {
            tool::handle(d, &dir, session.as_deref(), true).map(Response::Tool)
        }
        Request::ToolEnd { dir, session } => {
            tool::handle(d, &dir, session.as_deref(), false).map(Response::Tool)
        }
    };
    result.unwrap_or_else(Response::from)
}
