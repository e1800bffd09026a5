//! Why the SA or the subnet database refuses a request, and the MAD status
//! each refusal is answered with.

use thiserror::Error;

use vrnic_wire::{mad, sa};

#[derive(Debug, Error, Clone, Copy, PartialEq, Eq)]
pub enum SaError {
    #[error("bad base or class version")]
    BadVersion,
    #[error("method not supported")]
    UnsupportedMethod,
    #[error("method/attribute combination not supported")]
    UnsupportedMethodAttr,
    #[error("invalid field in the request")]
    InvalidField,
    #[error("SA out of resources")]
    NoResources,
    #[error("request invalid")]
    ReqInvalid,
    #[error("no records match")]
    NoRecords,
    #[error("more than one record matches a Get")]
    TooManyRecords,
    #[error("GID not on the subnet")]
    InvalidGid,
    #[error("insufficient components in the ComponentMask")]
    InsufficientComponents,
    #[error("request denied")]
    Denied,
}

impl SaError {
    /// The MAD `Status` this refusal is answered with.
    pub fn status(self) -> u16 {
        match self {
            SaError::BadVersion => mad::STATUS_BAD_VERSION,
            SaError::UnsupportedMethod => mad::STATUS_UNSUP_METHOD,
            SaError::UnsupportedMethodAttr => mad::STATUS_UNSUP_METH_ATTR,
            SaError::InvalidField => mad::STATUS_INVALID_FIELD,
            SaError::NoResources => sa::STATUS_ERR_NO_RESOURCES,
            SaError::ReqInvalid => sa::STATUS_ERR_REQ_INVALID,
            SaError::NoRecords => sa::STATUS_ERR_NO_RECORDS,
            SaError::TooManyRecords => sa::STATUS_ERR_TOO_MANY_RECORDS,
            SaError::InvalidGid => sa::STATUS_ERR_REQ_INVALID_GID,
            SaError::InsufficientComponents => sa::STATUS_ERR_REQ_INSUFFICIENT_COMPONENTS,
            SaError::Denied => sa::STATUS_ERR_REQ_DENIED,
        }
    }
}

/// Why the database refuses to add a port.
#[derive(Debug, Error, Clone, Copy, PartialEq, Eq)]
pub enum SubnetError {
    #[error("LID {0:#x} is not a unicast LID")]
    BadLid(u16),
    #[error("LID {0:#x} is already assigned")]
    DuplicateLid(u16),
    #[error("port GUID {0:#x} is already on the subnet")]
    DuplicateGuid(u64),
    #[error("the subnet holds its maximum of ports")]
    Full,
}
