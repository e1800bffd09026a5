//! The command core: the transport that moves command bytes ([`transport`]),
//! the decoded request and its helpers ([`req`]), the dispatch table built
//! from each domain's `COMMANDS` ([`dispatch`]) and the stable failure
//! codes ([`syndrome`]). Nothing here knows what a command means.

pub mod dispatch;
pub mod req;
pub mod syndrome;
pub mod transport;

pub use transport::*;
