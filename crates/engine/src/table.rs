//! A numbered object table: the number the driver sees is the engine's number.

use std::collections::BTreeMap;

/// Objects numbered in `[first, last]`, at most `limit` at once.
#[derive(Debug, Clone)]
pub struct Table<T> {
    objs: BTreeMap<u32, T>,
    first: u32,
    last: u32,
    next: u32,
    limit: usize,
}

impl<T> Table<T> {
    pub fn new(first: u32, last: u32, limit: usize) -> Table<T> {
        assert!(first <= last);
        Table { objs: BTreeMap::new(), first, last, next: first, limit }
    }

    /// Stores `make(number)` under the lowest free number (for resources
    /// whose number is an address, like UAR pages), or None when full.
    pub fn alloc_lowest_with(&mut self, make: impl FnOnce(u32) -> T) -> Option<u32> {
        if self.objs.len() >= self.limit {
            return None;
        }
        let mut n = self.first;
        for &k in self.objs.keys() {
            if k != n {
                break;
            }
            if n == self.last {
                return None;
            }
            n += 1;
        }
        self.objs.insert(n, make(n));
        Some(n)
    }

    /// Stores `make(number)` under a fresh number, or None when the table is full.
    pub fn alloc_with(&mut self, make: impl FnOnce(u32) -> T) -> Option<u32> {
        let span = (self.last - self.first) as u64 + 1;
        if self.objs.len() >= self.limit || self.objs.len() as u64 >= span {
            return None;
        }
        // Numbers rotate so a freed number is not reused at once (stale
        // handles from a buggy guest hit BAD_RES rather than a new object).
        loop {
            let n = self.next;
            self.next = if n == self.last { self.first } else { n + 1 };
            if let std::collections::btree_map::Entry::Vacant(e) = self.objs.entry(n) {
                e.insert(make(n));
                return Some(n);
            }
        }
    }

    pub fn get(&self, n: u32) -> Option<&T> {
        self.objs.get(&n)
    }

    pub fn get_mut(&mut self, n: u32) -> Option<&mut T> {
        self.objs.get_mut(&n)
    }

    pub fn remove(&mut self, n: u32) -> Option<T> {
        self.objs.remove(&n)
    }

    pub fn contains(&self, n: u32) -> bool {
        self.objs.contains_key(&n)
    }

    pub fn len(&self) -> usize {
        self.objs.len()
    }

    /// How many entries the table may hold from now on (entries already
    /// above it stay; only new ones are refused).
    pub fn set_limit(&mut self, limit: usize) {
        self.limit = limit;
    }

    pub fn is_empty(&self) -> bool {
        self.objs.is_empty()
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    pub fn iter(&self) -> impl Iterator<Item = (u32, &T)> {
        self.objs.iter().map(|(k, v)| (*k, v))
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = (u32, &mut T)> {
        self.objs.iter_mut().map(|(k, v)| (*k, v))
    }

    /// Drops everything and restarts numbering (device reset).
    pub fn clear(&mut self) {
        self.objs.clear();
        self.next = self.first;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_limits_and_rotation() {
        let mut t: Table<u32> = Table::new(1, 3, 10);
        assert_eq!(t.alloc_with(|n| n * 10), Some(1));
        assert_eq!(t.alloc_with(|n| n * 10), Some(2));
        assert_eq!(t.get(2), Some(&20));
        assert_eq!(t.remove(1), Some(10));
        assert_eq!(t.alloc_with(|n| n), Some(3), "freed numbers are not reused at once");
        assert_eq!(t.alloc_with(|n| n), Some(1));
        assert_eq!(t.alloc_with(|n| n), None, "number space exhausted");
        let mut u: Table<()> = Table::new(4, 6, 10);
        assert_eq!(u.alloc_lowest_with(|_| ()), Some(4));
        assert_eq!(u.alloc_lowest_with(|_| ()), Some(5));
        u.remove(4);
        assert_eq!(u.alloc_lowest_with(|_| ()), Some(4), "lowest free page again");
        assert_eq!(u.alloc_lowest_with(|_| ()), Some(6));
        assert_eq!(u.alloc_lowest_with(|_| ()), None);
        let mut l: Table<()> = Table::new(0, 100, 2);
        l.alloc_with(|_| ()).unwrap();
        l.alloc_with(|_| ()).unwrap();
        assert_eq!(l.alloc_with(|_| ()), None, "limit");
        l.clear();
        assert_eq!(l.alloc_with(|_| ()), Some(0));
    }
}
