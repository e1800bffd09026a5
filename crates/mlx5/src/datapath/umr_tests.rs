//! UMR tests: the segment codecs, each operation on a key, and the REG_UMR
//! QP end to end through the real command transport (completions, error
//! completions with their syndromes, flush and the driver's recovery).

use super::*;
use crate::datapath::cqe::{op, syndrome};
use crate::ifc::{self, mkc};
use crate::test_support::{cmd, transition_in, Bench};
use vrnic_engine::{KeyFault, Mkey, QpState};

const SQ: u64 = 0x200000 + 256; // RQ 16 x 16 B, then the SQ (16 x 64 B)
const DBR: u64 = 0x280000;
const CQ_BUF: u64 = 0x120000;
const XLT: u64 = 0x330000;

/// A UMR WQE's bytes: ctrl + umr ctrl + mkey seg (+ data seg or inline).
struct W {
    flags: u8,
    octowords: u16,
    offset: u64,
    mask: u64,
    seg: [u8; 64],
    tail: Vec<u8>,
}

impl W {
    fn new(mask: u64) -> W {
        W { flags: 0, octowords: 0, offset: 0, mask, seg: [0; 64], tail: Vec::new() }
    }

    fn bytes(&self, opc: u8, idx: u16, qpn: u32, key: u32) -> Vec<u8> {
        let mut w = vec![0u8; 16 + 48 + 64];
        let ds = (w.len() + self.tail.len()).div_ceil(16) as u32;
        w[0..4].copy_from_slice(&(((idx as u32) << 8) | opc as u32).to_be_bytes());
        w[4..8].copy_from_slice(&((qpn << 8) | ds).to_be_bytes());
        w[11] = wqe::CTRL_CQ_UPDATE;
        w[12..16].copy_from_slice(&key.to_be_bytes());
        w[16] = self.flags;
        w[20..22].copy_from_slice(&self.octowords.to_be_bytes());
        w[22..24].copy_from_slice(&(self.offset as u16).to_be_bytes());
        w[24..32].copy_from_slice(&self.mask.to_be_bytes());
        w[32..36].copy_from_slice(&((self.offset >> 16) as u32).to_be_bytes());
        w[64..128].copy_from_slice(&self.seg);
        w.extend_from_slice(&self.tail);
        w
    }

    fn data_seg(&mut self, len: u32, lkey: u32, addr: u64) {
        let mut d = [0u8; 16];
        d[0..4].copy_from_slice(&len.to_be_bytes());
        d[4..8].copy_from_slice(&lkey.to_be_bytes());
        d[8..16].copy_from_slice(&addr.to_be_bytes());
        self.tail = d.to_vec();
        self.octowords = (len / 16) as u16;
    }
}

fn ctrl_of(w: &[u8]) -> CtrlSeg {
    CtrlSeg::parse(w[..16].try_into().unwrap())
}

fn mtt_key(free: bool, octowords: u64) -> (Mkey, Vec<u8>) {
    let k = Mkey {
        variant: 0x22,
        pd: 1,
        access: Access::LOCAL_READ,
        start: 0,
        length: 0,
        whole_space: false,
        translation: Translation::Mtt { page_shift: 12, pages: Vec::new() },
        free,
        uid: 0,
    };
    let mut c = vec![0u8; mkc::SIZE];
    mkc::free.set(&mut c, free as u64);
    mkc::umr_en.set(&mut c, 1);
    mkc::access_mode_1_0.set(&mut c, 1);
    mkc::translations_octword_size.set(&mut c, octowords);
    (k, c)
}

#[test]
fn umr_ctrl_and_wqe_decoding() {
    let mut w = W::new(mask::LEN | mask::FREE);
    w.flags = flag::CHECK_NOT_FREE | flag::TRANSLATION_OFFSET_EN;
    w.offset = 0x1_2345;
    w.data_seg(64, 0x1111, 0xabc000);
    mkc::len.set(&mut w.seg, 0x8000);
    let b = w.bytes(OPCODE_UMR, 3, 7, 0x1234_5622);
    let u = parse_umr(&b, &ctrl_of(&b)).unwrap();
    assert_eq!(u.mkey, 0x1234_5622);
    assert_eq!(
        u.ctrl,
        UmrCtrl { flags: w.flags, xlt_octowords: 4, xlt_offset: 0x1_2345, mkey_mask: mask::LEN | mask::FREE }
    );
    assert_eq!(mkc::len.get(&u.seg), 0x8000);
    assert_eq!(u.xlt, Xlt::Pointer { addr: 0xabc000, len: 64, lkey: 0x1111 });
    // Without TRANSLATION_OFFSET_EN only the low 16 bits count.
    let mut b2 = b.clone();
    b2[16] = flag::CHECK_NOT_FREE;
    assert_eq!(parse_umr(&b2, &ctrl_of(&b2)).unwrap().ctrl.xlt_offset, 0x2345);
    // Inline entries follow the mkey segment.
    let mut w = W::new(0);
    w.flags = flag::INLINE;
    w.octowords = 2;
    w.tail = (0..32).collect();
    let b = w.bytes(OPCODE_UMR, 0, 7, 0x100);
    assert_eq!(parse_umr(&b, &ctrl_of(&b)).unwrap().xlt, Xlt::Inline((0..32).collect()));
    // Inline size past the WQE; ds too small for the mkey segment.
    let mut short = b.clone();
    short[4..8].copy_from_slice(&((7u32 << 8) | 9).to_be_bytes());
    assert_eq!(parse_umr(&short, &ctrl_of(&short)), Err(UmrError::Wqe(wqe::WqeError::Truncated)));
    short[4..8].copy_from_slice(&((7u32 << 8) | 7).to_be_bytes());
    assert!(matches!(parse_umr(&short, &ctrl_of(&short)), Err(UmrError::Wqe(wqe::WqeError::BadDs(7)))));
    // Unknown flags and mask bits are not silently ignored.
    let mut w = W::new(0);
    w.flags = 1 << 2;
    let b = w.bytes(OPCODE_UMR, 0, 7, 0x100);
    assert_eq!(parse_umr(&b, &ctrl_of(&b)), Err(UmrError::Flags(1 << 2)));
    let w = W::new(mask::BSF_EN | mask::LEN);
    let b = w.bytes(OPCODE_UMR, 0, 7, 0x100);
    assert_eq!(parse_umr(&b, &ctrl_of(&b)), Err(UmrError::Mask(mask::BSF_EN)));
    assert_eq!(UmrError::Mask(1).syndrome(), syndrome::LOCAL_QP_OP_ERR);
    // MTT entries lose their present bits; KLMs decode.
    let mut e = 0x5000_1000u64.to_be_bytes().to_vec();
    e[7] |= 3;
    assert_eq!(parse_mtts(&e), vec![0x5000_1000]);
    let mut k = vec![0u8; 16];
    k[0..4].copy_from_slice(&0x1000u32.to_be_bytes());
    k[4..8].copy_from_slice(&0x4242u32.to_be_bytes());
    k[8..16].copy_from_slice(&0x9000u64.to_be_bytes());
    assert_eq!(parse_klms(&k), vec![IndirectEntry { len: 0x1000, key: 0x4242, va: 0x9000 }]);
    // A KSM entry's first word is reserved: its size is the key's.
    assert_eq!(parse_ksms(&k), vec![IndirectEntry { len: 0, key: 0x4242, va: 0x9000 }]);
}

fn umr(mask: u64, flags: u8, seg: impl FnOnce(&mut [u8; 64])) -> UmrWqe {
    let mut s = [0u8; 64];
    seg(&mut s);
    UmrWqe {
        mkey: 0x122,
        ctrl: UmrCtrl { flags, xlt_octowords: 0, xlt_offset: 0, mkey_mask: mask },
        seg: s,
        xlt: Xlt::None,
    }
}

fn mtt_bytes(pages: &[u64]) -> Vec<u8> {
    pages.iter().flat_map(|p| (p | 3).to_be_bytes()).collect()
}

#[test]
fn each_operation_on_a_key() {
    let (free, c) = mtt_key(true, 4);
    let yes = |_| true;
    // Enable with translation, PD, access, start and length.
    let mut u = umr(
        mask::KEY
            | mask::FREE
            | mask::PD
            | mask::LR
            | mask::LW
            | mask::RR
            | mask::RW
            | mask::A
            | mask::LEN
            | mask::START_ADDR
            | mask::PAGE_SIZE,
        flag::CHECK_NOT_FREE,
        |s| {
            mkc::mkey_7_0.set(s, 0x23);
            mkc::pd.set(s, 5);
            mkc::lw.set(s, 1);
            mkc::rw.set(s, 1);
            mkc::a.set(s, 1);
            mkc::start_addr.set(s, 0x7000_0800);
            mkc::len.set(s, 0x1800);
            mkc::log_page_size.set(s, 12);
        },
    );
    u.ctrl.xlt_octowords = 4;
    let (k, c2) = apply(&free, &c, &u, &mtt_bytes(&[0x40000, 0x52000, 0, 0, 0, 0, 0, 0]), yes).unwrap();
    assert!(!k.free && k.variant == 0x23 && k.pd == 5);
    assert_eq!(k.access, Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_ATOMIC);
    assert_eq!(
        k.translate(0x7000_0f00, 0x200, 5, Access::REMOTE_WRITE).unwrap(),
        vec![(0x40f00, 0x100), (0x52000, 0x100)]
    );
    assert_eq!(k.translate(0x7000_0f00, 0x200, 4, Access::REMOTE_WRITE), Err(KeyFault::WrongPd));
    assert_eq!(k.translate(0x7000_0f00, 0x200, 5, Access::REMOTE_READ), Err(KeyFault::Access));
    assert_eq!(k.translate(0x7000_1f00, 0x200, 5, Access::LOCAL_READ), Err(KeyFault::Bounds));
    assert_eq!((mkc::free.get(&c2), mkc::pd.get(&c2), mkc::len.get(&c2)), (0, 5, 0x1800), "query_mkey sees the update");
    // The same enable again must fail: the key is no longer free.
    assert_eq!(apply(&k, &c2, &u, &[], yes).unwrap_err(), UmrError::FreeState);
    // Access only (rereg access): remote read on, atomic off; PD to 6.
    let u = umr(mask::PD | mask::LR | mask::LW | mask::RR | mask::RW | mask::A, flag::CHECK_FREE, |s| {
        mkc::pd.set(s, 6);
        mkc::rr.set(s, 1);
        mkc::lw.set(s, 1);
    });
    let (k2, c3) = apply(&k, &c2, &u, &[], yes).unwrap();
    assert_eq!((k2.pd, k2.access), (6, Access::LOCAL_WRITE | Access::REMOTE_READ));
    assert_eq!(k2.translate(0x7000_0f00, 0x200, 6, Access::REMOTE_READ).unwrap().len(), 2, "translation kept");
    // A PD that does not exist.
    assert_eq!(apply(&k, &c2, &u, &[], |pd| pd != 6).unwrap_err(), UmrError::BadPd(6));
    // Revoke: free, UMR PD; the key stops translating.
    let u = umr(mask::PD | mask::FREE, flag::INLINE, |s| {
        mkc::free.set(s, 1);
        mkc::pd.set(s, 1);
    });
    let (k3, c4) = apply(&k2, &c3, &u, &[], yes).unwrap();
    assert_eq!(k3.translate(0x7000_0f00, 0x10, 1, Access::LOCAL_READ), Err(KeyFault::BadKey));
    // Pd/access with CHECK_FREE on a free key fails.
    let u = umr(mask::PD, flag::CHECK_FREE, |s| mkc::pd.set(s, 5));
    assert_eq!(apply(&k3, &c4, &u, &[], yes).unwrap_err(), UmrError::FreeState);
    // Translation in two 64-byte chunks (the second at an offset), then enable with a new length.
    let (big, cb) = mtt_key(true, 8);
    let mut u = umr(0, flag::CHECK_NOT_FREE, |_| {});
    u.ctrl.xlt_octowords = 4;
    let (b0, cb0) = apply(&big, &cb, &u, &mtt_bytes(&[0x70000; 8]), yes).unwrap();
    u.ctrl.flags |= flag::TRANSLATION_OFFSET_EN;
    u.ctrl.xlt_offset = 4;
    // Not before the first chunk: a gap is refused.
    assert_eq!(apply(&big, &cb, &u, &mtt_bytes(&[0x90000; 8]), yes).unwrap_err(), UmrError::XltGap(8, 0));
    let (b1, cb1) = apply(&b0, &cb0, &u, &mtt_bytes(&[0x80000, 0x81000, 0x90000, 0x91000, 0, 0, 0, 0]), yes).unwrap();
    let u = umr(mask::FREE | mask::LEN | mask::START_ADDR | mask::RR, 0, |s| {
        mkc::len.set(s, 10 * 4096);
        mkc::start_addr.set(s, 0x10000);
        mkc::rr.set(s, 1);
    });
    let (b2, _) = apply(&b1, &cb1, &u, &[], yes).unwrap();
    assert_eq!(b2.translate(0x10000 + 9 * 4096, 8, 1, Access::REMOTE_READ).unwrap(), vec![(0x81000, 8)]);
    assert_eq!(b2.translate(0x10000, 8, 1, Access::REMOTE_READ).unwrap(), vec![(0x70000, 8)]);
}

#[test]
fn bad_input_is_refused_whole() {
    let (k, c) = mtt_key(true, 1);
    let yes = |_| true;
    // Translation past the key's table (1 octoword rounds up to 8 entries).
    let mut u = umr(0, 0, |_| {});
    u.ctrl.xlt_octowords = 8;
    let e = apply(&k, &c, &u, &mtt_bytes(&[0x1000; 16]), yes).unwrap_err();
    assert_eq!(e, UmrError::XltBounds(0, 16, 8));
    assert_eq!(e.syndrome(), syndrome::LOCAL_LENGTH_ERR);
    // Enabling with a length the table cannot translate.
    let u = umr(mask::FREE | mask::LEN, 0, |s| mkc::len.set(s, 9 * 4096));
    assert!(matches!(apply(&k, &c, &u, &[], yes), Err(UmrError::XltBounds(0, 9, 8))));
    // start + length overflows.
    let u = umr(mask::FREE | mask::LEN | mask::START_ADDR, 0, |s| {
        mkc::start_addr.set(s, u64::MAX - 10);
        mkc::len.set(s, 100);
    });
    assert_eq!(apply(&k, &c, &u, &[], yes).unwrap_err(), UmrError::Length);
    // Page size out of range.
    let u = umr(mask::PAGE_SIZE, 0, |s| mkc::log_page_size.set(s, 40));
    assert_eq!(apply(&k, &c, &u, &[], yes).unwrap_err(), UmrError::PageSize(40));
    // Translation on a PA-mode key.
    let pa = Mkey { translation: Translation::Physical, ..k.clone() };
    let u = umr(mask::LEN, 0, |s| mkc::len.set(s, 4096));
    assert_eq!(apply(&pa, &c, &u, &[], yes).unwrap_err(), UmrError::NotMtt);
}

fn klm_bytes(entries: &[(u32, u32, u64)]) -> Vec<u8> {
    let mut b = Vec::new();
    for &(len, key, va) in entries {
        b.extend_from_slice(&len.to_be_bytes());
        b.extend_from_slice(&key.to_be_bytes());
        b.extend_from_slice(&va.to_be_bytes());
    }
    b
}

/// `mlx5dv_wr_mr_interleaved`'s translation: a repeat block of `repeat` times the entries (len, skip, key, va),
/// padded to 64 bytes.
fn repeat_block(repeat: u32, entries: &[(u16, u16, u32, u64)]) -> Vec<u8> {
    let mut b = Vec::new();
    let total: u32 = entries.iter().map(|e| e.0 as u32).sum();
    b.extend_from_slice(&total.to_be_bytes());
    b.extend_from_slice(&REPEAT_BLOCK_OP.to_be_bytes());
    b.extend_from_slice(&repeat.to_be_bytes());
    b.extend_from_slice(&0u16.to_be_bytes());
    b.extend_from_slice(&(entries.len() as u16).to_be_bytes());
    for &(len, skip, key, va) in entries {
        b.extend_from_slice(&(len + skip).to_be_bytes());
        b.extend_from_slice(&len.to_be_bytes());
        b.extend_from_slice(&key.to_be_bytes());
        b.extend_from_slice(&va.to_be_bytes());
    }
    b.resize(b.len().next_multiple_of(64), 0);
    b
}

#[test]
fn a_repeat_block_is_the_interleaved_layout() {
    let yes = |_| true;
    let e = |len, key, va| IndirectEntry { len, key, va };
    let (k, c) = indirect_key(Translation::Klm { entries: Vec::new() });
    let mut u = umr(mask::FREE | mask::LEN, flag::INLINE, |s| mkc::len.set(s, 3 * 24));
    u.ctrl.xlt_octowords = 4;
    // Three times: 16 bytes of key 0x4242 every 64, then 8 bytes of key 0x4343 every 8 + 100.
    let rb = repeat_block(3, &[(16, 48, 0x4242, 0x1000), (8, 100, 0x4343, 0x9000)]);
    let (k1, _) = apply(&k, &c, &u, &rb, yes).unwrap();
    assert_eq!(
        k1.translation,
        Translation::Klm {
            entries: vec![
                e(16, 0x4242, 0x1000),
                e(8, 0x4343, 0x9000),
                e(16, 0x4242, 0x1040),
                e(8, 0x4343, 0x906c),
                e(16, 0x4242, 0x1080),
                e(8, 0x4343, 0x90d8),
            ]
        }
    );
    // Refused whole: a block at an offset, a byte count that is not the entries' sum, too many entries, none.
    let mut at = u.clone();
    at.ctrl.xlt_offset = 1;
    assert!(matches!(apply(&k, &c, &at, &rb, yes), Err(UmrError::RepeatBlock(_))));
    let mut bad = rb.clone();
    bad[3] ^= 1;
    assert!(matches!(apply(&k, &c, &u, &bad, yes), Err(UmrError::RepeatBlock(_))));
    let huge = repeat_block(1 << 16, &[(16, 0, 0x4242, 0), (16, 0, 0x4242, 0)]);
    assert!(matches!(apply(&k, &c, &u, &huge, yes), Err(UmrError::RepeatBlock(_))));
    let empty = repeat_block(3, &[]);
    assert!(matches!(apply(&k, &c, &u, &empty, yes), Err(UmrError::RepeatBlock(_))));
    assert_eq!(UmrError::RepeatBlock("x").syndrome(), syndrome::LOCAL_QP_OP_ERR);
}

/// An indirect key (KLM, KSM) created free with room for 4 entries.
fn indirect_key(translation: Translation) -> (Mkey, Vec<u8>) {
    let (k, mut c) = mtt_key(true, 4);
    mkc::access_mode_1_0.set(&mut c, if matches!(translation, Translation::Klm { .. }) { 2 } else { 3 });
    (Mkey { translation, ..k }, c)
}

#[test]
fn indirect_keys_take_their_entries_by_umr() {
    let yes = |_| true;
    let e = |len, key, va| IndirectEntry { len, key, va };
    // A KLM key: two entries written at offset 0 (in entries), the range set, the key enabled.
    let (k, c) = indirect_key(Translation::Klm { entries: Vec::new() });
    let mut u = umr(mask::FREE | mask::LEN | mask::START_ADDR | mask::RW, flag::INLINE, |s| {
        mkc::start_addr.set(s, 0x10_0000);
        mkc::len.set(s, 0x1100);
        mkc::rw.set(s, 1);
    });
    u.ctrl.xlt_octowords = 2;
    let xlt = klm_bytes(&[(0x1000, 0x4242, 0x9000), (0x100, 0x4343, 0)]);
    let (k1, c1) = apply(&k, &c, &u, &xlt, yes).unwrap();
    assert_eq!(k1.translation, Translation::Klm { entries: vec![e(0x1000, 0x4242, 0x9000), e(0x100, 0x4343, 0)] });
    assert_eq!((k1.start, k1.length, k1.free), (0x10_0000, 0x1100, false));
    assert!(k1.access.contains(Access::REMOTE_WRITE));
    // A later write replaces entries in place; past the key's 4 entries, or after a gap, nothing changes.
    let mut u = umr(0, flag::INLINE | flag::TRANSLATION_OFFSET_EN, |_| {});
    u.ctrl.xlt_octowords = 1;
    u.ctrl.xlt_offset = 1;
    let (k2, _) = apply(&k1, &c1, &u, &klm_bytes(&[(0x200, 0x4444, 0x40)]), yes).unwrap();
    assert_eq!(k2.translation, Translation::Klm { entries: vec![e(0x1000, 0x4242, 0x9000), e(0x200, 0x4444, 0x40)] });
    u.ctrl.xlt_offset = 4;
    assert_eq!(apply(&k1, &c1, &u, &klm_bytes(&[(1, 1, 1)]), yes).unwrap_err(), UmrError::XltBounds(4, 5, 4));
    u.ctrl.xlt_offset = 3;
    assert_eq!(apply(&k1, &c1, &u, &klm_bytes(&[(1, 1, 1)]), yes).unwrap_err(), UmrError::XltGap(3, 2));
    // A KSM key: its entry size is the page size the UMR sets; the first word of an entry is not a length.
    let (k, c) = indirect_key(Translation::Ksm { entry_shift: 12, entries: Vec::new() });
    let mut u = umr(mask::FREE | mask::LEN | mask::PAGE_SIZE, flag::INLINE, |s| {
        mkc::len.set(s, 0x20_0000);
        mkc::log_page_size.set(s, 20);
    });
    u.ctrl.xlt_octowords = 2;
    let (k3, _) = apply(&k, &c, &u, &klm_bytes(&[(7, 0x4242, 0x9000), (7, 0x4343, 0)]), yes).unwrap();
    assert_eq!(
        k3.translation,
        Translation::Ksm { entry_shift: 20, entries: vec![e(0, 0x4242, 0x9000), e(0, 0x4343, 0)] }
    );
}

/// CREATE_MKEY of a free, UMR-enabled key of PD `pd` in `access_mode` (1 MTT with 4 KiB pages, as mlx5_ib's
/// cache; 2 KLM, as mlx5dv_create_mkey and a memory window) with room for `octowords`; the caller may set more.
fn free_key_cmd(pd: u32, access_mode: u64, octowords: u64, tag: u8) -> Vec<u8> {
    use ifc::create_mkey_in::memory_key_mkey_entry as m;
    let mut i = cmd(ifc::MLX5_CMD_OP_CREATE_MKEY, 0, ifc::create_mkey_in::SIZE);
    m::free.set(&mut i, 1);
    m::umr_en.set(&mut i, 1);
    m::access_mode_1_0.set(&mut i, access_mode);
    m::log_page_size.set(&mut i, 12);
    m::translations_octword_size.set(&mut i, octowords);
    m::pd.set(&mut i, pd as u64);
    m::mkey_7_0.set(&mut i, tag as u64);
    i
}

/// The REG_UMR QP at work, through commands and WQEs in guest memory.
struct Umr {
    t: Bench,
    qpn: u32,
    lkey: u32,
    pd: u32,
    pc: u16,
    cqes: u64,
}

impl Umr {
    fn new() -> Umr {
        Umr::with_st(0xc)
    }

    /// A QP of service type `st` (0xc: REG_UMR, 0: RC) in the PD of the keys.
    fn with_st(st: u64) -> Umr {
        use ifc::create_mkey_in::memory_key_mkey_entry as m;
        let mut t = Bench::new();
        let uar = t.up();
        let eqn = t.eq(uar, 1, 0, 0x100000);
        let pd = t.pd();
        let lkey = t.mkey(pd, &[m::lr, m::lw], 0x11);
        let cqn = t.cq(uar, eqn, CQ_BUF);
        let qp_pd = if st == 0xc { 0 } else { pd };
        let qpn = t.qp_with(st, qp_pd, uar, cqn, 0x200000, |i| ifc::create_qp_in::qpc::dbr_addr.set(i, DBR));
        let mut u = Umr { t, qpn, lkey, pd, pc: 0, cqes: 0 };
        u.bring_up();
        u
    }

    fn bring_up(&mut self) {
        for o in [ifc::MLX5_CMD_OP_RST2INIT_QP, ifc::MLX5_CMD_OP_INIT2RTR_QP, ifc::MLX5_CMD_OP_RTR2RTS_QP] {
            self.t.ok(&transition_in(o, self.qpn), 16);
        }
    }

    /// A free MTT key as mlx5_ib's cache makes it (free, umr_en, 16 entries).
    fn free_key(&mut self, tag: u8) -> u32 {
        self.create_key(&free_key_cmd(self.pd, 1, 8, tag))
    }

    /// Runs CREATE_MKEY `i`; the new key, with the key byte `i` asks for.
    fn create_key(&mut self, i: &[u8]) -> u32 {
        let tag = ifc::create_mkey_in::memory_key_mkey_entry::mkey_7_0.get(i) as u32;
        let o = self.t.ok(i, 16);
        ((ifc::create_mkey_out::mkey_index.get(&o) as u32) << 8) | tag
    }

    /// Posts one WQE and rings; returns the CQE it produced (opcode, syndrome, wqe opcode, counter).
    fn post(&mut self, opc: u8, key: u32, w: &W) -> (u8, u8, u8, u16) {
        let b = w.bytes(opc, self.pc, self.qpn, key);
        let nbb = b.len().div_ceil(64);
        for i in 0..nbb {
            let slot = (self.pc as usize + i) % 16;
            let chunk = &b[i * 64..((i + 1) * 64).min(b.len())];
            self.t.mem.put(SQ + slot as u64 * 64, chunk);
        }
        self.pc = self.pc.wrapping_add(nbb as u16);
        self.t.mem.put(DBR + 4, &(self.pc as u32).to_be_bytes());
        self.t.fw.send_doorbell(self.qpn);
        self.cqe()
    }

    fn cqe(&mut self) -> (u8, u8, u8, u16) {
        let e = self.t.mem.get(CQ_BUF + self.cqes * 64, 64);
        self.cqes += 1;
        // Only an error CQE has its syndrome at 0x37; a good one holds its timestamp there.
        let opcode = e[0x3f] >> 4;
        let syndrome = if matches!(opcode, op::REQ_ERR | op::RESP_ERR) { e[0x37] } else { 0 };
        (opcode, syndrome, e[0x38], u16::from_be_bytes([e[0x3c], e[0x3d]]))
    }

    fn state(&self) -> QpState {
        self.t.fw.core.engine.qp(self.qpn).unwrap().state
    }
}

fn enable(pd: u32, lkey: u32, len: u64) -> W {
    let mut w = W::new(
        mask::KEY
            | mask::FREE
            | mask::PD
            | mask::LR
            | mask::LW
            | mask::RR
            | mask::RW
            | mask::A
            | mask::LEN
            | mask::START_ADDR
            | mask::PAGE_SIZE
            | mask::QPN,
    );
    w.flags = flag::CHECK_NOT_FREE;
    mkc::pd.set(&mut w.seg, pd as u64);
    mkc::lr.set(&mut w.seg, 1);
    mkc::lw.set(&mut w.seg, 1);
    mkc::rw.set(&mut w.seg, 1);
    mkc::start_addr.set(&mut w.seg, 0x10000);
    mkc::len.set(&mut w.seg, len);
    mkc::log_page_size.set(&mut w.seg, 12);
    mkc::qpn.set(&mut w.seg, 0xffffff);
    mkc::mkey_7_0.set(&mut w.seg, 0x22);
    w.data_seg(64, lkey, XLT);
    w
}

#[test]
fn reg_umr_qp_executes_completes_and_recovers() {
    let mut u = Umr::new();
    let key = u.free_key(0x22);
    let index = key >> 8;
    u.t.mem.put(XLT, &mtt_bytes(&[0x340000, 0x350000, 0, 0, 0, 0, 0, 0]));
    let (pd, lkey) = (u.pd, u.lkey);
    // Enable through a pointer to the MTT: REQ CQE, the key translates.
    assert_eq!(u.post(OPCODE_UMR, key, &enable(pd, lkey, 0x2000)), (op::REQ, 0, OPCODE_UMR, 0));
    let k = u.t.fw.core.engine.lookup_key(key).unwrap();
    assert_eq!(k.translate(0x10ff0, 0x20, pd, Access::REMOTE_WRITE).unwrap(), vec![(0x340ff0, 0x10), (0x350000, 0x10)]);
    // QUERY_MKEY reports the new context.
    let mut q = cmd(ifc::MLX5_CMD_OP_QUERY_MKEY, 0, ifc::query_mkey_in::SIZE);
    ifc::query_mkey_in::mkey_index.set(&mut q, index as u64);
    let o = u.t.ok(&q, ifc::query_mkey_out::SIZE);
    assert_eq!(ifc::query_mkey_out::memory_key_mkey_entry::len.get(&o), 0x2000);
    assert_eq!(ifc::query_mkey_out::memory_key_mkey_entry::free.get(&o), 0);
    // Revoke (inline, no translation): the key is free, access is refused.
    let mut r = W::new(mask::PD | mask::FREE);
    r.flags = flag::INLINE;
    mkc::free.set(&mut r.seg, 1);
    mkc::pd.set(&mut r.seg, pd as u64);
    assert_eq!(u.post(OPCODE_UMR, key, &r), (op::REQ, 0, OPCODE_UMR, 3));
    assert_eq!(
        u.t.fw.core.engine.lookup_key(key).unwrap().translate(0x10000, 1, pd, Access::LOCAL_READ),
        Err(KeyFault::BadKey)
    );
    // PD/access change on a free key with CHECK_FREE: LOCAL_PROT_ERR, QP to ERR.
    let mut a = W::new(mask::PD | mask::RR);
    a.flags = flag::CHECK_FREE | flag::INLINE;
    mkc::pd.set(&mut a.seg, pd as u64);
    assert_eq!(u.post(OPCODE_UMR, key, &a), (op::REQ_ERR, syndrome::LOCAL_PROT_ERR, OPCODE_UMR, 5));
    assert_eq!(u.state(), QpState::Err);
    assert!(u.t.fw.core.engine.lookup_key(key).unwrap().free, "nothing applied");
    // The driver's barrier WQE on the ERR QP is flushed.
    assert_eq!(u.post(OPCODE_UMR, key, &a), (op::REQ_ERR, syndrome::WR_FLUSH_ERR, OPCODE_UMR, 7));
    // mlx5r_umr_recover: RESET, then INIT/RTR/RTS; the ring restarts at 0.
    u.t.ok(&transition_in(ifc::MLX5_CMD_OP_2RST_QP, u.qpn), 16);
    u.pc = 0;
    u.bring_up();
    assert_eq!(u.post(OPCODE_UMR, key, &enable(pd, lkey, 0x1000)), (op::REQ, 0, OPCODE_UMR, 0));
    assert_eq!(u.t.fw.core.stats.umr_wqes.load(Ordering::Relaxed), 3);
    assert_eq!(u.t.fw.core.stats.umr_errors.load(Ordering::Relaxed), 1);
}

/// Each kind of bad WQE gets its error CQE (never silence), and the QP is
/// in ERR afterwards.
#[test]
fn bad_umr_wqes_complete_with_errors() {
    type Edit = Box<dyn Fn(&mut W, &mut u32)>;
    let cases: Vec<(&str, u8, Edit, u8)> = vec![
        ("bad mkey index", OPCODE_UMR, Box::new(|_, k| *k = 0x7777_7722), syndrome::LOCAL_PROT_ERR),
        (
            "wrong key variant",
            OPCODE_UMR,
            Box::new(|w, k| {
                w.mask &= !mask::KEY;
                *k ^= 1
            }),
            syndrome::LOCAL_PROT_ERR,
        ),
        ("unknown flag", OPCODE_UMR, Box::new(|w, _| w.flags |= 1 << 2), syndrome::LOCAL_QP_OP_ERR),
        ("unknown mask bit", OPCODE_UMR, Box::new(|w, _| w.mask |= mask::EN_SIGERR), syndrome::LOCAL_QP_OP_ERR),
        ("opcode not executed", wqe::opcode::SEND, Box::new(|_, _| {}), syndrome::LOCAL_QP_OP_ERR),
        (
            "translation out of bounds",
            OPCODE_UMR,
            Box::new(|w, _| {
                w.octowords = 12;
                w.tail[0..4].copy_from_slice(&192u32.to_be_bytes())
            }),
            syndrome::LOCAL_LENGTH_ERR,
        ),
        (
            "translation with a gap",
            OPCODE_UMR,
            Box::new(|w, _| {
                w.flags |= flag::TRANSLATION_OFFSET_EN;
                w.offset = 4
            }),
            syndrome::LOCAL_QP_OP_ERR,
        ),
        (
            "length overflow",
            OPCODE_UMR,
            Box::new(|w, _| mkc::len.set(&mut w.seg, u64::MAX - 4)),
            syndrome::LOCAL_LENGTH_ERR,
        ),
        (
            "lkey does not cover the entries",
            OPCODE_UMR,
            Box::new(|w, _| w.tail[4..8].copy_from_slice(&0xdead_0011u32.to_be_bytes())),
            syndrome::LOCAL_PROT_ERR,
        ),
        (
            "data segment shorter than the entries",
            OPCODE_UMR,
            Box::new(|w, _| w.tail[0..4].copy_from_slice(&16u32.to_be_bytes())),
            syndrome::LOCAL_LENGTH_ERR,
        ),
    ];
    for (what, opc, f, syn) in cases {
        let mut u = Umr::new();
        let mut key = u.free_key(0x22);
        u.t.mem.put(XLT, &mtt_bytes(&[0x340000; 8]));
        let mut w = enable(u.pd, u.lkey, 0x2000);
        f(&mut w, &mut key);
        let (o, s, _, counter) = u.post(opc, key, &w);
        assert_eq!((o, s, counter), (op::REQ_ERR, syn, 0), "{what}");
        assert_eq!(u.state(), QpState::Err, "{what}");
        assert_eq!(u.t.mem.get(CQ_BUF + 64, 64)[0x3f], 0xf1, "{what}: one CQE");
        let k = u.t.fw.core.engine.mkeys().find(|(_, k)| k.variant == 0x22).unwrap().1;
        assert!(k.free, "{what}: the key is unchanged");
    }
}

/// Random WQEs (the `umr_wqe` fuzz target's loop, deterministic): decoding and applying never panic, a
/// key's table never outgrows its capacity, and what `apply` refuses changes nothing.
#[test]
fn random_umr_wqes_are_refused_or_applied_whole() {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let iterations = if cfg!(miri) { 200 } else { 20_000 };
    for _ in 0..iterations {
        let len = 16 + (next() % 300) as usize;
        let mut w: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        // Mostly plausible: the UMR opcode and a ds that fits.
        if next() % 4 != 0 && len >= 32 {
            w[3] = OPCODE_UMR;
            w[7] = (w[7] & 0xc0) | ((len / 16) as u8 & 0x3f);
            w[24..32].copy_from_slice(&(next() & mask::SUPPORTED).to_be_bytes());
            w[16] &= flag::INLINE | flag::TRANSLATION_OFFSET_EN | flag::CHECK_NOT_FREE;
        }
        let ctrl = ctrl_of(&w);
        let Ok(u) = parse_umr(&w, &ctrl) else { continue };
        let (k, c) = mtt_key(next() % 2 == 0, next() % 64);
        let xlt = match &u.xlt {
            Xlt::Inline(b) => b.clone(),
            _ => (0..(u.ctrl.xlt_octowords as usize * 16).min(4096)).map(|_| next() as u8).collect(),
        };
        match apply(&k, &c, &u, &xlt, |pd| pd % 2 == 0) {
            Ok((n, nc)) => {
                assert_eq!(nc.len(), mkc::SIZE);
                if let Translation::Mtt { pages, .. } = &n.translation {
                    assert!(pages.len() as u64 <= mtt_capacity(mkc::translations_octword_size.get(&c)));
                }
                let _ = n.translate(n.start, n.length.min(1 << 16), n.pd, Access::LOCAL_READ);
            }
            Err(e) => {
                let _ = e.syndrome();
            }
        }
    }
}

#[path = "umr_qp_tests.rs"]
mod qp_tests;
