//! `pin`, `unpin` and `gc`: what retention keeps, and running it now.

use serde::{Deserialize, Serialize};

use crate::Reply;
pub use ckpt_types::{GcReport, HeldBy, Hold, NextDrop, Retention, RetentionView};

pub type PinReply = Reply<Pinned>;

/// A turn pinned or unpinned, and retention as it now stands.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Pinned {
    pub turn: i64,
    pub pinned: bool,
    pub retention: RetentionView,
}

pub type ReleasedReply = Reply<Released>;

/// A work copy's turns released, and retention as it now stands.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Released {
    /// How many turns it kept.
    pub turns: usize,
    pub retention: RetentionView,
}

pub type GcReply = Reply<GcReport>;
