//! ckpt-proto: the wire protocol between `ckptctl` and `ckptd`.
//!
//! A connection carries frames: a `u32` big-endian length, then that many
//! bytes of JSON. The first request on every connection is
//! [`Request::Hello`] carrying [`PROTOCOL_VERSION`]; the daemon answers with
//! [`Response::Hello`] or, for a version it does not speak, an
//! [`ErrorKind::Version`] error. Domain failures travel as data
//! ([`Response::Error`]), never as a dropped connection.
//!
//! The types are split by operation (`ops/`); every one is re-exported
//! here. Every reply about one project names it (`project`, its root) and
//! carries `degraded` when capture for it cannot be fully trusted, so a
//! client can warn on every command.
//!
//! ```
//! use ckpt_proto::{read_frame, write_frame, Request, PROTOCOL_VERSION};
//! let mut buf = Vec::new();
//! write_frame(&mut buf, &Request::Hello { version: PROTOCOL_VERSION, client: String::new(), progress: false }).unwrap();
//! let back: Request = read_frame(&mut buf.as_slice()).unwrap();
//! assert!(matches!(back, Request::Hello { version: PROTOCOL_VERSION, .. }));
//! ```

mod envelope;
mod frame;
pub mod ops;
pub mod paths;
mod request;
mod response;

pub use ckpt_types::{
    mode, Action, ActionCounts, ActionKind, AnchorState, Blame, BlameAt, BlameLine, Bucket,
    ChangeKind, Conflict, ContinuedTurn, CopyConflict, Counts, Entry, EntryBody, EntryKind,
    FileDiff, Hash, LedgerAnchor, LedgerEntry, LedgerEvent, LedgerStatus, LineOrigin, LineSpan,
    MergeMode, MergeOutcome, MergedFile, ModeChange, OpenTurn, OtherTurn, PartialRewind, Progress,
    ProgressOp, RelPath, RenamedFrom, RewindFlags, RewindKind, RewindRecord, RewindState,
    ScanSummary, Severity, Skipped, State, TurnDetail, TurnEntry, TurnInfo, TurnStatus, WirePath,
};
pub use ckpt_types::{
    Capture, Caveats, Effect, EffectCategory, Gap, GapKind, Integrity, PartialCapture,
};
pub use envelope::Reply;
pub use frame::{
    decode_body, encode, read_frame, read_frame_or_end, write_frame, FrameError, Message,
    MAX_REPLY, MAX_REQUEST, READ_AHEAD,
};
pub use ops::{
    blame::*, copy_in::*, export::*, ledger::*, retention::*, rewind::*, status::*, turn::*,
    watch::*,
};
pub use request::{Barrier, Request};
pub use response::*;

/// Bumped on every incompatible change of the request or response types.
/// Fields added with `#[serde(default)]` do not need a bump.
pub const PROTOCOL_VERSION: u32 = 1;
