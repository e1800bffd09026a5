"""Multi-guest topology: the RoCEv2 fabric between the vrnic servers and the out-of-band IP link between guests."""
import ctypes
import os
import re
import socket
import subprocess
import threading

from .common import out

_HELP_CACHE = {}


def server_flags(binary):
    """The long flags a server binary accepts (from its --help; cached per binary)."""
    if binary not in _HELP_CACHE:
        try:
            r = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=20)
            _HELP_CACHE[binary] = set(re.findall(r"(--[a-z][a-z0-9-]*)", r.stdout + r.stderr))
        except (OSError, subprocess.TimeoutExpired):
            _HELP_CACHE[binary] = set()
    return _HELP_CACHE[binary]


_ISSUED = set()  # ports free_ports handed out in this process: boots started side by side never share one
_ISSUED_LOCK = threading.Lock()


def free_ports(n, kind=socket.SOCK_DGRAM, host="127.0.0.1"):
    """n distinct ports free right now on host (bound together, then released), none handed out before by this
    process."""
    socks, ports = [], []
    with _ISSUED_LOCK:
        try:
            while len(ports) < n:
                s = socket.socket(socket.AF_INET, kind)
                s.bind((host, 0))
                socks.append(s)
                if s.getsockname()[1] not in _ISSUED:
                    ports.append(s.getsockname()[1])
        finally:
            for s in socks:
                s.close()
        _ISSUED.update(ports)
    return ports


CLONE_NEWNET = 0x40000000


def in_netns(ns, fn):
    """fn() with the calling thread in network namespace ns (/run/netns/NS; None: as is): a socket it creates
    stays in that namespace."""
    if not ns:
        return fn()
    libc = ctypes.CDLL(None, use_errno=True)
    with open("/proc/self/ns/net") as orig, open(os.path.join("/run/netns", ns)) as target:
        if libc.setns(target.fileno(), CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "setns %s" % ns)
        try:
            return fn()
        finally:
            libc.setns(orig.fileno(), CLONE_NEWNET)


class UdpHub(threading.Thread):
    """A repeating hub for QEMU `-netdev dgram` NICs (more than two guests): every datagram that arrives on
    the hub port is sent to every other guest's port."""

    def __init__(self, port, guest_ports, host="127.0.0.1", netns=None):
        super().__init__(daemon=True, name="vrnic-udp-hub")
        self.addrs = [(host, p) for p in guest_ports]
        # the guests' QEMUs may run in a network namespace (an Ethernet bridge topology): the hub's socket too
        self.s = in_netns(netns, lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
        self.s.bind((host, port))
        self.s.settimeout(0.5)
        self.stopped = False

    def run(self):
        while not self.stopped:
            try:
                data, src = self.s.recvfrom(65536)
            except socket.timeout:
                continue
            except OSError:
                break
            for a in self.addrs:
                if a != src:
                    try:
                        self.s.sendto(data, a)
                    except OSError:
                        pass

    def stop(self):
        self.stopped = True
        self.join(2)
        self.s.close()


class Topology:
    """N guests, each with its own vrnic server.

    RDMA fabric: server i gets LID i+1 and a UDP fabric port on 127.0.0.1 and lists every other server as a
    `--peer LID=HOST:PORT` (flags `--fabric-port/--fabric-bind/--peer`, only passed when the server binary
    has them). Ports: fabric_base+i if given, else free ports picked at start.
    Out-of-band IP (net=True): each guest gets a second virtio-net NIC (`-netdev dgram`, UDP on 127.0.0.1;
    two guests are wired back to back, more go through a UdpHub thread) and the kernel argument
    `vrnic.net=10.0.0.<i+1>/24`, which the guest /init applies to eth0.
    """

    def __init__(self, n, fabric=True, net=True, fabric_base=None, net_base=None, pcap_dir=None, faults=None,
                 host="127.0.0.1"):
        self.n, self.fabric, self.net, self.host = n, fabric, net, host
        self.pcap_dir, self.faults = pcap_dir, faults
        self.lids = [i + 1 for i in range(n)]
        self.fabric_ports = ([fabric_base + i for i in range(n)] if fabric_base else free_ports(n)) if fabric else []
        nports = n + (1 if n > 2 else 0)
        self.net_ports = ([net_base + i for i in range(nports)] if net_base else free_ports(nports)) \
            if net and n > 1 else []
        self.hub = None
        self.warned = False

    def ip(self, i):
        return "10.0.0.%d" % (i + 1)

    def server_args(self, i, binary=None):
        if not self.fabric:
            return []
        args = ["--lid", str(self.lids[i])]
        flags = server_flags(binary) if binary else {"--fabric-port", "--fabric-bind", "--peer", "--pcap"}
        if "--fabric-port" not in flags:
            if not self.warned:
                out("[launch] server %s has no --fabric-port flag: guests get LIDs but no RDMA fabric" % binary)
                self.warned = True
            return args
        args += ["--fabric-port", str(self.fabric_ports[i])]
        if "--fabric-bind" in flags:
            args += ["--fabric-bind", self.host]
        for j in range(self.n):
            if j != i:
                args += ["--peer", "%d=%s:%d" % (self.lids[j], self.host, self.fabric_ports[j])]
        if self.pcap_dir and "--pcap" in flags:
            args += ["--pcap", os.path.join(self.pcap_dir, "fabric%d.pcap" % i)]
        if self.faults and "--faults" in flags:
            args += ["--faults", self.faults]
        return args

    def config_toml(self, i):
        """The same topology as a config file section (docs/configuration.md `[fabric]`)."""
        peers = ", ".join('{lid = %d, addr = "%s:%d"}' % (self.lids[j], self.host, self.fabric_ports[j])
                          for j in range(self.n) if j != i)
        return "[identity]\nlid = %d\n\n[fabric]\nport = %d\nbind = \"%s\"\npeers = [%s]\n" % (
            self.lids[i], self.fabric_ports[i], self.host, peers)

    def qemu_args(self, i):
        if not self.net_ports:
            return []
        local = self.net_ports[i]
        remote = self.net_ports[1 - i] if self.n == 2 else self.net_ports[self.n]
        nd = ("dgram,id=oob,local.type=inet,local.host=%s,local.port=%d,remote.type=inet,remote.host=%s,"
              "remote.port=%d" % (self.host, local, self.host, remote))
        return ["-netdev", nd, "-device", "virtio-net-pci,netdev=oob,mac=52:54:00:00:00:%02x,romfile=" % (i + 1)]

    def append(self, i):
        return ("vrnic.net=%s/24" % self.ip(i)) if self.net_ports else ""

    def start(self, netns=None):
        """netns: the namespace the guests' QEMUs run in (their out-of-band link lives there)."""
        if self.n > 2 and self.net_ports and not self.hub:
            self.hub = UdpHub(self.net_ports[self.n], self.net_ports[:self.n], self.host, netns)
            self.hub.start()

    def stop(self):
        if self.hub:
            self.hub.stop()
            self.hub = None

    def describe(self):
        parts = []
        if self.fabric:
            parts.append("fabric " + ", ".join("g%d lid %d udp %s:%d" % (i, self.lids[i], self.host,
                                                                          self.fabric_ports[i]) for i in range(self.n)))
        if self.net_ports:
            parts.append("oob " + ", ".join("g%d %s" % (i, self.ip(i)) for i in range(self.n)) +
                         " (virtio-net over udp %s%s)" % (",".join(map(str, self.net_ports[:self.n])),
                                                         " + hub %d" % self.net_ports[-1] if self.n > 2 else ""))
        return "; ".join(parts)
