//! The daemon calls the timeline makes, over one connection kept open
//! (ckptctl's client: hello, then one request at a time). A connection
//! that fails is dropped and the next call opens a new one, so a
//! restarted daemon is picked up at the next refresh.

use ckpt_proto::{
    LedgerFilter, LedgerReply, LogReply, Redo, RelPath, Request, Rewind, RewindFlags, RewindReply,
    RewindTo, ShowReply, WirePath,
};
use ckptctl::client::{Client, DaemonError, FromResponse};
use ckptctl::commands::Ctx;

use crate::state::Ask;

/// How many turns the timeline asks for: all that retention keeps, in
/// practice (100 by default).
const LOG_LIMIT: usize = 10_000;

pub struct Daemon {
    ctx: Ctx,
    client: Option<Client>,
}

impl Daemon {
    pub fn new(ctx: Ctx) -> Daemon {
        Daemon { ctx, client: None }
    }

    /// One request on the kept connection. Replies are read with `ask`,
    /// not `reply`: the warning `reply` prints on stderr would land in the
    /// middle of the screen, so the timeline shows `degraded` itself.
    fn ask<T: FromResponse>(&mut self, req: &Request) -> anyhow::Result<T> {
        let client = match &mut self.client {
            Some(c) => c,
            None => self.client.insert(self.ctx.connect()?),
        };
        let r = client.reply(req);
        if let Err(e) = &r {
            // The daemon answered with an error: the connection is fine.
            if e.downcast_ref::<DaemonError>().is_none() {
                self.client = None;
            }
        }
        r
    }

    fn dir(&self) -> WirePath {
        self.ctx.wire_dir()
    }

    pub fn log(&mut self) -> anyhow::Result<LogReply> {
        let req = Request::Log(ckpt_proto::Log {
            dir: self.dir(),
            limit: Some(LOG_LIMIT),
            session: None,
        });
        self.ask(&req)
    }

    pub fn show(&mut self, turn: i64) -> anyhow::Result<ShowReply> {
        // The detail pane lists every path.
        let req = Request::Show {
            dir: self.dir(),
            turn,
            list: None,
        };
        self.ask(&req)
    }

    /// The diff of one path of a turn; `project` is the root the log named.
    pub fn diff(
        &mut self,
        project: &WirePath,
        turn: i64,
        path: &RelPath,
    ) -> anyhow::Result<ckpt_proto::DiffReply> {
        let req = Request::Diff(ckpt_proto::Diff {
            dir: self.dir(),
            turn,
            paths: vec![absolute(project, path)],
        });
        self.ask(&req)
    }

    /// A rewind or redo: its plan (`dry_run`) or the real thing.
    pub fn rewind(&mut self, ask: &Ask, flags: RewindFlags) -> anyhow::Result<RewindReply> {
        let req = match *ask {
            Ask::Rewind { turn, merge } => Request::Rewind(Rewind {
                dir: self.dir(),
                to: RewindTo::Before(turn),
                paths: Vec::new(),
                flags,
                merge,
                // The plan's pane lists every path.
                list: None,
            }),
            Ask::Redo => Request::Redo(Redo {
                dir: self.dir(),
                flags,
                list: None,
            }),
        };
        self.ask(&req)
    }

    /// The project's ledger, or one file's (`path`, under `project`).
    pub fn ledger(
        &mut self,
        project: &WirePath,
        path: Option<&RelPath>,
    ) -> anyhow::Result<LedgerReply> {
        let req = Request::LedgerList {
            dir: self.dir(),
            filter: LedgerFilter {
                path: path.map(|p| absolute(project, p)),
                ..LedgerFilter::default()
            },
        };
        self.ask(&req)
    }
}

/// `path` under the project root, as the daemon takes paths.
fn absolute(project: &WirePath, path: &RelPath) -> WirePath {
    WirePath::from(project.as_path().join(path.as_path()))
}
