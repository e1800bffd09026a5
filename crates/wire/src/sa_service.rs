//! ServiceRecord (IBTA 15.2.5.14), 176 bytes: a registered service (ID,
//! GID, P_Key, lease, key, name, data). ComponentMask bits as ib_sa.h
//! `IB_SA_SERVICE_REC_*` (the 36 ServiceData bits are not matched by vrnic's
//! SA and have no names here).

use super::codec::{rd16, rd32, rd64, wr16, wr32, wr64, Result};
use super::sa::comp;

pub mod mask {
    use super::comp;
    pub const SERVICE_ID: u64 = comp(0);
    pub const SERVICE_GID: u64 = comp(1);
    pub const SERVICE_PKEY: u64 = comp(2);
    pub const SERVICE_LEASE: u64 = comp(4);
    pub const SERVICE_KEY: u64 = comp(5);
    pub const SERVICE_NAME: u64 = comp(6);
}

/// ServiceLease: never expires.
pub const LEASE_INFINITE: u32 = 0xffff_ffff;

pub mod field {
    use core::ops::Range;
    pub const SERVICE_ID: Range<usize> = 0..8;
    pub const SERVICE_GID: Range<usize> = 8..24;
    pub const SERVICE_PKEY: Range<usize> = 24..26;
    pub const SERVICE_LEASE: Range<usize> = 28..32;
    pub const SERVICE_KEY: Range<usize> = 32..48;
    pub const SERVICE_NAME: Range<usize> = 48..112;
    /// ServiceData8[16], ServiceData16[8], ServiceData32[4], ServiceData64[2].
    pub const SERVICE_DATA: Range<usize> = 112..176;
    pub const HEADER_LEN: usize = 176;
}

fixed_view!("ServiceRecord");

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    pub service_id: u64,
    pub service_gid: [u8; 16],
    pub service_pkey: u16,
    pub service_lease: u32,
    pub service_key: [u8; 16],
    pub service_name: [u8; 64],
    pub service_data: [u8; 64],
}

impl Default for Repr {
    fn default() -> Repr {
        Repr {
            service_id: 0,
            service_gid: [0; 16],
            service_pkey: 0,
            service_lease: 0,
            service_key: [0; 16],
            service_name: [0; 64],
            service_data: [0; 64],
        }
    }
}

impl Repr {
    pub const LEN: usize = field::HEADER_LEN;

    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr> {
        p.check_len()?;
        let b = p.buffer.as_ref();
        let mut r = Repr {
            service_id: rd64(b, field::SERVICE_ID.start),
            service_pkey: rd16(b, field::SERVICE_PKEY.start),
            service_lease: rd32(b, field::SERVICE_LEASE.start),
            ..Repr::default()
        };
        r.service_gid.copy_from_slice(&b[field::SERVICE_GID]);
        r.service_key.copy_from_slice(&b[field::SERVICE_KEY]);
        r.service_name.copy_from_slice(&b[field::SERVICE_NAME]);
        r.service_data.copy_from_slice(&b[field::SERVICE_DATA]);
        Ok(r)
    }

    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
        let b = &mut p.buffer.as_mut()[..field::HEADER_LEN];
        b.fill(0);
        wr64(b, field::SERVICE_ID.start, self.service_id);
        b[field::SERVICE_GID].copy_from_slice(&self.service_gid);
        wr16(b, field::SERVICE_PKEY.start, self.service_pkey);
        wr32(b, field::SERVICE_LEASE.start, self.service_lease);
        b[field::SERVICE_KEY].copy_from_slice(&self.service_key);
        b[field::SERVICE_NAME].copy_from_slice(&self.service_name);
        b[field::SERVICE_DATA].copy_from_slice(&self.service_data);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_record_layout() {
        let mut r = Repr {
            service_id: 0x1000_0000_0000_0001,
            service_pkey: 0xffff,
            service_lease: LEASE_INFINITE,
            ..Repr::default()
        };
        r.service_gid[0] = 0xfe;
        r.service_name[..4].copy_from_slice(b"srp0");
        r.service_data[63] = 9;
        let mut b = [0u8; 176];
        r.emit(&mut Packet::new_unchecked(&mut b[..]));
        assert_eq!(b[8], 0xfe);
        assert_eq!(&b[24..32], &[0xff, 0xff, 0, 0, 0xff, 0xff, 0xff, 0xff]);
        assert_eq!(&b[48..52], b"srp0");
        assert_eq!(b[175], 9);
        assert_eq!(Repr::parse(&Packet::new_checked(&b[..]).unwrap()).unwrap(), r);
    }
}
