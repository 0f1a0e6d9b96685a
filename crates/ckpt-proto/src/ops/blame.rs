//! `blame`.

use crate::{Blame, Reply};

/// Every line of the file with where it came from (`path` relative to the
/// project root).
pub type BlameReply = Reply<Blame>;
