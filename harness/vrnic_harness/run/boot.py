"""One boot of a group of scenario runs (run/plan.py BootPlan): the segment and links between the guests, a vrnic
server per guest with a device, the switch guest of a "switch" segment, the guests; and their teardown. Every unit
of the plan has the same boot_key, so the first unit's scenario and run describe the whole boot."""
import os
from dataclasses import dataclass, field

from .. import ethswitch, ethtopo, qemu, topology
from ..common import say


@dataclass
class Options:
    """guest-tests/run's options for every boot: --server-arg, --guest-arg, --doorbell, --eth-nic, --pcap, --jobs."""
    server_extra: list = field(default_factory=list)
    guest_extra: list = field(default_factory=list)
    only_doorbell: list = field(default_factory=list)
    eth_nic: str = ""
    eth_pcap: bool = False
    jobs: int = 1           # boots at once (run/runner.py run_side_by_side)


@dataclass
class Env:
    """What every boot of a guest-tests/run shares: the cache, the accelerator, the server binary (or the
    exception that building it raised), the options, the initramfs (base + every scenario's script)."""
    cache: str
    accel: list
    binary: object
    options: Options
    initrd: str = ""        # base + every scenario's script
    initrd_ulp: str = ""    # the same with the ULP userspace


class BootError(Exception):
    """The boot could not be set up (a server that does not start, a segment that cannot be made)."""


class Boot:
    def __init__(self, env, plan, outdir):
        self.env, self.plan, self.outdir = env, plan, outdir
        self.sc, self.run = plan.units[0].scenario, plan.units[0].run
        self.n = self.sc.guests
        self.eth = self.topo = self.switch = None
        self.servers, self.guests = [], []
        self.server_of = {}  # guest index -> its server
        self.marks = [0] * self.n  # per guest: the line after the last unit's window (where the next BEGIN is)

    # ---- what the boot is made of ------------------------------------------------------------------------------
    def nic_override(self):
        o = self.run.nic or self.env.options.eth_nic or None
        return None if o == "vrnic" else o

    def eth_topology(self):
        e = self.sc.eth
        if not e:
            return None
        pcap = self.outdir if self.env.options.eth_pcap or e.pcap else None
        return ethtopo.EthTopology(list(e.nics), link=e.link, host=e.host, pcap_dir=pcap,
                                   nic_override=self.nic_override(), switch=e.switch_cfg())

    def net_topology(self):
        """The RDMA fabric and the out-of-band link; the switch guest is the last on the latter."""
        n = self.n + (1 if self.eth and self.eth.switch else 0)
        if n <= 1 and not self.sc.fabric:
            return None
        return topology.Topology(n, fabric=self.sc.fabric and self.sc.device, net=n > 1)

    def doorbell_mode(self):
        """The doorbell mode a unit of the boot names (its run or its server_args), or None (units of one boot
        share it: it is part of their boot_key)."""
        modes = {u.scenario.doorbell_of(u.run) for u in self.plan.units} - {None}
        return modes.pop() if modes else None

    def doorbell_args(self):
        """--doorbell MODE when the boot has one."""
        mode = self.doorbell_mode()
        return ["--doorbell", mode] if mode else []

    def server_args(self, gi):
        args = []
        if self.sc.config:
            cfg = os.path.join(self.outdir, "vrnic.toml")
            with open(cfg, "w") as f:
                f.write(self.sc.config)
            args += ["--config", cfg]
        args += list(self.sc.other_server_args())
        if self.topo:
            args += self.topo.server_args(gi, self.env.binary)
        if self.eth:
            try:
                args += self.eth.server_args(gi, self.env.binary)
            except RuntimeError as e:
                raise BootError(str(e)) from e
        args += list(self.sc.per_guest_args()[gi]) + self.doorbell_args() + list(self.env.options.server_extra)
        return args

    def kernel_args(self, gi):
        names = ",".join(u.name for u in self.plan.units)
        words = ["vrnic.scenarios=" + names]
        keep = [u.name for u in self.plan.units if u.scenario.shares_driver]
        if len(keep) > 1:
            words.append("vrnic.keep=" + ",".join(keep))
        if self.n > 1:
            words.append("vrnic.guest=%d vrnic.guests=%d" % (gi, self.n))
        if self.topo and self.topo.append(gi):
            words.append(self.topo.append(gi))
        if self.eth:
            words.append(self.eth.append(gi))
        if self.sc.iommu:
            words.append("intel_iommu=on iommu=pt")
        if self.doorbell_mode():  # the scripts may skip what the other mode's boot also runs (perftest.sh)
            words.append("vrnic.doorbell=" + self.doorbell_mode())
        return " ".join(words + list(self.env.options.guest_extra))

    def timeout(self):
        """The hard limit of every QEMU of the boot: each unit's timeout, summed, and time for their checks."""
        return sum(u.scenario.timeout + 30 for u in self.plan.units) + 30

    def sfx(self, gi):
        return "" if self.n == 1 else "-g%d" % gi

    # ---- start and stop ---------------------------------------------------------------------------------------
    def start(self):
        """Segment, links, switch guest, servers, guests. BootError when a part cannot start."""
        self.eth = self.eth_topology()
        self.topo = self.net_topology()
        if self.eth:
            self.eth.start()
            say("[run] %s: topology: %s" % (self.plan.tag, self.eth.describe()))
        if self.topo:
            self.topo.start(netns=self.eth.ns if self.eth else None)
            say("[run] %s: topology: %s" % (self.plan.tag, self.topo.describe()))
        if self.eth and self.eth.switch:
            self.start_switch()
        for gi in range(self.n):
            sockets = []
            if self.sc.device and (self.eth is None or self.eth.has_device(gi)):
                sockets = [self.start_server(gi).sock]
            self.start_guest(gi, sockets)

    def start_server(self, gi):
        binary = self.env.binary
        if isinstance(binary, Exception) or binary is None:
            raise BootError("server unavailable: %s" % str(binary).strip().splitlines()[0])
        s = qemu.Server(binary, os.path.join(self.outdir, "vrnic%d.sock" % gi),
                        os.path.join(self.outdir, "vrnic%d.ctl" % gi), self.server_args(gi),
                        log=os.path.join(self.outdir, "server-%s%s.log" % (self.plan.tag, self.sfx(gi))),
                        wrap=self.eth.wrap(gi) if self.eth else ())
        self.servers.append(s)
        self.server_of[gi] = s
        if not s.wait_socket():
            raise BootError("server%s did not create %s (rc %s): %s" % (
                self.sfx(gi), s.sock, s.p.poll(), s.log_text().strip()[-300:].replace("\n", " | ")))
        say("[run] %s%s: server pid %d: %s" % (self.plan.tag, self.sfx(gi), s.pid, " ".join(s.argv)))
        return s

    def start_guest(self, gi, sockets):
        extra = (self.topo.qemu_args(gi) if self.topo else []) + (self.eth.qemu_args(gi) if self.eth else [])
        ulp = any(u.scenario.ulp for u in self.plan.units)
        g = qemu.Guest(self.env.cache, "g%d" % gi, self.env.initrd_ulp if ulp else self.env.initrd,
                       append=self.kernel_args(gi), sockets=sockets,
                       accel=self.env.accel, reboot=self.sc.reboot, timeout=self.timeout(), mem=self.sc.mem,
                       log=os.path.join(self.outdir, "console-%s%s.log" % (self.plan.tag, self.sfx(gi))),
                       iommu=self.sc.iommu, extra=extra, wrap=self.eth.wrap(gi) if self.eth else (),
                       echo_tag="%s/g%d" % (self.plan.tag, gi) if self.env.options.jobs > 1 else None)
        self.guests.append(g)
        say("[run] %s%s: qemu %s" % (self.plan.tag, self.sfx(gi), " ".join(g.argv)))

    def start_switch(self):
        """The switch guest of a "switch" segment (ethswitch.py), booted before the scenario's guests."""
        tag = self.plan.tag
        self.switch = ethswitch.boot_switch(
            self.env.cache, self.eth, self.topo, self.n, os.path.join(self.outdir, "initrd-%s-sw" % tag),
            os.path.join(self.outdir, "console-%s-sw.log" % tag), self.env.accel, self.timeout(),
            " ".join(self.env.options.guest_extra))
        say("[run] %s-sw: qemu %s" % (tag, " ".join(self.switch.argv)))

    def stop(self, failed=False):
        """Every QEMU and server stopped (a failed boot prints each server's log tail), the links removed."""
        for g in self.guests + ([self.switch] if self.switch else []):
            g.kill()
        for sv in self.servers:
            sv.stop()
            tail = sv.log_text().strip().splitlines()[-25:] if failed else []
            if tail:
                say("[run] %s: server log tail (%s):" % (self.plan.tag, sv.logpath))
                for l in tail:
                    say("    " + l)
        if self.topo:
            self.topo.stop()
        if self.eth:
            self.eth.stop()
