//! Host scheduling: when the device's own threads spin, sleep or nap, and
//! what they ask of the host's power management. The threads that wait for
//! the guest (the vfio-user server in `trap` mode, the UAR poller in `poll`
//! mode) hold no heuristics themselves: each asks an [`IdleStrategy`] what
//! to do when it finds nothing, and tells it what woke it.
//!
//! * [`pressure`]: whether every CPU is busy ([`CpuPressure`], from
//!   `/proc/loadavg`): then a spin only takes a vCPU's CPU.
//! * [`socket_spin`]: the server's spin on the socket before recvmsg.
//! * [`poller`]: the UAR poller's spin-then-nap schedule and its per-page
//!   spin scores.
//! * [`qos`]: the PM QoS CPU latency request while doorbells flow.

pub mod idle;
pub mod poller;
pub mod pressure;
pub mod qos;
pub mod socket_spin;

pub use idle::{Idle, IdleStrategy, Verdict, Wake};
pub use poller::{PollerSchedule, Schedule, SCHEDULE};
pub use pressure::{runnable_in_loadavg, CpuPressure};
pub use socket_spin::{SocketSpin, SpinPolicy};
