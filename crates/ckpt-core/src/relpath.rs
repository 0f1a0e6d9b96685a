//! Project-relative paths ([`RelPath`], defined in `ckpt_types`) as the
//! core reads them back from its store.

pub use ckpt_types::{below_range, RelPath};

use crate::error::{Error, Result};

/// A path read back from the store: one that fails [`RelPath::new`]'s
/// checks means the store is damaged, not that a caller asked badly.
pub(crate) fn stored(bytes: impl Into<Vec<u8>>) -> Result<RelPath> {
    RelPath::new(bytes).map_err(|e| Error::Corrupt(format!("the store holds {e}")))
}
