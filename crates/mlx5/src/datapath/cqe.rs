//! Completion-queue entries (`struct mlx5_cqe64`, `struct mlx5_err_cqe`,
//! include/linux/mlx5/device.h) and writing them into a CQ buffer: the 63
//! body bytes first, `op_own` (with the owner bit) last.

use std::sync::atomic::{fence, Ordering};

use vrnic_engine::GuestMemory;

/// CQE opcodes (`op_own[7:4]`).
pub mod op {
    pub const REQ: u8 = 0;
    pub const RESP_WR_IMM: u8 = 1;
    pub const RESP_SEND: u8 = 2;
    pub const RESP_SEND_IMM: u8 = 3;
    pub const RESP_SEND_INV: u8 = 4;
    /// `MLX5_CQE_RESIZE_CQ`: written into the old buffer by a CQ resize, at
    /// the index where the new buffer takes over.
    pub const RESIZE_CQ: u8 = 5;
    pub const REQ_ERR: u8 = 13;
    pub const RESP_ERR: u8 = 14;
}

/// Error syndromes (`MLX5_CQE_SYNDROME_*`).
pub mod syndrome {
    pub const LOCAL_LENGTH_ERR: u8 = 0x01;
    pub const LOCAL_QP_OP_ERR: u8 = 0x02;
    pub const LOCAL_PROT_ERR: u8 = 0x04;
    pub const WR_FLUSH_ERR: u8 = 0x05;
    pub const BAD_RESP_ERR: u8 = 0x10;
    pub const LOCAL_ACCESS_ERR: u8 = 0x11;
    pub const REMOTE_INVAL_REQ_ERR: u8 = 0x12;
    pub const REMOTE_ACCESS_ERR: u8 = 0x13;
    pub const REMOTE_OP_ERR: u8 = 0x14;
    pub const TRANSPORT_RETRY_EXC_ERR: u8 = 0x15;
    pub const RNR_RETRY_EXC_ERR: u8 = 0x16;
}

/// One completion, in mlx5 terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Cqe {
    pub opcode: u8,
    /// Requester: the WQE opcode (`sop_drop_qpn[31:24]`).
    pub wqe_opcode: u8,
    pub qpn: u32,
    pub wqe_counter: u16,
    pub byte_cnt: u32,
    /// `srqn_uidx`: the QP's user_index (cqe_version 1).
    pub user_index: u32,
    pub imm_inval_pkey: u32,
    /// Responder UD: source QPN, SL, GRH flag, source LID.
    pub src_qpn: u32,
    pub sl: u8,
    pub grh: bool,
    pub slid: u16,
    pub solicited: bool,
    /// Error CQEs: syndrome and vendor syndrome.
    pub syndrome: u8,
    pub vendor_syndrome: u8,
    /// The device clock when the CQE was written (`timestamp`, be64 at
    /// 0x30 of `struct mlx5_cqe64`), in ticks of `device_frequency_khz`.
    /// Not written into error CQEs, whose syndromes overlap it.
    pub timestamp: u64,
    /// Ethernet receive (`en_rx.c`): the RSS hash of the TIR that chose the
    /// RQ (`rss_hash_result`, be32 at 0x0c) and its type (0x10).
    pub rss_hash: u32,
    pub rss_hash_type: u8,
    /// Ethernet receive: one's-complement sum of the L3 packet, not
    /// inverted (`check_sum`, be16 at 0x14).
    pub check_sum: u16,
    /// Ethernet receive: L3_OK/L4_OK (`hds_ip_ext`, 0x1c), L3/L4 types and
    /// the VLAN-stripped bit (`l4_l3_hdr_type`, 0x1d), the stripped TCI
    /// (`vlan_info`, be16 at 0x1e). For a received frame `qpn` carries the
    /// steering `flow_tag` (`sop_drop_qpn`), never the RQN.
    pub hds_ip_ext: u8,
    pub l4_l3_hdr_type: u8,
    pub vlan_info: u16,
}

impl Cqe {
    /// The 64-byte image with `op_own`'s owner bit set to `owner`.
    pub fn emit(&self, owner: u8) -> [u8; 64] {
        let mut b = [0u8; 64];
        b[0x0c..0x10].copy_from_slice(&self.rss_hash.to_be_bytes());
        b[0x10] = self.rss_hash_type;
        b[0x14..0x16].copy_from_slice(&self.check_sum.to_be_bytes());
        b[0x16..0x18].copy_from_slice(&self.slid.to_be_bytes());
        let flags_rqpn = ((self.grh as u32) << 28) | ((self.sl as u32 & 0xf) << 24) | (self.src_qpn & 0x00ff_ffff);
        b[0x18..0x1c].copy_from_slice(&flags_rqpn.to_be_bytes());
        b[0x1c] = self.hds_ip_ext;
        b[0x1d] = self.l4_l3_hdr_type;
        b[0x1e..0x20].copy_from_slice(&self.vlan_info.to_be_bytes());
        b[0x20..0x24].copy_from_slice(&(self.user_index & 0x00ff_ffff).to_be_bytes());
        b[0x24..0x28].copy_from_slice(&self.imm_inval_pkey.to_be_bytes());
        b[0x2c..0x30].copy_from_slice(&self.byte_cnt.to_be_bytes());
        if matches!(self.opcode, op::REQ_ERR | op::RESP_ERR) {
            // `struct mlx5_err_cqe`: the syndromes sit where the timestamp's
            // low bytes would; an error CQE carries no timestamp.
            b[0x36] = self.vendor_syndrome;
            b[0x37] = self.syndrome;
        } else {
            b[0x30..0x38].copy_from_slice(&self.timestamp.to_be_bytes());
        }
        let sdq = ((self.wqe_opcode as u32) << 24) | (self.qpn & 0x00ff_ffff);
        b[0x38..0x3c].copy_from_slice(&sdq.to_be_bytes());
        b[0x3c..0x3e].copy_from_slice(&self.wqe_counter.to_be_bytes());
        b[0x3f] = (self.opcode << 4) | ((self.solicited as u8) << 1) | (owner & 1);
        b
    }
}

/// Writes `cqe` at byte address `addr` of a CQ slot: `cqe_size` 128 puts the
/// 64-byte CQE in the second half. The owner byte goes last.
pub fn write(mem: &dyn GuestMemory, addr: u64, cqe_size: usize, cqe: &Cqe, owner: u8) -> bool {
    let img = cqe.emit(owner);
    let at = addr + (cqe_size as u64 - 64);
    if mem.write(at, &img[..63]).is_err() {
        return false;
    }
    fence(Ordering::Release);
    mem.write(at + 63, &img[63..]).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requester_layout() {
        let c = Cqe {
            opcode: op::REQ,
            wqe_opcode: 0x0a,
            qpn: 0x123,
            wqe_counter: 7,
            user_index: 0x55,
            ..Default::default()
        };
        let b = c.emit(1);
        assert_eq!(&b[0x38..0x3c], &[0x0a, 0x00, 0x01, 0x23]);
        assert_eq!(&b[0x3c..0x3e], &[0, 7]);
        assert_eq!(&b[0x20..0x24], &[0, 0, 0, 0x55]);
        assert_eq!(b[0x3f], 0x01);
        assert_eq!(&b[0x30..0x38], &[0; 8], "no timestamp given");
        let t = Cqe { timestamp: 0x0102_0304_0506_0708, ..c };
        let b = t.emit(0);
        assert_eq!(&b[0x30..0x38], &[1, 2, 3, 4, 5, 6, 7, 8], "timestamp be64 at 0x30");
        assert_eq!(&b[0x2c..0x30], &[0; 4], "byte_cnt untouched");
        assert_eq!(&b[0x38..0x3c], &[0x0a, 0x00, 0x01, 0x23], "sop_drop_qpn untouched");
    }

    #[test]
    fn responder_and_error_layout() {
        let c = Cqe {
            opcode: op::RESP_SEND,
            qpn: 9,
            byte_cnt: 296,
            src_qpn: 1,
            sl: 2,
            slid: 5,
            solicited: true,
            ..Default::default()
        };
        let b = c.emit(0);
        assert_eq!(b[0x3f], 0x22);
        assert_eq!(&b[0x18..0x1c], &[0x02, 0, 0, 1]);
        assert_eq!(&b[0x16..0x18], &[0, 5]);
        assert_eq!(&b[0x2c..0x30], &296u32.to_be_bytes());
        let e =
            Cqe { opcode: op::REQ_ERR, syndrome: syndrome::WR_FLUSH_ERR, vendor_syndrome: 0x79, ..Default::default() };
        let b = e.emit(1);
        assert_eq!((b[0x36], b[0x37], b[0x3f]), (0x79, 0x05, 0xd1));
        let b = Cqe { timestamp: u64::MAX, ..e }.emit(1);
        assert_eq!((&b[0x30..0x36], b[0x36], b[0x37]), (&[0u8; 6][..], 0x79, 0x05), "no timestamp in an error CQE");
    }

    #[test]
    fn ethernet_receive_layout() {
        let c = Cqe {
            opcode: op::RESP_SEND,
            qpn: 0x00ab_cdef,
            wqe_counter: 0x1234,
            byte_cnt: 60,
            rss_hash: 0xdead_beef,
            rss_hash_type: 0x44,
            check_sum: 0x5a5b,
            hds_ip_ext: 0x06,
            l4_l3_hdr_type: 0x29,
            vlan_info: 0x2064,
            ..Default::default()
        };
        let b = c.emit(1);
        let mut want = [0u8; 64];
        want[0x0c..0x10].copy_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
        want[0x10] = 0x44;
        want[0x14..0x16].copy_from_slice(&[0x5a, 0x5b]);
        want[0x1c..0x20].copy_from_slice(&[0x06, 0x29, 0x20, 0x64]);
        want[0x2c..0x30].copy_from_slice(&[0, 0, 0, 60]);
        want[0x38..0x3c].copy_from_slice(&[0, 0xab, 0xcd, 0xef]);
        want[0x3c..0x3e].copy_from_slice(&[0x12, 0x34]);
        want[0x3f] = 0x21;
        assert_eq!(b, want, "every other byte 0: no LRO, no TLS, lro_num_seg 0, format 0");
    }

    #[test]
    fn ib_images_do_not_see_the_ethernet_fields() {
        // A responder CQE as the IB paths build it: the new fields default
        // to 0 and the image is byte for byte the one before they existed.
        let c = Cqe { opcode: op::RESP_SEND, qpn: 9, byte_cnt: 296, src_qpn: 1, slid: 5, ..Default::default() };
        let b = c.emit(0);
        let mut want = [0u8; 64];
        want[0x16..0x18].copy_from_slice(&[0, 5]);
        want[0x18..0x1c].copy_from_slice(&[0, 0, 0, 1]);
        want[0x2c..0x30].copy_from_slice(&296u32.to_be_bytes());
        want[0x38..0x3c].copy_from_slice(&[0, 0, 0, 9]);
        want[0x3f] = 0x20;
        assert_eq!(b, want);
    }
}
