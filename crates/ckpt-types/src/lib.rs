//! ckpt-types: plain values that the core, the protocol, the daemon and the
//! client share, each defined once, with the wire form (what `--json`
//! shows) as its serde form. Serde only, no IO; with the `clap` feature the
//! command line takes them as they are, so a flag is declared in one place
//! from the command line to the core.

pub mod blame;
pub mod effects;
pub mod ledger;
pub mod mode;
pub mod names;
pub mod path;
pub mod progress;
pub mod retention;
pub mod rewind;
pub mod scan;
pub mod state;
pub mod time;
pub mod turn;

pub use blame::{Blame, BlameAt, BlameLine, LineOrigin, Reformatted};
pub use effects::{
    Capture, Caveats, Effect, EffectCategory, Gap, GapKind, Integrity, PartialCapture,
};
pub use ledger::{
    AnchorState, Bucket, EntryBody, LedgerAnchor, LedgerEntry, LedgerEvent, LedgerStatus, LineSpan,
    Severity,
};
pub use path::{below_range, RelPath, UnsafePath, WirePath};
pub use progress::{Progress, ProgressOp};
pub use retention::{GcReport, HeldBy, Hold, NextDrop, Retention, RetentionView};
pub use rewind::{
    Action, ActionCounts, ActionKind, Conflict, ContinuedTurn, CopyConflict, MergeMode,
    MergeOutcome, MergedFile, OtherTurn, RewindFlags, RewindKind, RewindRecord, RewindState,
};
pub use scan::{ScanSummary, Skipped};
pub use state::{Entry, EntryKind, Hash, State};
pub use time::now_ns;
pub use turn::OpenTurn;
pub use turn::{
    ChangeKind, Counts, FileDiff, ModeChange, PartialRewind, RenamedFrom, TurnDetail, TurnEntry,
    TurnInfo, TurnStatus,
};
