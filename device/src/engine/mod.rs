//! The RNIC queue engine: verbs objects (PD, MKEY, CQ, EQ, SRQ, QP) and the
//! RC/UC/UD transports. It knows nothing of mlx5 byte layouts or sockets.
//!
//! Empty in this revision: the foundation only provides the guest-memory
//! interface the engine will use ([`crate::vfio::DmaSpace`]) and the
//! interrupt API ([`crate::vfio::Interrupts::raise`]).
