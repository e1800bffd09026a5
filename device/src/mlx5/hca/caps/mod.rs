//! Capability pages: the images the device offers ([`image`]) and the
//! QUERY_HCA_CAP / SET_HCA_CAP commands over them ([`query`]).

pub mod image;
pub mod query;
