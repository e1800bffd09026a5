//! Every unsafe edge of the device in one place (outside `vfio/`: the
//! socket's SCM_RIGHTS receive and the vm-memory mappings):
//! memfds, the shared mapping and the volatile copies of guest-writable
//! memory, the fabric's socket options with GSO/GRO, the Ethernet link's TAP and
//! multicast sockets, the link worker's eventfd wake-up, and the process
//! syscalls of the privilege drop and the clock. Every other crate of the
//! workspace is `#![forbid(unsafe_code)]` (ci/miri checks it), as are this
//! crate's `clock`, `host`, `privs` and `seccomp` modules; each unsafe block
//! here keeps its `// SAFETY:` comment, and each function offers a safe
//! interface.

#![deny(unsafe_op_in_unsafe_fn)]

// Safe modules of the OS edge: no unsafe of their own (they call the ones above).
#[deny(unsafe_code)]
pub mod clock;
#[deny(unsafe_code)]
pub mod host;
#[deny(unsafe_code)]
pub mod privs;
#[deny(unsafe_code)]
pub mod seccomp;

pub mod dgram;
pub mod memfd;
pub mod net;
pub mod proc;
pub mod shm;
pub mod tap;
pub mod volatile;
pub mod wake;

pub use memfd::{memfd, punch_hole};
pub use shm::SharedMem;
pub use volatile::{volatile_read, volatile_write};
