//! The InfiniBand subnet as a fabric service. [`stage::IbStage`] sits
//! between a CA and its fabric port and answers the MADs that are the
//! subnet's under its own lock: the modeled switch ([`switch`]), and with
//! the built-in SM the Subnet Administrator ([`sa`], over the database of
//! [`db`]: ports, multicast groups, services; large tables with RMPP,
//! [`rmpp`]), SMInfo ([`sm_info`]) and the SM roles between servers
//! ([`sm_role`]). The parts are pure (MADs in, MADs out, no sockets, no
//! clock: the stage ticks them); the byte layouts are [`vrnic_wire`]'s, the
//! packet traits [`vrnic_packet`]'s. docs/ib-fabric.md.

#![forbid(unsafe_code)]

pub mod db;
pub mod error;
pub mod mcast;
pub mod path;
pub mod port;
pub mod rmpp;
pub mod sa;
pub mod select;
pub mod service;
pub mod sm_info;
pub mod sm_role;
pub mod source;
pub mod stage;
pub mod switch;

// Test helpers (a small subnet, SA request MADs), also for other crates' tests.
#[cfg(test)]
mod fuzz_tests;
#[cfg(test)]
mod mcast_tests;
#[cfg(test)]
mod records_tests;
#[cfg(test)]
mod rmpp_tests;
#[cfg(test)]
mod switch_tests;
#[doc(hidden)]
pub mod test_support;

pub use db::Subnet;
pub use error::{SaError, SubnetError};
pub use port::PortRecord;
pub use sa::{Sa, SaConfig};
pub use source::MadSource;
pub use stage::{IbStage, SmMode, StageConfig};
