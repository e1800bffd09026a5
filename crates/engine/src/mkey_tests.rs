use super::*;

fn mkey(tr: Translation, start: u64, length: u64) -> Mkey {
    Mkey {
        variant: 0x42,
        pd: 1,
        access: Access::LOCAL_WRITE | Access::REMOTE_READ,
        start,
        length,
        whole_space: false,
        translation: tr,
        free: false,
        uid: 0,
    }
}

#[test]
fn mtt_translation_crosses_pages_and_checks_bounds() {
    // Region at VA 0x1800, length 0x2000, 4 KiB pages: pages cover 0x1000..0x4000.
    let k = mkey(Translation::Mtt { page_shift: 12, pages: vec![0xa000, 0x5000, 0x6000] }, 0x1800, 0x2000);
    assert_eq!(k.translate(0x1800, 0x10, 1, Access::REMOTE_READ), Ok(vec![(0xa800, 0x10)]));
    // Crosses page 0 → 1 (discontiguous), then 1 → 2 (contiguous, merged).
    assert_eq!(k.translate(0x1ff0, 0x1020, 1, Access::LOCAL_WRITE), Ok(vec![(0xaff0, 0x10), (0x5000, 0x1010)]));
    assert_eq!(k.translate(0x17ff, 1, 1, Access::LOCAL_READ), Err(KeyFault::Bounds));
    assert_eq!(k.translate(0x37ff, 2, 1, Access::LOCAL_READ), Err(KeyFault::Bounds));
    assert_eq!(k.translate(u64::MAX, 2, 1, Access::LOCAL_READ), Err(KeyFault::Bounds));
    assert_eq!(k.translate(0x1800, 1, 2, Access::LOCAL_READ), Err(KeyFault::WrongPd));
    assert_eq!(k.translate(0x1800, 1, 1, Access::REMOTE_WRITE), Err(KeyFault::Access));
    assert_eq!(k.translate(0x1800, 0, 1, Access::LOCAL_READ), Ok(vec![]));
}

#[test]
fn mtt_shorter_than_length_is_a_bounds_fault_not_a_panic() {
    let k = mkey(Translation::Mtt { page_shift: 12, pages: vec![0x1000] }, 0, 0x3000);
    assert_eq!(k.translate(0x2000, 8, 1, Access::LOCAL_READ), Err(KeyFault::Bounds));
}

/// Fuzz finding (umr_wqe): a guest-written MTT entry at the top of the
/// address space made the translation overflow instead of failing.
#[test]
fn mtt_page_at_the_top_of_the_space_is_a_bounds_fault() {
    let top: u64 = !0xfff;
    let k = mkey(Translation::Mtt { page_shift: 12, pages: vec![top, 0x5000] }, 0, 0x2000);
    assert_eq!(
        k.translate(0xff0, 0x20, 1, Access::LOCAL_READ),
        Err(KeyFault::Bounds),
        "runs past the end of the space"
    );
    assert_eq!(k.translate(0x10, 0x10, 1, Access::LOCAL_READ), Ok(vec![(top + 0x10, 0x10)]), "inside the last page");
    assert_eq!(k.translate(0x1000, 0x10, 1, Access::LOCAL_READ), Ok(vec![(0x5000, 0x10)]));
}

#[test]
fn physical_and_whole_space() {
    let mut k = mkey(Translation::Physical, 0, 0);
    k.whole_space = true;
    assert_eq!(k.translate(0x1234_5678, 8, 1, Access::LOCAL_READ), Ok(vec![(0x1234_5678, 8)]));
    k.free = true;
    assert_eq!(k.translate(0, 8, 1, Access::LOCAL_READ), Err(KeyFault::BadKey));
}

/// Keys 0x100 (MTT, two pages), 0x200 (physical, read-only), 0x300 (another PD).
fn keys() -> std::collections::HashMap<u32, Mkey> {
    let mut m = std::collections::HashMap::new();
    m.insert(0x100, mkey(Translation::Mtt { page_shift: 12, pages: vec![0xa000, 0xc000] }, 0x1000, 0x2000));
    let mut ro = mkey(Translation::Physical, 0, 0);
    ro.whole_space = true;
    ro.access = Access::LOCAL_READ;
    m.insert(0x200, ro);
    let mut other = mkey(Translation::Physical, 0, 0);
    other.whole_space = true;
    other.pd = 9;
    m.insert(0x300, other);
    m
}

fn indirect(tr: Translation, length: u64) -> Mkey {
    let mut k = mkey(tr, 0x10_0000, length);
    k.access = Access::LOCAL_WRITE | Access::REMOTE_READ | Access::REMOTE_WRITE;
    k
}

fn klm(len: u64, key: u32, va: u64) -> IndirectEntry {
    IndirectEntry { len, key, va }
}

#[test]
fn klm_translates_through_its_entries_one_after_another() {
    let m = keys();
    let look = |k: u32| m.get(&k);
    // 0x10_0000.. : 0x800 bytes of key 0x100 from 0x1800 (its first page's second half), then 0x100 bytes of
    // key 0x200 at physical 0x7700, then 0x1000 of key 0x100 from 0x2000 (its second page).
    let k = indirect(
        Translation::Klm {
            entries: vec![klm(0x800, 0x100, 0x1800), klm(0x100, 0x200, 0x7700), klm(0x1000, 0x100, 0x2000)],
        },
        0x1900,
    );
    assert_eq!(k.translate_via(0x10_0000, 0x10, 1, Access::REMOTE_READ, &look), Ok(vec![(0xa800, 0x10)]));
    // Across all three entries; the first entry's end meets nothing, the second's end is not contiguous.
    assert_eq!(
        k.translate_via(0x10_07f0, 0x120, 1, Access::REMOTE_READ, &look),
        Ok(vec![(0xaff0, 0x10), (0x7700, 0x100), (0xc000, 0x10)])
    );
    // Past the key's length, and past the entries when the length is longer than they are.
    assert_eq!(k.translate_via(0x10_18ff, 2, 1, Access::REMOTE_READ, &look), Err(KeyFault::Bounds));
    let long = indirect(Translation::Klm { entries: vec![klm(0x800, 0x100, 0x1800)] }, 0x1000);
    assert_eq!(long.translate_via(0x10_07ff, 2, 1, Access::LOCAL_READ, &look), Err(KeyFault::Bounds));
    // The indirect key's own rights, PD and state are checked first.
    assert_eq!(k.translate_via(0x10_0000, 8, 1, Access::REMOTE_ATOMIC, &look), Err(KeyFault::Access));
    assert_eq!(k.translate_via(0x10_0000, 8, 2, Access::REMOTE_READ, &look), Err(KeyFault::WrongPd));
    // Without a way to look keys up nothing translates.
    assert_eq!(k.translate(0x10_0000, 8, 1, Access::REMOTE_READ), Err(KeyFault::BadKey));
}

#[test]
fn klm_entry_keys_are_checked_for_pd_rights_and_existence() {
    let m = keys();
    let look = |k: u32| m.get(&k);
    // A remote write through the indirect key writes the entry's key: key 0x200 is read-only.
    let ro = indirect(Translation::Klm { entries: vec![klm(0x100, 0x200, 0x7700)] }, 0x100);
    assert_eq!(ro.translate_via(0x10_0000, 8, 1, Access::REMOTE_READ, &look), Ok(vec![(0x7700, 8)]));
    assert_eq!(ro.translate_via(0x10_0000, 8, 1, Access::REMOTE_WRITE, &look), Err(KeyFault::Access));
    // An entry key of another PD, one that does not exist, one that is free.
    let other = indirect(Translation::Klm { entries: vec![klm(0x100, 0x300, 0)] }, 0x100);
    assert_eq!(other.translate_via(0x10_0000, 8, 1, Access::REMOTE_READ, &look), Err(KeyFault::WrongPd));
    let missing = indirect(Translation::Klm { entries: vec![klm(0x100, 0x400, 0)] }, 0x100);
    assert_eq!(missing.translate_via(0x10_0000, 8, 1, Access::REMOTE_READ, &look), Err(KeyFault::BadKey));
    let mut m2 = keys();
    m2.get_mut(&0x100).expect("key").free = true;
    let freed = indirect(Translation::Klm { entries: vec![klm(0x100, 0x100, 0x1000)] }, 0x100);
    assert_eq!(freed.translate_via(0x10_0000, 8, 1, Access::REMOTE_READ, &|k| m2.get(&k)), Err(KeyFault::BadKey));
    // An entry range outside its key.
    let outside = indirect(Translation::Klm { entries: vec![klm(0x100, 0x100, 0x2f80)] }, 0x100);
    assert_eq!(outside.translate_via(0x10_0000, 0x100, 1, Access::REMOTE_READ, &look), Err(KeyFault::Bounds));
}

#[test]
fn ksm_entries_have_one_size() {
    let m = keys();
    let look = |k: u32| m.get(&k);
    let k = indirect(
        Translation::Ksm { entry_shift: 12, entries: vec![klm(0, 0x100, 0x1000), klm(0, 0x200, 0x20_0000)] },
        0x2000,
    );
    assert_eq!(k.translate_via(0x10_0ff8, 0x10, 1, Access::REMOTE_READ, &look), Ok(vec![(0xaff8, 8), (0x20_0000, 8)]));
    let short = indirect(Translation::Ksm { entry_shift: 12, entries: vec![klm(0, 0x100, 0x1000)] }, 0x2000);
    assert_eq!(short.translate_via(0x10_1000, 8, 1, Access::REMOTE_READ, &look), Err(KeyFault::Bounds));
}

#[test]
fn indirect_keys_nest_but_a_loop_of_keys_ends() {
    let mut m = keys();
    m.insert(0x500, indirect(Translation::Klm { entries: vec![klm(0x100, 0x100, 0x1000)] }, 0x100));
    // An indirect key naming an indirect key.
    let outer = indirect(Translation::Klm { entries: vec![klm(0x100, 0x500, 0x10_0000)] }, 0x100);
    assert_eq!(outer.translate_via(0x10_0010, 8, 1, Access::REMOTE_WRITE, &|k| m.get(&k)), Ok(vec![(0xa010, 8)]));
    // A key that names itself: refused after MAX_KEY_DEPTH keys, not a stack overflow.
    m.insert(0x600, indirect(Translation::Klm { entries: vec![klm(0x100, 0x600, 0x10_0000)] }, 0x100));
    let looped = m.get(&0x600).expect("key").clone();
    assert_eq!(looped.translate_via(0x10_0000, 8, 1, Access::REMOTE_READ, &|k| m.get(&k)), Err(KeyFault::BadKey));
}
