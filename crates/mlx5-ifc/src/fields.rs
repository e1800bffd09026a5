//! Bit-field access for the `mlx5_ifc` layouts generated in [`super::ifc`].
//!
//! mlx5 structures are a big-endian bit stream: bit 0 of a structure is the most significant bit of
//! its byte 0, dwords and qwords are big-endian. A [`Field`] is a bit offset from the start of the
//! structure plus a width in bits, exactly what `mlx5_ifc.h` encodes with `u8 name[width]` members.
//! [`Field::get`]/[`Field::set`] have the semantics of the driver's `MLX5_GET`/`MLX5_SET`
//! (`MLX5_GET64`/`MLX5_SET64` for 64-bit fields): the value is right-aligned, `set` masks it to the
//! width and leaves every other bit untouched.
//!
//! Out-of-range policy: accessors never panic. A field that does not lie entirely inside `buf` reads
//! as 0 and is not written ([`Field::try_get`]/[`Field::try_set`] report it instead). The command
//! layer sizes buffers from the generated `SIZE` constants, so this only matters for truncated
//! (`outlen`-bounded) or malformed input.
//!
//! Fields wider than 64 bits (byte arrays such as `board_id`, nested structures) are read and written
//! as bytes through [`Field::bytes`]/[`Field::bytes_mut`]/[`Field::byte_range`]; `get` on them
//! returns their last (least significant) 64 bits and `set` writes the value right-aligned,
//! zero-extended over the whole width.

use std::ops::Range;

/// A field of an mlx5 structure: bit offset from the start of the structure and width in bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Field {
    /// Offset of the field's most significant bit from the start of the structure (MSB of byte 0 = 0).
    pub bit_off: u32,
    /// Width in bits.
    pub bits: u32,
}

impl Field {
    /// A field at `bit_off` that is `bits` wide.
    pub const fn new(bit_off: u32, bits: u32) -> Self {
        Field { bit_off, bits }
    }

    /// A field of a nested structure placed at `self`: `inner`'s offset is relative to the start of
    /// `self` (e.g. `query_hca_cap_out::capability.inner(cmd_hca_cap::log_max_qp)`).
    pub const fn inner(self, inner: Field) -> Field {
        Field { bit_off: self.bit_off + inner.bit_off, bits: inner.bits }
    }

    /// Byte holding the field's first bit.
    pub const fn byte_off(self) -> usize {
        (self.bit_off / 8) as usize
    }

    /// One past the last byte the field touches.
    pub const fn byte_end(self) -> usize {
        (self.bit_off as usize + self.bits as usize).div_ceil(8)
    }

    /// True when the field starts and ends on byte boundaries.
    pub const fn is_byte_aligned(self) -> bool {
        self.bit_off % 8 == 0 && self.bits % 8 == 0
    }

    /// The bytes the field occupies, if it is byte aligned (arrays, nested structures, 8/16/32/64-bit
    /// fields at byte offsets).
    pub const fn byte_range(self) -> Option<Range<usize>> {
        if self.is_byte_aligned() {
            Some(self.byte_off()..self.byte_end())
        } else {
            None
        }
    }

    /// True when the whole field lies inside a buffer of `len` bytes.
    pub const fn fits(self, len: usize) -> bool {
        self.byte_end() <= len
    }

    /// The field's bytes in `buf` (byte-aligned fields inside `buf` only).
    pub fn bytes(self, buf: &[u8]) -> Option<&[u8]> {
        buf.get(self.byte_range()?)
    }

    /// The field's bytes in `buf`, mutable (byte-aligned fields inside `buf` only).
    pub fn bytes_mut(self, buf: &mut [u8]) -> Option<&mut [u8]> {
        buf.get_mut(self.byte_range()?)
    }

    /// Mask of the value's width (all ones for 64 bits and more).
    const fn mask(bits: u32) -> u64 {
        if bits >= 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        }
    }

    /// `MLX5_GET`: the field's value; 0 when it does not fit in `buf`.
    pub fn get(self, buf: &[u8]) -> u64 {
        self.try_get(buf).unwrap_or(0)
    }

    /// The value truncated to 32 bits (for fields of at most 32 bits, the value).
    pub fn get32(self, buf: &[u8]) -> u32 {
        self.get(buf) as u32
    }

    /// A 1-bit flag (any non-zero value for wider fields).
    pub fn get_bool(self, buf: &[u8]) -> bool {
        self.get(buf) != 0
    }

    /// The field's value, or `None` when it does not fit in `buf`.
    pub fn try_get(self, buf: &[u8]) -> Option<u64> {
        if !self.fits(buf.len()) {
            return None;
        }
        if self.bits == 0 {
            return Some(0);
        }
        // The last (at most) 64 bits: a span of at most 9 bytes.
        let low = if self.bits > 64 { Field::new(self.bit_off + self.bits - 64, 64) } else { self };
        let (first, end) = (low.byte_off(), low.byte_end());
        let mut acc: u128 = 0;
        for &b in &buf[first..end] {
            acc = (acc << 8) | b as u128;
        }
        let shift = (end * 8) as u32 - (low.bit_off + low.bits);
        Some(((acc >> shift) as u64) & Self::mask(low.bits))
    }

    /// `MLX5_SET`: write `v` masked to the field's width; ignored when the field does not fit in `buf`.
    pub fn set(self, buf: &mut [u8], v: u64) {
        let _ = self.try_set(buf, v);
    }

    /// Write a flag.
    pub fn set_bool(self, buf: &mut [u8], v: bool) {
        self.set(buf, v as u64)
    }

    /// `set`, reporting whether the field fit in `buf` (nothing is written when it did not).
    pub fn try_set(self, buf: &mut [u8], v: u64) -> bool {
        if !self.fits(buf.len()) {
            return false;
        }
        if self.bits > 64 {
            // zero the leading bits, then write the last 64
            let lead = self.bits - 64;
            let mut off = 0;
            while off < lead {
                let n = (lead - off).min(64);
                Field::new(self.bit_off + off, n).try_set(buf, 0);
                off += n;
            }
            return Field::new(self.bit_off + lead, 64).try_set(buf, v);
        }
        if self.bits == 0 {
            return true;
        }
        let (first, end) = (self.byte_off(), self.byte_end());
        let span = &mut buf[first..end];
        let mut acc: u128 = 0;
        for &b in span.iter() {
            acc = (acc << 8) | b as u128;
        }
        let shift = (end * 8) as u32 - (self.bit_off + self.bits);
        let mask = (Self::mask(self.bits) as u128) << shift;
        acc = (acc & !mask) | (((v & Self::mask(self.bits)) as u128) << shift);
        for (i, b) in span.iter_mut().rev().enumerate() {
            *b = (acc >> (8 * i)) as u8;
        }
        true
    }
}

/// An array in an mlx5 structure (`u8 name[N][M]`, `struct mlx5_ifc_X_bits name[N]`, flexible
/// `name[]`): offset of element 0, element width, element count (0 for a flexible array, which
/// extends to the end of the buffer).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Array {
    /// Bit offset of element 0.
    pub bit_off: u32,
    /// Width of one element in bits.
    pub elem_bits: u32,
    /// Number of elements; 0 for a flexible array member.
    pub count: u32,
}

impl Array {
    /// An array at `bit_off` of `count` elements `elem_bits` wide.
    pub const fn new(bit_off: u32, elem_bits: u32, count: u32) -> Self {
        Array { bit_off, elem_bits, count }
    }

    /// Element `i` as a field. Not bounded by `count` (flexible arrays have none); reading or writing
    /// it is still bounded by the buffer.
    pub const fn elem(self, i: u32) -> Field {
        Field::new(self.bit_off + i * self.elem_bits, self.elem_bits)
    }

    /// A field of element `i`, for arrays of structures: `arr.at(i, elem_type::field)`.
    pub const fn at(self, i: u32, inner: Field) -> Field {
        self.elem(i).inner(inner)
    }

    /// True for a flexible array member (`name[]`).
    pub const fn is_flexible(self) -> bool {
        self.count == 0
    }

    /// The whole fixed-size array as one field (empty for a flexible array).
    pub const fn region(self) -> Field {
        Field::new(self.bit_off, self.elem_bits * self.count)
    }

    /// Byte offset of element 0.
    pub const fn byte_off(self) -> usize {
        (self.bit_off / 8) as usize
    }

    /// How many whole elements a buffer of `len` bytes holds (bounded by `count` unless flexible).
    pub fn elems_in(self, len: usize) -> u32 {
        let start = self.bit_off as u64;
        let avail = (len as u64 * 8).saturating_sub(start);
        let n = if self.elem_bits == 0 { 0 } else { (avail / self.elem_bits as u64) as u32 };
        if self.count == 0 {
            n
        } else {
            n.min(self.count)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::ifc::*;
    use super::*;

    #[test]
    fn get_set_in_one_dword() {
        // DW1 bits[20:16] of a 16-byte buffer
        let f = Field::new(32 + 11, 5);
        let mut b = [0u8; 16];
        f.set(&mut b, 0x1f);
        assert_eq!(&b[4..8], &[0x00, 0x1f, 0x00, 0x00]);
        assert_eq!(f.get(&b), 0x1f);
        // masking: only the field's bits change
        b.fill(0xff);
        f.set(&mut b, 0x21); // 0x21 & 0x1f = 1
        assert_eq!(&b[4..8], &[0xff, 0xe1, 0xff, 0xff]);
        assert_eq!(f.get(&b), 1);
    }

    #[test]
    fn get_set_64_and_wide() {
        let f = Field::new(64, 64);
        let mut b = [0u8; 24];
        f.set(&mut b, 0x0102_0304_0506_0708);
        assert_eq!(&b[8..16], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(f.get(&b), 0x0102_0304_0506_0708);
        // unaligned field spanning 9 bytes
        let g = Field::new(4, 64);
        let mut c = [0u8; 10];
        g.set(&mut c, u64::MAX);
        assert_eq!(c, [0x0f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xf0, 0]);
        assert_eq!(g.get(&c), u64::MAX);
        // wide field: right-aligned, zero-extended
        let w = Field::new(0, 128);
        let mut d = [0xaau8; 16];
        w.set(&mut d, 0x1234);
        assert_eq!(d[..14], [0u8; 14]);
        assert_eq!(&d[14..], &[0x12, 0x34]);
        assert_eq!(w.get(&d), 0x1234);
    }

    #[test]
    fn out_of_range_never_panics() {
        let f = Field::new(96, 32);
        let mut b = [0u8; 15];
        assert_eq!(f.get(&b), 0);
        assert_eq!(f.try_get(&b), None);
        assert!(!f.try_set(&mut b, 7));
        f.set(&mut b, 7);
        assert_eq!(b, [0u8; 15]);
        assert_eq!(f.bytes(&b), None);
        assert_eq!(Field::new(4, 8).byte_range(), None);
        let a = Array::new(0x880, 0x40, 0);
        assert_eq!(a.elems_in(0x110), 0);
        assert_eq!(a.elems_in(0x110 + 17), 2);
        assert_eq!(a.elem(1000).get(&b), 0);
    }

    /// Offsets checked by hand against Appendix A of the model doc (mlx5_ifc.h, Linux 6.12.117).
    #[test]
    fn generated_offsets_match_appendix_a() {
        let dw = |f: Field| (f.bit_off / 32 * 4, 31 - f.bit_off % 32, f.bits);
        // "0x0010 DW4 bits[4:0] log_max_qp"
        assert_eq!(dw(cmd_hca_cap::log_max_qp), (0x10, 4, 5));
        // "0x0034 DW13 bits[9:8] port_type", "bits[7:0] num_ports"
        assert_eq!(dw(cmd_hca_cap::port_type), (0x34, 9, 2));
        assert_eq!(dw(cmd_hca_cap::num_ports), (0x34, 7, 8));
        // "0x0000 DW0 bit 25 page_request_disable"
        assert_eq!(dw(cmd_hca_cap::page_request_disable), (0, 25, 1));
        // "0x0044 DW17 bit 3 xrc", "0x004c DW19 bit 31 bf", "0x00a4 DW41 (32 bits) num_of_uars_per_page"
        assert_eq!(dw(cmd_hca_cap::xrc), (0x44, 3, 1));
        assert_eq!(dw(cmd_hca_cap::bf), (0x4c, 31, 1));
        assert_eq!(dw(cmd_hca_cap::num_of_uars_per_page), (0xa4, 31, 32));
        assert_eq!(dw(cmd_hca_cap::general_obj_types), (0x80, 31, 64));
        assert_eq!(cmd_hca_cap::SIZE, 256);
        // create_eq_in: "0x0010 DW4 (512 bits) eq_context_entry <struct eqc>", event_bitmask[4] @0x58
        assert_eq!(create_eq_in::eq_context_entry, Field::new(0x10 * 8, 512));
        assert_eq!(create_eq_in::event_bitmask, Array::new(0x58 * 8, 64, 4));
        assert_eq!(create_eq_in::pas.byte_off(), 0x110);
        assert_eq!(create_eq_in::SIZE, 0x110);
        // eqc "0x000c DW3 bits[28:24] log_eq_size", "0x0014 DW5 bits[11:0] intr": nested at +0x10
        assert_eq!(dw(create_eq_in::eq_context_entry::log_eq_size), (0x1c, 28, 5));
        assert_eq!(dw(create_eq_in::eq_context_entry::intr), (0x24, 11, 12));
        assert_eq!(create_eq_in::eq_context_entry.inner(eqc::intr), create_eq_in::eq_context_entry::intr);
        // query_hca_cap_out.capability at 0x10, 0x1000 bytes
        assert_eq!(query_hca_cap_out::capability.byte_range(), Some(0x10..0x1010));
        assert_eq!(set_hca_cap_in::capability.byte_range(), Some(0x10..0x1010));
        assert_eq!(dw(query_hca_cap_out::capability.inner(cmd_hca_cap::log_max_qp)), (0x20, 4, 5));
        // qpc "0x0000 DW0 bits[31:28] state", "bits[23:16] st", "0x0008 DW2 bits[31:29] mtu",
        // "0x00a0 DW40 (64 bits) dbr_addr"; create_qp_in.qpc @0x18
        assert_eq!(dw(qpc::state), (0, 31, 4));
        assert_eq!(dw(qpc::st), (0, 23, 8));
        assert_eq!(dw(qpc::mtu), (8, 31, 3));
        assert_eq!(dw(qpc::dbr_addr), (0xa0, 31, 64));
        assert_eq!(qpc::SIZE, 232);
        assert_eq!(create_qp_in::qpc.byte_range(), Some(0x18..0x18 + 232));
        assert_eq!(dw(create_qp_in::qpc::state), (0x18, 31, 4));
        assert_eq!(dw(create_qp_in::opt_param_mask), (0x10, 31, 32));
        // ads "0x0004 DW1 bits[15:0] rlid" inside qpc.primary_address_path (qpc +0x18)
        assert_eq!(dw(qpc::primary_address_path::rlid), (0x1c, 15, 16));
        assert_eq!(dw(init2rtr_qp_in::qpc::primary_address_path::rlid), (0x18 + 0x1c, 15, 16));
        assert_eq!(ads::rgid_rip.byte_range(), Some(0x10..0x20));
        // mkc "0x0010 DW4 (64 bits) start_addr", "0x000c DW3 bits[23:0] pd"
        assert_eq!(dw(mkc::start_addr), (0x10, 31, 64));
        assert_eq!(dw(mkc::pd), (0xc, 23, 24));
        assert_eq!(dw(create_mkey_in::translations_octword_actual_size), (0x60, 31, 32));
        // cqc "0x0014 DW5 (32 bits) c_eqn_or_apu_element", "0x0038 DW14 (64 bits) dbr_addr"
        assert_eq!(dw(cqc::c_eqn_or_apu_element), (0x14, 31, 32));
        assert_eq!(dw(cqc::dbr_addr), (0x38, 31, 64));
        // srqc "0x0008 DW2 bits[31:26] page_offset"
        assert_eq!(dw(srqc::page_offset), (8, 31, 6));
        // query_issi_out "0x006c DW27 (32 bits) supported_issi_dw0"
        assert_eq!(dw(query_issi_out::supported_issi_dw0), (0x6c, 31, 32));
        // query_adapter_param_block "0x0018 DW6 bits[23:0] ieee_vendor_id", vsd[208] @0x20
        assert_eq!(dw(query_adapter_param_block::ieee_vendor_id), (0x18, 23, 24));
        assert_eq!(query_adapter_param_block::vsd.byte_range(), Some(0x20..0x20 + 208));
        assert_eq!(query_adapter_out::query_adapter_struct.byte_range(), Some(0x10..0x110));
        // hca_vport_context "0x0060 DW24 bits[31:16] lid", "0x0038 DW14 (64 bits) node_guid"
        assert_eq!(dw(hca_vport_context::lid), (0x60, 31, 16));
        assert_eq!(dw(hca_vport_context::node_guid), (0x38, 31, 64));
        // mad_ifc_in "0x0008 DW2 bits[7:0] port", mad[256] @0x10
        assert_eq!(dw(mad_ifc_in::port), (8, 7, 8));
        assert_eq!(mad_ifc_in::mad.byte_range(), Some(0x10..0x110));
        // atomic_caps "0x0008 DW2 bit 25 supported_atomic_req_8B_endianness_mode_1"
        assert_eq!(dw(atomic_caps::supported_atomic_req_8B_endianness_mode_1), (8, 25, 1));
        // headers (cmd.c): status DW0[31:24], syndrome DW1, opcode DW0[31:16], op_mod DW1[15:0]
        assert_eq!(dw(mbox_out::status), (0, 31, 8));
        assert_eq!(dw(mbox_out::syndrome), (4, 31, 32));
        assert_eq!(dw(mbox_in::opcode), (0, 31, 16));
        assert_eq!(dw(mbox_in::op_mod), (4, 15, 16));
        // eqe: event_type DW0[23:16], owner is the last bit
        assert_eq!(dw(eqe::event_type), (0, 23, 8));
        assert_eq!(eqe::SIZE, 64);
        assert_eq!(dw(eqe::owner), (0x3c, 0, 1));
    }

    #[test]
    fn generated_constants() {
        assert_eq!(MLX5_CMD_OP_QUERY_HCA_CAP, 0x100);
        assert_eq!(MLX5_CMD_OP_MAD_IFC, 0x50d);
        assert_eq!(MLX5_CMD_OP_QUERY_HCA_VPORT_CONTEXT, 0x762);
        assert_eq!(MLX5_CMD_OP_SQD_RTS_QP, 0x50c);
        assert_eq!(MLX5_CMD_OP_INIT2INIT_QP, 0x50e);
        assert_eq!(MLX5_CMD_STAT_BAD_PARAM_ERR, 0x3);
        assert_eq!(MLX5_CMD_STAT_BAD_QP_STATE_ERR, 0x10);
        assert_eq!(MLX5_CMD_DELIVERY_STAT_OUT_LENGTH_ERR, 0x8);
        assert_eq!(MLX5_CAP_ATOMIC, 3);
        assert_eq!(MLX5_CAP_GENERAL_2, 0x20);
        assert_eq!(MLX5_EVENT_TYPE_CMD, 0x0a);
        assert_eq!(MLX5_REG_HOST_ENDIANNESS, 0x7004);
        assert_eq!(CMD_IF_REV, 5);
    }

    #[test]
    fn access_through_generated_fields() {
        let mut out = vec![0u8; query_hca_cap_out::SIZE];
        let cap = query_hca_cap_out::capability;
        cap.inner(cmd_hca_cap::log_max_qp).set(&mut out, 16);
        cap.inner(cmd_hca_cap::port_type).set(&mut out, 0);
        cap.inner(cmd_hca_cap::num_ports).set(&mut out, 1);
        assert_eq!(&out[0x20..0x24], &[0, 0, 0, 0x10]);
        assert_eq!(&out[0x44..0x48], &[0, 0, 0, 1]);
        let body = cap.bytes(&out).unwrap();
        assert_eq!(cmd_hca_cap::log_max_qp.get(body), 16);
        // opcode/op_mod of a hand-built command header
        let inb = [0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07];
        assert_eq!(query_hca_cap_in::opcode.get(&inb), MLX5_CMD_OP_QUERY_HCA_CAP as u64);
        assert_eq!(query_hca_cap_in::op_mod.get(&inb), 7);
    }
}
