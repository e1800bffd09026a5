//! SET_ROCE_ADDRESS (0x761) and QUERY_ROCE_ADDRESS (0x760): one GID table
//! entry (`struct mlx5_ifc_roce_addr_layout_bits`) by `roce_address_index`
//! (`/work/shared/mlx5-ethernet-roce.md` §4.2). An all-zero address clears
//! the entry (how `mlx5_core_roce_gid_set` deletes a GID).

use crate::cmd::req::{fail, out, CmdResult, Req};
use crate::cmd::status;
use crate::ifc::{query_roce_address_in, query_roce_address_out, set_roce_address_in};
use crate::ifc::{MLX5_ROCE_L3_TYPE_IPV4, MLX5_ROCE_L3_TYPE_IPV6, MLX5_ROCE_VERSION_1, MLX5_ROCE_VERSION_2};
use crate::roce::RoceCx;
use vrnic_fabric::roce::{GidEntry, RoceVersion};

// [`index`] reads both commands' `roce_address_index` and `vhca_port_num` through SET's names.
const _: () = {
    assert!(set_roce_address_in::roce_address_index.bit_off == query_roce_address_in::roce_address_index.bit_off);
    assert!(set_roce_address_in::vhca_port_num.bit_off == query_roce_address_in::vhca_port_num.bit_off);
};

/// The entry index a command names, if inside the table and on port 1.
fn index(cx: &RoceCx<'_>, r: &Req<'_>) -> Result<usize, crate::cmd::req::CmdErr> {
    if r.get(set_roce_address_in::vhca_port_num) > 1 {
        return Err(fail!(status::BAD_PARAM, ROCE_ADDRESS_BAD_PORT));
    }
    let i = r.get(set_roce_address_in::roce_address_index) as usize;
    if i >= cx.roce.gids.len() {
        return Err(fail!(status::BAD_PARAM, ROCE_ADDRESS_BAD_INDEX));
    }
    Ok(i)
}

/// The entry a `roce_addr_layout` describes (`None`: an all-zero address, the entry is cleared).
fn decode(input: &[u8]) -> Result<Option<GidEntry>, crate::cmd::req::CmdErr> {
    use set_roce_address_in::roce_address as a;
    let gid: [u8; 16] = a::source_l3_address.bytes(input).and_then(|b| b.try_into().ok()).unwrap_or([0; 16]);
    if gid == [0; 16] {
        return Ok(None);
    }
    let version = match a::roce_version.get32(input) {
        MLX5_ROCE_VERSION_1 => RoceVersion::V1,
        MLX5_ROCE_VERSION_2 => RoceVersion::V2,
        _ => return Err(fail!(status::BAD_PARAM, SET_ROCE_ADDRESS_BAD_VERSION)),
    };
    let ipv4 = match a::roce_l3_type.get32(input) {
        MLX5_ROCE_L3_TYPE_IPV4 => true,
        MLX5_ROCE_L3_TYPE_IPV6 => false,
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
    use query_roce_address_out::roce_address as a;
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
    let l3 = if e.ipv4 { MLX5_ROCE_L3_TYPE_IPV4 } else { MLX5_ROCE_L3_TYPE_IPV6 };
    a::roce_l3_type.set(o, l3 as u64);
    let version = if e.version == RoceVersion::V1 { MLX5_ROCE_VERSION_1 } else { MLX5_ROCE_VERSION_2 };
    a::roce_version.set(o, version as u64);
}

pub fn set_roce_address(cx: &mut RoceCx<'_>, r: &Req<'_>) -> CmdResult {
    r.need(set_roce_address_in::SIZE)?;
    let i = index(cx, r)?;
    let entry = decode(r.input)?;
    cx.roce.gids.set(i, entry).map_err(|_| fail!(status::BAD_PARAM, ROCE_ADDRESS_BAD_INDEX))?;
    Ok(out(16))
}

pub fn query_roce_address(cx: &mut RoceCx<'_>, r: &Req<'_>) -> CmdResult {
    r.need(query_roce_address_in::SIZE)?;
    let i = index(cx, r)?;
    let mut o = out(query_roce_address_out::SIZE);
    if let Some(e) = cx.roce.gids.get(i) {
        encode(&e, &mut o);
    }
    Ok(o)
}
