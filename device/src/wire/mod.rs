//! Packet views and codecs (BTH, RETH, AETH, ..., ICRC), the UDP fabric,
//! pcap and fault injection.
//!
//! Empty in this revision; see docs/architecture.md for where it plugs in.
