//! The barrier a request declared ([`Request::barrier`]): the one way a
//! handler runs one, at the point of its own order (after its arguments are
//! checked, inside its reservation), so which requests pass a barrier is
//! decided in one table and not by each handler.

use ckpt_proto::{Barrier, Request};

use crate::barrier::BarrierOutcome;
use crate::daemon::{barrier, Daemon};
use crate::error::{ReqError, ReqResult};
use crate::project::ProjectHandle;

#[derive(Clone, Copy, Debug)]
pub struct Gate(Barrier);

impl Gate {
    pub fn of(req: &Request) -> Gate {
        Gate(req.barrier())
    }

    /// Passes the barrier for `h` with this daemon's cookie directory and
    /// timeout, as the request declared.
    pub fn pass(self, d: &Daemon, h: &ProjectHandle) -> ReqResult<BarrierOutcome> {
        match self.0 {
            Barrier::Always | Barrier::BestEffort => barrier(d, h),
            Barrier::IfTurnOpen | Barrier::Never => Err(ReqError::internal(format!(
                "a handler asked for a barrier its request declares {:?}",
                self.0
            ))),
        }
    }

    /// For a request that reads `turn`: the barrier when `turn` is the open
    /// one (still growing: see everything up to now).
    pub fn pass_if_open(self, d: &Daemon, h: &ProjectHandle, turn: i64) -> ReqResult<()> {
        debug_assert_eq!(self.0, Barrier::IfTurnOpen);
        if h.call(|p| p.open_turn())? == Some(turn) {
            barrier(d, h)?;
        }
        Ok(())
    }
}
