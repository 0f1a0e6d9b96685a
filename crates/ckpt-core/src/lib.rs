//! ckpt-core: the synchronous engine behind ckpt.
//!
//! It keeps a project's every file in a content-addressed store backed by a
//! hash cache, records per-turn pre-images of what changed, and rewinds turns
//! exactly (and redoes rewinds), writing only inside the project root and
//! never touching `.git`. It knows nothing of sockets, async or printing; the
//! daemon feeds it "these paths may have changed" and turn boundaries.
//!
//! ```no_run
//! use ckpt_core::{Options, Project, RewindOptions, TurnMeta};
//! # fn main() -> ckpt_core::Result<()> {
//! let mut p = Project::open("/data/ckpt/p1".as_ref(), "/src/app".as_ref(), Options::default())?;
//! p.reconcile()?; // baseline
//! let turn = p.turn_start(TurnMeta::default())?;
//! // ... the agent edits files; the daemon calls p.check_paths(..) or p.reconcile() ...
//! p.turn_end()?;
//! p.rewind(turn, RewindOptions::default())?;
//! p.redo(RewindOptions::default())?;
//! # Ok(()) }
//! ```

mod action_list;
pub mod atomic;
mod blame;
mod cache;
mod capture;
mod confined;
mod db;
mod diff;
pub mod effects;
mod error;
mod export;
mod fsck;
mod gc;
mod history;
mod ledger;
mod model;
mod par;
mod parts;
mod prefetch;
mod project;
mod relpath;
mod rewind;
mod scan;
mod state;
mod store;
mod turns;

pub use ckpt_types::names;
pub use ckpt_types::names::{is_excluded_by_default, CACHE_TAG, IGNORE_FILE};
pub use db::limit_memory;
pub use error::{Error, ErrorKind, Result};
pub use export::utc_fields;
pub use export::{
    check_out_dir, entry_of, export_files, fingerprint, fingerprint_lines, frozen_files,
    frozen_patch, manifest_state, state_holds, write_new_files, ExportFiles, ExportManifest,
    ExportRange, FingerprintLine, ManifestPath, ManifestState, RangePath, SkippedPath,
    MANIFEST_FILE, PATCH_FILE, REPORT_FILE, ZIP_FILE,
};
pub use fsck::{fsck, Finding, FindingKind, FsckCounts, FsckOptions, FsckReport};
pub use ledger::{
    AnchorState, Bucket, EntryBody, ImportReport, LedgerAnchor, LedgerEntry, LedgerEvent,
    LedgerFilter, LedgerRecord, LedgerStatus, LineSpan, NewLedgerEntry, Severity,
};
pub use model::*;
pub use project::{Project, DB_FILE, OBJECTS_DIR};
pub use relpath::{below_range, RelPath};
pub use rewind::{CopyOutcome, CopyPath};
pub use scan::{captured_paths, is_cache_dir};
pub use state::{Entry, EntryKind, Hash, HashOf, State};
