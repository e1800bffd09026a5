//! Queue buffers as the driver describes them: a page list (`pas[]`) of
//! `4 KiB << log_page_size` pages, starting `page_offset` bytes into page 0.

/// Guest address of byte `off` of a queue buffer described by a page list
/// (`pas[i]` = page i of `4 KiB << log_page_size`), starting `page_offset` bytes into page 0.
pub fn buf_addr(pas: &[u64], log_page_size: u8, page_offset: u64, off: u64) -> Option<u64> {
    let shift = 12 + log_page_size as u32;
    let at = page_offset.checked_add(off)?;
    let page = pas.get(usize::try_from(at >> shift).ok()?)?;
    Some(page + (at & ((1u64 << shift) - 1)))
}

/// Number of pages of `1 << (12 + log_page_size)` bytes a buffer of `bytes`
/// starting `page_offset` into the first page spans.
pub fn pages_for(bytes: u64, log_page_size: u8, page_offset: u64) -> usize {
    let ps = 1u64 << (12 + log_page_size as u32);
    (page_offset + bytes).div_ceil(ps) as usize
}

/// `page_offset` fields count units of `page_size / 64`.
pub fn page_offset_bytes(field: u64, log_page_size: u8) -> u64 {
    field << (log_page_size as u32 + 12 - 6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffer_addressing() {
        let pas = [0x10000, 0x30000, 0x20000];
        assert_eq!(buf_addr(&pas, 0, 0, 0), Some(0x10000));
        assert_eq!(buf_addr(&pas, 0, 0, 0x1040), Some(0x30040));
        assert_eq!(buf_addr(&pas, 0, 0x800, 0x1000), Some(0x30800));
        assert_eq!(buf_addr(&pas, 0, 0, 0x3000), None);
        assert_eq!(buf_addr(&pas, 1, 0, 0x2010), Some(0x30010));
        assert_eq!(buf_addr(&pas, 0, u64::MAX, 1), None);
        assert_eq!(pages_for(0x1000, 0, 0), 1);
        assert_eq!(pages_for(0x1000, 0, 0x40), 2);
        assert_eq!(page_offset_bytes(1, 0), 64);
    }
}
