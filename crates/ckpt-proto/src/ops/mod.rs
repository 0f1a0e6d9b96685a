//! The protocol by operation: each file holds what one family of requests
//! carries and what its replies hold.

pub mod blame;
pub mod copy_in;
pub mod export;
pub mod ledger;
pub mod retention;
pub mod rewind;
pub mod status;
pub mod turn;
pub mod watch;
