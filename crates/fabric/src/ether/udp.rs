//! The `udp` medium: one Ethernet frame per UDP datagram, no header, no
//! FCS — QEMU's framing, so a vrnic port can be cabled to a QEMU NIC.
//!
//! QEMU `net/dgram.c` (`-netdev dgram,local.type=inet,...,remote.type=inet,...`):
//! `net_dgram_receive` sends the frame it is given with one
//! `sendto(fd, buf, size, 0, dest_addr, ...)`, and `net_dgram_send` hands
//! what one `recv(fd, buf, ...)` returned to `qemu_send_packet_async(.., buf,
//! size, ..)` unchanged; `-netdev socket,udp=..,localaddr=..` (`net/socket.c`)
//! does the same. Its multicast hub (`net_dgram_mcast_create`, also
//! `-netdev socket,mcast=`) binds the group address and port with
//! `SO_REUSEADDR`, joins the group (`IP_ADD_MEMBERSHIP` on `localaddr` or
//! any), sets `IP_MULTICAST_LOOP` so members on one host hear each other,
//! and `IP_MULTICAST_IF` when a local address is given.
//!
//! vrnic's hub member receives the same way, but sends from a second
//! socket bound to an ephemeral port so that its own frames, which the
//! loop brings back, are recognized by their source address and dropped.
//! (QEMU members send from the group port and hear themselves; the frames
//! they get back are theirs to ignore.)

use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;

use super::counters::EtherCounters;
use super::frame::Medium;
use crate::counters::bump;
use crate::route::Route;
use crate::Link;
use vrnic_sys::dgram::{bind_reuse_v4, set_multicast_if_v4};
use vrnic_sys::net::set_socket_buffers;

/// SO_RCVBUF/SO_SNDBUF of the medium's sockets: the kernel's default (~208
/// KiB) holds fewer frames than one RoCE congestion window of MTU-sized
/// packets; 8 MiB (16 as the kernel accounts) leaves the port's global
/// pause (`rx_buffer.rs`) the headroom of a sender that goes on for a
/// millisecond or more before it hears the PAUSE.
const SOCKET_BUFFER: usize = 8 << 20;

/// A UDP socket carrying frames to a peer or a multicast hub.
pub(crate) struct UdpMedium {
    /// Receives (and, point-to-point, sends).
    sock: UdpSocket,
    /// Multicast: the socket frames leave from.
    sender: Option<UdpSocket>,
    dest: SocketAddr,
    /// Point-to-point: the only sender accepted.
    peer: Option<SocketAddr>,
    /// Multicast: our sender's port and, when bound to one, address.
    own: Option<(u16, Option<Ipv4Addr>)>,
    counters: Arc<EtherCounters>,
}

impl UdpMedium {
    /// Point-to-point: bound to `local`, sending to (and accepting only) `remote`.
    pub(crate) fn unicast(
        local: SocketAddr,
        remote: SocketAddr,
        counters: Arc<EtherCounters>,
    ) -> io::Result<UdpMedium> {
        let sock = UdpSocket::bind(local)?;
        sock.set_nonblocking(true)?;
        set_socket_buffers(&sock, SOCKET_BUFFER);
        Ok(UdpMedium { sock, sender: None, dest: remote, peer: Some(remote), own: None, counters })
    }

    /// A member of the hub at `group`, over the interface with address
    /// `local` (any when `None`).
    pub(crate) fn multicast(
        group: SocketAddrV4,
        local: Option<Ipv4Addr>,
        counters: Arc<EtherCounters>,
    ) -> io::Result<UdpMedium> {
        let sock = bind_reuse_v4(group)?;
        set_socket_buffers(&sock, SOCKET_BUFFER);
        sock.join_multicast_v4(group.ip(), &local.unwrap_or(Ipv4Addr::UNSPECIFIED))?;
        sock.set_multicast_loop_v4(true)?;
        let sender = UdpSocket::bind(SocketAddrV4::new(local.unwrap_or(Ipv4Addr::UNSPECIFIED), 0))?;
        sender.set_nonblocking(true)?;
        set_socket_buffers(&sender, SOCKET_BUFFER);
        sender.set_multicast_loop_v4(true)?;
        if let Some(ip) = local {
            set_multicast_if_v4(&sender, ip)?;
        }
        let own = (sender.local_addr()?.port(), local);
        Ok(UdpMedium { sock, sender: Some(sender), dest: group.into(), peer: None, own: Some(own), counters })
    }

    /// The receiving socket's address.
    pub(crate) fn local_addr(&self) -> io::Result<SocketAddr> {
        self.sock.local_addr()
    }

    fn is_own(&self, from: &SocketAddr) -> bool {
        match (self.own, from) {
            (Some((port, ip)), SocketAddr::V4(f)) => f.port() == port && ip.is_none_or(|ip| *f.ip() == ip),
            _ => false,
        }
    }
}

impl Link for UdpMedium {
    fn transmit(&self, _route: Route, frame: &[u8]) {
        let s = self.sender.as_ref().unwrap_or(&self.sock);
        match s.send_to(frame, self.dest) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => bump(&self.counters.tx_full, 1),
            Err(_) => bump(&self.counters.tx_errors, 1),
        }
    }

    fn receive(&self, buf: &mut [u8], burst: usize, arrive: &mut dyn FnMut(Route, &mut [u8])) -> usize {
        let mut n = 0;
        while n < burst {
            match self.sock.recv_from(buf) {
                Ok((len, from)) => {
                    n += 1;
                    if self.peer.is_some_and(|p| p != from) {
                        bump(&self.counters.rx_foreign, 1);
                    } else if self.is_own(&from) {
                        bump(&self.counters.rx_own, 1);
                    } else {
                        arrive(0, &mut buf[..len]);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    // ICMP errors queued on the socket (e.g. port unreachable): one per read.
                    bump(&self.counters.rx_errors, 1);
                    n += 1;
                }
            }
        }
        n
    }
}

impl Medium for UdpMedium {
    fn fd(&self) -> Option<RawFd> {
        Some(self.sock.as_raw_fd())
    }
    fn carrier(&self) -> bool {
        true
    }
    fn backlog(&self) -> Option<vrnic_sys::net::SocketMemory> {
        vrnic_sys::net::socket_memory(self.sock.as_raw_fd())
    }
}
