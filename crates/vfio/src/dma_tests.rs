//! Tests of the DMA translation table and its accessors (a child module of `dma`).

use super::*;
use vrnic_sys::memfd;

/// Maps `size` bytes of fresh zeroed memory at `iova`: a memfd, or under
/// Miri (no memfd, no mmap of an fd) anonymous memory, which vm-memory
/// allocates on the heap there, so that Miri checks the volatile and
/// atomic accessors.
fn map_mem(s: &DmaSpace, iova: u64, size: u64, readable: bool, writable: bool) -> Result<(), DmaError> {
    if cfg!(miri) {
        s.map_heap(iova, size, readable, writable)
    } else {
        s.map(iova, size, 0, readable, writable, Some(memfd("t", size).unwrap()))
    }
}

fn space_with(len: u64) -> DmaSpace {
    let s = DmaSpace::new(8);
    map_mem(&s, 0x10000, len, true, true).unwrap();
    s
}

#[test]
fn read_write_inside_and_outside() {
    let s = space_with(0x2000);
    s.write(0x10ffe, &[1, 2, 3, 4]).unwrap();
    let mut b = [0u8; 4];
    s.read(0x10ffe, &mut b).unwrap();
    assert_eq!(b, [1, 2, 3, 4]);
    assert!(matches!(s.read(0x11ffe, &mut b), Err(DmaError::NotMapped { .. })));
    assert!(matches!(s.write(0xfffe, &b), Err(DmaError::NotMapped { .. })));
    assert!(matches!(s.read(u64::MAX - 1, &mut b), Err(DmaError::NotMapped { .. })));
    assert_eq!(s.stats.faults.load(Ordering::Relaxed), 3);
}

/// A DMA_MAP reaching past the end of its file (which would SIGBUS the
/// server on the first guest access there) is refused; one that fits,
/// at an offset, is accepted.
#[test]
#[cfg_attr(miri, ignore = "memfd_create and mmap of an fd are not supported by Miri")]
fn mapping_past_the_end_of_its_file_is_refused() {
    let fd = memfd("short", 0x2000).unwrap();
    let s = DmaSpace::new(8);
    let r = s.map(0x10000, 0x3000, 0, true, true, Some(fd.try_clone().unwrap()));
    assert!(matches!(r, Err(DmaError::BadRange { .. })), "{r:?}");
    let r = s.map(0x10000, 0x2000, 0x1000, true, true, Some(fd.try_clone().unwrap()));
    assert!(matches!(r, Err(DmaError::BadRange { .. })), "{r:?}");
    assert!(s.mappings().is_empty());
    s.map(0x10000, 0x1000, 0x1000, true, true, Some(fd)).unwrap();
    s.write(0x10ff8, &[7; 8]).unwrap();
}

#[test]
fn adjacent_mappings_are_one_range() {
    let s = DmaSpace::new(8);
    map_mem(&s, 0x1000, 0x1000, true, true).unwrap();
    map_mem(&s, 0x2000, 0x1000, true, true).unwrap();
    s.write(0x1ffc, &[9; 8]).unwrap();
    let mut x = [0u8; 8];
    s.read(0x1ffc, &mut x).unwrap();
    assert_eq!(x, [9; 8]);
}

/// Mappings made out of order, with gaps and a read-only one: every
/// access finds its own mapping (the lookup is a binary search), a gap
/// or a protection violation is refused and leaves memory untouched.
#[test]
fn lookup_among_many_mappings() {
    let s = DmaSpace::new(16);
    for i in [5u64, 1, 7, 3, 0, 6] {
        map_mem(&s, 0x10000 + i * 0x2000, 0x1000, true, i != 3).unwrap();
    }
    for i in [0u64, 1, 5, 6, 7] {
        s.write(0x10000 + i * 0x2000 + 0x800, &[i as u8 + 1; 4]).unwrap();
    }
    for i in [0u64, 1, 5, 6, 7] {
        let mut b = [0u8; 4];
        s.read(0x10000 + i * 0x2000 + 0x800, &mut b).unwrap();
        assert_eq!(b, [i as u8 + 1; 4], "mapping {i}");
    }
    let mut b = [0u8; 4];
    assert!(matches!(s.read(0x11800, &mut b), Err(DmaError::NotMapped { .. })), "gap after mapping 0");
    assert!(matches!(s.read(0x10ffe, &mut b), Err(DmaError::NotMapped { .. })), "runs into the gap");
    assert!(matches!(s.read(0x8000, &mut b), Err(DmaError::NotMapped { .. })), "below every mapping");
    assert!(matches!(s.read(0x1f000, &mut b), Err(DmaError::NotMapped { .. })), "above every mapping");
    assert!(matches!(s.write(0x16800, &[1; 4]), Err(DmaError::Protection(_))), "read-only mapping");
    s.read(0x16800, &mut b).unwrap();
    assert_eq!(b, [0; 4], "the refused write left the read-only mapping alone");
    assert_eq!(s.stats.faults.load(Ordering::Relaxed), 5);
}

#[test]
fn map_validation() {
    let s = space_with(0x1000);
    assert_eq!(map_mem(&s, 0x10000, 0x1000, true, true), Err(DmaError::Overlap(0x10000)));
    assert!(matches!(s.map(0x20001, 0x1000, 0, true, true, None), Err(DmaError::BadRange { .. })));
    assert!(matches!(s.map(0x20000, 0, 0, true, true, None), Err(DmaError::BadRange { .. })));
    assert!(matches!(s.map(u64::MAX - 0xfff, 0x2000, 0, true, true, None), Err(DmaError::BadRange { .. })));
    assert!(matches!(s.map_heap(0x20001, 0x1000, true, true), Err(DmaError::BadRange { .. })));
    // No fd: recorded, but not reachable.
    s.map(0xc0000, 0x1000, 0, true, false, None).unwrap();
    let mut b = [0u8; 1];
    assert_eq!(s.read(0xc0000, &mut b), Err(DmaError::NoFd(0xc0000)));
    // Read-only mapping refuses writes.
    map_mem(&s, 0x30000, 0x1000, true, false).unwrap();
    assert_eq!(s.write(0x30000, &b), Err(DmaError::Protection(0x30000)));
}

#[test]
fn unmap_rules() {
    let s = space_with(0x2000);
    assert_eq!(s.unmap(0x10000, 0x1000), Err(DmaError::Split(0x10000)));
    assert_eq!(s.unmap(0x50000, 0x1000), Ok(0));
    assert_eq!(s.unmap(0x10000, 0x2000), Ok(0x2000));
    assert!(s.is_empty());
}

#[test]
fn unmap_waits_for_inflight_access() {
    let s = space_with(0x1000);
    let s = Arc::new(s);
    let holder = s.table.load_full(); // a worker mid-access
    let s2 = s.clone();
    let t = std::thread::spawn(move || s2.unmap(0x10000, 0x1000));
    std::thread::sleep(Duration::from_millis(50));
    assert!(!t.is_finished(), "unmap must wait for the in-flight snapshot");
    drop(holder);
    assert_eq!(t.join().unwrap(), Ok(0x1000));
}

#[test]
fn atomics() {
    let s = space_with(0x1000);
    s.write(0x10008, &5u64.to_ne_bytes()).unwrap();
    assert_eq!(s.compare_and_swap_u64(0x10008, 5, 7), Ok(5));
    assert_eq!(s.compare_and_swap_u64(0x10008, 5, 9), Ok(7));
    assert_eq!(s.fetch_add_u64(0x10008, 3), Ok(7));
    assert_eq!(s.read_u64_be(0x10008).map(u64::swap_bytes), Ok(10));
    assert_eq!(s.fetch_add_u64(0x10004, 1), Err(DmaError::Unaligned(0x10004)));
}
