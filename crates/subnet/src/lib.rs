//! InfiniBand subnet management state and the Subnet Administrator (SA):
//! the database of ports, multicast groups and services ([`db`]) and the
//! SA that answers SubnAdm MADs from it ([`sa`]), segmenting large tables
//! with RMPP ([`rmpp`]). A pure library: MADs in, MADs out, no sockets, no
//! clock (the caller ticks [`sa::Sa::tick`]), no mlx5 layouts (the byte
//! layouts are [`vrnic_wire`]'s). docs/ib-fabric.md.

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
