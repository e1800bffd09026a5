"""Ethernet topologies for the eth-* scenarios, qemu/launch --eth and the Ethernet demo: one description of the
segment gives every vrnic server its `--link-layer eth --mac M --eth BACKEND [--pcap F]` and every virtio-net
guest its `-netdev`/`-device` (the same backends), plus each guest's kernel arguments.

Links:
  udp     one or two guests point to point: guest i owns UDP port P_i on 127.0.0.1 and sends to the other's; a vrnic port
          gets `--eth udp:local=127.0.0.1:P_i,remote=127.0.0.1:P_j`, a virtio-net NIC `-netdev dgram` with the
          same pair (the framing of QEMU's dgram: one frame per datagram), so either end can be either NIC.
  bridge  N guests on one L2 segment: a network namespace vrnic-eth-<pid>-<k> holding bridge br0 and one TAP
          vrt<i> per guest (created in the namespace, enslaved to br0, up). A vrnic server runs under
          `ip netns exec NS` with `--eth tap:vrt<i>`; a virtio-net guest's QEMU runs there too with
          `-netdev tap,ifname=vrt<i>`. host=True: br0 gets 10.1.0.254/24 and fd00:1::fe/64 (the "host" that
          pings the guests, `ns_run`).
  switch  N guests, each cabled point to point (a udp pair as above) to its own NIC of one more guest, the switch
          guest (ethswitch.py): a Linux bridge with a rate limit and an ECN-marking qdisc on its egress towards
          one guest, the congestion point of roce-ecn/bench-cc (this host's kernel has no sch_red).
NICs: one per guest, "vrnic" (the emulated ConnectX port) or "virtio" (virtio-net on the same backend);
`nic_override="virtio"` (guest-tests/run --eth-nic virtio) turns every vrnic port into virtio-net: the same
scenario then runs with no vrnic at all, which validates the harness and the scripts.
Guest i: address 10.1.0.<i+1>/24 and fd00:1::<i+1>/64, MAC 02:76:72:00:00:<i+1> (vrnic) or 52:54:00:e7:00:<i+1>
(virtio), kernel arguments vrnic.eth=<addr/24> vrnic.ethmac=<mac> vrnic.ethnics=<nic of guest 0>,<...>
(vrnic.ethhost=1 when the namespace has an address); scenarios/lib.sh vr_eth_up brings the netdev up.
Cleanup: stop() deletes the namespace (its bridge and TAPs go with it); start() first deletes namespaces of
earlier harness processes that no longer run, so a killed run does not break the next one.
"""
import itertools
import os
import re
import subprocess

from .common import out
from .ethswitch import EthSwitch
from .topology import free_ports, server_flags

NS_PREFIX = "vrnic-eth-"
HOST_IP, HOST_IP6 = "10.1.0.254", "fd00:1::fe"
_SEQ = itertools.count(1)  # namespace numbers of this process (boots may start side by side)


def guest_ip(i):
    return "10.1.0.%d" % (i + 1)


def guest_ip6(i):
    return "fd00:1::%x" % (i + 1)


def _ip(*args, check=True):
    r = subprocess.run(["ip"] + list(args), capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError("ip %s: %s" % (" ".join(args), (r.stderr or r.stdout).strip()))
    return r


def stale_namespaces():
    """Namespaces vrnic-eth-<pid>-<k> whose harness process <pid> is gone."""
    r = _ip("netns", "list", check=False)
    stale = []
    for line in r.stdout.splitlines():
        m = re.match(r"(%s(\d+)-\d+)\b" % re.escape(NS_PREFIX), line.strip())
        if m and not os.path.exists("/proc/%s" % m.group(2)):
            stale.append(m.group(1))
    return stale


class EthTopology:
    """One Ethernet segment: link "udp" (2 guests), "bridge" or "switch" (N guests), nics[i] in ("vrnic", "virtio");
    switch: the switch guest's settings (ethswitch.SWITCH_DEFAULTS)."""

    def __init__(self, nics, link="udp", host=False, pcap_dir=None, nic_override=None, host_addr="127.0.0.1",
                 switch=None):
        self.nics = [nic_override or n for n in nics] if nic_override else list(nics)
        self.n, self.link, self.host, self.pcap_dir, self.addr = len(self.nics), link, host, pcap_dir, host_addr
        if link not in ("udp", "bridge", "switch"):
            raise ValueError("eth link %r: udp, bridge or switch" % link)
        if link == "udp" and self.n not in (1, 2):
            raise ValueError("eth link udp joins two guests (one: its peer port is left unanswered; bridge for more)")
        if host and link != "bridge":
            raise ValueError("a host address needs the bridge link")
        if switch is not None and link != "switch":
            raise ValueError("switch settings need link switch")
        # switch: guest i's end is ports[2i], the switch's NIC i ports[2i+1]
        self.ports = free_ports(2) if link == "udp" else free_ports(2 * self.n) if link == "switch" else []
        self.switch = EthSwitch(self.n, switch) if link == "switch" else None
        self.ns = "%s%d-%d" % (NS_PREFIX, os.getpid(), next(_SEQ)) if link == "bridge" else None
        self.started = False

    # ---- per guest ---------------------------------------------------------------------------------------
    def mac(self, i):
        return ("02:76:72:00:00:%02x" if self.nics[i] == "vrnic" else "52:54:00:e7:00:%02x") % (i + 1)

    def tap(self, i):
        return "vrt%d" % i

    def wrap(self, i):
        """The argv prefix that runs guest i's server or QEMU inside the namespace (bridge link)."""
        return ["ip", "netns", "exec", self.ns] if self.ns else []

    def has_device(self, i):
        return self.nics[i] == "vrnic"

    def udp_pair(self, i):
        """guest i's (local, remote) UDP ports on a udp or switch link."""
        if self.link == "switch":
            return self.ports[2 * i], self.ports[2 * i + 1]
        return self.ports[i], self.ports[1 - i]

    def backend(self, i):
        if self.link in ("udp", "switch"):
            return "udp:local=%s:%d,remote=%s:%d" % ((self.addr, self.udp_pair(i)[0], self.addr, self.udp_pair(i)[1]))
        return "tap:%s" % self.tap(i)

    def server_args(self, i, binary=None):
        """guest i's vrnic server: eth personality, its MAC, its backend (and a pcap of the port)."""
        if not self.has_device(i):
            return []
        if binary is not None:
            flags = server_flags(binary)
            missing = [f for f in ("--link-layer", "--eth", "--mac") if f not in flags]
            if missing:
                raise RuntimeError("server %s has no %s flag: no Ethernet port in this build"
                                   % (binary, "/".join(missing)))
        args = ["--link-layer", "eth", "--mac", self.mac(i), "--eth", self.backend(i)]
        if self.pcap_dir:
            args += ["--pcap", os.path.join(self.pcap_dir, "eth%d.pcap" % i)]
        if self.switch and self.switch.cfg["port_mbps"]:
            args += ["--eth-rate-mbps", str(self.switch.cfg["port_mbps"])]
        return args

    def qemu_args(self, i):
        """guest i's virtio-net NIC on the segment (none for a vrnic guest: its port is the device)."""
        if self.has_device(i):
            return []
        if self.link in ("udp", "switch"):
            nd = ("dgram,id=eth,local.type=inet,local.host=%s,local.port=%d,remote.type=inet,remote.host=%s,"
                  "remote.port=%d" % (self.addr, self.udp_pair(i)[0], self.addr, self.udp_pair(i)[1]))
        else:
            nd = "tap,id=eth,ifname=%s,script=no,downscript=no" % self.tap(i)
        args = ["-netdev", nd, "-device", "virtio-net-pci,netdev=eth,mac=%s,romfile=" % self.mac(i)]
        if self.pcap_dir:
            args += ["-object", "filter-dump,id=ethdump,netdev=eth,file=%s" % os.path.join(self.pcap_dir,
                                                                                         "eth%d.pcap" % i)]
        return args

    def append(self, i):
        a = "vrnic.eth=%s/24 vrnic.ethmac=%s vrnic.ethnics=%s" % (guest_ip(i), self.mac(i), ",".join(self.nics))
        return a + (" vrnic.ethhost=1" if self.host else "")

    # ---- the switch guest (link "switch") ----------------------------------------------------------------------
    def switch_qemu_args(self):
        """The switch guest's NICs, NIC i cabled to guest i (with a pcap directory and switch capture=True: the
        switch's side of each cable, sw<i>.pcap)."""
        pairs = [(self.ports[2 * i + 1], self.ports[2 * i]) for i in range(self.n)]
        cap = self.pcap_dir and self.switch.cfg["capture"]
        return self.switch.qemu_args(pairs, self.addr, os.path.join(self.pcap_dir, "sw%d.pcap") if cap else None)

    def switch_files(self):
        """The switch guest's initramfs additions: its settings."""
        return {"etc/vrnic-switch.conf": (self.switch.conf(), 0o644)}

    # ---- the namespace ---------------------------------------------------------------------------------------
    def start(self):
        for ns in stale_namespaces():
            out("[eth] deleting stale namespace %s" % ns)
            _ip("netns", "del", ns, check=False)
        if not self.ns or self.started:
            return
        _ip("netns", "add", self.ns)
        self.started = True
        try:
            x = ["-n", self.ns]
            _ip(*x, "link", "set", "lo", "up")
            _ip(*x, "link", "add", "br0", "type", "bridge")
            # no STP, no forwarding delay: ports forward as soon as they are up
            _ip(*x, "link", "set", "br0", "type", "bridge", "stp_state", "0", "forward_delay", "0")
            for i in range(self.n):
                _ip(*x, "tuntap", "add", "dev", self.tap(i), "mode", "tap")
                _ip(*x, "link", "set", self.tap(i), "mtu", "9000")
                _ip(*x, "link", "set", self.tap(i), "master", "br0")
                _ip(*x, "link", "set", self.tap(i), "up")
            _ip(*x, "link", "set", "br0", "up")
            if self.host:
                _ip(*x, "addr", "add", HOST_IP + "/24", "dev", "br0")
                _ip(*x, "-6", "addr", "add", HOST_IP6 + "/64", "dev", "br0", "nodad")
        except Exception:
            self.stop()
            raise

    def set_mtu(self, mtu):
        """The bridge and its ports carry frames up to mtu (the eth-mtu scenario's jumbo frames)."""
        if self.ns:
            for i in range(self.n):
                _ip("-n", self.ns, "link", "set", self.tap(i), "mtu", str(mtu), check=False)
            _ip("-n", self.ns, "link", "set", "br0", "mtu", str(mtu), check=False)

    def ns_run(self, argv, timeout=60):
        """Run argv inside the namespace (the "host" side of eth-host); returns (rc, output)."""
        try:
            r = subprocess.run(["ip", "netns", "exec", self.ns] + list(argv), capture_output=True, text=True,
                               timeout=timeout)
            return r.returncode, r.stdout + r.stderr
        except subprocess.TimeoutExpired as e:
            return 124, "%s" % e

    def stop(self):
        if self.switch:
            self.switch.close()
        if self.ns and self.started:
            _ip("netns", "del", self.ns, check=False)
            self.started = False

    def describe(self):
        who = ", ".join("g%d %s %s %s" % (i, self.nics[i], self.mac(i), guest_ip(i)) for i in range(self.n))
        if self.link == "switch":
            return "eth switch (%s): %s; %s" % (", ".join("g%d %d<->%d" % (i, self.ports[2 * i], self.ports[2 * i + 1])
                                                          for i in range(self.n)), who, self.switch.describe())
        if self.link == "udp":
            return "eth udp point-to-point (%s:%d <-> %s:%d): %s" % (self.addr, self.ports[0], self.addr,
                                                                    self.ports[1], who)
        return "eth bridge br0 in netns %s, taps %s%s: %s" % (
            self.ns, " ".join(self.tap(i) for i in range(self.n)),
            ", host %s/%s" % (HOST_IP, HOST_IP6) if self.host else "", who)
