#!/usr/bin/env python3
"""mockvrnic.py - a minimal vfio-user server in Python (stdlib) used to test the bench itself.

It speaks just enough vfio-user for QEMU 11.1's vfio-user-pci to attach: a 15b3:1017 function,
class 0x020700, BAR0 32M / BAR2 16K (MSI-X table+PBA) / BAR4 1M (64-bit prefetchable), MSI-X 64,
an init segment whose fw_rev reads as --fw-version, and the same CLI / control-socket contract as
the real server (`raise <vector>`, `stats`). No command interface, no mmap (poll mode = trap mode).
Not the product: the real server is target/release/vrnic (device/). Use with
`guest-tests/run --server guest-tests/tools/mockvrnic.py ...` to check the harness.
"""
import argparse
import array
import json
import os
import signal
import socket
import struct
import sys
import threading

HDR = struct.Struct("<HHIII")  # msg_id, command, msg_size, flags, error
VERSION, DMA_MAP, DMA_UNMAP, GET_INFO, GET_REGION_INFO, GET_REGION_IO_FDS, GET_IRQ_INFO, SET_IRQS, \
    REGION_READ, REGION_WRITE, DMA_READ, DMA_WRITE, RESET = range(1, 14)
REGION_SIZES = {0: 32 << 20, 2: 16 << 10, 4: 1 << 20, 7: 4096}
MSIX_INDEX = 2

stats = {"connections": 0, "messages": 0, "raises": 0, "dma_maps": 0, "dma_unmaps": 0, "set_irqs": 0,
         "resets": 0, "bar_reads": 0, "bar_writes": 0, "cfg_reads": 0, "cfg_writes": 0}
lock = threading.Lock()
msix_fds = {}


def log(*a):
    print("[mockvrnic]", *a, file=sys.stderr, flush=True)


def make_config():
    c = bytearray(4096)
    struct.pack_into("<HHHH", c, 0, 0x15b3, 0x1017, 0, 0x0010)
    c[8], c[9], c[10], c[11] = 0, 0, 0x07, 0x02
    for off in (0x10, 0x18, 0x20):
        struct.pack_into("<I", c, off, 0xc)  # memory, 64-bit, prefetchable
    struct.pack_into("<HH", c, 0x2c, 0x15b3, 0x0008)
    c[0x34] = 0x40
    # PCIe capability v2, endpoint
    c[0x40], c[0x41] = 0x10, 0x9c
    struct.pack_into("<H", c, 0x42, 0x0002)
    struct.pack_into("<I", c, 0x44, 0x00008000 | 0x10000000)  # devcap: role-based err, FLR
    struct.pack_into("<I", c, 0x4c, 3 | (8 << 4))  # linkcap: 8GT/s x8
    struct.pack_into("<H", c, 0x52, 0x0083)  # linksta 8GT/s x8
    # MSI-X: 64 vectors, table BAR2+0, PBA BAR2+0x2000
    c[0x9c], c[0x9d] = 0x11, 0x00
    struct.pack_into("<HII", c, 0x9e, 63, 0x00000002, 0x00002002)
    return c


class Device:
    def __init__(self, fw):
        maj, mnr, sub = (int(x) for x in fw.split("."))
        self.cfg = make_config()
        self.bar0 = bytearray(0x4000)
        struct.pack_into(">II", self.bar0, 0, (mnr << 16) | maj, (5 << 16) | sub)
        self.bars = {2: bytearray(16 << 10), 4: bytearray(4096)}

    def read(self, region, off, n):
        if region == 7:
            stats["cfg_reads"] += 1
            return bytes(self.cfg[off:off + n])
        stats["bar_reads"] += 1
        buf = self.bar0 if region == 0 else self.bars.get(region, b"")
        return bytes(buf[off:off + n]).ljust(n, b"\0")

    def write(self, region, off, data):
        if region == 7:
            stats["cfg_writes"] += 1
            if off >= 0x40 or off in range(4, 6):
                self.cfg[off:off + len(data)] = data
            return
        stats["bar_writes"] += 1
        buf = self.bar0 if region == 0 else self.bars.get(region)
        if buf is not None and off + len(data) <= len(buf) and not (region == 0 and off < 8):
            buf[off:off + len(data)] = data


def recv_exact(conn, n, fds):
    buf = b""
    while len(buf) < n:
        msg, anc, _, _ = conn.recvmsg(n - len(buf), socket.CMSG_SPACE(64 * 4))
        if not msg:
            raise EOFError
        buf += msg
        for lvl, typ, data in anc:
            if lvl == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
                a = array.array("i")
                a.frombytes(data[:len(data) - len(data) % 4])
                fds.extend(a)
    return buf


def serve(conn, dev):
    while True:
        fds = []
        try:
            h = recv_exact(conn, HDR.size, fds)
        except (EOFError, ConnectionResetError):
            return
        mid, cmd, size, flags, _ = HDR.unpack(h)
        payload = recv_exact(conn, size - HDR.size, fds) if size > HDR.size else b""
        stats["messages"] += 1
        reply, err = b"", 0
        if cmd == VERSION:
            caps = json.dumps({"capabilities": {"max_msg_fds": 16, "max_data_xfer_size": 1 << 20,
                                                "pgsizes": 4096}}).encode() + b"\0"
            reply = struct.pack("<HH", 0, 0) + caps
        elif cmd == DMA_MAP:
            stats["dma_maps"] += 1
        elif cmd == DMA_UNMAP:
            stats["dma_unmaps"] += 1
            argsz, fl, addr, sz = struct.unpack_from("<IIQQ", payload)
            reply = struct.pack("<IIQQ", 24, 0, addr, sz)
        elif cmd == GET_INFO:
            reply = struct.pack("<IIII", 16, 1 | 2, 9, 5)
        elif cmd == GET_REGION_INFO:
            argsz, fl, idx, capoff, sz, off = struct.unpack_from("<IIIIQQ", payload)
            rs = REGION_SIZES.get(idx, 0)
            reply = struct.pack("<IIIIQQ", 32, 3 if rs else 0, idx, 0, rs, 0)
        elif cmd == GET_IRQ_INFO:
            argsz, fl, idx, cnt = struct.unpack_from("<IIII", payload)
            n = 64 if idx == MSIX_INDEX else 0
            reply = struct.pack("<IIII", 16, 1 | 8 if n else 1, idx, n)
        elif cmd == SET_IRQS:
            stats["set_irqs"] += 1
            argsz, fl, idx, start, cnt = struct.unpack_from("<IIIII", payload)
            with lock:
                if idx == MSIX_INDEX:
                    if fl & 1 and cnt == 0:  # DATA_NONE, count 0: disable all
                        for f in msix_fds.values():
                            os.close(f)
                        msix_fds.clear()
                    elif fl & 4:  # DATA_EVENTFD
                        for i in range(cnt):
                            v = start + i
                            if v in msix_fds:
                                os.close(msix_fds.pop(v))
                            if i < len(fds) and fds[i] >= 0:
                                msix_fds[v] = fds[i]
                        fds = fds[cnt:]
                log("SET_IRQS idx=%d flags=%#x start=%d count=%d -> vectors %s" % (
                    idx, fl, start, cnt, sorted(msix_fds)))
        elif cmd == REGION_READ:
            off, region, cnt = struct.unpack_from("<QII", payload)
            reply = struct.pack("<QII", off, region, cnt) + dev.read(region, off, cnt)
        elif cmd == REGION_WRITE:
            off, region, cnt = struct.unpack_from("<QII", payload)
            dev.write(region, off, payload[16:16 + cnt])
            reply = struct.pack("<QII", off, region, cnt)
        elif cmd == RESET:
            stats["resets"] += 1
        else:
            err = 95  # EOPNOTSUPP
            log("unhandled command %d size %d" % (cmd, size))
        for f in fds:
            if f >= 0:
                os.close(f)
        if flags & 0x10:  # no reply wanted
            continue
        conn.sendall(HDR.pack(mid, cmd, HDR.size + len(reply), 1 | (0x20 if err else 0), err) + reply)


def control(path):
    if os.path.exists(path):
        os.unlink(path)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.listen(4)
    while True:
        c, _ = s.accept()
        f = c.makefile("rwb")
        for line in f:
            p = line.decode().split()
            if p[:1] == ["raise"] and len(p) == 2:
                with lock:
                    fd = msix_fds.get(int(p[1]))
                    if fd is None:
                        f.write(b"err vector %s has no eventfd\n" % p[1].encode())
                    else:
                        os.write(fd, struct.pack("<Q", 1))
                        stats["raises"] += 1
                        f.write(b"ok\n")
            elif p[:1] == ["stats"]:
                f.write(json.dumps(stats).encode() + b"\n")
            else:
                f.write(b"err unknown command\n")
            f.flush()
        c.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--socket", required=True)
    ap.add_argument("--control")
    ap.add_argument("--config")
    ap.add_argument("--doorbell", default="trap")
    ap.add_argument("--trace", action="store_true")
    ap.add_argument("--fw-version", default="16.35.2000")
    a = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    dev = Device(a.fw_version)
    if a.control:
        threading.Thread(target=control, args=(a.control,), daemon=True).start()
    if os.path.exists(a.socket):
        os.unlink(a.socket)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(a.socket)
    s.listen(1)
    log("listening on %s (doorbell %s; mock: no mmap)" % (a.socket, a.doorbell))
    while True:
        c, _ = s.accept()
        stats["connections"] += 1
        log("client connected")
        serve(c, dev)
        c.close()
        log("client disconnected")


if __name__ == "__main__":
    main()
