//! Local loopback of the frames an SQ sends (owner: eth-tx), as a ConnectX's
//! NIC vport does it between transport domains.
//!
//! Every frame an SQ sends is looked at before it goes to the link:
//!
//! - broadcast or multicast: out on the link, and also through this port's
//!   own receive steering (a raw packet QP's flow rule or RSS TIR of another
//!   context receives it: what rdma-core's raw traffic tests send);
//! - unicast to the port's own MAC (or one in its UC list): through this
//!   port's receive steering only; out on the link when no TIR may take it;
//! - unicast to any other MAC: out on the link only.
//!
//! A TIR takes a looped-back frame ([`may_take`]) when it is in another
//! transport domain than the sending SQ's TIS and the NIC vport context
//! allows local loopback (`disable_uc_local_lb` / `disable_mc_local_lb`
//! clear), or in the same transport domain and its `self_lb_block` has the
//! frame's bit (bit 0 unicast, bit 1 multicast: set by mlx5_ib for
//! `MLX5_QP_FLAG_TIR_ALLOW_SELF_LB_UC/MC` and by mlx5e's loopback self-test,
//! `mlx5e_refresh_tirs(priv, true, ..)`). mlx5e's TIRs and TISes share one
//! transport domain with the bits clear, so the netdev never receives its own
//! frames.

use super::rx_dispatch::Tir;
use super::vport_state::Vport;
use super::EthCx;

/// Where a sent frame goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LbRoute {
    /// Delivered to at least one RQ of this port.
    pub looped: bool,
    /// Also (or only) out on the link.
    pub wire: bool,
}

/// Whether TIR `tir` may take a frame looped back from an SQ whose TIS is in
/// transport domain `src_td` (None: an SQ without a TIS); `local_lb`: the
/// vport allows local loopback of this kind of frame.
pub fn may_take(tir: &Tir, src_td: Option<u32>, multicast: bool, local_lb: bool) -> bool {
    let bit = if multicast { 2 } else { 1 };
    if src_td == Some(tir.transport_domain) {
        tir.self_lb_block & bit != 0
    } else {
        local_lb
    }
}

/// Whether vport `v` allows local loopback of unicast (`multicast` false) or multicast frames.
pub fn local_lb(v: &Vport, multicast: bool) -> bool {
    if multicast {
        !v.disable_mc_local_lb
    } else {
        !v.disable_uc_local_lb
    }
}

/// Loopback of the Ethernet port's transmitted frames.
impl EthCx<'_> {
    /// The transport domain of SQ `sqn`'s TIS.
    fn sq_transport_domain(&self, sqn: u32) -> Option<u32> {
        let tisn = self.eth.queues.sq(sqn)?.tisn;
        self.eth.queues.tises.get(tisn).map(|t| t.transport_domain)
    }

    /// Delivers `frame`, sent by SQ `sqn`, to this port's RQs as the vport's
    /// local loopback does (see the module doc) and says whether it must
    /// also go out on the link.
    pub(super) fn loopback(&mut self, sqn: u32, frame: &[u8]) -> LbRoute {
        let Some(dmac) = frame.get(..6) else { return LbRoute { looped: false, wire: true } };
        let multicast = dmac[0] & 1 != 0;
        let v = &self.eth.vport;
        let own = !multicast && (dmac == v.mac || v.uc_list.iter().any(|m| m[..] == *dmac));
        if !multicast && !own {
            return LbRoute { looped: false, wire: true };
        }
        let src_td = self.sq_transport_domain(sqn);
        let lb = local_lb(v, multicast);
        // A looped-back frame nobody takes is no receive-side drop.
        let drops = self.eth.steering.drops;
        let (admitted, delivered) = self.receive_if(frame, &|t| may_take(t, src_td, multicast, lb));
        self.eth.steering.drops = drops;
        LbRoute { looped: delivered, wire: multicast || admitted == 0 }
    }
}
