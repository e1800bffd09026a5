"""The records the registry is made of: a Scenario, its Ethernet segment (EthSpec) and its runs (Run: one set of
server arguments each, e.g. --doorbell trap then --doorbell poll)."""
from dataclasses import dataclass, field
from typing import Callable, Optional

DEFAULT_FW = "16.35.2000"
DOORBELL_MODES = ("trap", "poll")


@dataclass(frozen=True)
class EthSpec:
    """An Ethernet segment (vrnic_harness/ethtopo.py): one NIC per guest, "vrnic" or "virtio"; link udp, bridge or
    switch; host: the bridge's namespace gets an address; pcap: every port captured; switch: the switch guest's
    settings (ethswitch.SWITCH_DEFAULTS)."""
    nics: tuple
    link: str = "udp"
    host: bool = False
    pcap: bool = False
    switch: Optional[tuple] = None  # (key, value) pairs: the record stays hashable

    def switch_cfg(self):
        return dict(self.switch) if self.switch is not None else None


def eth(nics, link="udp", host=False, pcap=False, switch=None):
    return EthSpec(tuple(nics), link, host, pcap, None if switch is None else tuple(sorted(switch.items())))


@dataclass(frozen=True)
class Run:
    """One run of a scenario: its label (the log tag's suffix), its doorbell mode (None: the server's default or
    the scenario's server_args), its NIC kind (bench runs: every vrnic port replaced, "virtio")."""
    label: str = ""
    doorbell: Optional[str] = None
    nic: Optional[str] = None


@dataclass
class Scenario:
    """One guest scenario. Its script (guest-tests/scenarios/<script>.sh, default the name) runs in every guest;
    check(ctx) judges its window of the consoles (run/context.py RunContext) -> None (PASS) or a reason;
    interact(ctx) runs on the host while it is in progress.

    Sharing a boot: scenarios whose guests and servers are set up alike (boot_key) run one after another in one
    boot of their guests (run/plan.py). alone: why this one needs a boot of its own; last: why it must be the last
    of its boot (it kills a server or a guest, resets the device). Between two scenarios of a boot the guest is reset
    (qemu/guest/init vrnic_reset): everything the first added goes, the RDMA driver unloaded and the device reset
    (FLR), so the next starts as after a boot; shares_driver: the scenario uses the device only through verbs
    processes and kernel ULPs (no driver, netdev or device setting of its own, no judgement of the driver's probe),
    so between two such scenarios the reset leaves the driver loaded (the device keeps only what the driver set up
    for itself)."""
    doc: str
    check: Callable
    default: bool = False
    device: bool = True
    guests: int = 1
    fabric: bool = False
    iommu: bool = False
    reboot: bool = False
    timeout: int = 300
    doorbell: tuple = ()                # one run per mode ("trap", "poll"); () one run, the server's mode
    eth_runs: tuple = ()                # bench: one run per NIC kind on the same topology, a failed run NA figures
    check_together: bool = False        # the check judges every run at once, after the last (trap vs poll figures)
    server_args: tuple = ()
    guest_server_args: Optional[Callable] = None   # guest index -> extra server arguments
    config: Optional[str] = None        # a vrnic.toml for every server
    fw: str = DEFAULT_FW                # the firmware version the servers report
    script: Optional[str] = None
    interact: Optional[Callable] = None
    kernel_allow: Optional[str] = None  # a regex of kernel lines the scenario provokes on purpose
    eth: Optional[EthSpec] = None
    alone: str = ""
    last: str = ""
    shares_driver: bool = False         # see the class doc string
    ulp: bool = False                   # needs the ULP userspace (python3 + pyverbs, fio, nvme-cli, NFS, UCX, libfabric)
    mem: str = "1G"                     # each guest's RAM (QEMU -m)
    name: str = field(default="", compare=False)

    def script_name(self):
        return self.script or self.name

    def runs(self):
        if self.eth_runs:
            return [Run("eth-nic=" + n, nic=n) for n in self.eth_runs]
        if self.doorbell:
            return [Run("doorbell-" + m, doorbell=m) for m in self.doorbell]
        return [Run()]

    def checks_each_run(self):
        """The check judges each run by itself; else once, after the last run, over every run's text (barbench's
        trap vs poll figures, the benches' NIC kinds)."""
        return not self.eth_runs and not self.check_together

    def doorbell_of(self, run):
        """The doorbell mode a run's servers are in: the run's, the one in server_args, else the default (trap)."""
        if run.doorbell:
            return run.doorbell
        args = list(self.server_args)
        return args[args.index("--doorbell") + 1] if "--doorbell" in args else None

    def other_server_args(self):
        """server_args without --doorbell (the boot's doorbell mode is its own part of the key)."""
        args = list(self.server_args)
        if "--doorbell" in args:
            i = args.index("--doorbell")
            del args[i:i + 2]
        return tuple(args)

    def per_guest_args(self):
        return tuple(tuple(self.guest_server_args(i)) if self.guest_server_args else () for i in range(self.guests))

    def boot_key(self, run):
        """What must be equal for two runs to share one boot: the guests, their devices and segment, every
        server argument, the doorbell mode (the server's default is trap)."""
        return (self.guests, self.device, self.fabric, self.iommu, self.reboot, self.mem, self.eth, run.nic,
                self.other_server_args(), self.per_guest_args(), self.config, self.fw,
                self.doorbell_of(run) or "trap")
