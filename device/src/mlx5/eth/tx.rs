//! An SQ's WQEs to frames on the link (owner: eth-tx).
