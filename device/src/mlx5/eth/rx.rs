//! A frame from the link into an RQ (owner: eth-rx).
