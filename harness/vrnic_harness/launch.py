#!/usr/bin/env python3
"""qemu/launch - start vrnic guests, each with its own vrnic server on its own socket.

The helpers live in vrnic_harness.qemu (Server, Guest, accelerator) and vrnic_harness.topology.

CLI examples:
  qemu/launch --no-device                        # boot one bare guest (no scenario) and power off
  qemu/launch --script guest-tests/scenarios/lspci.sh
  qemu/launch --guests 2 --server-arg=--trace --script my.sh --timeout 300
  qemu/launch --shell                             # interactive busybox shell on the serial console
  qemu/launch --guests 2 --script guest-tests/scenarios/net2.sh   # two guests: fabric + OOB link

Topology (--guests N): server i gets --lid i+1 and, when the binary has the flags, --fabric-port P_i
--fabric-bind 127.0.0.1 and --peer LID=127.0.0.1:P_j for every other server (free UDP ports, or
--fabric-base B: P_i = B+i). With N > 1 each guest also gets a second NIC (virtio-net, QEMU -netdev dgram
over UDP on 127.0.0.1, a hub thread for N > 2) and the kernel argument vrnic.net=10.0.0.<i+1>/24 that
/init puts on eth0: the out-of-band TCP path for ibv_*_pingpong/perftest. The guest's index is
vrnic.guest=<i>. One guest: unchanged (no fabric flags, no second NIC) unless --loopback (its server then
gets --lid 1 and a fabric port with no peers).

Ethernet (--eth udp|bridge, vrnic_harness/ethtopo.py): every guest gets one Ethernet NIC on one segment, a vrnic
port in eth mode (`--link-layer eth --mac M --eth udp:...|tap:vrt<i>`) or, per --eth-nics, a virtio-net NIC on the
same backend, and vrnic.eth=10.1.0.<i+1>/24 vrnic.ethmac=M (scenarios/eth-lib.sh eth_up configures it). udp:
two guests point to point (one: its peer port unanswered); bridge: a netns with br0 and one TAP per guest, the
servers and QEMUs run inside it (--eth-host: br0 gets 10.1.0.254/24). --pcap also captures every Ethernet port.
  qemu/launch --guests 2 --eth udp --script guest-tests/scenarios/eth-ping.sh
  qemu/launch --guests 3 --eth bridge --eth-nics vrnic,vrnic,virtio --script my.sh
switch: each guest cabled point to point to the switch guest (ethswitch.py: a Linux bridge, htb rate limit + RED ecn on
its egress towards guest 0), booted after the guests with guest-tests/scenarios/switch-guest.sh; it ends on
`sw_cmd end` (eth-lib.sh) or with the guests.
  qemu/launch --guests 3 --eth switch --script guest-tests/scenarios/roce-ecn.sh --timeout 400

Every QEMU runs under a hard timeout (QEMU pauses instead of exiting on some failures), with
-no-reboot (unless --reboot), panic=-1 and the serial console on stdout (+ a log file).
Guest RAM is a shared memfd (the vfio-user server needs its fd).
Accelerator: KVM only if a probe boot reached the init marker within 20 s (verdict cached in
CACHE/kvm-verdict); otherwise TCG (multi-threaded, 256 MB TB cache, -cpu max).
"""
import argparse
import os
import signal
import subprocess
import tempfile

from .common import default_cache
from .qemu import Guest, Server, accel_args, ensure_cache, make_initrd, scenario_files, server_binary
from .ethswitch import boot_switch
from .ethtopo import EthTopology
from .topology import Topology


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cache", default=default_cache())
    ap.add_argument("--guests", type=int, default=1)
    ap.add_argument("--no-device", action="store_true", help="boot without a vfio-user device/server")
    ap.add_argument("--server", help="vrnic binary (default: build target/release/vrnic)")
    ap.add_argument("--server-arg", action="append", default=[], help="extra vrnic argument (repeatable)")
    ap.add_argument("--doorbell", choices=["trap", "poll"])
    ap.add_argument("--script", help="guest script run by /init (becomes /scenario.sh)")
    ap.add_argument("--append", default="", help="extra kernel command line")
    ap.add_argument("--timeout", type=float, default=120, help="hard timeout per guest (s)")
    ap.add_argument("--reboot", action="store_true", help="allow guest reboots (no -no-reboot)")
    ap.add_argument("--iommu", action="store_true", help="add an intel-iommu (guest: intel_iommu=on)")
    ap.add_argument("--accel", choices=["auto", "tcg", "kvm"], default="auto")
    ap.add_argument("--shell", action="store_true", help="interactive shell on the console (1 guest)")
    ap.add_argument("--workdir", help="where sockets/logs go (default: a temp dir)")
    ap.add_argument("--no-fabric", action="store_true", help="no RDMA fabric flags for the servers")
    ap.add_argument("--loopback", action="store_true",
                    help="one guest: still give its server --lid 1 and a fabric port (loopback over the UDP path)")
    ap.add_argument("--no-net", action="store_true", help="no virtio-net link between the guests")
    ap.add_argument("--fabric-base", type=int, help="fabric UDP port of guest 0 (guest i: +i); default: free ports")
    ap.add_argument("--pcap", action="store_true", help="each server writes WORKDIR/fabric<i>.pcap")
    ap.add_argument("--faults", help="fault-injection spec passed to every server (--faults)")
    ap.add_argument("--smp", type=int, help="vCPUs per guest (default 2)")
    ap.add_argument("--no-ulp", action="store_true",
                    help="without the ULP userspace (python3, fio, nvme-cli, NFS tools, UCX, libfabric): boots faster")
    ap.add_argument("--eth", choices=["udp", "bridge", "switch"], help="Ethernet segment between the guests' ports")
    ap.add_argument("--eth-nics", help="per guest: vrnic or virtio, comma-separated (default vrnic for each)")
    ap.add_argument("--eth-host", action="store_true", help="--eth bridge: br0 in the netns gets 10.1.0.254/24")
    a = ap.parse_args()

    def stop(sig, _frame):
        # SIGTERM/SIGHUP unwind like ^C: guests and servers stopped, the Ethernet namespace deleted
        raise KeyboardInterrupt("signal %d" % sig)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGHUP, stop)
    cache = os.path.abspath(a.cache)
    ensure_cache(cache)
    accel = accel_args(cache, None if a.accel == "auto" else a.accel)
    work = a.workdir or tempfile.mkdtemp(prefix="vrnic-launch-")
    os.makedirs(work, exist_ok=True)
    servers, guests = [], []
    sw = None
    rc = 0
    nsw = 1 if a.eth == "switch" else 0  # the switch guest: last on the out-of-band link
    topo = Topology(a.guests + nsw, fabric=not a.no_fabric and not a.no_device and not a.eth and (a.guests > 1 or a.loopback),
                    net=not a.no_net,
                    fabric_base=a.fabric_base, pcap_dir=work if a.pcap else None, faults=a.faults)
    smp = a.smp or 2
    eth = None
    if a.eth:
        nics = a.eth_nics.split(",") if a.eth_nics else ["vrnic"] * a.guests
        if len(nics) != a.guests or any(n not in ("vrnic", "virtio") for n in nics):
            ap.error("--eth-nics: one of vrnic/virtio per guest (%d)" % a.guests)
        eth = EthTopology(nics, link=a.eth, host=a.eth_host, pcap_dir=work if a.pcap else None)
    try:
        binary = None if a.no_device else (a.server or server_binary())
        if eth:
            eth.start()
            print("[launch] topology: %s" % eth.describe(), flush=True)
        topo.start(netns=eth.ns if eth else None)
        if topo.describe():
            print("[launch] topology: %s" % topo.describe(), flush=True)
        for i in range(a.guests):
            sockets = []
            if binary and (eth is None or eth.has_device(i)):
                sargs = topo.server_args(i, binary) + (eth.server_args(i, binary) if eth else []) + list(a.server_arg) + (
                    ["--doorbell", a.doorbell] if a.doorbell else [])
                s = Server(binary, os.path.join(work, "vrnic%d.sock" % i), os.path.join(work, "vrnic%d.ctl" % i),
                           sargs, log=os.path.join(work, "server%d.log" % i), wrap=eth.wrap(i) if eth else ())
                if not s.wait_socket():
                    raise RuntimeError("server %d did not create its socket (log %s):\n%s"
                                       % (i, s.logpath, s.log_text()[-2000:]))
                print("[launch] server %d pid %d socket %s control %s log %s" % (i, s.pid, s.sock, s.control,
                                                                               s.logpath), flush=True)
                servers.append(s)
                sockets = [s.sock]
            script = a.script
            if a.shell or not script:
                script = os.path.join(work, "noop.sh")
                open(script, "w").write("#!/bin/sh\n" + ("exec setsid cttyhack sh\n" if a.shell else "true\n"))
            name = os.path.basename(script)[:-3] if script.endswith(".sh") else "custom"
            initrd = make_initrd(cache, os.path.join(work, "initrd%d" % i), scenario_files(cache, {name: script}),
                                 ulp=not a.no_ulp)
            append = ("vrnic.scenarios=%s vrnic.guest=%d %s" % ("shell" if a.shell else name, i, a.append)).strip()
            if a.iommu:
                append += " intel_iommu=on iommu=pt"
            append = (append + " " + topo.append(i) + " " + (eth.append(i) if eth else "")).strip()
            g = Guest(cache, "g%d" % i, initrd, append=append, sockets=sockets, accel=accel, reboot=a.reboot,
                      timeout=a.timeout, log=os.path.join(work, "console%d.log" % i), iommu=a.iommu,
                      interactive=a.shell, smp=smp, extra=topo.qemu_args(i) + (eth.qemu_args(i) if eth else []),
                      wrap=eth.wrap(i) if eth else ())
            guests.append(g)
        if nsw:
            sw = boot_switch(cache, eth, topo, a.guests, os.path.join(work, "initrd-sw"),
                             os.path.join(work, "console-sw.log"), accel, a.timeout, a.append)
            print("[launch] %s" % eth.switch.describe(), flush=True)
        if a.shell:
            guests[0].p.wait()
            return 0
        for g in guests:
            if g.wait_for(r"VRNIC-SCENARIO-END", timeout=a.timeout):
                # a driver still probing (e.g. mlx5_core waiting for its command queue) blocks the
                # guest kernel's power-off in device_shutdown(): allow 8 s, then stop QEMU
                try:
                    g.p.wait(8)
                except subprocess.TimeoutExpired:
                    print("[launch] %s did not power off within 8 s of the scenario end; stopping QEMU" % g.name,
                          flush=True)
                    g.kill()
            grc, to = g.wait_exit()
            m = g.wait_for(r"VRNIC-SCENARIO-END \S+ rc=(\d+)", timeout=0)
            if m and m.group(1) != "0":
                print("[launch] %s: scenario script exit %s%s" % (g.name, m.group(1), "".join(
                    "; " + l for l in g.lines if "GUEST-FAIL" in l)[:300]), flush=True)
                rc = rc or 1
            if g.marker_wall:
                print("[launch] %s boot: kernel->init %.2f s (guest uptime), QEMU start->init marker %.2f s wall"
                      % (g.name, g.marker_uptime[0], g.marker_wall[0]), flush=True)
            if to:
                print("[launch] %s TIMEOUT after %.0f s (killed)" % (g.name, a.timeout), flush=True)
                rc = 124
            elif grc:
                print("[launch] %s QEMU exit code %s" % (g.name, grc), flush=True)
                rc = rc or 1
    except RuntimeError as e:  # a server without the flags a topology needs, a namespace that cannot be made
        print("[launch] FAILED: %s" % e, flush=True)
        rc = 1
    finally:
        if sw:
            sw.wait_for(r"VRNIC-SCENARIO-END", timeout=10)
            sw.kill()
        for g in guests:
            g.kill()
        for s in servers:
            s.stop()
        topo.stop()
        if eth:
            eth.stop()
        print("[launch] logs in %s" % work, flush=True)
    return rc

