//! The port registers of an Ethernet port (owner: eth-cmd).
