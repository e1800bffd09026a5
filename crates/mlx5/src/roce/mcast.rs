//! RoCE multicast receive: a RoCE frame to a multicast address (`::ffff:224.0.0.0/4`
//! v4-mapped, or `ff00::/8`) is for the RDMA engine when a QP of this port is
//! attached to that group (ATTACH_TO_MCG, what rdma_cm's join does with the
//! group's MGID); the RoCE port's `accept` only knows the port's own GIDs.
//! Checked before `accept` for multicast destination MACs only. What this
//! port sends to a group also comes back through the RoCE port's loopback
//! queue (`fabric/roce/port.rs`) to the port's own members, as a ConnectX's
//! local loopback does: `Firmware::multicast_receive` leaves out the sender
//! when its qpc has `block_lb_mc`, and all of them while the NIC vport
//! context has `disable_mc_local_lb`.

use std::ops::Range;
use std::sync::atomic::Ordering::Relaxed;

use vrnic_fabric::roce::RocePort;
use vrnic_fabric::{Endpoint, RxMeta};
use vrnic_wire::grh;
use vrnic_wire::roce;

pub use vrnic_fabric::roce::is_multicast_gid as is_multicast;

/// The engine's view of `frame` when it is RoCE to a group `member` says this port joined, ICRC good.
pub fn accept_multicast(
    port: &RocePort,
    frame: &[u8],
    member: &dyn Fn(&[u8; 16]) -> bool,
) -> Option<(RxMeta, Range<usize>)> {
    if frame.first().is_none_or(|b| b & 1 == 0) {
        return None;
    }
    let p = roce::parse(frame).ok().flatten()?;
    let dgid = p.repr.grh.dgid;
    if !is_multicast(&dgid) || !member(&dgid) {
        return None;
    }
    let c = port.counters();
    if roce::verify_icrc(frame, &p).is_err() {
        c.rx_icrc_errors.fetch_add(1, Relaxed);
        return None;
    }
    c.rx_packets.fetch_add(1, Relaxed);
    c.rx_bytes.fetch_add(frame.len() as u64, Relaxed);
    let meta = RxMeta {
        src: Endpoint { lid: 0, gid: p.repr.grh.sgid },
        local: false,
        grh: Some(grh::Repr { next_header: grh::NXTHDR_IBA, ..p.repr.grh }),
        net: p.repr.net,
        vlan: p.repr.vlan,
        smac: p.repr.smac,
        prio: port.frame_prio(&p.repr),
    };
    Some((meta, p.roce))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multicast_gids() {
        let mut g = [0u8; 16];
        g[10] = 0xff;
        g[11] = 0xff;
        g[12..].copy_from_slice(&[239, 1, 1, 20]);
        assert!(is_multicast(&g));
        g[12] = 10;
        assert!(!is_multicast(&g));
        let mut g6 = [0u8; 16];
        g6[0] = 0xff;
        g6[1] = 0x0e;
        assert!(is_multicast(&g6));
        g6[0] = 0xfe;
        assert!(!is_multicast(&g6));
    }
}
