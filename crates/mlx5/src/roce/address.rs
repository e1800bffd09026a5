//! SET_ROCE_ADDRESS (0x761) and QUERY_ROCE_ADDRESS (0x760): one GID table
//! entry (`struct mlx5_ifc_roce_addr_layout_bits`) by `roce_address_index`
//! (`/work/shared/mlx5-ethernet-roce.md` §4.2). An all-zero address clears
//! the entry (how `mlx5_core_roce_gid_set` deletes a GID).

use crate::cmd::req::{fail, out, CmdResult, Req};
use crate::cmd::status;
use crate::fields::Field;
use crate::roce::RoceCx;
use vrnic_fabric::roce::{GidEntry, RoceVersion};

/// `set_roce_address_in` / `query_roce_address_in` (mlx5_ifc.h; not in the
/// generated `ifc.rs`): the index and port words are at the same place in both.
#[allow(non_upper_case_globals)]
pub mod roce_address_in {
    use super::Field;
    pub const roce_address_index: Field = Field::new(0x40, 0x10);
    pub const vhca_port_num: Field = Field::new(0x5c, 0x4);
    /// `set_roce_address_in`: 0x80 bits of header + `roce_addr_layout`.
    pub const SET_SIZE: usize = 0x30;
    pub const QUERY_SIZE: usize = 0x10;
}

/// `struct mlx5_ifc_roce_addr_layout_bits` at byte 0x10 of
/// `set_roce_address_in` and of `query_roce_address_out` (absolute offsets).
#[allow(non_upper_case_globals)]
pub mod roce_addr_layout {
    use super::Field;
    /// `source_l3_address[16][0x8]`: the GID.
    pub const source_l3_address: Field = Field::new(0x80, 0x80);
    pub const vlan_valid: Field = Field::new(0x103, 0x1);
    pub const vlan_id: Field = Field::new(0x104, 0xc);
    pub const source_mac_47_32: Field = Field::new(0x110, 0x10);
    pub const source_mac_31_0: Field = Field::new(0x120, 0x20);
    /// 0 IPv4, 1 IPv6.
    pub const roce_l3_type: Field = Field::new(0x154, 0x4);
    /// 0 RoCEv1, 2 RoCEv2 (`MLX5_ROCE_VERSION_*`).
    pub const roce_version: Field = Field::new(0x158, 0x8);
    /// `query_roce_address_out`.
    pub const QUERY_OUT_SIZE: usize = 0x30;
}

use roce_addr_layout as a;

/// `roce_version` codes.
const ROCE_VERSION_1: u64 = 0;
const ROCE_VERSION_2: u64 = 2;
/// `roce_l3_type` codes.
const L3_IPV4: u64 = 0;
const L3_IPV6: u64 = 1;

/// The entry index a command names, if inside the table and on port 1.
fn index(cx: &RoceCx<'_>, r: &Req<'_>) -> Result<usize, crate::cmd::req::CmdErr> {
    if r.get(roce_address_in::vhca_port_num) > 1 {
        return Err(fail!(status::BAD_PARAM, ROCE_ADDRESS_BAD_PORT));
    }
    let i = r.get(roce_address_in::roce_address_index) as usize;
    if i >= cx.roce.gids.len() {
        return Err(fail!(status::BAD_PARAM, ROCE_ADDRESS_BAD_INDEX));
    }
    Ok(i)
}

/// The entry a `roce_addr_layout` describes (`None`: an all-zero address, the entry is cleared).
fn decode(input: &[u8]) -> Result<Option<GidEntry>, crate::cmd::req::CmdErr> {
    let gid: [u8; 16] = a::source_l3_address.bytes(input).and_then(|b| b.try_into().ok()).unwrap_or([0; 16]);
    if gid == [0; 16] {
        return Ok(None);
    }
    let version = match a::roce_version.get(input) {
        ROCE_VERSION_1 => RoceVersion::V1,
        ROCE_VERSION_2 => RoceVersion::V2,
        _ => return Err(fail!(status::BAD_PARAM, SET_ROCE_ADDRESS_BAD_VERSION)),
    };
    let ipv4 = match a::roce_l3_type.get(input) {
        L3_IPV4 => true,
        L3_IPV6 => false,
        _ => return Err(fail!(status::BAD_PARAM, SET_ROCE_ADDRESS_BAD_L3_TYPE)),
    };
    let mac_hi = a::source_mac_47_32.get(input) << 32;
    let mac = (mac_hi | a::source_mac_31_0.get(input)).to_be_bytes();
    Ok(Some(GidEntry {
        gid,
        mac: mac[2..8].try_into().expect("6 bytes"),
        vlan: (a::vlan_valid.get(input) != 0).then(|| a::vlan_id.get(input) as u16),
        version,
        ipv4,
    }))
}

/// Writes `e` as a `roce_addr_layout` into `o` (query output).
fn encode(e: &GidEntry, o: &mut [u8]) {
    if let Some(b) = a::source_l3_address.bytes_mut(o) {
        b.copy_from_slice(&e.gid);
    }
    if let Some(v) = e.vlan {
        a::vlan_valid.set(o, 1);
        a::vlan_id.set(o, v as u64 & 0xfff);
    }
    let mut m = [0u8; 8];
    m[2..].copy_from_slice(&e.mac);
    let mac = u64::from_be_bytes(m);
    a::source_mac_47_32.set(o, mac >> 32);
    a::source_mac_31_0.set(o, mac & 0xffff_ffff);
    a::roce_l3_type.set(o, if e.ipv4 { L3_IPV4 } else { L3_IPV6 });
    a::roce_version.set(o, if e.version == RoceVersion::V1 { ROCE_VERSION_1 } else { ROCE_VERSION_2 });
}

pub fn set_roce_address(cx: &mut RoceCx<'_>, r: &Req<'_>) -> CmdResult {
    r.need(roce_address_in::SET_SIZE)?;
    let i = index(cx, r)?;
    let entry = decode(r.input)?;
    cx.roce.gids.set(i, entry).map_err(|_| fail!(status::BAD_PARAM, ROCE_ADDRESS_BAD_INDEX))?;
    Ok(out(16))
}

pub fn query_roce_address(cx: &mut RoceCx<'_>, r: &Req<'_>) -> CmdResult {
    r.need(roce_address_in::QUERY_SIZE)?;
    let i = index(cx, r)?;
    let mut o = out(a::QUERY_OUT_SIZE);
    if let Some(e) = cx.roce.gids.get(i) {
        encode(&e, &mut o);
    }
    Ok(o)
}
