"""The switch guest of an Ethernet topology with link "switch" (ethtopo.py): a congestion point that is a real Linux
qdisc. This host's kernel has no sch_red/netem/fq_codel/codel/pie (only htb, tbf, ingress, u32, bpf, mirred), so
the marking queue runs in a guest kernel: one more guest (trixie's 6.12, no vrnic, 1 vCPU) with one virtio-net NIC
per scenario guest, each cabled point to point to that guest's port (a UDP pair on 127.0.0.1: vrnic
`--eth udp:local=..,remote=..` or QEMU `-netdev dgram` on the guest's side, `-netdev dgram` on the switch's). Its
script (guest-tests/scenarios/switch-guest.sh) puts every NIC on bridge br0 and, on the egress NIC towards the
bottleneck guest, `htb rate R` with a `red ... ecn` (or `fq_codel ecn`) child: the queue builds there and marks
CE on ECT packets (drops Not-ECT ones) as a switch would. Its settings reach it as /etc/vrnic-switch.conf.

Switch NIC i (towards guest i): MAC 52:54:00:5e:00:<i+1>. Control: the switch listens on the out-of-band link
(10.0.0.<n+1>, TCP SWITCH_CTL_PORT) for one-line commands from the guests (`sw_cmd` in eth-lib.sh): `stats LABEL`
prints the qdisc's and every port's counters on its console (`SWITCH-STATS ...` lines, parsed by
run/checks_switch.py), `end` prints them once more and ends its script.
"""

import os
import socket

from . import qemu
from .common import REPO

SWITCH_CTL_PORT = 18590
SWITCH_SCRIPT = os.path.join(REPO, "guest-tests", "scenarios", "switch-guest.sh")

# The congestion point's defaults. RATE: well below what flows push through the switch guest under TCG on the
# 2-CPU host (TCP, 2 streams, no limit: ~70 Mbit/s; docs/congestion.md), so the queue builds in the qdisc, not in
# the guests or QEMU's sockets. RED (bytes): min 15 KB ~ 4 ms at 30 Mbit/s, max 45 KB ~ 12 ms, the hard limit
# 300 KB; marking probability up to 10% at max; burst (2*min+max)/(3*avpkt). capture: with the topology's
# pcap directory, QEMU also captures the switch's side of every cable (sw<i>.pcap; costs the switch CPU).
# port_mbps: the line rate of every vrnic port cabled to the switch (the server's --eth-rate-mbps; 0: unlimited).
# A vrnic port otherwise sends at whatever its host thread reaches (Gb/s) and a flow's first burst, before the first
# CNP, overflows the switch guest's ingress (its QEMU socket) before the qdisc: loss no marking can prevent, which a
# switch that keeps up with its ports' line rate never has. 50 Mbit/s: below the ~70 the switch takes in, above
# the 30 Mbit/s bottleneck, so the queue still builds in the egress qdisc.
# The switch's ingress buffer: each of its NICs reads a UDP socket the harness opens (QEMU `local.type=fd`) with
# this receive buffer, where QEMU's own socket would get the host's default (net.core.rmem_default, 208 KiB: 33 ms
# at 50 Mbit/s). The switch guest is one TCG vCPU on a loaded 2-CPU host: a pause of its vCPU longer than that
# overflowed the socket and lost a RoCE frame before any qdisc saw it (roce-ecn, about 1 run in 4 under CI), a
# loss a switch with a buffer per port does not have. 4 MiB: ~650 ms at 50 Mbit/s.
INGRESS_BUFFER = int(os.environ.get("VRNIC_SW_RCVBUF", 4 << 20))
SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)

SWITCH_DEFAULTS = dict(egress=0, rate="30mbit", aqm="red", red_min=15000, red_max=45000, red_limit=300000,
                       red_prob=0.1, avpkt=1000, delay_ms=0, capture=False, port_mbps=50, burst="")


class EthSwitch:
    """Settings of one switch guest for n scenario guests; cfg overrides SWITCH_DEFAULTS (registry: eth=dict(...,
    switch=dict(egress=2, rate="50mbit")))."""

    def __init__(self, n, cfg=None):
        unknown = set(cfg or {}) - set(SWITCH_DEFAULTS)
        if unknown:
            raise ValueError("switch settings %s unknown (known: %s)" % (sorted(unknown), sorted(SWITCH_DEFAULTS)))
        self.n = n
        self.cfg = dict(SWITCH_DEFAULTS, **(cfg or {}))
        self.socks = []  # the switch NICs' sockets (qemu_args), held until close()
        if not 0 <= int(self.cfg["egress"]) < n:
            raise ValueError("switch egress port %r: a guest index below %d" % (self.cfg["egress"], n))
        if self.cfg["aqm"] not in ("red", "fq_codel", "none"):
            raise ValueError("switch aqm %r: red, fq_codel or none" % self.cfg["aqm"])

    def mac(self, i):
        return "52:54:00:5e:00:%02x" % (i + 1)

    def qemu_args(self, ports, addr, pcap=None):
        """The switch's NICs: ports[i] = (the switch end's UDP port, guest i's UDP port). Each NIC's socket is made
        here (bound to its port, connected to the guest's, INGRESS_BUFFER to receive into): QEMU inherits it
        (fds())."""
        self.close()
        args = []
        for i, (mine, theirs) in enumerate(ports):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            try:
                s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, INGRESS_BUFFER)
            except OSError:  # not root: what net.core.rmem_max allows
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, INGRESS_BUFFER)
            s.bind((addr, mine))
            s.connect((addr, theirs))
            self.socks.append(s)
            nd = "dgram,id=sw%d,local.type=fd,local.str=%d" % (i, s.fileno())
            args += ["-netdev", nd, "-device", "virtio-net-pci,netdev=sw%d,mac=%s,romfile=" % (i, self.mac(i))]
            if pcap:
                args += ["-object", "filter-dump,id=swdump%d,netdev=sw%d,file=%s" % (i, i, pcap % i)]
        return args

    def fds(self):
        return [s.fileno() for s in self.socks]

    def ingress_drops(self):
        """{switch NIC i: datagrams its socket dropped for want of buffer} (the drops column of /proc/net/udp, while
        the harness still holds the sockets)."""
        ports = {s.getsockname()[1]: i for i, s in enumerate(self.socks)}
        out = {}
        try:
            with open("/proc/net/udp") as f:
                next(f)
                for line in f:
                    c = line.split()
                    port = int(c[1].split(":")[1], 16)
                    if port in ports:
                        out[ports[port]] = int(c[-1])
        except (OSError, ValueError, IndexError):
            pass
        return out

    def close(self):
        for s in self.socks:
            s.close()
        self.socks = []

    def conf(self):
        """/etc/vrnic-switch.conf: shell assignments read by switch-guest.sh."""
        c = self.cfg
        lines = ["SW_N=%d" % self.n, "SW_MACS='%s'" % " ".join(self.mac(i) for i in range(self.n)),
                 "SW_EGRESS=%d" % int(c["egress"]), "SW_RATE=%s" % c["rate"], "SW_AQM=%s" % c["aqm"],
                 "SW_RED_MIN=%d" % c["red_min"], "SW_RED_MAX=%d" % c["red_max"], "SW_RED_LIMIT=%d" % c["red_limit"],
                 "SW_RED_PROB=%s" % c["red_prob"], "SW_AVPKT=%d" % c["avpkt"], "SW_DELAY_MS=%d" % c["delay_ms"],
                 "SW_BURST=%s" % c["burst"], "SW_CTL_PORT=%d" % SWITCH_CTL_PORT]
        return ("\n".join(lines) + "\n").encode()

    def describe(self):
        c = self.cfg
        q = ("red min %d max %d limit %d prob %s ecn" % (c["red_min"], c["red_max"], c["red_limit"], c["red_prob"])
             if c["aqm"] == "red" else "fq_codel ecn" if c["aqm"] == "fq_codel" else "fifo")
        return "switch guest: bridge of %d ports (vrnic ports at %s), egress to g%d htb rate %s%s + %s%s" % (
            self.n, "%d Mbit/s" % c["port_mbps"] if c["port_mbps"] else "line rate", int(c["egress"]), c["rate"],
            " burst %s" % c["burst"] if c["burst"] else "", q,
            ", netem delay %d ms" % c["delay_ms"] if c["delay_ms"] else "")


def boot_switch(cache, eth, topo, n, initrd, log, accel, timeout, append=""):
    """Boot the switch guest of topology eth (link "switch") for n scenario guests: guest index n, one vCPU, no
    device, its out-of-band NIC first (eth0; topo: the scenario's Topology built for n + 1 guests), then one NIC
    per scenario guest. initrd: where its initramfs goes. Returns the qemu.Guest."""
    qemu.make_initrd(cache, initrd, qemu.scenario_files(cache, {"switch": SWITCH_SCRIPT}, eth.switch_files()))
    a = "vrnic.scenarios=switch vrnic.guest=%d vrnic.guests=%d %s vrnic.ethnics=%s %s" % (
        n, n, topo.append(n) if topo else "", ",".join(eth.nics), append)
    extra = (topo.qemu_args(n) if topo else []) + eth.switch_qemu_args()
    return qemu.Guest(cache, "sw", initrd, append=" ".join(a.split()), accel=accel, timeout=timeout, log=log, smp=1,
                      extra=extra, wrap=eth.wrap(n), fds=eth.switch.fds())
