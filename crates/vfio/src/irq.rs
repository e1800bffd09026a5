//! Interrupt delivery: the eventfds QEMU hands over with SET_IRQS, and the
//! `raise(vector)` API the rest of the device uses.
//!
//! QEMU owns the MSI-X table and PBA. It tells the server which vectors are
//! live by assigning eventfds (and removes them with a SET_IRQS that carries
//! no fd, i.e. fd -1), and may mask/unmask through SET_IRQS actions. A vector
//! raised while masked or without an eventfd is latched pending and delivered
//! when it is unmasked or gets an eventfd, as the PBA would on hardware.

use std::os::fd::{FromRawFd, IntoRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use thiserror::Error;
use vmm_sys_util::eventfd::EventFd;

use super::uapi::*;

/// Takes a descriptor that came with SET_IRQS as the eventfd it should be
/// (one that is not only fails its writes: the vector stays pending).
pub fn eventfd_from(fd: OwnedFd) -> EventFd {
    // SAFETY: ownership of an open descriptor moves from the OwnedFd to the
    // EventFd, which closes it on drop; nothing else holds it.
    unsafe { EventFd::from_raw_fd(fd.into_raw_fd()) }
}

/// Errors of SET_IRQS and raise().
#[derive(Debug, Error, PartialEq, Eq)]
pub enum IrqError {
    #[error("irq index {0} does not exist")]
    BadIndex(u32),
    #[error("irq range {start}+{count} exceeds {max}")]
    BadRange { start: u32, count: u32, max: u32 },
    #[error("invalid SET_IRQS flags {0:#x}")]
    BadFlags(u32),
    #[error("{fds} fds for {count} vectors")]
    TooManyFds { fds: usize, count: u32 },
    #[error("bool data missing")]
    MissingData,
}

impl IrqError {
    pub fn errno(&self) -> i32 {
        libc::EINVAL
    }
}

/// What happened to one raise().
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Raised {
    /// The eventfd was signalled.
    Delivered,
    /// Latched pending (masked, or no eventfd assigned yet).
    Pending,
}

#[derive(Default)]
struct Vector {
    fd: Option<EventFd>,
    masked: bool,
    pending: bool,
}

impl Vector {
    /// Delivers a pending message if the vector can take it now.
    fn flush(&mut self, delivered: &AtomicU64) {
        if self.pending && !self.masked {
            if let Some(fd) = &self.fd {
                if fd.write(1).is_ok() {
                    self.pending = false;
                    delivered.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }
}

struct IrqState {
    /// One table per vfio irq index (INTx, MSI, MSI-X, ERR, REQ).
    tables: [Vec<Vector>; VFIO_PCI_NUM_IRQS as usize],
}

/// Counters exported to the control socket.
#[derive(Default, Debug, serde::Serialize)]
pub struct IrqStats {
    pub raised: AtomicU64,
    pub delivered: AtomicU64,
    pub set_irqs: AtomicU64,
}

/// The interrupt lines of the device, shared by all threads.
pub struct Interrupts {
    counts: [u32; VFIO_PCI_NUM_IRQS as usize],
    state: Mutex<IrqState>,
    pub stats: IrqStats,
}

impl Interrupts {
    /// `msix` vectors of MSI-X, plus one ERR and one REQ line; no INTx, no MSI.
    pub fn new(msix: u32) -> Interrupts {
        let counts = [0, 0, msix, 1, 1];
        let tables = counts.map(|n| (0..n).map(|_| Vector::default()).collect());
        Interrupts { counts, state: Mutex::new(IrqState { tables }), stats: IrqStats::default() }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, IrqState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Number of vectors of irq `index` (GET_IRQ_INFO.count).
    pub fn count(&self, index: u32) -> Option<u32> {
        self.counts.get(index as usize).copied()
    }

    /// GET_IRQ_INFO flags for `index`.
    pub fn info_flags(&self, index: u32) -> Option<u32> {
        Some(match index {
            VFIO_PCI_INTX_IRQ_INDEX => VFIO_IRQ_INFO_EVENTFD | VFIO_IRQ_INFO_MASKABLE | VFIO_IRQ_INFO_AUTOMASKED,
            VFIO_PCI_MSI_IRQ_INDEX => VFIO_IRQ_INFO_EVENTFD | VFIO_IRQ_INFO_NORESIZE,
            // MSI-X vectors can be added one at a time (dynamic allocation),
            // so no NORESIZE; mask state lives in QEMU's emulated table.
            VFIO_PCI_MSIX_IRQ_INDEX => VFIO_IRQ_INFO_EVENTFD,
            VFIO_PCI_ERR_IRQ_INDEX | VFIO_PCI_REQ_IRQ_INDEX => VFIO_IRQ_INFO_EVENTFD,
            _ => return None,
        })
    }

    /// Applies one SET_IRQS. `fds` are the descriptors that came with the
    /// message; `data` is what followed the fixed arguments (bools).
    pub fn set_irqs(
        &self,
        flags: u32,
        index: u32,
        start: u32,
        count: u32,
        mut fds: Vec<EventFd>,
        data: &[u8],
    ) -> Result<(), IrqError> {
        let max = self.count(index).ok_or(IrqError::BadIndex(index))?;
        let dtype = flags & VFIO_IRQ_SET_DATA_TYPE_MASK;
        let action = flags & VFIO_IRQ_SET_ACTION_TYPE_MASK;
        if dtype.count_ones() != 1
            || action.count_ones() != 1
            || flags & !(VFIO_IRQ_SET_DATA_TYPE_MASK | VFIO_IRQ_SET_ACTION_TYPE_MASK) != 0
        {
            return Err(IrqError::BadFlags(flags));
        }
        self.stats.set_irqs.fetch_add(1, Ordering::Relaxed);
        let mut st = self.lock();
        let table = &mut st.tables[index as usize];
        // DATA_NONE | TRIGGER with count 0: disable every vector of the index.
        if dtype == VFIO_IRQ_SET_DATA_NONE && action == VFIO_IRQ_SET_ACTION_TRIGGER && count == 0 {
            for v in table.iter_mut() {
                *v = Vector::default();
            }
            return Ok(());
        }
        let end = start.checked_add(count).filter(|&e| e <= max).ok_or(IrqError::BadRange { start, count, max })?;
        let range = start as usize..end as usize;
        let bools: Option<&[u8]> = if dtype == VFIO_IRQ_SET_DATA_BOOL {
            Some(data.get(..count as usize).ok_or(IrqError::MissingData)?)
        } else {
            None
        };
        let sel = |i: usize| bools.map(|b| b[i - start as usize] != 0).unwrap_or(true);
        let delivered = &self.stats.delivered;
        match (action, dtype) {
            (VFIO_IRQ_SET_ACTION_TRIGGER, VFIO_IRQ_SET_DATA_EVENTFD) => {
                if fds.len() > count as usize {
                    return Err(IrqError::TooManyFds { fds: fds.len(), count });
                }
                // Vectors beyond the fds sent are de-assigned (fd -1).
                let mut it = fds.drain(..);
                for v in table[range].iter_mut() {
                    v.fd = it.next();
                    v.flush(delivered);
                }
            }
            (VFIO_IRQ_SET_ACTION_TRIGGER, _) => {
                for i in range {
                    if sel(i) {
                        table[i].pending = true;
                        table[i].flush(delivered);
                    }
                }
            }
            (VFIO_IRQ_SET_ACTION_MASK, VFIO_IRQ_SET_DATA_EVENTFD)
            | (VFIO_IRQ_SET_ACTION_UNMASK, VFIO_IRQ_SET_DATA_EVENTFD) => {
                // Resample/unmask eventfds are an INTx concept; we have no INTx.
                return Err(IrqError::BadFlags(flags));
            }
            (VFIO_IRQ_SET_ACTION_MASK, _) => {
                for i in range {
                    if sel(i) {
                        table[i].masked = true;
                    }
                }
            }
            (VFIO_IRQ_SET_ACTION_UNMASK, _) => {
                for i in range {
                    if sel(i) {
                        table[i].masked = false;
                        table[i].flush(delivered);
                    }
                }
            }
            _ => return Err(IrqError::BadFlags(flags)),
        }
        Ok(())
    }

    /// Raises MSI-X `vector`.
    pub fn raise(&self, vector: u16) -> Result<Raised, IrqError> {
        self.raise_index(VFIO_PCI_MSIX_IRQ_INDEX, vector as u32)
    }

    /// Raises vector `vector` of irq `index` (ERR/REQ included).
    pub fn raise_index(&self, index: u32, vector: u32) -> Result<Raised, IrqError> {
        let max = self.count(index).ok_or(IrqError::BadIndex(index))?;
        if vector >= max {
            return Err(IrqError::BadRange { start: vector, count: 1, max });
        }
        self.stats.raised.fetch_add(1, Ordering::Relaxed);
        let mut st = self.lock();
        let v = &mut st.tables[index as usize][vector as usize];
        v.pending = true;
        v.flush(&self.stats.delivered);
        Ok(if v.pending { Raised::Pending } else { Raised::Delivered })
    }

    /// Whether MSI-X `vector` is latched pending (the PBA bit).
    pub fn pending(&self, vector: u16) -> bool {
        self.lock().tables[VFIO_PCI_MSIX_IRQ_INDEX as usize].get(vector as usize).is_some_and(|v| v.pending)
    }

    /// Whether MSI-X `vector` has an eventfd.
    pub fn has_eventfd(&self, vector: u16) -> bool {
        self.lock().tables[VFIO_PCI_MSIX_IRQ_INDEX as usize].get(vector as usize).is_some_and(|v| v.fd.is_some())
    }

    /// Drops every eventfd and pending/mask state (disconnect).
    pub fn clear(&self) {
        let mut st = self.lock();
        for t in st.tables.iter_mut() {
            for v in t.iter_mut() {
                *v = Vector::default();
            }
        }
    }

    /// Device reset: pending messages are discarded, eventfds stay (QEMU
    /// re-issues SET_IRQS when the guest re-enables MSI-X).
    pub fn reset(&self) {
        let mut st = self.lock();
        for t in st.tables.iter_mut() {
            for v in t.iter_mut() {
                v.pending = false;
                v.masked = false;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eventfd() -> std::io::Result<EventFd> {
        EventFd::new(libc::EFD_CLOEXEC | libc::EFD_NONBLOCK)
    }

    const EFD_TRIGGER: u32 = VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER;

    #[test]
    fn raise_delivers_and_latches() {
        let irq = Interrupts::new(64);
        let e = eventfd().unwrap();
        // Before an eventfd exists: pending.
        assert_eq!(irq.raise(3), Ok(Raised::Pending));
        assert!(irq.pending(3));
        irq.set_irqs(EFD_TRIGGER, VFIO_PCI_MSIX_IRQ_INDEX, 3, 1, vec![e.try_clone().unwrap()], &[]).unwrap();
        // Assigning the fd delivers the pending message.
        assert_eq!(e.read().unwrap_or(0), 1);
        assert_eq!(irq.raise(3), Ok(Raised::Delivered));
        assert_eq!(e.read().unwrap_or(0), 1);
        // Masked: pending until unmasked.
        irq.set_irqs(VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_MASK, VFIO_PCI_MSIX_IRQ_INDEX, 3, 1, vec![], &[])
            .unwrap();
        assert_eq!(irq.raise(3), Ok(Raised::Pending));
        assert_eq!(e.read().unwrap_or(0), 0);
        irq.set_irqs(VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_UNMASK, VFIO_PCI_MSIX_IRQ_INDEX, 3, 1, vec![], &[])
            .unwrap();
        assert_eq!(e.read().unwrap_or(0), 1);
        assert!(irq.raise(64).is_err());
    }

    #[test]
    fn fd_minus_one_and_short_fd_lists() {
        let irq = Interrupts::new(8);
        let a = eventfd().unwrap();
        irq.set_irqs(EFD_TRIGGER, VFIO_PCI_MSIX_IRQ_INDEX, 0, 4, vec![a.try_clone().unwrap()], &[]).unwrap();
        assert!(irq.has_eventfd(0));
        assert!(!irq.has_eventfd(1));
        // count larger than fds sent, no fd at all: de-assign (fd -1).
        irq.set_irqs(EFD_TRIGGER, VFIO_PCI_MSIX_IRQ_INDEX, 0, 4, vec![], &[]).unwrap();
        assert!(!irq.has_eventfd(0));
        assert_eq!(irq.raise(0), Ok(Raised::Pending));
        let b = eventfd().unwrap();
        let c = eventfd().unwrap();
        assert_eq!(
            irq.set_irqs(EFD_TRIGGER, VFIO_PCI_MSIX_IRQ_INDEX, 0, 1, vec![b, c], &[]),
            Err(IrqError::TooManyFds { fds: 2, count: 1 })
        );
        assert!(matches!(
            irq.set_irqs(EFD_TRIGGER, VFIO_PCI_MSIX_IRQ_INDEX, 7, 2, vec![], &[]),
            Err(IrqError::BadRange { .. })
        ));
        assert!(matches!(irq.set_irqs(EFD_TRIGGER, 9, 0, 1, vec![], &[]), Err(IrqError::BadIndex(9))));
        assert!(matches!(
            irq.set_irqs(0x3 | VFIO_IRQ_SET_ACTION_TRIGGER, 2, 0, 1, vec![], &[]),
            Err(IrqError::BadFlags(_))
        ));
    }

    #[test]
    fn bool_trigger_and_disable_all() {
        let irq = Interrupts::new(4);
        let a = eventfd().unwrap();
        let b = eventfd().unwrap();
        irq.set_irqs(
            EFD_TRIGGER,
            VFIO_PCI_MSIX_IRQ_INDEX,
            0,
            2,
            vec![a.try_clone().unwrap(), b.try_clone().unwrap()],
            &[],
        )
        .unwrap();
        irq.set_irqs(
            VFIO_IRQ_SET_DATA_BOOL | VFIO_IRQ_SET_ACTION_TRIGGER,
            VFIO_PCI_MSIX_IRQ_INDEX,
            0,
            2,
            vec![],
            &[0, 1],
        )
        .unwrap();
        assert_eq!(a.read().unwrap_or(0), 0);
        assert_eq!(b.read().unwrap_or(0), 1);
        assert_eq!(
            irq.set_irqs(
                VFIO_IRQ_SET_DATA_BOOL | VFIO_IRQ_SET_ACTION_TRIGGER,
                VFIO_PCI_MSIX_IRQ_INDEX,
                0,
                2,
                vec![],
                &[1]
            ),
            Err(IrqError::MissingData)
        );
        irq.set_irqs(VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER, VFIO_PCI_MSIX_IRQ_INDEX, 0, 0, vec![], &[])
            .unwrap();
        assert!(!irq.has_eventfd(0) && !irq.has_eventfd(1));
    }

    #[test]
    fn err_and_req_lines() {
        let irq = Interrupts::new(4);
        let e = eventfd().unwrap();
        irq.set_irqs(EFD_TRIGGER, VFIO_PCI_ERR_IRQ_INDEX, 0, 1, vec![e.try_clone().unwrap()], &[]).unwrap();
        assert_eq!(irq.raise_index(VFIO_PCI_ERR_IRQ_INDEX, 0), Ok(Raised::Delivered));
        assert_eq!(e.read().unwrap_or(0), 1);
        assert!(irq.raise_index(VFIO_PCI_INTX_IRQ_INDEX, 0).is_err());
    }
}
