//! Reused packet buffers.

use std::sync::Mutex;

/// Delivered packets' buffers, reused by the next sends that queue a copy
/// (loopback, an in-process network); at most `keep` are kept.
pub(super) struct BufPool {
    free: Mutex<Vec<Vec<u8>>>,
    keep: usize,
}

impl BufPool {
    pub(super) fn new(keep: usize) -> BufPool {
        BufPool { free: Mutex::new(Vec::new()), keep }
    }

    /// A buffer (reused if one is free) holding a copy of `bytes`.
    pub(super) fn copy_of(&self, bytes: &[u8]) -> Vec<u8> {
        let mut b = self.free.lock().ok().and_then(|mut f| f.pop()).unwrap_or_default();
        b.clear();
        b.extend_from_slice(bytes);
        b
    }

    /// Takes back a delivered packet's buffer.
    pub(super) fn give(&self, b: Vec<u8>) {
        if let Ok(mut f) = self.free.lock() {
            if f.len() < self.keep {
                f.push(b);
            }
        }
    }
}

/// A sender's reusable frame buffer (no allocation per packet). A sender
/// that finds it in use (a nested send, another thread) builds in a fresh one.
#[derive(Default)]
pub(crate) struct Scratch(Mutex<Vec<u8>>);

impl Scratch {
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
        match self.0.try_lock() {
            Ok(mut v) => f(&mut v),
            Err(_) => f(&mut Vec::new()),
        }
    }
}
