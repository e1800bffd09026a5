//! Capability pages: the images the device offers ([`image`]) and the
//! QUERY_HCA_CAP / SET_HCA_CAP commands over them ([`query`]); [`eth`]: the pages of an Ethernet port,
//! [`roce`]: its ROCE page.

pub mod eth;
pub mod image;
pub mod query;
pub mod roce;
