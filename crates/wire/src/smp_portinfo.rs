//! PortInfo (IBTA 14.2.5.6) as an SMA keeps it across a SubnSet: which bits
//! the Set writes ([`RW`], [`merge_set`]), and what its PortState and
//! PortPhysicalState components ask for ([`state_after`]). ClientReregister
//! is an action, not state: it reads as 0. Shared by every SMA vrnic models
//! (the CA's behind MAD_IFC, the modeled switch's ports). Byte offsets as
//! `ib_types.h` `ib_port_info_t`.

use core::ops::Range;

pub mod field {
    use core::ops::Range;
    pub const M_KEY: Range<usize> = 0..8;
    pub const GID_PREFIX: Range<usize> = 8..16;
    pub const LID: Range<usize> = 16..18;
    pub const MASTER_SM_LID: Range<usize> = 18..20;
    pub const CAP_MASK: Range<usize> = 20..24;
    pub const LOCAL_PORT_NUM: usize = 28;
    /// LinkSpeedSupported (7..4), PortState (3..0).
    pub const STATE_INFO1: usize = 32;
    /// PortPhysicalState (7..4), LinkDownDefaultState (3..0).
    pub const STATE_INFO2: usize = 33;
    /// M_KeyProtectBits (7..6), LMC (2..0).
    pub const MKEY_LMC: usize = 34;
    /// NeighborMTU (7..4), MasterSMSL (3..0).
    pub const MTU_SMSL: usize = 36;
    /// InitTypeReply (7..4), MTUCap (3..0).
    pub const MTU_CAP: usize = 41;
    /// OperationalVLs (7..4), partition enforcement and raw filtering (3..0).
    pub const VL_ENFORCE: usize = 43;
    /// ClientReregister (7), MulticastPKeyTrapSuppressionEnabled (6..5), SubnetTimeOut (4..0).
    pub const SUBNET_TIMEOUT: usize = 51;
    pub const LEN: usize = 64;
}

/// PortState values.
pub const PORT_STATE_NOP: u8 = 0;
pub const PORT_STATE_DOWN: u8 = 1;
pub const PORT_STATE_INIT: u8 = 2;
pub const PORT_STATE_ARMED: u8 = 3;
pub const PORT_STATE_ACTIVE: u8 = 4;
/// PortPhysicalState values.
pub const PHYS_NOP: u8 = 0;
pub const PHYS_POLLING: u8 = 2;
pub const PHYS_DISABLED: u8 = 3;
pub const PHYS_LINK_UP: u8 = 5;
/// The ClientReregister bit of byte [`field::SUBNET_TIMEOUT`].
pub const CLIENT_REREG: u8 = 0x80;

/// The bits a SubnSet(PortInfo) writes, byte by byte (IBTA 14.2.5.6 RW
/// components): M_Key, GidPrefix, LID, MasterSMLID, M_KeyLeasePeriod,
/// LinkWidthEnabled, LinkDownDefaultState, M_KeyProtectBits, LMC,
/// LinkSpeedEnabled, NeighborMTU, MasterSMSL, VLHighLimit, InitTypeReply,
/// VLStallCount, HOQLife, OperationalVLs, partition enforcement and raw
/// filtering, the violation counters, MulticastPKeyTrapSuppressionEnabled,
/// SubnetTimeOut, LocalPhyErrors, OverrunErrors, LinkSpeedExtEnabled.
/// PortState, PortPhysicalState and ClientReregister are not among them:
/// their Set is an action ([`state_after`], [`client_rereg`]).
pub const RW: [u8; 64] = {
    let mut m = [0u8; 64];
    let mut i = 0;
    while i < 20 {
        m[i] = 0xff; // M_Key, GidPrefix, LID, MasterSMLID
        i += 1;
    }
    m[26] = 0xff; // M_KeyLeasePeriod
    m[27] = 0xff;
    m[29] = 0xff; // LinkWidthEnabled
    m[33] = 0x0f; // LinkDownDefaultState
    m[34] = 0xc7; // M_KeyProtectBits, LMC
    m[35] = 0x0f; // LinkSpeedEnabled
    m[36] = 0xff; // NeighborMTU, MasterSMSL
    m[38] = 0xff; // VLHighLimit
    m[41] = 0xf0; // InitTypeReply
    m[42] = 0xff; // VLStallCount, HOQLife
    m[43] = 0xff; // OperationalVLs, enforcement, filtering
    let mut i = 44;
    while i < 50 {
        m[i] = 0xff; // M_Key/P_Key/Q_Key violations
        i += 1;
    }
    m[51] = 0x7f; // MulticastPKeyTrapSuppressionEnabled, SubnetTimeOut
    m[53] = 0xff; // LocalPhyErrors, OverrunErrors
    m[63] = 0x1f; // LinkSpeedExtEnabled
    m
};

/// Takes the writable bits of a Set's PortInfo (`req`) into `image`.
pub fn merge_set(image: &mut [u8; 64], req: &[u8; 64]) {
    for ((b, r), m) in image.iter_mut().zip(req).zip(RW) {
        *b = (*b & !m) | (r & m);
    }
}

/// Whether a Set's PortInfo asks for client reregistration.
pub fn client_rereg(req: &[u8; 64]) -> bool {
    req[field::SUBNET_TIMEOUT] & CLIENT_REREG != 0
}

/// A Set's PortState or PortPhysicalState is not a transition the port can make.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BadTransition {
    #[error("PortState {req} requested in state {cur}")]
    PortState { cur: u8, req: u8 },
    #[error("PortPhysicalState {0} cannot be set")]
    PhysState(u8),
}

/// The (PortState, PortPhysicalState) a port is in after a Set asking for
/// `req_state`/`req_phys` in state (`state`, `phys`) (IBTA 14.2.5.6 and the
/// port state machine of 7.2): NOP leaves a component; Down takes the link
/// down, which retrains it (LinkDownDefaultState Polling) to Init; Armed is
/// valid from Init (or Armed), Active from Armed (or Active); Init cannot be
/// set. PortPhysicalState Disabled takes the port down and keeps it there,
/// Polling brings a disabled port back to Init. An invalid request changes
/// nothing: the SMA answers it with status 0x1C.
pub fn state_after(state: u8, phys: u8, req_state: u8, req_phys: u8) -> Result<(u8, u8), BadTransition> {
    let (mut s, mut p) = (state, phys);
    match req_phys {
        PHYS_NOP => {}
        PHYS_DISABLED => (s, p) = (PORT_STATE_DOWN, PHYS_DISABLED),
        PHYS_POLLING if p == PHYS_DISABLED => (s, p) = (PORT_STATE_INIT, PHYS_LINK_UP),
        PHYS_POLLING => {}
        r => return Err(BadTransition::PhysState(r)),
    }
    let bad = BadTransition::PortState { cur: s, req: req_state };
    let s = match req_state {
        PORT_STATE_NOP => s,
        PORT_STATE_DOWN if p == PHYS_DISABLED => PORT_STATE_DOWN,
        PORT_STATE_DOWN => PORT_STATE_INIT,
        PORT_STATE_ARMED if matches!(s, PORT_STATE_INIT | PORT_STATE_ARMED) => PORT_STATE_ARMED,
        PORT_STATE_ACTIVE if matches!(s, PORT_STATE_ARMED | PORT_STATE_ACTIVE) => PORT_STATE_ACTIVE,
        _ => return Err(bad),
    };
    Ok((s, p))
}

/// The requested (PortState, PortPhysicalState) of a Set's PortInfo.
pub fn requested_state(req: &[u8; 64]) -> (u8, u8) {
    (req[field::STATE_INFO1] & 0xf, req[field::STATE_INFO2] >> 4)
}

/// Writes PortState and PortPhysicalState into a PortInfo image.
pub fn put_state(image: &mut [u8; 64], state: u8, phys: u8) {
    image[field::STATE_INFO1] = (image[field::STATE_INFO1] & 0xf0) | (state & 0xf);
    image[field::STATE_INFO2] = (phys << 4) | (image[field::STATE_INFO2] & 0x0f);
}

/// A big-endian field of a PortInfo image.
pub fn get(image: &[u8; 64], f: Range<usize>) -> u64 {
    image[f].iter().fold(0u64, |a, &b| a << 8 | b as u64)
}

/// Writes a big-endian field of a PortInfo image.
pub fn put(image: &mut [u8; 64], f: Range<usize>, v: u64) {
    let n = f.len();
    for (i, b) in image[f].iter_mut().enumerate() {
        *b = (v >> (8 * (n - 1 - i))) as u8;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_writes_only_the_rw_components() {
        let mut img = [0u8; 64];
        img[20..24].copy_from_slice(&0x0251_0848u32.to_be_bytes());
        img[32] = 0x72; // LinkSpeedSupported 7, Init
        img[33] = 0x52; // LinkUp, Polling
        let mut req = [0xffu8; 64];
        req[33] = 0x02;
        merge_set(&mut img, &req);
        assert_eq!(get(&img, field::LID), 0xffff);
        assert_eq!(get(&img, field::CAP_MASK), 0x0251_0848, "CapabilityMask is read-only");
        assert_eq!((img[32], img[33]), (0x72, 0x52), "state components untouched by the merge");
        assert_eq!(img[51], 0x7f, "ClientReregister is not stored");
        assert_eq!(img[50], 0, "GUIDCap is read-only");
        assert!(client_rereg(&req));
        put(&mut img, field::MASTER_SM_LID, 0x1234);
        assert_eq!(&img[18..20], &[0x12, 0x34]);
        put_state(&mut img, PORT_STATE_ACTIVE, PHYS_LINK_UP);
        assert_eq!((img[32], img[33]), (0x74, 0x52));
    }

    #[test]
    fn port_state_transitions() {
        let up = PHYS_LINK_UP;
        assert_eq!(state_after(2, up, 3, 0), Ok((3, up)), "Init -> Armed");
        assert_eq!(state_after(3, up, 4, 0), Ok((4, up)), "Armed -> Active");
        assert_eq!(state_after(4, up, 4, 0), Ok((4, up)));
        assert_eq!(state_after(4, up, 0, 0), Ok((4, up)));
        assert!(state_after(2, up, 4, 0).is_err(), "Init -> Active skips Armed");
        assert!(state_after(4, up, 3, 0).is_err());
        assert!(state_after(4, up, 2, 0).is_err(), "Init is not settable");
        assert!(state_after(4, up, 9, 0).is_err());
        assert_eq!(state_after(4, up, 1, 0), Ok((2, up)), "Down: the link retrains to Init");
        assert_eq!(state_after(4, up, 0, 3), Ok((1, 3)), "Disabled");
        assert_eq!(state_after(1, 3, 0, 2), Ok((2, up)), "Polling re-enables");
        assert!(state_after(4, up, 0, 1).is_err());
        assert!(state_after(1, 3, 3, 0).is_err(), "a disabled port cannot be armed");
    }
}
