//! The packet path of a port and the networks it runs over.
//!
//! [`Port`] is what every packet goes through, whatever the network: route
//! lookup ([`Routing`]: this InfiniBand port routes by DLID), GRH framing
//! and the DGID check against the port's GID table, ICRC fill and check,
//! pcap capture, fault injection and counters. [`UdpFabric`] carries a port's packets over a UDP
//! socket (RoCEv2 framing: BTH onward is the UDP payload), with loopback to
//! the same instance through the same path; tokio runs the socket side and
//! the timers of the [`PacketHandler`]. [`InProcNet`] joins ports inside one
//! process without sockets, delivering when a test pumps it.
//!
//! The ICRC of a packet without a GRH covers a canonical IPv4/UDP header
//! (see [`PseudoHeader::canonical`]) built from the two endpoints' fabric
//! addresses (IPv4-mapped), which is exactly the header the pcap frames
//! carry; a packet with a GRH travels in the envelope [`crate::wire::grh`]
//! describes, its ICRC and pcap frame those of RoCEv2 over IPv6.

use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::io::{self, BufWriter};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use serde::{Deserialize, Serialize};

use crate::wire::bth::{self, Opcode};
use crate::wire::clock::{Clock, MonotonicClock};

use self::counters::{bump, PortCounters};
use self::fault::{FaultConfig, Injector};
use crate::wire::grh;
use crate::wire::icrc;
use crate::wire::ip::{PseudoHeader, ROCEV2_PORT};
use self::pcap::PcapWriter;

pub mod counters;
pub mod fault;
#[cfg(test)]
mod grh_tests;
pub mod pcap;

/// Where the engine sends a packet: the DLID, and the GRH (SGID and DGID
/// filled in) when the address vector is global.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Dest {
    pub lid: u16,
    pub grh: Option<grh::Repr>,
}

/// How a port finds the peer a packet goes to: a property of the port's
/// link layer. An InfiniBand port routes by the DLID; the GRH, if any,
/// travels with the packet and the receiver checks its DGID. (A RoCE port
/// would route by the DGID instead; vrnic has none yet.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Routing {
    #[default]
    Lid,
}

/// A port's identity on the fabric: its LID (what packets are routed by)
/// and its fabric address (IPv4-mapped; the IPv4 header the ICRC and pcap
/// frames of packets without a GRH use). The GIDs the guest sees are the
/// port's GID table ([`Port::set_gid_table`]), not this address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Endpoint {
    pub lid: u16,
    pub gid: [u8; 16],
}

impl Endpoint {
    /// An endpoint whose GID is the IPv4-mapped `ip`.
    pub fn v4(lid: u16, ip: Ipv4Addr) -> Endpoint {
        Endpoint { lid, gid: ip.to_ipv6_mapped().octets() }
    }
    /// The IPv4 address RoCEv2 framing uses (0.0.0.0 for a GID that is not IPv4-mapped).
    pub fn ip(&self) -> Ipv4Addr {
        Ipv6Addr::from(self.gid).to_ipv4_mapped().unwrap_or(Ipv4Addr::UNSPECIFIED)
    }
}

/// What the receiver learns about a packet besides its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RxMeta {
    pub src: Endpoint,
    /// The port sent it to itself (loopback inside this device).
    pub local: bool,
    /// The packet's GRH, if it carried one (its DGID is one of this port's GIDs).
    pub grh: Option<grh::Repr>,
}

/// Where the engine's packets go. `pkt` is BTH through a 4-byte ICRC slot;
/// the sink fills the ICRC (and frames the GRH `dest` carries). Never
/// blocks; a packet that cannot be sent is counted and lost (the engine's
/// reliability recovers it).
pub trait PacketSink: Send + Sync {
    fn send(&self, dest: &Dest, pkt: &mut [u8]);
    /// The port's GID at `index` (a GRH's SGID), if the table has one.
    fn gid(&self, _index: u8) -> Option<[u8; 16]> {
        None
    }
}

/// Who consumes a port's received packets (the engine).
pub trait PacketHandler: Send + Sync {
    /// One packet that passed the ICRC check (BTH through ICRC).
    fn receive(&self, meta: &RxMeta, pkt: &[u8]);
    /// End of a burst of receives: coalesced ACKs go out now.
    fn flush(&self) {}
    /// Runs timers due at `now_ns`; returns the next deadline.
    fn poll(&self, _now_ns: u64) -> Option<u64> {
        None
    }
}

/// A configured peer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct PeerConfig {
    pub lid: Option<u16>,
    /// The peer's fabric address (`::ffff:a.b.c.d` or `a.b.c.d`; default
    /// its socket's IPv4 address): the IPv4 header of its packets' ICRC and
    /// pcap frames. Routing is by `lid`.
    pub gid: Option<String>,
    /// The peer's fabric socket, `host:port`.
    pub addr: String,
}

/// The `[fabric]` section of the config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FabricConfig {
    /// UDP port of this instance's socket.
    pub port: u16,
    /// Address the socket binds.
    pub bind: String,
    /// This port's GID (`::ffff:a.b.c.d`); default the IPv4-mapped bind
    /// address, or 127.0.0.1 when binding 0.0.0.0.
    pub gid: Option<String>,
    pub peers: Vec<PeerConfig>,
    pub faults: FaultConfig,
    /// Write every sent and received packet here.
    pub pcap: Option<PathBuf>,
    /// Cap on the pcap file, bytes; later packets are counted in
    /// `pcap_dropped` instead of written.
    pub pcap_max_bytes: u64,
    /// SO_SNDBUF / SO_RCVBUF, bytes.
    pub socket_buffer: usize,
    /// Deliver traffic to this port's own QPs on the doorbell's thread
    /// ([`LoopbackPump`]) rather than through the worker's wake-up.
    pub inline_loopback: bool,
}

impl Default for FabricConfig {
    fn default() -> Self {
        FabricConfig {
            port: ROCEV2_PORT,
            bind: "0.0.0.0".into(),
            gid: None,
            peers: Vec::new(),
            faults: FaultConfig::default(),
            pcap: None,
            pcap_max_bytes: self::pcap::DEFAULT_MAX_BYTES,
            socket_buffer: 4 << 20,
            inline_loopback: true,
        }
    }
}

/// Parses a GID: an IPv6 literal or an IPv4 address (mapped).
pub fn parse_gid(s: &str) -> Result<[u8; 16], String> {
    match s.parse::<IpAddr>() {
        Ok(IpAddr::V6(a)) => Ok(a.octets()),
        Ok(IpAddr::V4(a)) => Ok(a.to_ipv6_mapped().octets()),
        Err(_) => Err(format!("bad GID {s:?}")),
    }
}

impl FabricConfig {
    pub fn validate(&self) -> Result<(), String> {
        self.bind.parse::<IpAddr>().map_err(|_| format!("bad fabric bind address {:?}", self.bind))?;
        if let Some(g) = &self.gid {
            parse_gid(g)?;
        }
        for p in &self.peers {
            p.addr.parse::<SocketAddr>().map_err(|_| format!("bad peer address {:?}", p.addr))?;
            if let Some(g) = &p.gid {
                parse_gid(g)?;
            }
            if p.lid.is_none_or(|l| l == 0) {
                return Err(format!("peer {} needs a lid (this InfiniBand port routes by LID)", p.addr));
            }
        }
        self.faults.tx.validate()?;
        self.faults.rx.validate()
    }

    /// This port's endpoint with LID `lid`.
    pub fn local_endpoint(&self, lid: u16) -> Result<Endpoint, String> {
        let gid = match &self.gid {
            Some(g) => parse_gid(g)?,
            None => match self.bind.parse::<IpAddr>() {
                Ok(IpAddr::V4(a)) if !a.is_unspecified() => a.to_ipv6_mapped().octets(),
                _ => Ipv4Addr::LOCALHOST.to_ipv6_mapped().octets(),
            },
        };
        Ok(Endpoint { lid, gid })
    }

    fn peers(&self) -> Result<Vec<Peer>, String> {
        self.peers
            .iter()
            .map(|p| {
                let addr: SocketAddr = p.addr.parse().map_err(|_| format!("bad peer address {:?}", p.addr))?;
                let gid = match &p.gid {
                    Some(g) => parse_gid(g)?,
                    None => match addr.ip() {
                        IpAddr::V4(a) => a.to_ipv6_mapped().octets(),
                        IpAddr::V6(a) => a.octets(),
                    },
                };
                Ok(Peer { ep: Endpoint { lid: p.lid.unwrap_or(0), gid }, udp: Some(addr), index: 0 })
            })
            .collect()
    }
}

/// A peer of a port: its endpoint and how to reach it.
#[derive(Debug, Clone)]
pub struct Peer {
    pub ep: Endpoint,
    pub udp: Option<SocketAddr>,
    /// In-process networks: the peer's port number.
    pub index: usize,
}

/// Route tag of packets that stay in this instance.
pub const LOCAL: u32 = u32::MAX;

thread_local! {
    /// Scratch for framing packets with a GRH ([`Port::transmit`]).
    static FRAME: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// The packet path of one port.
pub struct Port {
    local: Endpoint,
    peers: Vec<Peer>,
    by_udp: HashMap<SocketAddr, usize>,
    pub counters: Arc<PortCounters>,
    faults_on: AtomicBool,
    tx_faults: Mutex<Injector>,
    rx_faults: Mutex<Injector>,
    pcap: Option<Mutex<PcapWriter<BufWriter<File>>>>,
    clock: Arc<dyn Clock>,
    /// Every peer is in this process ([`InProcNet`]): no packet meets a wire.
    in_process: bool,
    routing: Routing,
    /// The GID table the guest sees (set once, before traffic): SGIDs of
    /// sent GRHs, and the DGIDs received GRHs must carry.
    gids: std::sync::OnceLock<Vec<[u8; 16]>>,
}

impl Port {
    /// `pcap`: capture file and its byte cap.
    pub fn new(
        local: Endpoint,
        peers: Vec<Peer>,
        faults: &FaultConfig,
        pcap: Option<(&std::path::Path, u64)>,
        clock: Arc<dyn Clock>,
    ) -> io::Result<Port> {
        let pcap = match pcap {
            Some((p, max)) => Some(Mutex::new(PcapWriter::with_limit(BufWriter::new(File::create(p)?), max)?)),
            None => None,
        };
        let by_udp = peers.iter().enumerate().filter_map(|(i, p)| p.udp.map(|a| (a, i))).collect();
        Ok(Port {
            local,
            peers,
            by_udp,
            counters: Arc::new(PortCounters::default()),
            faults_on: AtomicBool::new(!faults.tx.is_none() || !faults.rx.is_none()),
            tx_faults: Mutex::new(Injector::new(faults.tx.clone(), faults.seed)),
            rx_faults: Mutex::new(Injector::new(faults.rx.clone(), faults.seed ^ 0x7878_7878)),
            pcap,
            clock,
            in_process: false,
            routing: Routing::Lid,
            gids: std::sync::OnceLock::new(),
        })
    }

    /// Sets the port's GID table (index 0 first); only the first call counts.
    pub fn set_gid_table(&self, gids: Vec<[u8; 16]>) -> bool {
        self.gids.set(gids).is_ok()
    }

    /// The GID at `index`.
    pub fn gid(&self, index: u8) -> Option<[u8; 16]> {
        self.gids.get().and_then(|t| t.get(index as usize).copied())
    }

    fn owns_gid(&self, gid: &[u8; 16]) -> bool {
        self.gids.get().is_some_and(|t| t.contains(gid))
    }

    /// Whether a packet on this route skips the ICRC: it never meets a wire
    /// (loopback to this port, or a port of an [`InProcNet`]) and nothing
    /// could see or damage it (no pcap, no fault injection). The ICRC
    /// protects bytes on a wire; on a wire, in a capture or under injected
    /// corruption every packet carries and checks it.
    fn icrc_exempt(&self, local_route: bool) -> bool {
        (local_route || self.in_process) && self.pcap.is_none() && !self.faults_on.load(Ordering::Relaxed)
    }

    pub fn local(&self) -> Endpoint {
        self.local
    }

    pub fn peers(&self) -> &[Peer] {
        &self.peers
    }

    /// The route tag for `dest`: [`LOCAL`] or a peer index.
    pub fn resolve(&self, dest: &Dest) -> Option<u32> {
        match self.routing {
            Routing::Lid if dest.lid == self.local.lid => Some(LOCAL),
            Routing::Lid => self.peers.iter().position(|p| p.ep.lid == dest.lid && dest.lid != 0).map(|i| i as u32),
        }
    }

    fn endpoint_of(&self, tag: u32) -> Endpoint {
        if tag == LOCAL {
            self.local
        } else {
            self.peers[tag as usize].ep
        }
    }

    /// The peer a datagram from `addr` came from.
    pub fn peer_by_udp(&self, addr: &SocketAddr) -> Option<&Peer> {
        self.by_udp.get(addr).map(|&i| &self.peers[i])
    }

    /// Captures a datagram as the frame it stands for: IPv4 around a
    /// packet without GRH, IPv6 (from the GRH) around one with.
    fn capture(&self, src: Ipv4Addr, dst: Ipv4Addr, datagram: &[u8]) {
        if let Some(p) = &self.pcap {
            let (g, pkt) = grh::unframe(datagram).unwrap_or((None, datagram));
            let dqp = bth::Packet::new_checked(pkt).map(|b| b.dest_qp()).unwrap_or(0);
            if let Ok(mut w) = p.lock() {
                let r = match g {
                    Some(g) => w.write_roce6(&g.ipv6_udp(dqp, pkt.len()), pkt),
                    None => w.write_roce(&PseudoHeader::canonical(src, dst, dqp, pkt.len()), pkt),
                };
                if let Ok(false) = r {
                    bump(&self.counters.pcap_dropped, 1);
                }
            }
        }
    }

    /// Flushes the pcap file.
    pub fn flush_pcap(&self) {
        if let Some(p) = &self.pcap {
            if let Ok(mut w) = p.lock() {
                let _ = w.flush();
            }
        }
    }

    /// Sends `pkt`: fills the ICRC, runs the tx faults, counts and captures
    /// what leaves, and calls `out(route, bytes)` for each packet leaving.
    pub fn transmit(&self, dest: &Dest, pkt: &mut [u8], out: &mut dyn FnMut(u32, &[u8])) {
        let Some(tag) = self.resolve(dest) else {
            bump(&self.counters.tx_no_route, 1);
            return;
        };
        let Ok(b) = bth::Packet::new_checked(&*pkt) else {
            bump(&self.counters.tx_errors, 1);
            return;
        };
        let dqp = b.dest_qp();
        let cnp = pkt[0] == Opcode::CNP.0;
        let has_grh = dest.grh.is_some();
        if !self.icrc_exempt(tag == LOCAL) {
            match &dest.grh {
                Some(g) => grh::fill_icrc(g, pkt),
                None => icrc::fill(&PseudoHeader::canonical(self.local.ip(), self.endpoint_of(tag).ip(), dqp, pkt.len()), pkt),
            }
        }
        // The envelope + GRH + packet, built in this thread's scratch buffer
        // (taken, not borrowed: a nested send would just get a fresh one).
        let mut framed = if dest.grh.is_some() { FRAME.with(|f| f.take()) } else { Vec::new() };
        let pkt: &mut [u8] = match &dest.grh {
            Some(g) => {
                grh::frame(g, pkt, &mut framed);
                &mut framed
            }
            None => pkt,
        };
        let mut leave = |tag: u32, bytes: &[u8]| {
            bump(&self.counters.tx_packets, 1);
            bump(&self.counters.tx_bytes, bytes.len() as u64);
            if has_grh {
                bump(&self.counters.tx_grh_packets, 1);
            }
            if cnp {
                bump(&self.counters.cnp_sent, 1);
            }
            self.capture(self.local.ip(), self.endpoint_of(tag).ip(), bytes);
            out(tag, bytes);
        };
        if self.faults_on.load(Ordering::Relaxed) {
            let now = self.clock.now_ns();
            if let Ok(mut f) = self.tx_faults.lock() {
                f.process(tag, pkt, now, &self.counters, &mut leave);
            }
        } else {
            leave(tag, pkt);
        }
        if dest.grh.is_some() {
            FRAME.with(|f| f.set(framed));
        }
    }

    /// Receives `pkt` from `src`: captures it (unless it is loopback, already
    /// captured when sent), runs the rx faults, checks the ICRC (a mismatch
    /// is counted and dropped silently) and calls `deliver` for what passes.
    pub fn accept(&self, src: Endpoint, pkt: &mut [u8], deliver: &mut dyn FnMut(&RxMeta, &[u8])) {
        if src != self.local {
            self.capture(src.ip(), self.local.ip(), pkt);
        }
        let meta = RxMeta { src, local: src == self.local, grh: None };
        let mut check = |_tag: u32, bytes: &[u8]| self.check_and_deliver(&meta, bytes, deliver);
        if self.faults_on.load(Ordering::Relaxed) {
            let now = self.clock.now_ns();
            // Remember the source in the tag: LOCAL, or the peer index.
            let tag = if src == self.local { LOCAL } else { self.peers.iter().position(|p| p.ep == src).map(|i| i as u32).unwrap_or(LOCAL - 1) };
            let mut held_check = |t: u32, bytes: &[u8]| {
                let s = if t == tag { src } else if t == LOCAL { self.local } else { self.peers.get(t as usize).map(|p| p.ep).unwrap_or(src) };
                self.check_and_deliver(&RxMeta { src: s, local: s == self.local, grh: None }, bytes, deliver)
            };
            if let Ok(mut f) = self.rx_faults.lock() {
                f.process(tag, pkt, now, &self.counters, &mut held_check);
            }
        } else {
            check(0, pkt);
        }
    }

    /// Unframes a datagram, checks its ICRC, then (with a GRH) its DGID
    /// against the GID table, and hands BTH onward to `deliver`.
    fn check_and_deliver(&self, meta: &RxMeta, datagram: &[u8], deliver: &mut dyn FnMut(&RxMeta, &[u8])) {
        let Ok((g, bytes)) = grh::unframe(datagram) else {
            bump(&self.counters.rx_malformed, 1);
            return;
        };
        let Ok(b) = bth::Packet::new_checked(bytes) else {
            bump(&self.counters.rx_malformed, 1);
            return;
        };
        if bytes.len() < icrc::LEN + bth::field::HEADER_LEN {
            bump(&self.counters.rx_malformed, 1);
            return;
        }
        if !self.icrc_exempt(meta.src == self.local) {
            let ok = match &g {
                Some(g) => grh::verify_icrc(g, bytes),
                None => icrc::verify(&PseudoHeader::canonical(meta.src.ip(), self.local.ip(), b.dest_qp(), bytes.len()), bytes),
            };
            if ok.is_err() {
                bump(&self.counters.rx_icrc_errors, 1);
                return;
            }
        }
        if let Some(g) = &g {
            if !self.owns_gid(&g.dgid) {
                bump(&self.counters.rx_dgid_mismatch, 1);
                return;
            }
        }
        bump(&self.counters.rx_packets, 1);
        bump(&self.counters.rx_bytes, datagram.len() as u64);
        if g.is_some() {
            bump(&self.counters.rx_grh_packets, 1);
        }
        if bytes[0] == Opcode::CNP.0 {
            bump(&self.counters.cnp_received, 1);
        }
        deliver(&RxMeta { grh: g, ..*meta }, bytes);
    }

    /// Releases held (delayed/reordered) packets due at `now_ns`.
    pub fn release_due(&self, out: &mut dyn FnMut(u32, &[u8]), deliver: &mut dyn FnMut(&RxMeta, &[u8])) {
        if !self.faults_on.load(Ordering::Relaxed) {
            return;
        }
        let now = self.clock.now_ns();
        if let Ok(mut f) = self.tx_faults.lock() {
            let mut leave = |tag: u32, bytes: &[u8]| {
                bump(&self.counters.tx_packets, 1);
                bump(&self.counters.tx_bytes, bytes.len() as u64);
                self.capture(self.local.ip(), self.endpoint_of(tag).ip(), bytes);
                out(tag, bytes);
            };
            f.release(now, &mut leave);
        }
        if let Ok(mut f) = self.rx_faults.lock() {
            let mut d = |t: u32, bytes: &[u8]| {
                let s = if t == LOCAL { self.local } else { self.peers.get(t as usize).map(|p| p.ep).unwrap_or(self.local) };
                self.check_and_deliver(&RxMeta { src: s, local: t == LOCAL, grh: None }, bytes, deliver)
            };
            f.release(now, &mut d);
        }
    }

    /// When the next held packet falls due.
    pub fn next_due(&self) -> Option<u64> {
        if !self.faults_on.load(Ordering::Relaxed) {
            return None;
        }
        let a = self.tx_faults.lock().ok().and_then(|f| f.next_due());
        let b = self.rx_faults.lock().ok().and_then(|f| f.next_due());
        match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// Reads one datagram, or one GRO aggregate of equal-sized datagrams from
/// one sender, without blocking: (length, sender, segment size; the last
/// segment may be shorter).
type RecvOne<'a> = dyn FnMut(&mut [u8]) -> io::Result<(usize, SocketAddr, usize)> + 'a;

/// `SOL_UDP` options (linux/udp.h): send one buffer as equal-sized
/// datagrams (GSO), receive such runs as one buffer (GRO).
const UDP_SEGMENT: libc::c_int = 103;
const UDP_GRO: libc::c_int = 104;

/// Receives what [`RecvOne`] describes from a non-blocking UDP socket.
fn recv_gro(fd: i32, buf: &mut [u8]) -> io::Result<(usize, SocketAddr, usize)> {
    // SAFETY: sockaddr_storage is plain data; all-zero is a valid value.
    let mut from: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut ctl = [0u64; 8];
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    // SAFETY: msghdr is plain data; all-zero is a valid value.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = (&mut from as *mut libc::sockaddr_storage).cast();
    msg.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = ctl.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&ctl);
    // SAFETY: every pointer in msg refers to a live local or to `buf`, with
    // its true length; the kernel writes within them.
    let n = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_DONTWAIT) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let n = n as usize;
    let mut seg = n;
    // SAFETY: the CMSG_* walk stays inside msg_control/msg_controllen,
    // which the kernel filled; the UDP_GRO payload is one int.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_UDP && (*c).cmsg_type == UDP_GRO {
                let v = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::c_int);
                if v > 0 {
                    seg = v as usize;
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    let addr = sockaddr_to(&from).ok_or_else(|| io::Error::other("sender address family"))?;
    Ok((n, addr, seg.max(1)))
}

/// The socket address the kernel wrote, if IPv4 or IPv6.
fn sockaddr_to(ss: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match ss.ss_family as libc::c_int {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in.
            let a: libc::sockaddr_in = unsafe { std::ptr::read((ss as *const libc::sockaddr_storage).cast()) };
            Some(SocketAddr::from((Ipv4Addr::from(a.sin_addr.s_addr.to_ne_bytes()), u16::from_be(a.sin_port))))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says the storage holds a sockaddr_in6.
            let a: libc::sockaddr_in6 = unsafe { std::ptr::read((ss as *const libc::sockaddr_storage).cast()) };
            Some(SocketAddr::V6(std::net::SocketAddrV6::new(
                Ipv6Addr::from(a.sin6_addr.s6_addr),
                u16::from_be(a.sin6_port),
                a.sin6_flowinfo,
                a.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

struct UdpShared {
    port: Port,
    sock: UdpSocket,
    loopback: Mutex<VecDeque<Vec<u8>>>,
    spare: BufPool,
    /// Held by whoever delivers loopback packets (the worker or an inline
    /// [`LoopbackPump`]), so they are delivered in order.
    drain: Mutex<()>,
    handler: std::sync::OnceLock<Arc<dyn PacketHandler>>,
    wake: tokio::sync::Notify,
    stop: AtomicBool,
    /// Active [`FabricPoller`]s: while any is active, the worker takes the
    /// socket out of its epoll set and receiving is left to the pollers.
    polling: AtomicUsize,
    /// Datagrams a batching thread has not sent yet (see `batched`).
    tx: Mutex<TxQueue>,
}

thread_local! {
    /// Set while a [`LoopbackPump`] runs on this thread: it will deliver
    /// what this thread loops back itself, so the worker is not woken.
    static INLINE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

impl UdpShared {
    fn route(&self, tag: u32, bytes: &[u8]) {
        if tag == LOCAL {
            let b = self.spare.copy_of(bytes);
            if let Ok(mut q) = self.loopback.lock() {
                q.push_back(b);
            }
            if !INLINE.with(|c| c.get()) {
                self.wake.notify_one();
            }
            return;
        }
        let Some(addr) = self.port.peers.get(tag as usize).and_then(|p| p.udp) else {
            bump(&self.port.counters.tx_no_route, 1);
            return;
        };
        // One queue, sent in order by whoever flushes: a datagram never
        // overtakes one another thread batched before it.
        let mut tx = self.tx.lock().unwrap_or_else(|e| e.into_inner());
        let batching = TX_BATCH.with(|c| c.get()) == self.id();
        if tx.is_empty() && !batching {
            drop(tx);
            let c = &self.port.counters;
            bump(&c.tx_socket_calls, 1);
            bump(&c.tx_socket_datagrams, 1);
            if self.sock.send_to(bytes, addr).is_err() {
                bump(&c.tx_errors, 1);
            }
            return;
        }
        tx.push(addr, self.spare.copy_of(bytes));
        if !batching || tx.len() >= TX_BATCH_MAX {
            tx.send(&self.sock, &self.port.counters, &self.spare);
        }
    }

    fn id(&self) -> usize {
        self as *const UdpShared as usize
    }

    /// Runs `body` with this thread's sends to peers gathered and sent
    /// together (one `sendmmsg`) when it returns: a receive pass's
    /// responses and ACKs, a doorbell's packets. Nested calls join the
    /// outer batch.
    fn batched<R>(&self, body: impl FnOnce() -> R) -> R {
        let outer = TX_BATCH.with(|c| c.replace(self.id()));
        let r = body();
        TX_BATCH.with(|c| c.set(outer));
        if outer != self.id() {
            let mut tx = self.tx.lock().unwrap_or_else(|e| e.into_inner());
            if !tx.is_empty() {
                tx.send(&self.sock, &self.port.counters, &self.spare);
            }
        }
        r
    }
}

thread_local! {
    /// The [`UdpShared`] (by address) whose sends this thread is batching.
    static TX_BATCH: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Most datagrams one `sendmmsg` carries; a batch that reaches it is sent.
const TX_BATCH_MAX: usize = 64;

/// Datagrams waiting for one `sendmmsg`, with the scratch it needs.
/// Consecutive datagrams to one peer of one size (the last may be shorter)
/// go as one GSO message (`UDP_SEGMENT`): the kernel's UDP/IP path is then
/// crossed once for the run, and a receiver with GRO gets it in one read.
struct TxQueue {
    pkts: Vec<(SocketAddr, Vec<u8>)>,
    addrs: Vec<libc::sockaddr_storage>,
    iovs: Vec<libc::iovec>,
    ctls: Vec<[u64; 3]>,
    hdrs: Vec<libc::mmsghdr>,
    /// Per message: its first datagram and how many it carries.
    msgs: Vec<(usize, usize)>,
    /// GSO only for segments below this size (a path whose MTU refused a
    /// GSO segment lowers it; the datagrams then go one by one).
    gso_below: usize,
}

impl Default for TxQueue {
    fn default() -> TxQueue {
        TxQueue {
            pkts: Vec::new(),
            addrs: Vec::new(),
            iovs: Vec::new(),
            ctls: Vec::new(),
            hdrs: Vec::new(),
            msgs: Vec::new(),
            gso_below: usize::MAX,
        }
    }
}

// SAFETY: the raw pointers in `iovs`/`hdrs` are scratch, rebuilt from
// `pkts`/`addrs`/`ctls` by every send and never dereferenced outside it.
unsafe impl Send for TxQueue {}

/// Most datagrams and bytes one GSO message carries.
const GSO_MAX_SEGS: usize = 64;
const GSO_MAX_BYTES: usize = 65000;

impl TxQueue {
    fn is_empty(&self) -> bool {
        self.pkts.is_empty()
    }

    fn len(&self) -> usize {
        self.pkts.len()
    }

    fn push(&mut self, addr: SocketAddr, bytes: Vec<u8>) {
        self.pkts.push((addr, bytes));
    }

    /// Splits the queue into messages: GSO runs and single datagrams.
    fn plan(&mut self) {
        self.msgs.clear();
        let n = self.pkts.len();
        let mut i = 0;
        while i < n {
            let (addr, seg) = (self.pkts[i].0, self.pkts[i].1.len());
            let mut j = i + 1;
            let mut bytes = seg;
            if seg > 0 && seg < self.gso_below {
                while j < n && j - i < GSO_MAX_SEGS && self.pkts[j].0 == addr {
                    let l = self.pkts[j].1.len();
                    if l == 0 || l > seg || bytes + l > GSO_MAX_BYTES {
                        break;
                    }
                    bytes += l;
                    j += 1;
                    if l < seg {
                        break; // a shorter one ends the run
                    }
                }
            }
            self.msgs.push((i, j - i));
            i = j;
        }
    }

    /// Sends everything queued, in order, and recycles the buffers.
    fn send(&mut self, sock: &UdpSocket, c: &PortCounters, spare: &BufPool) {
        self.plan();
        self.addrs.clear();
        self.iovs.clear();
        self.ctls.clear();
        self.hdrs.clear();
        for (_, bytes) in &self.pkts {
            self.iovs.push(libc::iovec { iov_base: bytes.as_ptr() as *mut libc::c_void, iov_len: bytes.len() });
        }
        for &(first, _) in &self.msgs {
            self.addrs.push(sockaddr_of(&self.pkts[first].0));
            self.ctls.push([0u64; 3]);
        }
        for (m, &(first, count)) in self.msgs.iter().enumerate() {
            let addr_len = match self.pkts[first].0 {
                SocketAddr::V4(_) => std::mem::size_of::<libc::sockaddr_in>(),
                SocketAddr::V6(_) => std::mem::size_of::<libc::sockaddr_in6>(),
            };
            // SAFETY: mmsghdr is plain data; all-zero is a valid value.
            let mut h: libc::mmsghdr = unsafe { std::mem::zeroed() };
            h.msg_hdr.msg_name = (&mut self.addrs[m] as *mut libc::sockaddr_storage).cast();
            h.msg_hdr.msg_namelen = addr_len as libc::socklen_t;
            h.msg_hdr.msg_iov = &mut self.iovs[first];
            h.msg_hdr.msg_iovlen = count;
            if count > 1 {
                let seg = self.pkts[first].1.len() as u16;
                let ctl = &mut self.ctls[m];
                h.msg_hdr.msg_control = ctl.as_mut_ptr().cast();
                // SAFETY: CMSG_SPACE/CMSG_LEN are arithmetic; the header and
                // its u16 fit the 24 aligned bytes of `ctl` (CMSG_SPACE(2)),
                // which CMSG_FIRSTHDR returns the start of.
                unsafe {
                    h.msg_hdr.msg_controllen = libc::CMSG_SPACE(2) as usize;
                    let cm = libc::CMSG_FIRSTHDR(&h.msg_hdr);
                    (*cm).cmsg_level = libc::SOL_UDP;
                    (*cm).cmsg_type = UDP_SEGMENT;
                    (*cm).cmsg_len = libc::CMSG_LEN(2) as usize;
                    std::ptr::write_unaligned(libc::CMSG_DATA(cm) as *mut u16, seg);
                }
            }
            self.hdrs.push(h);
        }
        let total = self.msgs.len();
        let mut done = 0;
        while done < total {
            // SAFETY: hdrs[done..] point into addrs/iovs/ctls and the packet
            // buffers, which live and stay unmoved for the call; the kernel
            // only reads them and writes each msg_len.
            let r = unsafe { libc::sendmmsg(sock.as_raw_fd(), self.hdrs[done..].as_mut_ptr(), (total - done) as libc::c_uint, 0) };
            bump(&c.tx_socket_calls, 1);
            if r > 0 {
                let sent: usize = self.msgs[done..done + r as usize].iter().map(|m| m.1).sum();
                bump(&c.tx_socket_datagrams, sent as u64);
                done += r as usize;
                continue;
            }
            let err = io::Error::last_os_error();
            let (first, count) = self.msgs[done];
            done += 1;
            if count > 1 && err.raw_os_error() == Some(libc::EINVAL) {
                // The path refused this segment size (MTU) for GSO: these go
                // one by one, and so will runs this size or larger.
                self.gso_below = self.gso_below.min(self.pkts[first].1.len());
                for (addr, bytes) in &self.pkts[first..first + count] {
                    bump(&c.tx_socket_calls, 1);
                    match sock.send_to(bytes, addr) {
                        Ok(_) => bump(&c.tx_socket_datagrams, 1),
                        Err(_) => bump(&c.tx_errors, 1),
                    }
                }
                continue;
            }
            // The message failed (full buffer, unreachable peer): lost, as
            // with sendto; the engine retransmits.
            bump(&c.tx_errors, count as u64);
        }
        for (_, b) in self.pkts.drain(..) {
            spare.give(b);
        }
    }
}

/// The socket address `addr` in the kernel's layout.
fn sockaddr_of(addr: &SocketAddr) -> libc::sockaddr_storage {
    // SAFETY: sockaddr_storage is plain data; all-zero is a valid value.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes(a.ip().octets()) },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in.
            unsafe { std::ptr::write((&mut ss as *mut libc::sockaddr_storage).cast(), sin) };
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr { s6_addr: a.ip().octets() },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in6.
            unsafe { std::ptr::write((&mut ss as *mut libc::sockaddr_storage).cast(), sin6) };
        }
    }
    ss
}

impl UdpShared {
    /// Receives what the socket holds now (up to `burst` datagrams) and
    /// delivers it; the caller holds `drain`. Returns how many arrived.
    /// `recv` reads one datagram without blocking (the std socket, or the
    /// worker's registered one, whose readiness a WouldBlock clears).
    fn receive_burst(
        &self,
        recv: &mut RecvOne,
        buf: &mut [u8],
        burst: usize,
        deliver: &mut dyn FnMut(&RxMeta, &[u8]),
    ) -> usize {
        let port = &self.port;
        let mut n = 0;
        let mut reads = 0;
        while n < burst {
            match recv(buf) {
                Ok((len, from, seg)) => {
                    let len = len.min(buf.len());
                    let segs = len.div_ceil(seg).max(1);
                    n += segs;
                    reads += 1;
                    // Isolation: only configured peers reach the engine.
                    let Some(src) = port.peer_by_udp(&from).map(|p| p.ep) else {
                        bump(&port.counters.rx_unknown_peer, segs as u64);
                        continue;
                    };
                    // A GRO aggregate: datagrams of `seg` bytes, the last
                    // one possibly shorter.
                    for chunk in buf[..len].chunks_mut(seg) {
                        port.accept(src, chunk, deliver);
                    }
                }
                Err(_) => break,
            }
        }
        if n > 0 {
            bump(&port.counters.rx_socket_passes, 1);
            bump(&port.counters.rx_socket_datagrams, n as u64);
            bump(&port.counters.rx_socket_reads, reads);
        }
        n
    }

    fn loopback_pending(&self) -> bool {
        self.loopback.lock().map(|q| !q.is_empty()).unwrap_or(false)
    }

    /// Delivers what is queued for loopback now; returns how many packets.
    /// The caller holds `drain`, which keeps deliveries in order.
    fn deliver_loopback(&self, deliver: &mut dyn FnMut(&RxMeta, &[u8])) -> usize {
        let local = std::mem::take(&mut *self.loopback.lock().unwrap_or_else(|e| e.into_inner()));
        let n = local.len();
        for mut p in local {
            self.port.accept(self.port.local, &mut p, deliver);
            self.spare.give(p);
        }
        n
    }
}

impl PacketSink for UdpShared {
    fn send(&self, dest: &Dest, pkt: &mut [u8]) {
        self.port.transmit(dest, pkt, &mut |tag, bytes| self.route(tag, bytes));
    }
    fn gid(&self, index: u8) -> Option<[u8; 16]> {
        self.port.gid(index)
    }
}

/// Delivers loopback traffic on the thread that produced it, skipping the
/// worker's wake-up: the device runs each doorbell inside [`run`](Self::run),
/// and what the doorbell looped back (a request to a local QP, then its ACK
/// or response, ...) is handled before `run` returns.
#[derive(Clone)]
pub struct LoopbackPump(Arc<UdpShared>);

impl LoopbackPump {
    /// Runs `body` (a doorbell), then delivers what it looped back; what
    /// it sends to peers leaves in one batch at the end.
    pub fn run<R>(&self, body: impl FnOnce() -> R) -> R {
        self.0.batched(|| {
            let outer = INLINE.with(|c| c.replace(true));
            let r = body();
            if !outer {
                self.drain();
                INLINE.with(|c| c.set(false));
            }
            r
        })
    }

    fn drain(&self) {
        let s = &self.0;
        if !s.loopback_pending() {
            return;
        }
        let (Some(handler), Ok(_order)) = (s.handler.get(), s.drain.try_lock()) else {
            // The worker (or another pump) is delivering: let the worker
            // take these too.
            s.wake.notify_one();
            return;
        };
        let mut deliver = |m: &RxMeta, b: &[u8]| handler.receive(m, b);
        // Bounded: a handler that keeps producing is left to the worker.
        // When the queue runs dry the handler flushes what it coalesced
        // (the responder's ACK): that loops back too, and is delivered
        // here rather than by a worker woken for one packet.
        for _ in 0..64 {
            if s.deliver_loopback(&mut deliver) == 0 {
                handler.flush();
                if !s.loopback_pending() {
                    break;
                }
            }
        }
        if s.loopback_pending() {
            s.wake.notify_one();
        }
    }
}

/// Run-to-completion receive for a thread that spins anyway (the device's
/// doorbell poller, a benchmark's polling loop): [`poll`](Self::poll)
/// receives and handles what is waiting on the socket and the loopback
/// queue, on the caller's thread. While a poller is active the worker takes
/// the socket out of its epoll set, so arriving packets cost no wake-up;
/// [`idle`](Self::idle) (or dropping the poller) hands receiving back to
/// the worker before the caller sleeps. Timers stay with the worker.
pub struct FabricPoller {
    shared: Arc<UdpShared>,
    active: bool,
    buf: Vec<u8>,
    /// Packets were handled and the handler's coalesced ACKs not yet
    /// flushed: they go out at the start of the next pass, after the
    /// caller has had a turn (a reply it posts leaves before the ACK).
    ack_owed: bool,
}

impl FabricPoller {
    /// Delivers what has arrived; never blocks. Returns the number of
    /// packets taken (0: nothing waiting, or the worker is delivering).
    pub fn poll(&mut self) -> usize {
        let shared = self.shared.clone();
        shared.batched(|| self.poll_pass())
    }

    fn poll_pass(&mut self) -> usize {
        let s = &self.shared;
        if !self.active {
            self.active = true;
            s.polling.fetch_add(1, Ordering::SeqCst);
            // The worker drops the socket from its epoll set on waking.
            s.wake.notify_one();
        }
        let Some(handler) = s.handler.get() else { return 0 };
        if std::mem::take(&mut self.ack_owed) {
            handler.flush();
        }
        let Ok(_order) = s.drain.try_lock() else { return 0 };
        let mut deliver = |m: &RxMeta, b: &[u8]| handler.receive(m, b);
        let mut n = s.deliver_loopback(&mut deliver);
        let fd = s.sock.as_raw_fd();
        n += s.receive_burst(&mut |b| recv_gro(fd, b), &mut self.buf, 64, &mut deliver);
        s.port.release_due(&mut |t, b| s.route(t, b), &mut deliver);
        if n > 0 {
            self.ack_owed = true;
            s.port.flush_pcap();
        }
        n
    }

    /// Hands receiving back to the worker (call before sleeping).
    pub fn idle(&mut self) {
        if std::mem::take(&mut self.ack_owed) {
            if let Some(h) = self.shared.handler.get() {
                h.flush();
            }
        }
        if self.active {
            self.active = false;
            self.shared.polling.fetch_sub(1, Ordering::SeqCst);
            self.shared.wake.notify_one();
        }
    }

    /// Whether [`poll`](Self::poll) has been called since the last idle.
    pub fn is_active(&self) -> bool {
        self.active
    }
}

impl Drop for FabricPoller {
    fn drop(&mut self) {
        self.idle();
    }
}

/// A port on a UDP socket, with a worker thread (tokio, current-thread)
/// that receives, runs the handler's timers and loops local traffic back.
pub struct UdpFabric {
    shared: Arc<UdpShared>,
    clock: Arc<MonotonicClock>,
    worker: Option<JoinHandle<()>>,
}

fn set_buffer(fd: i32, opt: libc::c_int, force: libc::c_int, bytes: usize) {
    let v = bytes.min(i32::MAX as usize) as libc::c_int;
    for o in [force, opt] {
        // SAFETY: setsockopt reads sizeof(int) bytes from a live local.
        let r = unsafe { libc::setsockopt(fd, libc::SOL_SOCKET, o, (&v as *const libc::c_int).cast(), std::mem::size_of::<libc::c_int>() as libc::socklen_t) };
        if r == 0 {
            return;
        }
    }
}

impl UdpFabric {
    /// Binds the socket. `lid` is the port's LID; `clock` the one the
    /// handler's deadlines are expressed in.
    pub fn bind(cfg: &FabricConfig, lid: u16, clock: Arc<MonotonicClock>) -> io::Result<UdpFabric> {
        cfg.validate().map_err(io::Error::other)?;
        let bind: IpAddr = cfg.bind.parse().map_err(io::Error::other)?;
        let sock = UdpSocket::bind(SocketAddr::new(bind, cfg.port))?;
        sock.set_nonblocking(true)?;
        set_buffer(sock.as_raw_fd(), libc::SO_RCVBUF, libc::SO_RCVBUFFORCE, cfg.socket_buffer);
        set_buffer(sock.as_raw_fd(), libc::SO_SNDBUF, libc::SO_SNDBUFFORCE, cfg.socket_buffer);
        // Runs of equal-sized datagrams from one peer may arrive as one
        // buffer (recv_gro splits them); where the kernel lacks it, they
        // arrive one by one.
        let on: libc::c_int = 1;
        // SAFETY: setsockopt reads sizeof(int) bytes from a live local.
        let _ = unsafe { libc::setsockopt(sock.as_raw_fd(), libc::SOL_UDP, UDP_GRO, (&on as *const libc::c_int).cast(), std::mem::size_of::<libc::c_int>() as libc::socklen_t) };
        let local = cfg.local_endpoint(lid).map_err(io::Error::other)?;
        let peers = cfg.peers().map_err(io::Error::other)?;
        let port = Port::new(local, peers, &cfg.faults, cfg.pcap.as_deref().map(|p| (p, cfg.pcap_max_bytes)), clock.clone())?;
        Ok(UdpFabric {
            shared: Arc::new(UdpShared {
                port,
                sock,
                loopback: Mutex::new(VecDeque::new()),
                spare: BufPool::new(128),
                drain: Mutex::new(()),
                handler: std::sync::OnceLock::new(),
                wake: tokio::sync::Notify::new(),
                stop: AtomicBool::new(false),
                polling: AtomicUsize::new(0),
                tx: Mutex::new(TxQueue::default()),
            }),
            clock,
            worker: None,
        })
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.shared.sock.local_addr()
    }

    pub fn port(&self) -> &Port {
        &self.shared.port
    }

    pub fn counters(&self) -> Arc<PortCounters> {
        self.shared.port.counters.clone()
    }

    /// The sink the engine sends through.
    pub fn sink(&self) -> Arc<dyn PacketSink> {
        self.shared.clone()
    }

    /// Wakes the worker (e.g. after the handler armed an earlier timer).
    pub fn wake(&self) {
        self.shared.wake.notify_one();
    }

    /// A handle that delivers loopback traffic inline (see [`LoopbackPump`]).
    pub fn loopback_pump(&self) -> LoopbackPump {
        LoopbackPump(self.shared.clone())
    }

    /// A run-to-completion receiver for a spinning thread (see [`FabricPoller`]).
    pub fn poller(&self) -> FabricPoller {
        FabricPoller { shared: self.shared.clone(), active: false, buf: vec![0u8; 65536], ack_owed: false }
    }

    /// A handle that wakes the worker, for the handler to keep.
    pub fn waker(&self) -> Waker {
        Waker(self.shared.clone())
    }

    /// Starts the worker thread feeding `handler`.
    pub fn start(&mut self, handler: Arc<dyn PacketHandler>) -> io::Result<()> {
        if self.worker.is_some() {
            return Err(io::Error::other("fabric already started"));
        }
        let shared = self.shared.clone();
        let clock = self.clock.clone();
        let sock = self.shared.sock.try_clone()?;
        let _ = self.shared.handler.set(handler.clone());
        let t = crate::privs::spawn(
            "vrnic-fabric",
            || tokio::runtime::Builder::new_current_thread().enable_io().enable_time().build(),
            move |rt| match rt {
                Ok(rt) => rt.block_on(worker(shared, sock, clock, handler)),
                Err(e) => tracing::error!("fabric runtime: {e}"),
            },
        )?;
        self.worker = Some(t);
        Ok(())
    }
}

/// Wakes a fabric's worker thread.
#[derive(Clone)]
pub struct Waker(Arc<UdpShared>);

impl Waker {
    pub fn wake(&self) {
        self.0.wake.notify_one();
    }
}

impl Drop for UdpFabric {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.wake.notify_one();
        if let Some(t) = self.worker.take() {
            let _ = t.join();
        }
        self.shared.port.flush_pcap();
    }
}

async fn worker(shared: Arc<UdpShared>, sock: UdpSocket, clock: Arc<MonotonicClock>, handler: Arc<dyn PacketHandler>) {
    let port = &shared.port;
    let mut buf = vec![0u8; 65536];
    let mut deliver = |m: &RxMeta, b: &[u8]| handler.receive(m, b);
    // Registered with the reactor only while no poller is active: every
    // datagram on a registered socket wakes this thread.
    let mut watched: Option<tokio::net::UdpSocket> = None;
    loop {
        if shared.stop.load(Ordering::SeqCst) {
            break;
        }
        let polled = shared.polling.load(Ordering::SeqCst) > 0;
        // Loopback first, then whatever the socket holds, in bursts; in
        // order with any poller or pump (they take `drain` too).
        // What the pass sends (responses, ACKs) leaves in one batch.
        shared.batched(|| {
            {
                let _order = shared.drain.lock().unwrap_or_else(|e| e.into_inner());
                shared.deliver_loopback(&mut deliver);
                if let (false, Some(w)) = (polled, &watched) {
                    let fd = w.as_raw_fd();
                    shared.receive_burst(&mut |b| w.try_io(tokio::io::Interest::READABLE, || recv_gro(fd, b)), &mut buf, 256, &mut deliver);
                }
            }
            port.release_due(&mut |t, b| shared.route(t, b), &mut deliver);
            handler.flush();
        });
        let now = clock.now_ns();
        let next = [handler.poll(now), port.next_due()].into_iter().flatten().min();
        port.flush_pcap();
        if shared.loopback_pending() {
            continue;
        }
        let sleep = next.map(|d| d.saturating_sub(clock.now_ns())).unwrap_or(50_000_000);
        if sleep == 0 {
            continue;
        }
        let timer = tokio::time::sleep(std::time::Duration::from_nanos(sleep));
        if polled {
            watched = None;
            tokio::select! {
                _ = shared.wake.notified() => {}
                _ = timer => {}
            }
            continue;
        }
        if watched.is_none() {
            match sock.try_clone().and_then(tokio::net::UdpSocket::from_std) {
                Ok(s) => watched = Some(s),
                Err(e) => {
                    tracing::error!("fabric socket: {e}");
                    return;
                }
            }
            // Whatever arrived while unwatched is taken on the next pass
            // (and the WouldBlock that ends it arms the readiness).
            continue;
        }
        let Some(w) = &watched else { continue };
        tokio::select! {
            _ = w.readable() => {}
            _ = shared.wake.notified() => {}
            _ = timer => {}
        }
    }
}

/// Ports joined inside one process, without sockets: sends are queued and
/// [`InProcNet::pump`] delivers them (deterministic, for tests and benches).
pub struct InProcNet {
    ports: Vec<Port>,
    queue: Mutex<VecDeque<(usize, usize, Vec<u8>)>>,
    free: BufPool,
}

/// Delivered packets' buffers, reused by the next sends that queue a copy
/// (loopback, an in-process network); at most `keep` are kept.
struct BufPool {
    free: Mutex<Vec<Vec<u8>>>,
    keep: usize,
}

impl BufPool {
    fn new(keep: usize) -> BufPool {
        BufPool { free: Mutex::new(Vec::new()), keep }
    }

    /// A buffer (reused if one is free) holding a copy of `bytes`.
    fn copy_of(&self, bytes: &[u8]) -> Vec<u8> {
        let mut b = self.free.lock().ok().and_then(|mut f| f.pop()).unwrap_or_default();
        b.clear();
        b.extend_from_slice(bytes);
        b
    }

    /// Takes back a delivered packet's buffer.
    fn give(&self, b: Vec<u8>) {
        if let Ok(mut f) = self.free.lock() {
            if f.len() < self.keep {
                f.push(b);
            }
        }
    }
}

/// The sink of one port of an [`InProcNet`].
pub struct InProcSink {
    net: Arc<InProcNet>,
    index: usize,
}

impl PacketSink for InProcSink {
    fn send(&self, dest: &Dest, pkt: &mut [u8]) {
        let port = &self.net.ports[self.index];
        port.transmit(dest, pkt, &mut |tag, bytes| self.net.route(self.index, tag, bytes));
    }
    fn gid(&self, index: u8) -> Option<[u8; 16]> {
        self.net.ports[self.index].gid(index)
    }
}

impl InProcNet {
    /// One port per endpoint; every port can reach every other. `faults[i]`
    /// applies to port i (missing entries: none).
    pub fn new(endpoints: &[Endpoint], faults: &[FaultConfig], clock: Arc<dyn Clock>) -> Arc<InProcNet> {
        let clean = faults.iter().all(|f| f.tx.is_none() && f.rx.is_none());
        let ports = endpoints
            .iter()
            .enumerate()
            .map(|(i, ep)| {
                let peers = endpoints.iter().enumerate().filter(|(j, _)| *j != i).map(|(j, e)| Peer { ep: *e, udp: None, index: j }).collect();
                let f = faults.get(i).cloned().unwrap_or_default();
                let mut p = Port::new(*ep, peers, &f, None, clock.clone()).unwrap_or_else(|_| unreachable!("no pcap file, no I/O"));
                // ICRC-exempt only if no port of the net injects faults (a
                // receiver must check what a corrupting sender sends).
                p.in_process = clean;
                p
            })
            .collect();
        Arc::new(InProcNet { ports, queue: Mutex::new(VecDeque::new()), free: BufPool::new(256) })
    }

    pub fn sink(self: &Arc<Self>, index: usize) -> Arc<dyn PacketSink> {
        Arc::new(InProcSink { net: self.clone(), index })
    }

    pub fn port(&self, index: usize) -> &Port {
        &self.ports[index]
    }

    fn route(&self, from: usize, tag: u32, bytes: &[u8]) {
        let to = if tag == LOCAL { from } else { self.ports[from].peers[tag as usize].index };
        let b = self.free.copy_of(bytes);
        if let Ok(mut q) = self.queue.lock() {
            q.push_back((to, from, b));
        }
    }

    /// Packets waiting for delivery.
    pub fn pending(&self) -> usize {
        self.queue.lock().map(|q| q.len()).unwrap_or(0)
    }

    /// Delivers every queued packet (and those sent in reaction, up to
    /// `limit`), releases due held packets and flushes each handler.
    /// `handlers[i]` receives port i's packets. Returns packets delivered.
    pub fn pump(&self, handlers: &[&dyn PacketHandler], limit: usize) -> usize {
        let mut n = 0;
        for (i, p) in self.ports.iter().enumerate() {
            let mut out = |tag: u32, b: &[u8]| self.route(i, tag, b);
            let mut d = |m: &RxMeta, b: &[u8]| {
                if let Some(h) = handlers.get(i) {
                    h.receive(m, b)
                }
            };
            p.release_due(&mut out, &mut d);
        }
        while n < limit {
            let item = self.queue.lock().ok().and_then(|mut q| q.pop_front());
            let Some((to, from, mut bytes)) = item else { break };
            let src = self.ports[from].local;
            if let Some(h) = handlers.get(to) {
                self.ports[to].accept(src, &mut bytes, &mut |m, b| h.receive(m, b));
            }
            self.free.give(bytes);
            n += 1;
            if self.pending() == 0 {
                for h in handlers {
                    h.flush();
                }
            }
        }
        for h in handlers {
            h.flush();
        }
        n
    }

    /// The earliest held-packet deadline of any port.
    pub fn next_due(&self) -> Option<u64> {
        self.ports.iter().filter_map(|p| p.next_due()).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::clock::ManualClock;
    use crate::wire::packet::{self, Headers, RocePacket};
    use std::time::{Duration, Instant};

    /// Records what it receives.
    #[derive(Default)]
    struct Rec(Mutex<Vec<(RxMeta, Vec<u8>)>>);
    impl PacketHandler for Rec {
        fn receive(&self, meta: &RxMeta, pkt: &[u8]) {
            self.0.lock().unwrap().push((*meta, pkt.to_vec()));
        }
    }

    fn send_only(dqp: u32, psn: u32, payload: &[u8]) -> Vec<u8> {
        let h = Headers::new(bth::Repr { opcode: Opcode(0x04), dest_qp: dqp, psn, ack_req: true, ..Default::default() });
        let mut v = Vec::new();
        packet::emit(&h, payload, &mut v).unwrap();
        v
    }

    fn wait_for(cond: impl Fn() -> bool) -> bool {
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(5) {
            if cond() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        false
    }

    #[test]
    fn inproc_routes_by_lid() {
        let clock = Arc::new(ManualClock::default());
        let eps = [Endpoint::v4(1, Ipv4Addr::new(10, 0, 0, 1)), Endpoint::v4(2, Ipv4Addr::new(10, 0, 0, 2))];
        let net = InProcNet::new(&eps, &[], clock);
        let (a, b) = (Rec::default(), Rec::default());
        let s0 = net.sink(0);
        s0.send(&Dest { lid: 2, grh: None }, &mut send_only(7, 1, b"by lid"));
        s0.send(&Dest { lid: 0, grh: None }, &mut send_only(7, 2, b"lid 0"));
        s0.send(&Dest { lid: 1, grh: None }, &mut send_only(7, 3, b"loopback"));
        s0.send(&Dest { lid: 9, grh: None }, &mut send_only(7, 4, b"nowhere"));
        assert_eq!(net.pump(&[&a, &b], 100), 2);
        let got: Vec<_> = b.0.lock().unwrap().iter().map(|(m, p)| (m.src.lid, m.grh, RocePacket::parse(p).unwrap().payload.to_vec())).collect();
        assert_eq!(got, vec![(1, None, b"by lid".to_vec())]);
        assert_eq!(a.0.lock().unwrap().len(), 1);
        let c0 = net.port(0).counters.snapshot();
        assert_eq!((c0.tx_packets, c0.tx_no_route, c0.rx_packets), (2, 2, 1));
        assert_eq!(net.port(1).counters.snapshot().rx_packets, 1);
    }

    #[test]
    fn corrupted_packets_are_dropped_and_counted() {
        let clock = Arc::new(ManualClock::default());
        let eps = [Endpoint::v4(1, Ipv4Addr::new(10, 0, 0, 1)), Endpoint::v4(2, Ipv4Addr::new(10, 0, 0, 2))];
        let f = FaultConfig { seed: 3, tx: crate::fabric::fault::FaultRates { corrupt: 0.5, ecn_ce: 0.5, ..Default::default() }, ..Default::default() };
        let net = InProcNet::new(&eps, &[f], clock);
        let b = Rec::default();
        for i in 0..200 {
            net.sink(0).send(&Dest { lid: 2, grh: None }, &mut send_only(7, i, &[i as u8; 40]));
        }
        net.pump(&[&Rec::default(), &b], 1000);
        let tx = net.port(0).counters.snapshot();
        let rx = net.port(1).counters.snapshot();
        assert!(tx.fault_corrupted > 50);
        assert_eq!(rx.rx_icrc_errors, tx.fault_corrupted, "every corruption is caught by the ICRC");
        assert_eq!(rx.rx_packets + rx.rx_icrc_errors, 200);
        // CE marks survive (FECN is masked in the ICRC) and nothing that passed is damaged.
        let got = b.0.lock().unwrap();
        assert!(got.iter().any(|(_, p)| p[4] & 0x80 != 0));
        for (_, p) in got.iter() {
            let r = RocePacket::parse(p).unwrap();
            assert_eq!(r.payload, &[r.headers.bth.psn as u8; 40][..]);
        }
    }

    fn udp_cfg(peers: Vec<PeerConfig>, gid: &str) -> FabricConfig {
        FabricConfig { port: 0, bind: "127.0.0.1".into(), gid: Some(gid.into()), peers, ..Default::default() }
    }

    /// Records the thread each packet was delivered on, and counts flushes.
    #[derive(Default)]
    struct ThreadRec(Mutex<Vec<(std::thread::ThreadId, u32)>>, std::sync::atomic::AtomicUsize);
    impl PacketHandler for ThreadRec {
        fn receive(&self, _: &RxMeta, pkt: &[u8]) {
            let psn = RocePacket::parse(pkt).map(|r| r.headers.bth.psn).unwrap_or(u32::MAX);
            self.0.lock().unwrap().push((std::thread::current().id(), psn));
        }
        fn flush(&self) {
            self.1.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Two UDP fabrics on loopback that know each other (LIDs 1 and 2).
    fn udp_pair(clock: Arc<MonotonicClock>) -> (UdpFabric, UdpFabric) {
        // Bind B first to learn its port, then A knowing B, then rebuild B knowing A.
        let probe = UdpFabric::bind(&udp_cfg(vec![], "::ffff:10.0.0.2"), 2, clock.clone()).unwrap();
        let b_addr = probe.local_addr().unwrap();
        drop(probe);
        let a = UdpFabric::bind(&udp_cfg(vec![PeerConfig { lid: Some(2), gid: Some("::ffff:10.0.0.2".into()), addr: b_addr.to_string() }], "::ffff:10.0.0.1"), 1, clock.clone()).unwrap();
        let a_addr = a.local_addr().unwrap();
        let mut cfg_b = udp_cfg(vec![PeerConfig { lid: Some(1), gid: Some("::ffff:10.0.0.1".into()), addr: a_addr.to_string() }], "::ffff:10.0.0.2");
        cfg_b.port = b_addr.port();
        let b = UdpFabric::bind(&cfg_b, 2, clock).unwrap();
        (a, b)
    }

    /// While a poller is active, what arrives is delivered on the polling
    /// thread, in order, and the coalesced-ACK flush comes on the pass
    /// after; once idle, the worker receives again.
    #[test]
    #[cfg_attr(miri, ignore = "binds UDP sockets, which Miri does not support")]
    fn poller_receives_on_its_thread_then_hands_back() {
        let (mut a, mut b) = udp_pair(Arc::new(MonotonicClock::default()));
        a.start(Arc::new(Rec::default())).unwrap();
        let rec = Arc::new(ThreadRec::default());
        b.start(rec.clone()).unwrap();
        let me = std::thread::current().id();
        let mut poller = b.poller();
        assert_eq!(poller.poll(), 0);
        assert!(poller.is_active());
        // Let the worker wake and take the socket out of its epoll set.
        std::thread::sleep(Duration::from_millis(50));
        let flushes = rec.1.load(Ordering::SeqCst);
        for i in 0..20 {
            a.sink().send(&Dest { lid: 2, grh: None }, &mut send_only(9, i, &[i as u8; 100]));
        }
        let t = Instant::now();
        while rec.0.lock().unwrap().len() < 20 {
            poller.poll();
            assert!(t.elapsed() < Duration::from_secs(5), "poller did not receive");
        }
        let got = rec.0.lock().unwrap().clone();
        assert!(got.iter().all(|(t, _)| *t == me), "delivered on another thread while polling");
        assert_eq!(got.iter().map(|(_, p)| *p).collect::<Vec<_>>(), (0..20).collect::<Vec<_>>());
        // The flush owed for the last burst comes at the start of the next pass.
        let owed = rec.1.load(Ordering::SeqCst);
        poller.poll();
        assert!(rec.1.load(Ordering::SeqCst) > owed);
        assert!(owed >= flushes);
        poller.idle();
        assert!(!poller.is_active());
        a.sink().send(&Dest { lid: 2, grh: None }, &mut send_only(9, 20, b"worker"));
        assert!(wait_for(|| rec.0.lock().unwrap().len() == 21));
        assert_ne!(rec.0.lock().unwrap()[20].0, me, "the worker receives once the poller is idle");
    }

    /// A responder that coalesces: each request (PSN < 1000) owes an "ACK"
    /// (PSN + 1000) to itself, sent on flush, as the engine does.
    struct Acker {
        rec: ThreadRec,
        owed: Mutex<Vec<u32>>,
        sink: std::sync::OnceLock<Arc<dyn PacketSink>>,
    }
    impl PacketHandler for Acker {
        fn receive(&self, m: &RxMeta, pkt: &[u8]) {
            self.rec.receive(m, pkt);
            let psn = RocePacket::parse(pkt).map(|r| r.headers.bth.psn).unwrap_or(u32::MAX);
            if psn < 1000 {
                self.owed.lock().unwrap().push(psn + 1000);
            }
        }
        fn flush(&self) {
            self.rec.flush();
            let owed = std::mem::take(&mut *self.owed.lock().unwrap());
            for psn in owed {
                self.sink.get().unwrap().send(&Dest { lid: 1, grh: None }, &mut send_only(9, psn, b"ack"));
            }
        }
    }

    /// What the handler sends when the pump flushes it (a coalesced ACK to
    /// a local QP) is delivered by the pump as well, before `run` returns:
    /// a loopback WRITE completes without waking the worker.
    #[test]
    #[cfg_attr(miri, ignore = "binds UDP sockets, which Miri does not support")]
    fn loopback_pump_delivers_what_the_flush_sends() {
        let clock = Arc::new(MonotonicClock::default());
        let mut f = UdpFabric::bind(&udp_cfg(vec![], "::ffff:10.0.0.1"), 1, clock).unwrap();
        let acker = Arc::new(Acker { rec: ThreadRec::default(), owed: Mutex::new(vec![]), sink: Default::default() });
        let _ = acker.sink.set(f.sink());
        f.start(acker.clone()).unwrap();
        let pump = f.loopback_pump();
        let sink = f.sink();
        let me = std::thread::current().id();
        let mut inline = 0;
        for i in 0..40u32 {
            pump.run(|| sink.send(&Dest { lid: 1, grh: None }, &mut send_only(9, i, b"req")));
            let got = acker.rec.0.lock().unwrap().clone();
            if got.len() == 2 * i as usize + 2 && got[got.len() - 2..] == [(me, i), (me, i + 1000)] {
                inline += 1;
            }
            assert!(wait_for(|| acker.rec.0.lock().unwrap().len() == 2 * i as usize + 2));
        }
        let psns: Vec<u32> = acker.rec.0.lock().unwrap().iter().map(|(_, p)| *p).collect();
        let want: Vec<u32> = (0..40).flat_map(|i| [i, i + 1000]).collect();
        assert_eq!(psns, want, "each request, then its ACK");
        assert!(inline >= 20, "only {inline} of 40 request+ACK rounds delivered inline");
    }

    /// Loopback traffic sent inside a pump is delivered, in order, before
    /// `run` returns, on the sending thread (unless the worker happened to
    /// be delivering at that moment; then the worker takes it).
    #[test]
    #[cfg_attr(miri, ignore = "binds UDP sockets, which Miri does not support")]
    fn loopback_pump_delivers_inline_and_in_order() {
        let clock = Arc::new(MonotonicClock::default());
        let mut f = UdpFabric::bind(&udp_cfg(vec![], "::ffff:10.0.0.1"), 1, clock).unwrap();
        let rec = Arc::new(ThreadRec::default());
        f.start(rec.clone()).unwrap();
        let pump = f.loopback_pump();
        let sink = f.sink();
        let me = std::thread::current().id();
        let mut inline = 0;
        for i in 0..40u32 {
            pump.run(|| {
                sink.send(&Dest { lid: 1, grh: None }, &mut send_only(9, 2 * i, b"a"));
                sink.send(&Dest { lid: 1, grh: None }, &mut send_only(9, 2 * i + 1, b"b"));
            });
            let got = rec.0.lock().unwrap().clone();
            if got.len() == 2 * i as usize + 2 && got[got.len() - 2..].iter().all(|(t, _)| *t == me) {
                inline += 1;
            }
            assert!(wait_for(|| rec.0.lock().unwrap().len() == 2 * i as usize + 2));
        }
        let psns: Vec<u32> = rec.0.lock().unwrap().iter().map(|(_, p)| *p).collect();
        assert_eq!(psns, (0..80).collect::<Vec<_>>(), "in order, none lost or doubled");
        assert!(inline >= 20, "only {inline} of 40 rounds delivered inline");
        // Outside a pump the worker delivers.
        sink.send(&Dest { lid: 1, grh: None }, &mut send_only(9, 500, b"c"));
        assert!(wait_for(|| rec.0.lock().unwrap().len() == 81));
        assert_ne!(rec.0.lock().unwrap()[80].0, me);
    }

    #[test]
    #[cfg_attr(miri, ignore = "binds UDP sockets, which Miri does not support")]
    fn udp_two_instances_and_loopback() {
        let (mut a, mut b) = udp_pair(Arc::new(MonotonicClock::default()));
        let (ra, rb) = (Arc::new(Rec::default()), Arc::new(Rec::default()));
        a.start(ra.clone()).unwrap();
        b.start(rb.clone()).unwrap();
        for i in 0..50 {
            a.sink().send(&Dest { lid: 2, grh: None }, &mut send_only(9, i, &[i as u8; 1000]));
        }
        a.sink().send(&Dest { lid: 1, grh: None }, &mut send_only(9, 99, b"self"));
        assert!(wait_for(|| rb.0.lock().unwrap().len() == 50 && ra.0.lock().unwrap().len() == 1));
        let got = rb.0.lock().unwrap();
        for (m, p) in got.iter() {
            assert_eq!(m.src, Endpoint::v4(1, Ipv4Addr::new(10, 0, 0, 1)));
            let r = RocePacket::parse(p).unwrap();
            assert_eq!(r.payload, &[r.headers.bth.psn as u8; 1000][..]);
        }
        assert_eq!(RocePacket::parse(&ra.0.lock().unwrap()[0].1).unwrap().payload, b"self");
        let c = b.counters().snapshot();
        assert_eq!(c.rx_icrc_errors, 0);
        // The 50 datagrams came off the socket in 1..=50 receive passes;
        // the looped-back one never touched a socket.
        assert_eq!(c.rx_socket_datagrams, 50);
        assert!((1..=50).contains(&c.rx_socket_passes), "{} passes", c.rx_socket_passes);
        assert_eq!(a.counters().snapshot().rx_socket_datagrams, 0);
    }

    /// A batch leaves in one sendmmsg: runs of equal-sized datagrams to one
    /// peer as GSO messages, which the receiver splits back (GRO) into the
    /// datagrams, whole and in order.
    #[test]
    #[cfg_attr(miri, ignore = "binds UDP sockets, which Miri does not support")]
    fn a_batch_leaves_in_one_call_and_arrives_whole_and_in_order() {
        let (a, mut b) = udp_pair(Arc::new(MonotonicClock::default()));
        let rb = Arc::new(Rec::default());
        b.start(rb.clone()).unwrap();
        let size = |i: u32| match i {
            0..20 => 1000,
            20..39 => 500,
            39 => 7,
            _ => 1200,
        };
        let sink = a.sink();
        a.shared.batched(|| {
            for i in 0..41 {
                sink.send(&Dest { lid: 2, grh: None }, &mut send_only(9, i, &vec![i as u8; size(i)]));
            }
        });
        let ca = a.counters().snapshot();
        assert_eq!((ca.tx_socket_calls, ca.tx_socket_datagrams, ca.tx_errors), (1, 41, 0));
        assert!(wait_for(|| rb.0.lock().unwrap().len() == 41));
        for (i, (_, p)) in rb.0.lock().unwrap().iter().enumerate() {
            let r = RocePacket::parse(p).unwrap();
            assert_eq!(r.headers.bth.psn, i as u32);
            assert_eq!(r.payload, &vec![i as u8; size(i as u32)][..]);
        }
        let cb = b.counters().snapshot();
        assert_eq!((cb.rx_socket_datagrams, cb.rx_icrc_errors, cb.rx_malformed), (41, 0, 0));
        // Three GSO messages (21 x 1000 ending with a 500, 18 x 500 ending
        // with a 7, one 1200) came off the socket in three GRO reads.
        assert_eq!(cb.rx_socket_reads, 3);
        // Outside a batch, a send is one sendto.
        sink.send(&Dest { lid: 2, grh: None }, &mut send_only(9, 41, b"x"));
        assert_eq!(a.counters().snapshot().tx_socket_calls, 2);
        assert!(wait_for(|| rb.0.lock().unwrap().len() == 42));
    }

    /// How a queue splits into messages: a run is one peer and one size,
    /// a shorter datagram ends it, at most 64 datagrams and 65000 bytes.
    #[test]
    fn gso_runs_are_one_peer_one_size() {
        let p: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let q: SocketAddr = "127.0.0.1:2".parse().unwrap();
        let plan = |pkts: &[(SocketAddr, usize)]| {
            let mut t = TxQueue::default();
            for &(a, l) in pkts {
                t.push(a, vec![0; l]);
            }
            t.plan();
            t.msgs.clone()
        };
        assert_eq!(plan(&[(p, 100), (p, 100), (p, 50), (p, 50)]), vec![(0, 3), (3, 1)]);
        assert_eq!(plan(&[(p, 100), (q, 100), (q, 100), (p, 100)]), vec![(0, 1), (1, 2), (3, 1)]);
        assert_eq!(plan(&[(p, 100), (p, 200), (p, 200)]), vec![(0, 1), (1, 2)]);
        let many: Vec<_> = (0..70).map(|_| (p, 10)).collect();
        assert_eq!(plan(&many), vec![(0, 64), (64, 6)]);
        let big: Vec<_> = (0..20).map(|_| (p, 4000)).collect();
        assert_eq!(plan(&big), vec![(0, 16), (16, 4)]);
        let mut t = TxQueue { gso_below: 100, ..TxQueue::default() };
        t.push(p, vec![0; 100]);
        t.push(p, vec![0; 100]);
        t.push(p, vec![0; 99]);
        t.push(p, vec![0; 99]);
        t.plan();
        assert_eq!(t.msgs, vec![(0, 1), (1, 1), (2, 2)]);
    }

    #[test]
    #[cfg_attr(miri, ignore = "binds UDP sockets, which Miri does not support")]
    fn packets_from_unconfigured_senders_are_dropped() {
        let clock = Arc::new(MonotonicClock::default());
        let mut a = UdpFabric::bind(&udp_cfg(vec![], "::ffff:10.0.0.1"), 1, clock).unwrap();
        let r = Arc::new(Rec::default());
        a.start(r.clone()).unwrap();
        let stranger = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut p = send_only(9, 1, b"who are you");
        // A correct ICRC as if from 10.0.0.9: only the peer table may vouch for a sender.
        let ph = PseudoHeader::canonical(Ipv4Addr::new(10, 0, 0, 9), Ipv4Addr::new(10, 0, 0, 1), 9, p.len());
        icrc::fill(&ph, &mut p);
        stranger.send_to(&p, a.local_addr().unwrap()).unwrap();
        assert!(wait_for(|| a.counters().snapshot().rx_unknown_peer == 1));
        std::thread::sleep(Duration::from_millis(20));
        assert!(r.0.lock().unwrap().is_empty(), "nothing reached the engine");
        assert_eq!(a.counters().snapshot().rx_packets, 0);
    }

    /// The pcap file decodes in tshark as InfiniBand with the right opcodes,
    /// QPNs and PSNs. Skipped (with a note) when tshark is not installed.
    #[test]
    #[cfg_attr(miri, ignore = "binds UDP sockets, which Miri does not support")]
    fn pcap_decodes_in_tshark() {
        let dir = std::env::temp_dir().join(format!("vrnic-pcap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("t.pcap");
        let clock = Arc::new(MonotonicClock::default());
        let mut cfg = udp_cfg(vec![], "::ffff:10.0.0.1");
        cfg.pcap = Some(file.clone());
        let mut a = UdpFabric::bind(&cfg, 1, clock).unwrap();
        let r = Arc::new(Rec::default());
        a.start(r.clone()).unwrap();
        let mut ack = Vec::new();
        let h = Headers {
            aeth: Some(crate::wire::aeth::Repr { syndrome: crate::wire::aeth::Syndrome::Nak(crate::wire::aeth::NakCode::PsnSequenceError), msn: 5 }),
            ..Headers::new(bth::Repr { opcode: Opcode(0x11), dest_qp: 0x1234, psn: 0xabcdef, ..Default::default() })
        };
        packet::emit(&h, &[], &mut ack).unwrap();
        a.sink().send(&Dest { lid: 1, grh: None }, &mut send_only(0x42, 77, b"tshark"));
        a.sink().send(&Dest { lid: 1, grh: None }, &mut ack);
        assert!(wait_for(|| r.0.lock().unwrap().len() == 2));
        drop(a);
        let out = std::process::Command::new("tshark")
            .args(["-r"])
            .arg(&file)
            .args(["-T", "fields", "-e", "infiniband.bth.opcode", "-e", "infiniband.bth.destqp", "-e", "infiniband.bth.psn", "-e", "infiniband.aeth.syndrome"])
            .output();
        let Ok(out) = out else {
            eprintln!("tshark not installed: pcap decoding not checked");
            return;
        };
        let text = String::from_utf8_lossy(&out.stdout);
        let lines: Vec<Vec<&str>> = text.lines().map(|l| l.split('\t').collect()).collect();
        assert_eq!(lines.len(), 2, "{text}\n{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(lines[0][..3], ["4", "0x000042", "77"]);
        assert_eq!(lines[1][..3], ["17", "0x001234", "11259375"]);
        assert_eq!(lines[1][3], "96", "NAK PSN sequence error = 0x60");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
