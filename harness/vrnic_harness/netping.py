"""ICMP echo (IPv4 and IPv6) from inside a network namespace, for hosts without ping(8): the "host" side of
eth-host pings a guest through its bridge. Raw sockets (root); the socket is created in the namespace
(topology.in_netns) and keeps it."""
import os
import select
import socket
import struct
import time

from .ethframes import csum
from .topology import in_netns


def ping(ns, addr, count=20, interval=0.05, timeout=2.0):
    """Returns (sent, received, rtts in ms)."""
    v6 = ":" in addr
    fam, proto, req, rep = ((socket.AF_INET6, socket.IPPROTO_ICMPV6, 128, 129) if v6
                            else (socket.AF_INET, socket.IPPROTO_ICMP, 8, 0))
    s = in_netns(ns, lambda: socket.socket(fam, socket.SOCK_RAW, proto))
    ident = os.getpid() & 0xffff
    rtts, sent = [], 0
    try:
        for seq in range(1, count + 1):
            body = struct.pack("!d", time.time()) + b"vrnic-eth-host" * 3
            hdr = struct.pack("!BBHHH", req, 0, 0, ident, seq)
            if not v6:  # the kernel fills the ICMPv6 checksum
                hdr = struct.pack("!BBHHH", req, 0, csum(hdr + body), ident, seq)
            t0 = time.time()
            s.sendto(hdr + body, (addr, 0))
            sent += 1
            end = t0 + timeout
            while time.time() < end:
                r, _, _ = select.select([s], [], [], end - time.time())
                if not r:
                    break
                data, _src = s.recvfrom(2048)
                icmp = data if v6 else data[(data[0] & 0xf) * 4:]
                if len(icmp) >= 8:
                    typ, _, _, rid, rseq = struct.unpack("!BBHHH", icmp[:8])
                    if typ == rep and rid == ident and rseq == seq:
                        rtts.append((time.time() - t0) * 1000)
                        break
            time.sleep(interval)
    finally:
        s.close()
    return sent, len(rtts), rtts


def tcp_say(ns, addr, port, line, tries=20):
    """Connect from the namespace to addr:port and send one line; True once it went through."""
    for _ in range(tries):
        s = in_netns(ns, lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM))
        s.settimeout(3)
        try:
            s.connect((addr, port))
            s.sendall(line.encode() + b"\n")
            return True
        except OSError:
            time.sleep(0.5)
        finally:
            s.close()
    return False
