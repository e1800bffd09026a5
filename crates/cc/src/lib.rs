//! Congestion control on RoCE (issue 21): the ECN notification point
//! ([`np`]), the DCQCN reaction point ([`rp`]), the token bucket
//! ([`pacer`]), the two joined as one QP's limiter ([`limiter`]), the
//! port's settings and counters ([`control`]), the ConnectX parameter set
//! ([`params`]). The deterministic simulation of flows through one ECN-marking bottleneck is `vrnic-ccsim`.
//! Everything takes the time as an argument (ns): no clock, no threads.
//! `docs/congestion.md` describes the design and the bench.

#![forbid(unsafe_code)]

pub mod control;
pub mod limiter;
pub mod np;
pub mod pacer;
pub mod params;
pub mod rp;
pub mod stats;

#[cfg(test)]
mod np_pacer_tests;

pub use control::{CcConfig, CcControl, CcCounter};
pub use limiter::Limiter;
pub use np::{CnpToSend, Np};
pub use pacer::Pacer;
pub use params::{NpParams, RpParams};
pub use rp::{CnpOutcome, Rp};
pub use stats::CongStatistics;
