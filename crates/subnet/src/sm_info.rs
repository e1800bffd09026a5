//! The master SM's answer to SMInfo (IBTA 14.2.5.13). mlx5_ib does not pass
//! SMInfo to the firmware's SMA (`process_mad`: "the SMA can't handle
//! them"), so the port that runs the SM answers it on the fabric side, as
//! the SA answers SubnAdm MADs: `sminfo` from any guest gets the SM's port
//! GUID, SM_Key 0, its activity count, priority and state MASTER.
//! Byte layout: `wire::smp_sminfo` (shared with the SMs' own polling).

use vrnic_wire::mad::{
    Packet as MadHeader, METHOD_GET, METHOD_GET_RESP, MGMT_CLASS_SUBN_DIRECTED_ROUTE, MGMT_CLASS_SUBN_LID_ROUTED,
    STATUS_BAD_VERSION, STATUS_UNSUP_METH_ATTR,
};
use vrnic_wire::smp::{self, SMP_LEN};
use vrnic_wire::smp_sminfo::{self, SmState, ATTR_SM_INFO};

/// The SM's view of itself that SMInfo reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SmInfoAgent {
    /// The SM port's GUID.
    pub guid: u64,
    /// SMInfo Priority (4 bits).
    pub priority: u8,
    /// SMState; a vrnic SM is MASTER from the start.
    pub sm_state: SmState,
    /// ActCount: counts up with each answer (an SM's sign of life).
    act_count: u32,
}

/// Whether a MAD is an SMP asking for SMInfo (the SM's to answer).
pub fn is_sm_info(mad: &[u8]) -> bool {
    if mad.len() != SMP_LEN {
        return false;
    }
    let h = MadHeader::new_unchecked(mad);
    matches!(h.mgmt_class(), MGMT_CLASS_SUBN_LID_ROUTED | MGMT_CLASS_SUBN_DIRECTED_ROUTE)
        && h.method() & vrnic_wire::mad::METHOD_RESP == 0
        && h.attr_id() == ATTR_SM_INFO
}

impl SmInfoAgent {
    pub fn new(guid: u64, priority: u8) -> SmInfoAgent {
        SmInfoAgent { guid, priority: priority & 0xf, sm_state: SmState::Master, act_count: 0 }
    }

    pub fn act_count(&self) -> u32 {
        self.act_count
    }

    /// The GetResp to one SMInfo request ([`is_sm_info`]); `None` for any
    /// other MAD. A Set (an SM's handover) is answered "unsupported": this
    /// SM neither hands over nor steps down. The D bit of a directed-route
    /// answer is set; its hop fields are the caller's.
    pub fn handle(&mut self, req: &[u8]) -> Option<Vec<u8>> {
        if !is_sm_info(req) {
            return None;
        }
        let mut r = req.to_vec();
        let h = MadHeader::new_unchecked(req);
        let (class, method) = (h.mgmt_class(), h.method());
        let status = if h.base_version() != 1 || h.class_version() != 1 {
            STATUS_BAD_VERSION
        } else if method != METHOD_GET {
            STATUS_UNSUP_METH_ATTR
        } else {
            self.act_count = self.act_count.wrapping_add(1);
            let info = smp_sminfo::Repr {
                guid: self.guid,
                sm_key: 0,
                act_count: self.act_count,
                priority: self.priority,
                sm_state: self.sm_state,
            };
            let mut s = smp::Packet::new_unchecked(&mut r[..]);
            s.data_mut().fill(0);
            info.emit(&mut smp_sminfo::Packet::new_unchecked(s.data_mut()));
            0
        };
        let mut m = MadHeader::new_unchecked(&mut r[..]);
        m.set_method(METHOD_GET_RESP);
        m.set_status(status);
        if class == MGMT_CLASS_SUBN_DIRECTED_ROUTE {
            smp::Packet::new_unchecked(&mut r[..]).set_direction(true);
        }
        Some(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(class: u8, method: u8, attr: u16) -> Vec<u8> {
        let mut m = vec![0u8; 256];
        (m[0], m[1], m[2], m[3]) = (1, class, 1, method);
        m[8..16].copy_from_slice(&9u64.to_be_bytes());
        m[16..18].copy_from_slice(&attr.to_be_bytes());
        m
    }

    #[test]
    fn sminfo_get_as_the_sminfo_tool_sends_it() {
        let mut a = SmInfoAgent::new(0x0002_c903_00a0_0101, 0);
        let r = a.handle(&get(0x01, METHOD_GET, ATTR_SM_INFO)).unwrap();
        assert_eq!((r[3], &r[4..6], &r[8..16]), (0x81, &[0u8, 0][..], &9u64.to_be_bytes()[..]));
        let s = smp_sminfo::Repr::parse(&smp_sminfo::Packet::new_checked(&r[64..85]).unwrap()).unwrap();
        assert_eq!(
            (s.guid, s.sm_key, s.act_count, s.priority, s.sm_state),
            (0x0002_c903_00a0_0101, 0, 1, 0, SmState::Master)
        );
        let r2 = a.handle(&get(0x01, METHOD_GET, ATTR_SM_INFO)).unwrap();
        assert_eq!(r2[64 + 19], 2, "ActCount counts");
        let dr = a.handle(&get(0x81, METHOD_GET, ATTR_SM_INFO)).unwrap();
        assert_eq!(dr[4] & 0x80, 0x80, "D bit on a directed-route answer");
    }

    #[test]
    fn others_are_not_sminfo() {
        let mut a = SmInfoAgent::new(1, 0);
        assert_eq!(a.handle(&get(0x01, METHOD_GET, 0x0011)), None);
        assert_eq!(a.handle(&get(0x03, METHOD_GET, ATTR_SM_INFO)), None);
        assert_eq!(a.handle(&get(0x01, METHOD_GET_RESP, ATTR_SM_INFO)), None, "a response is not asked");
        assert_eq!(a.handle(&get(0x01, METHOD_GET, ATTR_SM_INFO)[..100]), None);
        let set = a.handle(&get(0x01, 0x02, ATTR_SM_INFO)).unwrap();
        assert_eq!(u16::from_be_bytes([set[4], set[5]]), STATUS_UNSUP_METH_ATTR);
        let mut v = get(0x01, METHOD_GET, ATTR_SM_INFO);
        v[2] = 2;
        let bad = a.handle(&v).unwrap();
        assert_eq!(u16::from_be_bytes([bad[4], bad[5]]), STATUS_BAD_VERSION);
        assert_eq!(a.act_count(), 0, "only answered Gets count");
    }
}
