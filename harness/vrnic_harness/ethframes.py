"""Ethernet frames the harness injects on a port's link (eth-offloads: bad checksums; eth-ethtool: foreign
MACs): IPv4/UDP frames built byte by byte, and the send path onto a `udp` link (one frame per datagram, sent
from the peer's UDP port so that a backend that only accepts its configured remote takes it)."""
import socket
import struct


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return (~s) & 0xffff


def mac_bytes(mac):
    return bytes(int(x, 16) for x in mac.split(":"))


def udp_frame(dst_mac, src_mac, src_ip, dst_ip, sport, dport, payload, bad_udp_csum=False, bad_ip_csum=False):
    """An Ethernet II / IPv4 / UDP frame; bad_*: that checksum is wrong (non-zero, not the right one)."""
    sip, dip = socket.inet_aton(src_ip), socket.inet_aton(dst_ip)
    ulen = 8 + len(payload)
    pseudo = sip + dip + struct.pack("!BBH", 0, 17, ulen)
    uh = struct.pack("!HHHH", sport, dport, ulen, 0)
    uc = csum(pseudo + uh + payload) or 0xffff
    if bad_udp_csum:
        uc = (uc ^ 0x5a5a) or 0x1234
    uh = struct.pack("!HHHH", sport, dport, ulen, uc)
    ih = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + ulen, 0x1234, 0x4000, 64, 17, 0, sip, dip)
    ic = csum(ih)
    if bad_ip_csum:
        ic ^= 0x0f0f
    ih = ih[:10] + struct.pack("!H", ic) + ih[12:]
    return mac_bytes(dst_mac) + mac_bytes(src_mac) + b"\x08\x00" + ih + uh + payload


def send_udp_link(frame, dst_port, src_port, host="127.0.0.1"):
    """One frame as one UDP datagram to a udp-link port, from src_port (raw IPv4 socket, as root: the source
    port is taken by the peer's server)."""
    ulen = 8 + len(frame)
    uh = struct.pack("!HHHH", src_port, dst_port, ulen, 0)  # UDP checksum 0: none (IPv4)
    src = dst = socket.inet_aton(host)
    ih = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + ulen, 0, 0x4000, 64, 17, 0, src, dst)
    ih = ih[:10] + struct.pack("!H", csum(ih)) + ih[12:]
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    try:
        s.sendto(ih + uh + frame, (host, 0))
    finally:
        s.close()
