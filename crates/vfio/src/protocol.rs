//! vfio-user wire format: the message header, command numbers and the
//! fixed-size argument blocks of each command.
//!
//! Names follow QEMU's `hw/vfio-user/protocol.h` and the Linux `vfio.h` UAPI so
//! a reader can grep both sides. Everything on the socket is little-endian
//! (the protocol uses host order and only x86-64/aarch64 LE hosts exist).

use thiserror::Error;

/// Size of [`Header`] on the wire.
pub const HEADER_SIZE: usize = 16;

/// Protocol version this server speaks.
pub const VERSION_MAJOR: u16 = 0;
pub const VERSION_MINOR: u16 = 1;

/// Header `flags` bits.
pub const FLAGS_TYPE_MASK: u32 = 0xf;
pub const FLAGS_TYPE_COMMAND: u32 = 0x0;
pub const FLAGS_TYPE_REPLY: u32 = 0x1;
pub const FLAGS_NO_REPLY: u32 = 0x10;
pub const FLAGS_ERROR: u32 = 0x20;

/// vfio-user command numbers (`enum vfio_user_command`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u16)]
pub enum Command {
    Version = 1,
    DmaMap = 2,
    DmaUnmap = 3,
    DeviceGetInfo = 4,
    DeviceGetRegionInfo = 5,
    DeviceGetRegionIoFds = 6,
    DeviceGetIrqInfo = 7,
    DeviceSetIrqs = 8,
    RegionRead = 9,
    RegionWrite = 10,
    DmaRead = 11,
    DmaWrite = 12,
    DeviceReset = 13,
    DirtyPages = 14,
    RegionWriteMulti = 15,
    DeviceFeature = 16,
    MigDataRead = 17,
    MigDataWrite = 18,
}

impl Command {
    pub fn from_u16(v: u16) -> Option<Command> {
        use Command::*;
        Some(match v {
            1 => Version,
            2 => DmaMap,
            3 => DmaUnmap,
            4 => DeviceGetInfo,
            5 => DeviceGetRegionInfo,
            6 => DeviceGetRegionIoFds,
            7 => DeviceGetIrqInfo,
            8 => DeviceSetIrqs,
            9 => RegionRead,
            10 => RegionWrite,
            11 => DmaRead,
            12 => DmaWrite,
            13 => DeviceReset,
            14 => DirtyPages,
            15 => RegionWriteMulti,
            16 => DeviceFeature,
            17 => MigDataRead,
            18 => MigDataWrite,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        use Command::*;
        match self {
            Version => "VERSION",
            DmaMap => "DMA_MAP",
            DmaUnmap => "DMA_UNMAP",
            DeviceGetInfo => "DEVICE_GET_INFO",
            DeviceGetRegionInfo => "DEVICE_GET_REGION_INFO",
            DeviceGetRegionIoFds => "DEVICE_GET_REGION_IO_FDS",
            DeviceGetIrqInfo => "DEVICE_GET_IRQ_INFO",
            DeviceSetIrqs => "DEVICE_SET_IRQS",
            RegionRead => "REGION_READ",
            RegionWrite => "REGION_WRITE",
            DmaRead => "DMA_READ",
            DmaWrite => "DMA_WRITE",
            DeviceReset => "DEVICE_RESET",
            DirtyPages => "DIRTY_PAGES",
            RegionWriteMulti => "REGION_WRITE_MULTI",
            DeviceFeature => "DEVICE_FEATURE",
            MigDataRead => "MIG_DATA_READ",
            MigDataWrite => "MIG_DATA_WRITE",
        }
    }
}

/// Linux `vfio.h` constants, under the name the argument blocks use.
pub use super::uapi as vfio;

/// A malformed message or argument block.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum ParseError {
    #[error("message too short: {have} bytes, need {need}")]
    Short { have: usize, need: usize },
    #[error("argsz {argsz} smaller than {need}")]
    ArgSz { argsz: u32, need: u32 },
    #[error("message size {0} smaller than the header")]
    BadSize(u32),
    #[error("malformed capabilities json")]
    BadJson,
}

impl ParseError {
    pub fn errno(&self) -> i32 {
        libc::EINVAL
    }
}

/// Little-endian field readers over a byte slice; callers check lengths first.
pub(crate) fn le16(b: &[u8], off: usize) -> u16 {
    u16::from_le_bytes([b[off], b[off + 1]])
}
pub(crate) fn le32(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(b[off..off + 4].try_into().expect("4 bytes"))
}
pub(crate) fn le64(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().expect("8 bytes"))
}

fn need(b: &[u8], n: usize) -> Result<(), ParseError> {
    if b.len() < n {
        Err(ParseError::Short { have: b.len(), need: n })
    } else {
        Ok(())
    }
}

/// `VFIOUserHdr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Header {
    pub id: u16,
    pub command: u16,
    pub size: u32,
    pub flags: u32,
    pub error_reply: u32,
}

impl Header {
    pub fn parse(b: &[u8; HEADER_SIZE]) -> Header {
        Header { id: le16(b, 0), command: le16(b, 2), size: le32(b, 4), flags: le32(b, 8), error_reply: le32(b, 12) }
    }

    pub fn emit(&self) -> [u8; HEADER_SIZE] {
        let mut b = [0u8; HEADER_SIZE];
        b[0..2].copy_from_slice(&self.id.to_le_bytes());
        b[2..4].copy_from_slice(&self.command.to_le_bytes());
        b[4..8].copy_from_slice(&self.size.to_le_bytes());
        b[8..12].copy_from_slice(&self.flags.to_le_bytes());
        b[12..16].copy_from_slice(&self.error_reply.to_le_bytes());
        b
    }

    pub fn msg_type(&self) -> u32 {
        self.flags & FLAGS_TYPE_MASK
    }

    pub fn no_reply(&self) -> bool {
        self.flags & FLAGS_NO_REPLY != 0
    }

    /// Payload length announced by the header.
    pub fn payload_len(&self) -> Result<usize, ParseError> {
        (self.size as usize).checked_sub(HEADER_SIZE).ok_or(ParseError::BadSize(self.size))
    }

    /// The reply header for a request, carrying `payload` bytes.
    pub fn reply(&self, payload: usize) -> Header {
        Header {
            id: self.id,
            command: self.command,
            size: (HEADER_SIZE + payload) as u32,
            flags: FLAGS_TYPE_REPLY,
            error_reply: 0,
        }
    }

    /// The error reply header for a request.
    pub fn error(&self, errno: i32) -> Header {
        Header {
            id: self.id,
            command: self.command,
            size: HEADER_SIZE as u32,
            flags: FLAGS_TYPE_REPLY | FLAGS_ERROR,
            error_reply: errno as u32,
        }
    }
}

/// `VFIOUserVersion` (after the header): major, minor, NUL-terminated JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    pub major: u16,
    pub minor: u16,
    pub capabilities: Option<serde_json::Value>,
}

impl Version {
    pub fn parse(b: &[u8]) -> Result<Version, ParseError> {
        need(b, 4)?;
        let json = &b[4..];
        let json = match json.iter().position(|&c| c == 0) {
            Some(n) => &json[..n],
            None => json,
        };
        let capabilities = if json.iter().all(|c| c.is_ascii_whitespace()) {
            None
        } else {
            Some(serde_json::from_slice(json).map_err(|_| ParseError::BadJson)?)
        };
        Ok(Version { major: le16(b, 0), minor: le16(b, 2), capabilities })
    }

    pub fn emit(&self) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&self.major.to_le_bytes());
        v.extend_from_slice(&self.minor.to_le_bytes());
        if let Some(c) = &self.capabilities {
            v.extend_from_slice(c.to_string().as_bytes());
        }
        v.push(0);
        v
    }
}

/// `VFIOUserDMAMap` arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DmaMap {
    pub argsz: u32,
    pub flags: u32,
    pub offset: u64,
    pub iova: u64,
    pub size: u64,
}

impl DmaMap {
    pub const SIZE: usize = 32;
    pub fn parse(b: &[u8]) -> Result<DmaMap, ParseError> {
        need(b, Self::SIZE)?;
        let m =
            DmaMap { argsz: le32(b, 0), flags: le32(b, 4), offset: le64(b, 8), iova: le64(b, 16), size: le64(b, 24) };
        if (m.argsz as usize) < Self::SIZE {
            return Err(ParseError::ArgSz { argsz: m.argsz, need: Self::SIZE as u32 });
        }
        Ok(m)
    }
}

/// `VFIOUserDMAUnmap` arguments (also the reply payload).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DmaUnmap {
    pub argsz: u32,
    pub flags: u32,
    pub iova: u64,
    pub size: u64,
}

impl DmaUnmap {
    pub const SIZE: usize = 24;
    pub fn parse(b: &[u8]) -> Result<DmaUnmap, ParseError> {
        need(b, Self::SIZE)?;
        let m = DmaUnmap { argsz: le32(b, 0), flags: le32(b, 4), iova: le64(b, 8), size: le64(b, 16) };
        if (m.argsz as usize) < Self::SIZE {
            return Err(ParseError::ArgSz { argsz: m.argsz, need: Self::SIZE as u32 });
        }
        Ok(m)
    }
    pub fn emit(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        b[0..4].copy_from_slice(&self.argsz.to_le_bytes());
        b[4..8].copy_from_slice(&self.flags.to_le_bytes());
        b[8..16].copy_from_slice(&self.iova.to_le_bytes());
        b[16..24].copy_from_slice(&self.size.to_le_bytes());
        b
    }
}

/// `struct vfio_device_info` (v0 part).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceInfo {
    pub argsz: u32,
    pub flags: u32,
    pub num_regions: u32,
    pub num_irqs: u32,
}

impl DeviceInfo {
    pub const SIZE: usize = 16;
    pub fn parse(b: &[u8]) -> Result<DeviceInfo, ParseError> {
        need(b, Self::SIZE)?;
        let m = DeviceInfo { argsz: le32(b, 0), flags: le32(b, 4), num_regions: le32(b, 8), num_irqs: le32(b, 12) };
        if (m.argsz as usize) < Self::SIZE {
            return Err(ParseError::ArgSz { argsz: m.argsz, need: Self::SIZE as u32 });
        }
        Ok(m)
    }
    pub fn emit(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        for (i, v) in [self.argsz, self.flags, self.num_regions, self.num_irqs].iter().enumerate() {
            b[i * 4..i * 4 + 4].copy_from_slice(&v.to_le_bytes());
        }
        b
    }
}

/// `struct vfio_region_info`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RegionInfo {
    pub argsz: u32,
    pub flags: u32,
    pub index: u32,
    pub cap_offset: u32,
    pub size: u64,
    pub offset: u64,
}

impl RegionInfo {
    pub const SIZE: usize = 32;
    pub fn parse(b: &[u8]) -> Result<RegionInfo, ParseError> {
        need(b, Self::SIZE)?;
        let m = RegionInfo {
            argsz: le32(b, 0),
            flags: le32(b, 4),
            index: le32(b, 8),
            cap_offset: le32(b, 12),
            size: le64(b, 16),
            offset: le64(b, 24),
        };
        if (m.argsz as usize) < Self::SIZE {
            return Err(ParseError::ArgSz { argsz: m.argsz, need: Self::SIZE as u32 });
        }
        Ok(m)
    }
    pub fn emit(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        b[0..4].copy_from_slice(&self.argsz.to_le_bytes());
        b[4..8].copy_from_slice(&self.flags.to_le_bytes());
        b[8..12].copy_from_slice(&self.index.to_le_bytes());
        b[12..16].copy_from_slice(&self.cap_offset.to_le_bytes());
        b[16..24].copy_from_slice(&self.size.to_le_bytes());
        b[24..32].copy_from_slice(&self.offset.to_le_bytes());
        b
    }
}

/// A sparse-mmap area (`struct vfio_region_sparse_mmap_area`), region-relative.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SparseArea {
    pub offset: u64,
    pub size: u64,
}

/// Encodes a `VFIO_REGION_INFO_CAP_SPARSE_MMAP` capability (header, nr_areas,
/// reserved, areas) with `next` = 0.
pub fn emit_sparse_mmap_cap(areas: &[SparseArea]) -> Vec<u8> {
    let mut v = Vec::with_capacity(16 + areas.len() * 16);
    v.extend_from_slice(&vfio::VFIO_REGION_INFO_CAP_SPARSE_MMAP.to_le_bytes()); // id
    v.extend_from_slice(&1u16.to_le_bytes()); // version
    v.extend_from_slice(&0u32.to_le_bytes()); // next
    v.extend_from_slice(&(areas.len() as u32).to_le_bytes());
    v.extend_from_slice(&0u32.to_le_bytes());
    for a in areas {
        v.extend_from_slice(&a.offset.to_le_bytes());
        v.extend_from_slice(&a.size.to_le_bytes());
    }
    v
}

/// `struct vfio_irq_info`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IrqInfo {
    pub argsz: u32,
    pub flags: u32,
    pub index: u32,
    pub count: u32,
}

impl IrqInfo {
    pub const SIZE: usize = 16;
    pub fn parse(b: &[u8]) -> Result<IrqInfo, ParseError> {
        need(b, Self::SIZE)?;
        let m = IrqInfo { argsz: le32(b, 0), flags: le32(b, 4), index: le32(b, 8), count: le32(b, 12) };
        if (m.argsz as usize) < Self::SIZE {
            return Err(ParseError::ArgSz { argsz: m.argsz, need: Self::SIZE as u32 });
        }
        Ok(m)
    }
    pub fn emit(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        for (i, v) in [self.argsz, self.flags, self.index, self.count].iter().enumerate() {
            b[i * 4..i * 4 + 4].copy_from_slice(&v.to_le_bytes());
        }
        b
    }
}

/// `struct vfio_irq_set` (the data part, bools, follows for DATA_BOOL).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IrqSet {
    pub argsz: u32,
    pub flags: u32,
    pub index: u32,
    pub start: u32,
    pub count: u32,
}

impl IrqSet {
    pub const SIZE: usize = 20;
    pub fn parse(b: &[u8]) -> Result<IrqSet, ParseError> {
        need(b, Self::SIZE)?;
        let m =
            IrqSet { argsz: le32(b, 0), flags: le32(b, 4), index: le32(b, 8), start: le32(b, 12), count: le32(b, 16) };
        if (m.argsz as usize) < Self::SIZE {
            return Err(ParseError::ArgSz { argsz: m.argsz, need: Self::SIZE as u32 });
        }
        Ok(m)
    }
}

/// `VFIOUserRegionRW` arguments (data follows for writes and read replies).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegionAccess {
    pub offset: u64,
    pub region: u32,
    pub count: u32,
}

impl RegionAccess {
    pub const SIZE: usize = 16;
    pub fn parse(b: &[u8]) -> Result<RegionAccess, ParseError> {
        need(b, Self::SIZE)?;
        Ok(RegionAccess { offset: le64(b, 0), region: le32(b, 8), count: le32(b, 12) })
    }
    pub fn emit(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        b[0..8].copy_from_slice(&self.offset.to_le_bytes());
        b[8..12].copy_from_slice(&self.region.to_le_bytes());
        b[12..16].copy_from_slice(&self.count.to_le_bytes());
        b
    }
}

/// One entry of `VFIOUserWRMulti` (`VFIOUserWROne`): at most 8 data bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteOne {
    pub offset: u64,
    pub region: u32,
    pub count: u32,
    pub data: [u8; 8],
}

/// Bytes of one `VFIOUserWROne`.
pub const WRITE_ONE_SIZE: usize = 24;
/// `VFIO_USER_MULTI_MAX`.
pub const WRITE_MULTI_MAX: u64 = 200;

/// Parses `VFIOUserWRMulti` (after the header): `wr_cnt` then the entries.
pub fn parse_write_multi(b: &[u8]) -> Result<Vec<WriteOne>, ParseError> {
    need(b, 8)?;
    let cnt = le64(b, 0);
    if cnt > WRITE_MULTI_MAX {
        return Err(ParseError::Short { have: b.len(), need: 8 + WRITE_MULTI_MAX as usize * WRITE_ONE_SIZE + 1 });
    }
    let n = cnt as usize;
    need(b, 8 + n * WRITE_ONE_SIZE)?;
    let mut v = Vec::with_capacity(n);
    for i in 0..n {
        let e = &b[8 + i * WRITE_ONE_SIZE..8 + (i + 1) * WRITE_ONE_SIZE];
        let mut data = [0u8; 8];
        data.copy_from_slice(&e[16..24]);
        v.push(WriteOne { offset: le64(e, 0), region: le32(e, 8), count: le32(e, 12), data });
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_roundtrip() {
        let h = Header { id: 7, command: 9, size: 32, flags: FLAGS_NO_REPLY, error_reply: 0 };
        let b = h.emit();
        assert_eq!(Header::parse(&b), h);
        assert!(h.no_reply());
        assert_eq!(h.payload_len(), Ok(16));
        let bad = Header { size: 3, ..h };
        assert_eq!(bad.payload_len(), Err(ParseError::BadSize(3)));
    }

    #[test]
    fn version_parses_qemu_blob() {
        let mut b = vec![0, 0, 1, 0];
        b.extend_from_slice(br#"{"capabilities":{"max_msg_fds":16,"max_data_xfer_size":1048576,"pgsizes":4096,"max_dma_maps":65535,"write_multiple":true}}"#);
        b.push(0);
        let v = Version::parse(&b).unwrap();
        assert_eq!((v.major, v.minor), (0, 1));
        assert_eq!(v.capabilities.unwrap()["capabilities"]["max_msg_fds"], 16);
        assert_eq!(Version::parse(&[0, 0, 1, 0, b'{', 0]), Err(ParseError::BadJson));
        assert!(Version::parse(&[0, 0]).is_err());
    }

    #[test]
    fn argsz_checked() {
        let mut b = [0u8; 32];
        b[0..4].copy_from_slice(&8u32.to_le_bytes());
        assert!(matches!(DmaMap::parse(&b), Err(ParseError::ArgSz { .. })));
        assert!(matches!(RegionInfo::parse(&b), Err(ParseError::ArgSz { .. })));
        assert!(matches!(RegionInfo::parse(&b[..10]), Err(ParseError::Short { .. })));
    }

    #[test]
    fn write_multi_bounds() {
        let mut b = vec![0u8; 8 + 2 * WRITE_ONE_SIZE];
        b[0..8].copy_from_slice(&2u64.to_le_bytes());
        b[8..16].copy_from_slice(&0x18u64.to_le_bytes());
        b[20..24].copy_from_slice(&4u32.to_le_bytes());
        b[24] = 0xaa;
        let v = parse_write_multi(&b).unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].offset, 0x18);
        assert_eq!(v[0].count, 4);
        assert_eq!(v[0].data[0], 0xaa);
        b[0..8].copy_from_slice(&3u64.to_le_bytes());
        assert!(parse_write_multi(&b).is_err());
        b[0..8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(parse_write_multi(&b).is_err());
    }

    #[test]
    fn sparse_cap_layout() {
        let c = emit_sparse_mmap_cap(&[SparseArea { offset: 0x4000, size: 0x1000 }]);
        assert_eq!(c.len(), 32);
        assert_eq!(le16(&c, 0), 1);
        assert_eq!(le32(&c, 8), 1);
        assert_eq!(le64(&c, 16), 0x4000);
        assert_eq!(le64(&c, 24), 0x1000);
    }
}
