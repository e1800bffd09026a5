//! ACCESS_REG: the registers the driver reads and writes. Which registers exist is the link layer's
//! table ([`crate::link::LinkLayer::registers`]): [`IB_REGISTERS`] (HOST_ENDIANNESS, PCAP) on
//! an InfiniBand port, `eth::regs::REGISTERS` on an Ethernet one. An unknown register fails with
//! BAD_PARAM and a zero image (never "OK + zeros": readers such as PMTU's use the image even on error).

use crate::cmd::req::{fail, out, CmdErr, CmdResult, Req};
use crate::cmd::status;
use crate::firmware::Firmware;
use crate::ib::IbCx;
use crate::ifc;

/// A register access: (firmware, write?, the register image the driver sent) → the image to return.
pub type RegAccess = fn(&mut Firmware, bool, &[u8]) -> Result<Vec<u8>, CmdErr>;

/// One register of a link layer's table.
pub struct Register {
    pub id: u32,
    pub access: RegAccess,
}

/// A row of a register table: `register!(MLX5_REG_PAOS, eth_cx => paos)` runs `paos` on the
/// narrow context the firmware's `eth_cx()` lends (as a command row does); `register!(ID, f)`: `f` needs
/// no state.
macro_rules! register {
    ($id:ident, $cx:ident => $access:path) => {
        $crate::hca::access_reg::Register {
            id: $crate::ifc::$id,
            access: |fw, write, data| $access(&mut fw.$cx()?, write, data),
        }
    };
    ($id:ident, $access:path) => {
        $crate::hca::access_reg::Register { id: $crate::ifc::$id, access: |_, write, data| $access(write, data) }
    };
}
pub(crate) use register;

/// The registers of an InfiniBand port.
pub static IB_REGISTERS: &[Register] =
    &[register!(MLX5_REG_HOST_ENDIANNESS, host_endianness), register!(MLX5_REG_PCAP, ib_cx => pcap)];

pub fn access_reg(fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    let id = r.get(ifc::access_register_in::register_id) as u32;
    let write = r.op_mod == 0; // MLX5_ACCESS_REG_SUMMARY_CTRL_ID write = 0, read = 1
    if r.op_mod > 1 {
        return Err(fail!(status::BAD_PARAM, ACCESS_REG_BAD_PARAM));
    }
    let data_off = ifc::access_register_in::SIZE;
    let data = r.input.get(data_off..).unwrap_or(&[]);
    let out_len = r.outlen.max(ifc::access_register_out::SIZE);
    let reg = fw.port.link_layer().registers().iter().find(|g| g.id == id);
    let Some(reg) = reg else { return Err(fail!(status::BAD_PARAM, ACCESS_REG_BAD_PARAM_3)) };
    let image = (reg.access)(fw, write, data)?;
    let mut o = out(out_len);
    let n = image.len().min(o.len() - 16);
    o[16..16 + n].copy_from_slice(&image[..n]);
    Ok(o)
}

/// HOST_ENDIANNESS: accept and echo (`he`: 0 = little-endian host).
pub fn host_endianness(_write: bool, data: &[u8]) -> Result<Vec<u8>, CmdErr> {
    Ok(data.to_vec())
}

/// PCAP: byte 1 local_port; bytes 4..8 the PortInfo CapabilityMask (caps_127_96).
fn pcap(cx: &mut IbCx<'_>, write: bool, data: &[u8]) -> Result<Vec<u8>, CmdErr> {
    if data.len() < 8 {
        return Err(fail!(status::BAD_INP_LEN, ACCESS_REG_BAD_INP_LEN));
    }
    if data[1] != 1 {
        return Err(fail!(status::BAD_PARAM, ACCESS_REG_BAD_PARAM_2));
    }
    if write {
        let mask = u32::from_be_bytes(data[4..8].try_into().expect("4 bytes"));
        // IsSM (bit 1): the driver's to claim only where no built-in SM runs (an SM in the guest).
        cx.cfg.cap_mask = if cx.cfg.builtin_sm { mask & !(1 << 1) } else { mask };
    }
    let mut img = vec![0u8; 8];
    img[1] = 1;
    img[4..8].copy_from_slice(&cx.cfg.cap_mask.to_be_bytes());
    Ok(img)
}
