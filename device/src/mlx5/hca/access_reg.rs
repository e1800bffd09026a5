//! ACCESS_REG: the registers mlx5_core reads and writes (HOST_ENDIANNESS, PCAP).

use crate::mlx5::cmd::req::{fail, out, CmdResult, Req};
use crate::mlx5::cmd::status;
use crate::mlx5::firmware::Firmware;
use crate::mlx5::ifc;

pub fn access_reg(fw: &mut Firmware, r: &Req<'_>) -> CmdResult {
    let reg = r.get(ifc::access_register_in::register_id) as u32;
    let write = r.op_mod == 0; // MLX5_ACCESS_REG_SUMMARY_CTRL_ID write = 0, read = 1
    if r.op_mod > 1 {
        return Err(fail!(status::BAD_PARAM, ACCESS_REG_BAD_PARAM));
    }
    let data_off = ifc::access_register_in::SIZE;
    let data = r.input.get(data_off..).unwrap_or(&[]);
    let out_len = r.outlen.max(ifc::access_register_out::SIZE);
    let mut o = out(out_len);
    match reg {
        ifc::MLX5_REG_HOST_ENDIANNESS => {
            // Accept and echo (`he`: 0 = little-endian host).
            let n = data.len().min(o.len() - 16);
            o[16..16 + n].copy_from_slice(&data[..n]);
        }
        ifc::MLX5_REG_PCAP => {
            // byte 1: local_port; bytes 4..8: PortInfo CapabilityMask (caps_127_96).
            if data.len() < 8 {
                return Err(fail!(status::BAD_INP_LEN, ACCESS_REG_BAD_INP_LEN));
            }
            if data[1] != 1 {
                return Err(fail!(status::BAD_PARAM, ACCESS_REG_BAD_PARAM_2));
            }
            if write {
                let mask = u32::from_be_bytes(data[4..8].try_into().expect("4 bytes"));
                // Never let the driver claim to be an SM (bit 1).
                fw.ib.port.cap_mask = mask & !(1 << 1);
            }
            if o.len() >= 24 {
                o[17] = 1;
                o[20..24].copy_from_slice(&fw.ib.port.cap_mask.to_be_bytes());
            }
        }
        _ => return Err(fail!(status::BAD_PARAM, ACCESS_REG_BAD_PARAM_3)),
    }
    Ok(o)
}
