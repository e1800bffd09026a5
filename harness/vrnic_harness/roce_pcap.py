"""RoCE frames in a port's capture (pcap, linktype 1 Ethernet): the host side of roce-pcap. `frames(path)` walks
the file (802.1Q tags, IPv4/IPv6, UDP 4791), `icrc_ok(frame)` recomputes a RoCEv2 frame's ICRC (zlib CRC-32 over
8 bytes of 0xFF for the LRH and the IP header through the payload, with IPv4 ToS/TTL/checksum, IPv6 traffic
class/flow label/hop limit, the UDP checksum and BTH byte 4 masked to all-ones; sent least significant byte first:
docs/../shared mlx5-ethernet-roce.md §4.6, rxe_icrc.c), `tshark_fields(path)` runs tshark's infiniband dissector
over the capture."""
import struct
import subprocess
import zlib

ROCE_PORT = 4791
ETH_IPV4, ETH_IPV6, ETH_VLAN, ETH_ROCEV1 = 0x0800, 0x86DD, 0x8100, 0x8915


class RoceFrame:
    """One RoCEv2 frame: its number in the capture (1-based, as tshark counts), addresses, BTH fields."""

    def __init__(self, num, raw, l3, ipv6, src, dst, udp):
        self.num, self.raw, self.l3, self.ipv6, self.src, self.dst, self.udp = num, raw, l3, ipv6, src, dst, udp
        bth = raw[udp + 8:udp + 20]
        self.opcode = bth[0] if len(bth) == 12 else None
        self.dqpn = int.from_bytes(bth[5:8], "big") if len(bth) == 12 else None
        self.psn = int.from_bytes(bth[9:12], "big") & 0xFFFFFF if len(bth) == 12 else None


def records(path):
    """(number, bytes) of every record of a classic pcap file (either byte order)."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24:
        return
    magic = data[:4]
    end = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    if struct.unpack(end + "I", data[20:24])[0] != 1:
        raise ValueError("%s: linktype %d, not Ethernet" % (path, struct.unpack(end + "I", data[20:24])[0]))
    off, n = 24, 0
    while off + 16 <= len(data):
        incl = struct.unpack(end + "I", data[off + 8:off + 12])[0]
        n += 1
        yield n, data[off + 16:off + 16 + incl]
        off += 16 + incl


def frames(path):
    """Every RoCEv2 frame (UDP destination port 4791) of the capture."""
    for n, raw in records(path):
        off = 12
        if len(raw) < 14:
            continue
        et = struct.unpack(">H", raw[off:off + 2])[0]
        while et == ETH_VLAN and len(raw) >= off + 6:
            off += 4
            et = struct.unpack(">H", raw[off:off + 2])[0]
        l3 = off + 2
        if et == ETH_IPV4 and len(raw) >= l3 + 20 and raw[l3 + 9] == 17:
            ihl = (raw[l3] & 0xF) * 4
            udp = l3 + ihl
            src, dst, v6 = raw[l3 + 12:l3 + 16], raw[l3 + 16:l3 + 20], False
        elif et == ETH_IPV6 and len(raw) >= l3 + 40 and raw[l3 + 6] == 17:
            udp = l3 + 40
            src, dst, v6 = raw[l3 + 8:l3 + 24], raw[l3 + 24:l3 + 40], True
        else:
            continue
        if len(raw) >= udp + 8 and struct.unpack(">H", raw[udp + 2:udp + 4])[0] == ROCE_PORT:
            yield RoceFrame(n, raw, l3, v6, src, dst, udp)


def icrc(fr):
    """(the ICRC the frame carries, the one its bytes imply)."""
    raw = fr.raw
    if fr.ipv6:
        plen = struct.unpack(">H", raw[fr.l3 + 4:fr.l3 + 6])[0]
        end = fr.l3 + 40 + plen
        ip = bytearray(raw[fr.l3:fr.l3 + 40])
        ip[0] |= 0x0F
        ip[1:4] = b"\xff\xff\xff"   # traffic class (low nibble of byte 0, high of byte 1) and flow label
        ip[7] = 0xFF                # hop limit
    else:
        tot = struct.unpack(">H", raw[fr.l3 + 2:fr.l3 + 4])[0]
        end = fr.l3 + tot
        ip = bytearray(raw[fr.l3:fr.udp])
        ip[1] = 0xFF                # ToS
        ip[8] = 0xFF                # TTL
        ip[10:12] = b"\xff\xff"     # header checksum
    rest = bytearray(raw[fr.udp:end - 4])
    rest[6:8] = b"\xff\xff"         # UDP checksum
    if len(rest) > 12:
        rest[12] = 0xFF             # BTH byte 4: FECN, BECN, reserved
    got = struct.unpack("<I", raw[end - 4:end])[0] if end <= len(raw) and end >= fr.udp + 24 else None
    return got, zlib.crc32(b"\xff" * 8 + bytes(ip) + bytes(rest)) & 0xFFFFFFFF


def tshark_fields(path, fields=("frame.number", "udp.dstport", "infiniband.bth.opcode", "_ws.malformed",
                                "_ws.expert.severity")):
    """tshark -T fields over the capture's UDP 4791 frames: a list of {field: value}. The RPC-over-RDMA heuristic
    is off: it claims perftest's 2-byte SEND payloads and reports them malformed (not a RoCE matter)."""
    argv = ["tshark", "-n", "-r", path, "--disable-protocol", "rpcordma", "-Y", "udp.dstport == %d" % ROCE_PORT,
            "-T", "fields", "-E", "separator=\t"]
    for f in fields:
        argv += ["-e", f]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError("tshark rc %d: %s" % (r.returncode, r.stderr.strip()[-300:]))
    rows = []
    for line in r.stdout.splitlines():
        vals = line.split("\t")
        rows.append(dict(zip(fields, vals + [""] * (len(fields) - len(vals)))))
    return rows


# Frames rdma_rxe sent (captured by roce-pcap's virtio-net filter-dump): an RC ACKNOWLEDGE and an RC SEND Only with
# a 2-byte payload (pad 2), IPv4; their ICRCs are rxe's (the reference implementation).
KNOWN_FRAMES = [
    "525400e70002525400e700010800450000309e444000401188740a0100010a010002c12112b7001c00001100ffff00000011006a1c3a1f"
    "000001587c5bc6",
    "525400e70001525400e70002080045000030b19e40004011751a0a0100020a010001c14412b7001c00000420ffff0000001280b8575f"
    "5812000000f2545f",
]


def _one(raw):
    import os
    import tempfile
    fd, path = tempfile.mkstemp(suffix=".pcap")
    with os.fdopen(fd, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        f.write(struct.pack("<IIII", 0, 0, len(raw), len(raw)) + raw)
    try:
        return list(frames(path))
    finally:
        os.unlink(path)


def self_test():
    """Failures (strings) of the ICRC verifier against rxe's frames: each verifies; a flipped payload bit, a
    flipped ICRC bit do not; the masked fields (TTL, ToS, UDP checksum, BTH byte 4) may change freely."""
    fails = []
    for k, h in enumerate(KNOWN_FRAMES):
        raw = bytes.fromhex(h)
        fr = _one(raw)
        if len(fr) != 1 or fr[0].opcode not in (17, 4):
            fails.append("known frame %d: not walked as one RoCEv2 frame" % k)
            continue
        got, want = icrc(fr[0])
        if got != want:
            fails.append("known frame %d: ICRC %s, computed %08x" % (k, got, want))
        for what, off in (("payload/BTH bit", fr[0].udp + 8 + 11), ("ICRC bit", len(raw) - 1)):
            bad = bytearray(raw)
            bad[off] ^= 0x01
            g, w = icrc(_one(bytes(bad))[0])
            if g == w:
                fails.append("known frame %d: a flipped %s still verifies" % (k, what))
        masked = bytearray(raw)
        masked[fr[0].l3 + 1] ^= 0xB8      # ToS (DSCP/ECN rewritten on the way)
        masked[fr[0].l3 + 8] -= 1         # TTL
        masked[fr[0].udp + 8 + 4] ^= 0xC0  # BTH byte 4: FECN/BECN
        g, w = icrc(_one(bytes(masked))[0])
        if g != w:
            fails.append("known frame %d: a change of masked fields broke the ICRC" % k)
    return fails
