//! The `tap` medium: a TAP interface (`IFF_TAP | IFF_NO_PI`), so the port
//! sits on whatever the host plugs the TAP into (a Linux bridge is the
//! switch). One `read` is one whole frame, one `write` sends one.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;

use super::counters::EtherCounters;
use super::frame::Medium;
use crate::counters::bump;
use crate::route::Route;
use crate::Link;

pub(crate) struct TapMedium {
    file: File,
    counters: Arc<EtherCounters>,
}

impl TapMedium {
    /// Creates the TAP `name` or attaches to it, and brings it up.
    pub(crate) fn open(name: &str, counters: Arc<EtherCounters>) -> io::Result<TapMedium> {
        let file = vrnic_sys::tap::open_tap(name)?;
        vrnic_sys::tap::set_up(name)?;
        Ok(TapMedium { file, counters })
    }
}

impl Link for TapMedium {
    fn transmit(&self, _route: Route, frame: &[u8]) {
        match (&self.file).write(frame) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => bump(&self.counters.tx_full, 1),
            Err(_) => bump(&self.counters.tx_errors, 1),
        }
    }

    fn receive(&self, buf: &mut [u8], burst: usize, arrive: &mut dyn FnMut(Route, &mut [u8])) -> usize {
        let mut n = 0;
        while n < burst {
            match (&self.file).read(buf) {
                Ok(len) => {
                    n += 1;
                    arrive(0, &mut buf[..len]);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    bump(&self.counters.rx_errors, 1);
                    break;
                }
            }
        }
        n
    }
}

impl Medium for TapMedium {
    fn fd(&self) -> Option<RawFd> {
        Some(self.file.as_raw_fd())
    }
    fn carrier(&self) -> bool {
        true
    }
}
