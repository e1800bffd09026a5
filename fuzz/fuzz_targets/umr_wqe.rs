//! UMR WQE decoding and application: arbitrary bytes as a REG_UMR WQE (control segment first), applied to a
//! free MTT, KLM or KSM key (the first byte's bits 1-2 pick) whose mkc and translation bytes also come from the
//! input; the result translated through itself and a physical key. Nothing may panic, allocate past the key's
//! table, recurse without end or translate outside what the entries say.
#![no_main]
use libfuzzer_sys::fuzz_target;
use vrnic_engine::{Access, Mkey, Translation};
use vrnic_mlx5::datapath::{umr, wqe};

fuzz_target!(|data: &[u8]| {
    if data.len() < 16 {
        return;
    }
    let ctrl = wqe::CtrlSeg::parse(data[..16].try_into().unwrap());
    let Ok(u) = umr::parse_umr(data, &ctrl) else { return };
    // The key's mkc: the 64 bytes after the WQE's declared length (or zeros), free and UMR-enabled.
    let end = (ctrl.ds as usize * 16).min(data.len());
    let mut mkc = data[end..].iter().copied().take(64).collect::<Vec<u8>>();
    mkc.resize(64, 0);
    let old = Mkey {
        variant: u.mkey as u8,
        pd: 1,
        access: Access::LOCAL_READ,
        start: 0,
        length: 0,
        whole_space: false,
        translation: match (data[0] >> 1) & 3 {
            1 => Translation::Klm { entries: Vec::new() },
            2 => Translation::Ksm { entry_shift: 12, entries: Vec::new() },
            _ => Translation::Mtt { page_shift: 12, pages: Vec::new() },
        },
        free: data[0] & 1 == 0,
        uid: 0,
    };
    let xlt = match &u.xlt {
        umr::Xlt::Inline(b) => b.clone(),
        umr::Xlt::Pointer { len, .. } => data.iter().copied().cycle().take((*len as usize).min(1 << 16)).collect(),
        umr::Xlt::None => Vec::new(),
    };
    let _ = umr::parse_klms(&xlt);
    if let Ok((k, c)) = umr::apply(&old, &mkc, &u, &xlt, |pd| pd < 4) {
        assert_eq!(c.len(), 64);
        match &k.translation {
            Translation::Mtt { pages, .. } => assert!(pages.len() as u64 <= umr::MAX_MTT_ENTRIES),
            Translation::Klm { entries } | Translation::Ksm { entries, .. } => {
                assert!(entries.len() as u64 <= umr::MAX_INDIRECT_ENTRIES)
            }
            _ => {}
        }
        // Entry keys: the key itself (by any variant: a loop) and one physical key over everything.
        let phys = Mkey { translation: Translation::Physical, whole_space: true, access: Access(0xf), free: false, ..old };
        let keys = |key: u32| if key & 0xff00 == 0 { Some(&phys) } else { Some(&k) };
        let _ = k.translate_via(k.start, k.length.min(1 << 20), k.pd, Access::LOCAL_READ, &keys);
    }
});
