//! The command interface transport (drivers/net/ethernet/mellanox/mlx5/core/cmd.c):
//! 32 command slots (`struct mlx5_cmd_layout`, 64 bytes) in guest memory,
//! input and output mailbox chains (`struct mlx5_cmd_prot_block`, 576 bytes),
//! delivery status and the ownership bit.
//!
//! This module moves bytes and validates the transport; what a command means
//! is [`CommandHandler`]'s business. Every guest-provided value (lengths,
//! pointers, block numbers, chain length) is checked; a malformed entry gets
//! a delivery status, never a panic, and no byte outside the guest's mappings
//! is touched.

use std::sync::atomic::{fence, Ordering};

use vrnic_engine::GuestMemory;

/// `MLX5_PCI_CMD_XPORT`.
pub const CMD_TYPE_PCI: u8 = 7;
/// Bytes of one queue entry.
pub const ENTRY_SIZE: u64 = 64;
/// Number of slots (`1 << log_cmdq_size`).
pub const NUM_SLOTS: u32 = 32;
/// Bytes of one mailbox block and of its data area.
pub const BLOCK_SIZE: usize = 576;
pub const BLOCK_DATA: usize = 512;
/// Largest input or output accepted (bounds the chain walk: 16384 blocks).
pub const MAX_MSG: usize = 8 << 20;

// Offsets inside `struct mlx5_cmd_layout`.
const E_TYPE: usize = 0x00;
const E_INLEN: usize = 0x04;
const E_IN_PTR: usize = 0x08;
const E_IN: usize = 0x10;
const E_OUT: usize = 0x20;
const E_OUT_PTR: usize = 0x30;
const E_OUTLEN: usize = 0x38;
const E_TOKEN: usize = 0x3c;
const E_STATUS_OWN: u64 = 0x3f;

// Offsets inside `struct mlx5_cmd_prot_block`.
const B_NEXT: usize = 0x230;
const B_BLOCK_NUM: usize = 0x238;
const B_TOKEN: usize = 0x23d;

/// Delivery status (`status_own[7:1]`): the command was not executed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Delivery {
    Ok = 0x0,
    BadBlockNumber = 0x3,
    OutPtrAlign = 0x4,
    InPtrAlign = 0x5,
    FwErr = 0x6,
    InLength = 0x7,
    OutLength = 0x8,
    CmdDescriptor = 0x10,
}

/// Command status (`mbox_out.status`).
pub mod status {
    pub const OK: u8 = 0x00;
    pub const INT_ERR: u8 = 0x01;
    pub const BAD_OP: u8 = 0x02;
    pub const BAD_PARAM: u8 = 0x03;
    pub const BAD_SYS_STATE: u8 = 0x04;
    pub const BAD_RES: u8 = 0x05;
    pub const RES_BUSY: u8 = 0x06;
    pub const LIM: u8 = 0x08;
    pub const NO_RES: u8 = 0x0f;
    pub const BAD_RES_STATE: u8 = 0x09;
    pub const BAD_QP_STATE: u8 = 0x10;
    pub const BAD_INP_LEN: u8 = 0x50;
    pub const BAD_OUTP_LEN: u8 = 0x51;
}

/// What a handler returns: command status, syndrome and the output bytes
/// (header included; the transport writes status and syndrome into them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CmdOutput {
    pub status: u8,
    pub syndrome: u32,
    pub out: Vec<u8>,
}

impl CmdOutput {
    /// A successful output of `len` bytes (at least the 16-byte header).
    pub fn ok(len: usize) -> CmdOutput {
        CmdOutput { status: status::OK, syndrome: 0, out: vec![0; len.max(16)] }
    }

    /// A failed command: header only.
    pub fn err(status: u8, syndrome: u32) -> CmdOutput {
        CmdOutput { status, syndrome, out: vec![0; 16] }
    }
}

/// Executes decoded commands.
pub trait CommandHandler {
    /// `input` is exactly `inlen` bytes; `outlen` is the driver's output buffer size.
    fn execute(&mut self, input: &[u8], outlen: usize) -> CmdOutput;
}

/// The result of one slot, for tracing and the command EQE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotResult {
    pub slot: u32,
    pub delivery: Delivery,
    pub opcode: u16,
    pub op_mod: u16,
    pub status: u8,
    pub syndrome: u32,
}

/// Reads a mailbox chain starting at `ptr` for `len` payload bytes, checking
/// block numbers; returns the bytes or the delivery status.
fn gather(
    mem: &dyn GuestMemory,
    mut ptr: u64,
    len: usize,
    bad_ptr: Delivery,
    short: Delivery,
) -> Result<Vec<u8>, Delivery> {
    let blocks = len.div_ceil(BLOCK_DATA);
    let mut data = Vec::with_capacity(len);
    let mut blk = [0u8; BLOCK_SIZE];
    for n in 0..blocks {
        if ptr == 0 {
            return Err(short);
        }
        if ptr % 8 != 0 {
            return Err(bad_ptr);
        }
        mem.read(ptr, &mut blk).map_err(|_| bad_ptr)?;
        let num = u32::from_be_bytes(blk[B_BLOCK_NUM..B_BLOCK_NUM + 4].try_into().expect("4 bytes"));
        if num as usize != n {
            return Err(Delivery::BadBlockNumber);
        }
        let take = (len - data.len()).min(BLOCK_DATA);
        data.extend_from_slice(&blk[..take]);
        ptr = u64::from_be_bytes(blk[B_NEXT..B_NEXT + 8].try_into().expect("8 bytes"));
    }
    Ok(data)
}

/// Validates the output chain and returns the block addresses.
fn out_blocks(mem: &dyn GuestMemory, mut ptr: u64, len: usize) -> Result<Vec<u64>, Delivery> {
    let blocks = len.div_ceil(BLOCK_DATA);
    let mut addrs = Vec::with_capacity(blocks);
    let mut tail = [0u8; BLOCK_SIZE - B_NEXT];
    for n in 0..blocks {
        if ptr == 0 {
            return Err(Delivery::OutLength);
        }
        if ptr % 8 != 0 {
            return Err(Delivery::OutPtrAlign);
        }
        // The whole block must be writable guest memory (and must not wrap
        // the address space).
        let last = ptr.checked_add(BLOCK_SIZE as u64 - 1).ok_or(Delivery::OutPtrAlign)?;
        let mut probe = [0u8; 1];
        mem.read(last, &mut probe).map_err(|_| Delivery::OutPtrAlign)?;
        mem.read(ptr + B_NEXT as u64, &mut tail).map_err(|_| Delivery::OutPtrAlign)?;
        let num = u32::from_be_bytes(tail[B_BLOCK_NUM - B_NEXT..B_BLOCK_NUM - B_NEXT + 4].try_into().expect("4 bytes"));
        if num as usize != n {
            return Err(Delivery::BadBlockNumber);
        }
        addrs.push(ptr);
        ptr = u64::from_be_bytes(tail[..8].try_into().expect("8 bytes"));
    }
    Ok(addrs)
}

/// Executes the command in `slot` of the queue at `cmdq`. Returns None when
/// the slot is not owned by hardware or its entry is unreachable.
pub fn run_slot(mem: &dyn GuestMemory, cmdq: u64, slot: u32, handler: &mut dyn CommandHandler) -> Option<SlotResult> {
    if slot >= NUM_SLOTS {
        return None;
    }
    let ea = cmdq.checked_add(slot as u64 * ENTRY_SIZE)?;
    let mut e = [0u8; ENTRY_SIZE as usize];
    mem.read(ea, &mut e).ok()?;
    if e[E_STATUS_OWN as usize] & 1 == 0 {
        return None;
    }
    let be32 = |o: usize| u32::from_be_bytes(e[o..o + 4].try_into().expect("4 bytes"));
    let be64 = |o: usize| u64::from_be_bytes(e[o..o + 8].try_into().expect("8 bytes"));
    let inlen = be32(E_INLEN) as usize;
    let outlen = be32(E_OUTLEN) as usize;
    let in_ptr = be64(E_IN_PTR);
    let out_ptr = be64(E_OUT_PTR);
    let token = e[E_TOKEN];
    let opcode = u16::from_be_bytes([e[E_IN], e[E_IN + 1]]);
    let op_mod = u16::from_be_bytes([e[E_IN + 6], e[E_IN + 7]]);
    let mut res = SlotResult { slot, delivery: Delivery::Ok, opcode, op_mod, status: 0, syndrome: 0 };

    let outcome: Result<(), Delivery> = (|| {
        if e[E_TYPE] != CMD_TYPE_PCI {
            return Err(Delivery::CmdDescriptor);
        }
        if !(8..=MAX_MSG).contains(&inlen) {
            return Err(Delivery::InLength);
        }
        // The smallest outputs (e.g. enable_hca_out) are 12 bytes: status + syndrome at least.
        if !(8..=MAX_MSG).contains(&outlen) {
            return Err(Delivery::OutLength);
        }
        // Gather the input: 16 bytes inline, the rest from the chain.
        let mut input = e[E_IN..E_IN + 16.min(inlen)].to_vec();
        if inlen > 16 {
            input.extend(gather(mem, in_ptr, inlen - 16, Delivery::InPtrAlign, Delivery::InLength)?);
        }
        // Check the output chain before executing: a command with side
        // effects must not run if its result cannot be delivered.
        let blocks = if outlen > 16 { out_blocks(mem, out_ptr, outlen - 16)? } else { Vec::new() };
        let mut o = handler.execute(&input, outlen);
        // Whatever the command produced, exactly `outlen` bytes go out; the
        // inline area is always 16 bytes (zero beyond `outlen`).
        o.out.resize(outlen.max(16), 0);
        o.out[outlen.min(16)..16].fill(0);
        o.out.truncate(outlen.max(16));
        o.out[0] = o.status;
        o.out[1..4].fill(0);
        o.out[4..8].copy_from_slice(&o.syndrome.to_be_bytes());
        res.status = o.status;
        res.syndrome = o.syndrome;
        // Scatter: mailbox data first, then the inline part of the entry.
        for (i, &b) in blocks.iter().enumerate() {
            let from = 16 + i * BLOCK_DATA;
            let to = (from + BLOCK_DATA).min(outlen);
            mem.write(b, &o.out[from..to]).map_err(|_| Delivery::OutPtrAlign)?;
            mem.write(b + B_TOKEN as u64, &[token]).map_err(|_| Delivery::OutPtrAlign)?;
        }
        mem.write(ea + E_OUT as u64, &o.out[..16]).map_err(|_| Delivery::FwErr)?;
        debug_assert!(blocks.is_empty() || outlen > 16);
        Ok(())
    })();
    if let Err(d) = outcome {
        res.delivery = d;
    }
    // Ownership last: status_own = delivery << 1, owner bit cleared.
    fence(Ordering::Release);
    mem.write(ea + E_STATUS_OWN, &[(res.delivery as u8) << 1]).ok()?;
    Some(res)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::cell::RefCell;

    pub use vrnic_engine::mem::FlatMem;

    /// Builds a command entry + chains the way cmd.c does.
    pub struct Builder {
        pub cmdq: u64,
        pub next_block: u64,
    }

    impl Builder {
        pub fn new() -> Builder {
            Builder { cmdq: 0x1000, next_block: 0x10000 }
        }

        /// Writes `n` chained blocks holding `data` (zero-padded); returns the first address.
        pub fn chain(&mut self, mem: &FlatMem, data: &[u8], n: usize, token: u8) -> u64 {
            let first = self.next_block;
            for i in 0..n {
                let a = self.next_block;
                self.next_block += 1024;
                let mut blk = vec![0u8; BLOCK_SIZE];
                let from = (i * BLOCK_DATA).min(data.len());
                let to = ((i + 1) * BLOCK_DATA).min(data.len());
                blk[..to - from].copy_from_slice(&data[from..to]);
                let next = if i + 1 < n { self.next_block } else { 0 };
                blk[B_NEXT..B_NEXT + 8].copy_from_slice(&next.to_be_bytes());
                blk[B_BLOCK_NUM..B_BLOCK_NUM + 4].copy_from_slice(&(i as u32).to_be_bytes());
                blk[B_TOKEN] = token;
                mem.put(a, &blk);
            }
            if n == 0 {
                0
            } else {
                first
            }
        }

        /// Places a command in `slot`; returns the entry address.
        pub fn entry(&mut self, mem: &FlatMem, slot: u32, input: &[u8], outlen: usize) -> u64 {
            let ea = self.cmdq + slot as u64 * ENTRY_SIZE;
            let mut e = [0u8; 64];
            e[E_TYPE] = CMD_TYPE_PCI;
            e[E_INLEN..E_INLEN + 4].copy_from_slice(&(input.len() as u32).to_be_bytes());
            let n = input.len().min(16);
            e[E_IN..E_IN + n].copy_from_slice(&input[..n]);
            let tail = if input.len() > 16 { &input[16..] } else { &[][..] };
            let in_ptr = self.chain(mem, tail, tail.len().div_ceil(BLOCK_DATA), 0x5a);
            e[E_IN_PTR..E_IN_PTR + 8].copy_from_slice(&in_ptr.to_be_bytes());
            let out_ptr = self.chain(mem, &[], outlen.saturating_sub(16).div_ceil(BLOCK_DATA), 0x5a);
            e[E_OUT_PTR..E_OUT_PTR + 8].copy_from_slice(&out_ptr.to_be_bytes());
            e[E_OUTLEN..E_OUTLEN + 4].copy_from_slice(&(outlen as u32).to_be_bytes());
            e[E_TOKEN] = 0x5a;
            e[E_STATUS_OWN as usize] = 1;
            mem.put(ea, &e);
            ea
        }

        /// Reads back the output (entry out[] + chain) of a completed entry.
        pub fn output(&self, mem: &FlatMem, ea: u64) -> Vec<u8> {
            let e = mem.get(ea, 64);
            let outlen = u32::from_be_bytes(e[E_OUTLEN..E_OUTLEN + 4].try_into().unwrap()) as usize;
            let mut out = e[E_OUT..E_OUT + 16].to_vec();
            let mut p = u64::from_be_bytes(e[E_OUT_PTR..E_OUT_PTR + 8].try_into().unwrap());
            while out.len() < outlen && p != 0 {
                let b = mem.get(p, BLOCK_SIZE);
                let take = (outlen - out.len()).min(BLOCK_DATA);
                out.extend_from_slice(&b[..take]);
                p = u64::from_be_bytes(b[B_NEXT..B_NEXT + 8].try_into().unwrap());
            }
            out
        }
    }

    /// Echoes the input back as output, status from input byte 8.
    struct Echo(RefCell<Vec<Vec<u8>>>);
    impl CommandHandler for Echo {
        fn execute(&mut self, input: &[u8], outlen: usize) -> CmdOutput {
            self.0.borrow_mut().push(input.to_vec());
            let mut o = CmdOutput::ok(outlen);
            let n = input.len().min(outlen);
            o.out[..n].copy_from_slice(&input[..n]);
            o.status = input.get(8).copied().unwrap_or(0);
            o.syndrome = 0x1234_5678;
            o
        }
    }

    fn echo() -> Echo {
        Echo(RefCell::new(Vec::new()))
    }

    fn status_own(mem: &FlatMem, ea: u64) -> u8 {
        mem.get(ea + E_STATUS_OWN, 1)[0]
    }

    #[test]
    fn inline_command_round_trip() {
        let mem = FlatMem::new(1 << 20);
        let mut b = Builder::new();
        let input = [0x01, 0x04, 0, 0, 0, 0, 0, 0x01, 0, 0, 0, 0, 0, 0, 0, 0];
        let ea = b.entry(&mem, 3, &input, 16);
        let mut h = echo();
        let r = run_slot(&mem, b.cmdq, 3, &mut h).unwrap();
        assert_eq!((r.opcode, r.op_mod, r.delivery), (0x104, 1, Delivery::Ok));
        assert_eq!(status_own(&mem, ea), 0, "owner cleared, delivery ok");
        let out = b.output(&mem, ea);
        assert_eq!(out[0], 0, "status from the handler");
        assert_eq!(&out[4..8], &[0x12, 0x34, 0x56, 0x78], "syndrome");
        // A slot the driver does not own is left alone.
        assert!(run_slot(&mem, b.cmdq, 4, &mut h).is_none());
    }

    #[test]
    fn twelve_byte_output_fits_inline() {
        let mem = FlatMem::new(1 << 20);
        let mut b = Builder::new();
        let ea = b.entry(&mem, 1, &[0x01, 0x04, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], 12);
        let mut h = echo();
        let r = run_slot(&mem, b.cmdq, 1, &mut h).unwrap();
        assert_eq!(r.delivery, Delivery::Ok);
        assert_eq!(mem.get(ea + 0x20 + 12, 4), vec![0; 4], "inline bytes past outlen are zero");
    }

    #[test]
    fn mailbox_chains_in_and_out() {
        let mem = FlatMem::new(1 << 20);
        let mut b = Builder::new();
        let input: Vec<u8> = (0..1500u32).map(|i| (i % 251) as u8).collect();
        let ea = b.entry(&mem, 0, &input, 1300);
        let mut h = echo();
        let r = run_slot(&mem, b.cmdq, 0, &mut h).unwrap();
        assert_eq!(r.delivery, Delivery::Ok);
        assert_eq!(h.0.borrow()[0], input, "input gathered across 3 blocks, bounded by inlen");
        let out = b.output(&mem, ea);
        assert_eq!(out.len(), 1300);
        assert_eq!(&out[16..1300], &input[16..1300], "output scattered across 3 blocks");
        assert_eq!(out[0], input[8], "status written into the header");
    }

    #[test]
    fn malformed_entries_get_delivery_statuses() {
        let mem = FlatMem::new(1 << 20);
        let mut b = Builder::new();
        let mut h = echo();
        let big: Vec<u8> = vec![7; 2000];
        let run = |mem: &FlatMem, b: &Builder, h: &mut Echo, slot| {
            let r = run_slot(mem, b.cmdq, slot, h).unwrap();
            assert_eq!(status_own(mem, b.cmdq + slot as u64 * 64) & 1, 0, "owner always cleared");
            r.delivery
        };
        // Wrong transport type.
        let ea = b.entry(&mem, 0, &[0; 16], 16);
        mem.put(ea, &[3]);
        assert_eq!(run(&mem, &b, &mut h, 0), Delivery::CmdDescriptor);
        // inlen too small / too large; outlen too small.
        let ea = b.entry(&mem, 1, &[0; 16], 16);
        mem.put(ea + 4, &4u32.to_be_bytes());
        assert_eq!(run(&mem, &b, &mut h, 1), Delivery::InLength);
        mem.put(ea + 4, &u32::MAX.to_be_bytes());
        mem.put(ea + 0x3f, &[1]);
        assert_eq!(run(&mem, &b, &mut h, 1), Delivery::InLength);
        let ea = b.entry(&mem, 2, &[0; 16], 16);
        mem.put(ea + 0x38, &4u32.to_be_bytes());
        assert_eq!(run(&mem, &b, &mut h, 2), Delivery::OutLength);
        // Input chain shorter than inlen (next = 0 after the first block).
        let ea = b.entry(&mem, 5, &big, 16);
        let p = u64::from_be_bytes(mem.get(ea + 8, 8).try_into().unwrap());
        mem.put(p + B_NEXT as u64, &0u64.to_be_bytes());
        assert_eq!(run(&mem, &b, &mut h, 5), Delivery::InLength);
        // Input chain that loops back on itself: block numbers catch it.
        let ea = b.entry(&mem, 6, &big, 16);
        let p = u64::from_be_bytes(mem.get(ea + 8, 8).try_into().unwrap());
        mem.put(p + B_NEXT as u64, &p.to_be_bytes());
        assert_eq!(run(&mem, &b, &mut h, 6), Delivery::BadBlockNumber);
        // Input pointer outside guest memory, and misaligned.
        let ea = b.entry(&mem, 7, &big, 16);
        mem.put(ea + 8, &(1u64 << 40).to_be_bytes());
        assert_eq!(run(&mem, &b, &mut h, 7), Delivery::InPtrAlign);
        mem.put(ea + 8, &0x10003u64.to_be_bytes());
        mem.put(ea + 0x3f, &[1]);
        assert_eq!(run(&mem, &b, &mut h, 7), Delivery::InPtrAlign);
        // Output chain too short and pointing outside memory.
        let ea = b.entry(&mem, 8, &[0; 16], 2000);
        let p = u64::from_be_bytes(mem.get(ea + 0x30, 8).try_into().unwrap());
        mem.put(p + B_NEXT as u64, &0u64.to_be_bytes());
        assert_eq!(run(&mem, &b, &mut h, 8), Delivery::OutLength);
        let ea = b.entry(&mem, 9, &[0; 16], 2000);
        mem.put(ea + 0x30, &((1u64 << 20) - 100).to_be_bytes());
        assert_eq!(run(&mem, &b, &mut h, 9), Delivery::OutPtrAlign);
        // None of the malformed commands reached the handler.
        assert!(h.0.borrow().is_empty());
        // Entry itself outside memory: nothing to do, no panic.
        assert!(run_slot(&mem, (1 << 20) - 32, 0, &mut h).is_none());
        assert!(run_slot(&mem, u64::MAX - 10, 31, &mut h).is_none());
        assert!(run_slot(&mem, b.cmdq, 32, &mut h).is_none());
    }

    /// Fuzz finding (command_interface): an output mailbox pointer within
    /// one block of the top of the address space overflowed `ptr + 575`
    /// (a panic in debug builds, a wrapped probe in release).
    #[test]
    fn output_chain_pointer_at_top_of_address_space() {
        let mem = FlatMem::new(1 << 20);
        let mut b = Builder::new();
        let mut h = echo();
        let ea = b.entry(&mem, 0, &[0; 16], 2000);
        mem.put(ea + 0x30, &(!7u64).to_be_bytes());
        let r = run_slot(&mem, b.cmdq, 0, &mut h).unwrap();
        assert_eq!(r.delivery, Delivery::OutPtrAlign);
        assert!(h.0.borrow().is_empty(), "not executed");
    }
}
