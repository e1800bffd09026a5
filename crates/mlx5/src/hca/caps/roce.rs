//! The ROCE capability page of an Ethernet port with RoCE (`/work/shared/mlx5-ethernet-roce.md` §1.5):
//! RoCEv2 only (`roce_version` 4), over IPv4 and IPv6 (`l3_type` 6: without both bits mlx5_ib gives the
//! port no RoCE flags), software-chosen UDP source ports (`sw_r_roce_src_udp_port` in MAX and CUR, so
//! no SET_HCA_CAP comes), the GID table size ([`ROCE_ADDRESS_TABLE_SIZE`], also the size of the
//! `fabric::roce::RoceGids` table the device builds). The general page's `roce` bit is in `eth.rs`.

use super::image::{build, CapValue};
use crate::ifc::{self, roce_cap};

/// Capability type of the ROCE page.
pub const CAP_ROCE: u16 = ifc::MLX5_CAP_ROCE as u16;

/// Entries of the RoCE GID table (`roce_address_table_size`, mlx5_ib's `gid_tbl_len`).
pub const ROCE_ADDRESS_TABLE_SIZE: usize = 256;

/// `roce_version` bits: v1 = `1 << MLX5_ROCE_VERSION_1` (0), v2 = `1 << MLX5_ROCE_VERSION_2` (2).
pub const ROCE_VERSION_V2_CAP: u64 = 1 << 2;
/// `l3_type` bits: IPv4 = 2, IPv6 = 4.
pub const L3_TYPE_IPV4_IPV6: u64 = 2 | 4;

macro_rules! caps {
    ($m:ident: $($f:ident = $v:expr),* $(,)?) => {
        &[$((stringify!($f), $m::$f, $v as u64)),*]
    };
}

/// §1.5: the ROCE page (MAX = CUR).
pub const ROCE_CAPS: &[CapValue] = caps!(roce_cap:
    sw_r_roce_src_udp_port = 1,
    l3_type = L3_TYPE_IPV4_IPV6,
    roce_version = ROCE_VERSION_V2_CAP,
    r_roce_dest_udp_port = vrnic_wire::roce::ROCE_V2_PORT,
    r_roce_max_src_udp_port = 0xffff,
    r_roce_min_src_udp_port = 0xc000,
    roce_address_table_size = ROCE_ADDRESS_TABLE_SIZE,
);

/// The ROCE page.
pub fn roce_caps_image() -> Vec<u8> {
    build(ROCE_CAPS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roce_page_bytes_as_section_1_5_places_them() {
        let p = roce_caps_image();
        assert_eq!(p.len(), 0x1000);
        // DW0 bit 27 sw_r_roce_src_udp_port; DW4 [19:16] l3_type 6, [7:0] roce_version 4;
        // DW5 [15:0] 4791; DW6 max 0xffff / min 0xc000; DW7 [15:0] 256.
        let dw = |i: usize| u32::from_be_bytes(p[i * 4..i * 4 + 4].try_into().unwrap());
        assert_eq!(dw(0), 1 << 27);
        assert_eq!(dw(4), (6 << 16) | 4);
        assert_eq!(dw(5), 4791);
        assert_eq!(dw(6), 0xffff_c000);
        assert_eq!(dw(7), 256);
        let nonzero: Vec<usize> = (0..0x400).filter(|&i| dw(i) != 0).collect();
        assert_eq!(nonzero, vec![0, 4, 5, 6, 7], "nothing else on the page");
    }
}
