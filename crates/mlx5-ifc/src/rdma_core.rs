//! Fields that rdma-core's `providers/mlx5/mlx5_ifc.h` names and Linux's `mlx5_ifc.h` leaves
//! reserved: the umem references of DevX CQs and QPs, which only a process builds (the kernel
//! never sends them, so the kernel header the generator reads does not have them). Offsets from
//! rdma-core v56's header; the tests check that each lies in the kernel layout's reserved space.

use crate::fields::Field;

/// `struct mlx5_ifc_cqc_bits`.
pub mod cqc {
    use super::Field;
    /// `u8 dbr_umem_id[0x20]` @ DW1: the umem of the doorbell record (`dbr_addr` is then an
    /// offset in it).
    pub const dbr_umem_id: Field = Field::new(0x20, 0x20);
}

/// `struct mlx5_ifc_create_cq_in_bits`.
pub mod create_cq_in {
    use super::Field;
    /// `u8 cq_umem_offset[0x40]` @ byte 0x50.
    pub const cq_umem_offset: Field = Field::new(0x280, 0x40);
    /// `u8 cq_umem_id[0x20]` @ byte 0x58.
    pub const cq_umem_id: Field = Field::new(0x2c0, 0x20);
    /// `cq_context.dbr_umem_id`.
    pub const dbr_umem_id: Field = Field::new(0x80 + 0x20, 0x20);
}

/// `struct mlx5_ifc_qpc_bits`.
pub mod qpc {
    use super::Field;
    /// `u8 dbr_umem_id[0x20]` @ the qpc's last DW.
    pub const dbr_umem_id: Field = Field::new(0x720, 0x20);
}

/// `struct mlx5_ifc_create_qp_in_bits`.
pub mod create_qp_in {
    use super::Field;
    /// `qpc.dbr_umem_id`.
    pub const dbr_umem_id: Field = Field::new(0xc0 + 0x720, 0x20);
}

#[cfg(test)]
mod tests {
    use crate::fields::Field;

    /// Whether `f` overlaps none of `named` (the kernel layout's fields).
    fn in_reserved_space(f: Field, named: &[(&str, Field)]) -> Result<(), String> {
        let (a0, a1) = (f.bit_off, f.bit_off + f.bits);
        for (name, g) in named {
            let (b0, b1) = (g.bit_off, g.bit_off + g.bits);
            // A sub-structure contains fields; only leaf fields of at most 64 bits are compared.
            if g.bits <= 64 && a0 < b1 && b0 < a1 {
                return Err(format!("overlaps the kernel's {name}"));
            }
        }
        Ok(())
    }

    /// A field, and the kernel layout (its named fields, its size in bytes) it is placed in.
    type Case = (Field, &'static [(&'static str, Field)], usize);

    #[test]
    fn the_rdma_core_fields_lie_in_the_kernel_layouts_reserved_bits() {
        use crate as ifc;
        let cases: &[Case] = &[
            (super::cqc::dbr_umem_id, ifc::cqc::FIELDS, ifc::cqc::SIZE),
            (super::create_cq_in::cq_umem_offset, ifc::create_cq_in::FIELDS, ifc::create_cq_in::SIZE),
            (super::create_cq_in::cq_umem_id, ifc::create_cq_in::FIELDS, ifc::create_cq_in::SIZE),
            (super::qpc::dbr_umem_id, ifc::qpc::FIELDS, ifc::qpc::SIZE),
            (super::create_qp_in::dbr_umem_id, ifc::create_qp_in::FIELDS, ifc::create_qp_in::SIZE),
        ];
        for (f, named, size) in cases {
            in_reserved_space(*f, named).unwrap();
            assert!((f.bit_off + f.bits) as usize <= size * 8);
        }
        // The context copies sit where the context does in each command.
        assert_eq!(
            super::create_cq_in::dbr_umem_id.bit_off,
            ifc::create_cq_in::cq_context.bit_off + super::cqc::dbr_umem_id.bit_off
        );
        assert_eq!(
            super::create_qp_in::dbr_umem_id.bit_off,
            ifc::create_qp_in::qpc.bit_off + super::qpc::dbr_umem_id.bit_off
        );
        // Next to the fields the kernel does name: cq_umem_valid, and the qpc's dbr_umem_valid.
        assert_eq!(super::create_cq_in::cq_umem_id.bit_off + 0x20, ifc::create_cq_in::cq_umem_valid.bit_off);
        assert_eq!(ifc::qpc::dbr_umem_valid.bit_off, 0x683);
    }
}
