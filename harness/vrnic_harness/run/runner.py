"""Runs one scenario: servers, guests, interaction, then the scenario's check."""
import os
import re
import shutil
import subprocess
import time

from .. import ethswitch, ethtopo, qemu, topology
from ..common import GUEST_TESTS, say
from .checks_pci import DEFAULT_FW
from .console import exit_text, kernel_health_reason
from .registry import DOORBELL_RUNS


# --------------------------------------------------------------------------------------------
SERVER_EXTRA = []  # --server-arg values (e.g. --trace), appended to every server's arguments
GUEST_EXTRA = []  # --guest-arg values, appended to every guest's kernel command line
ONLY_DOORBELL = []  # --doorbell: run only the runs of scenarios with this doorbell mode
ETH_NIC = []  # --eth-nic virtio: every vrnic port of an Ethernet topology becomes a virtio-net NIC
ETH_PCAP = []  # --pcap: every port of an Ethernet topology is captured to OUT/eth<i>.pcap


def ctx_server_extra():
    return list(SERVER_EXTRA)


def guest_reason(g, text):
    """Why one guest's run failed (GUEST-FAIL, script exit code), or None."""
    m = re.search(r"GUEST-FAIL (.*)", text)
    if m:
        return "guest: " + m.group(1).strip()
    if not re.search(r"VRNIC-SCENARIO-END \S+ rc=0", text):
        m = re.search(r"VRNIC-SCENARIO-END \S+ rc=(\d+)", text)
        return "scenario script exit %s" % (m.group(1) if m else "missing")
    return None


def wait_guests(guests, tag, timeout):
    """Wait for every guest's VRNIC-SCENARIO-END, then give each 8 s from its own end to power off (a driver still
    tearing down, mlx5_core waiting on its command queue, blocks the kernel's power-off in device_shutdown) before
    stopping its QEMU: the grace periods run side by side, so with several guests none waits behind another's (a
    power-off blocked 20 s reads as a hung task). Once one guest has ended with a non-zero rc, the others get 30 s
    more (their peer is gone)."""
    pending = list(guests)
    ending = {}  # guest -> the time its QEMU is stopped if still running
    end = time.time() + timeout
    while (pending or ending) and time.time() < end:
        for g in list(pending):
            m = g.wait_for(r"VRNIC-SCENARIO-END \S+ rc=(\d+)", timeout=0.2 if len(guests) > 1 else end - time.time())
            if m is None and g.p.poll() is None:
                continue
            pending.remove(g)
            if m is None:
                continue
            if m.group(1) != "0" and pending:
                end = min(end, time.time() + 30)
            ending[g] = time.time() + 8
        for g, t in list(ending.items()):
            if g.p.poll() is not None:
                del ending[g]
            elif time.time() >= t:
                say("[run] %s/%s: guest did not power off within 8 s of the scenario end; stopping QEMU" % (tag, g.name))
                g.kill()
                del ending[g]
        if ending and not pending:
            time.sleep(0.2)
    for g in list(ending) + pending:
        if len(guests) > 1 and g.p.poll() is None:
            say("[run] %s/%s: no power-off; stopping QEMU" % (tag, g.name))
            g.kill()


def start_switch(cache, eth, topo, n, name, tag, outdir, accel, timeout):
    """Boot the switch guest of an Ethernet "switch" topology (ethswitch.py) after the scenario's n guests."""
    g = ethswitch.boot_switch(cache, eth, topo, n, name, os.path.join(outdir, "initrd-%s-sw" % tag),
                              os.path.join(outdir, "console-%s-sw.log" % tag), accel, timeout, " ".join(GUEST_EXTRA))
    say("[run] %s-sw: qemu %s" % (tag, " ".join(g.argv)))
    return g


def stop_switch(ctx, tag):
    """The scenario's guests are done: give the switch guest 20 s to end (a script's `sw_cmd end`), then stop it;
    its console goes to ctx["switch_text"]."""
    sw = ctx["switch"]
    if not sw.wait_for(r"VRNIC-SCENARIO-END", timeout=20 if sw.p.poll() is None else 0):
        say("[run] %s-sw: the switch guest got no end command; stopping QEMU" % tag)
    sw.kill()
    sw.wait_exit()
    ctx["switch_text"] = sw.text()


def run_scenario(name, sc, cache, accel, binary, outdir):
    script = os.path.join(GUEST_TESTS, "scenarios", sc.get("script", name) + ".sh")
    if not os.path.exists(script):
        return "no script %s" % script
    if sc.get("device") and isinstance(binary, Exception) and not (sc.get("eth") and ETH_NIC == ["virtio"]):
        return "server unavailable: %s" % str(binary).strip().splitlines()[0]
    shutil.rmtree(outdir, ignore_errors=True)
    os.makedirs(outdir)
    nguests = sc.get("guests", 1)
    ctx = {"name": name, "run_texts": [], "fw": sc.get("fw", DEFAULT_FW), "timeout": sc["timeout"]}
    base_args = list(sc.get("server_args", []))
    if sc.get("config"):
        cfg = os.path.join(outdir, "vrnic.toml")
        with open(cfg, "w") as f:
            f.write(sc["config"])
        base_args = ["--config", cfg] + base_args
    runs = sc.get("runs", [[]])
    if sc.get("eth_runs"):  # one run per NIC kind on the same topology (bench-eth: vrnic, then virtio-net)
        runs = [["--eth-nic=" + n] for n in sc["eth_runs"]]
    if ONLY_DOORBELL and runs is DOORBELL_RUNS:
        runs = [r for r in runs if r[1] in ONLY_DOORBELL]
    reason = None
    for ri, sargs in enumerate(runs):
        tag = "%s%s" % (name, ("-" + "-".join(a.strip("-") for a in sargs)) if sargs else "")
        servers, guests = [], []
        ctx.update(guests=guests, servers=servers, killed_ok=False, switch=None, switch_text="")
        eth = None
        run_nic = [a.split("=", 1)[1] for a in sargs if a.startswith("--eth-nic=")]
        sargs = [a for a in sargs if not a.startswith("--eth-nic=")]
        if sc.get("eth"):
            e = sc["eth"]
            override = run_nic[0] if run_nic else ETH_NIC[0] if ETH_NIC else None
            eth = ethtopo.EthTopology(e["nics"], link=e.get("link", "udp"), host=e.get("host", False),
                                      pcap_dir=outdir if ETH_PCAP or e.get("pcap") else None,
                                      nic_override=None if override == "vrnic" else override, switch=e.get("switch"))
        ctx["eth"] = eth
        # link "switch": one more guest, the switch (ethswitch.py), last on the out-of-band link
        nsw = 1 if eth and eth.switch else 0
        topo = None
        if nguests + nsw > 1 or sc.get("fabric"):
            topo = topology.Topology(nguests + nsw, fabric=bool(sc.get("fabric")) and sc.get("device", False),
                                     net=nguests + nsw > 1, pcap_dir=outdir if sc.get("pcap") else None)
            ctx["topology"] = topo
        try:
            if eth:
                eth.start()
                say("[run] %s: topology: %s" % (tag, eth.describe()))
            if topo:
                topo.start(netns=eth.ns if eth else None)
                say("[run] %s: topology: %s" % (tag, topo.describe()))
            if nsw:
                ctx["switch"] = start_switch(cache, eth, topo, nguests, name, tag, outdir, accel, sc["timeout"])
            for gi in range(nguests):
                sfx = "" if nguests == 1 else "-g%d" % gi
                sockets = []
                if sc.get("device") and (eth is None or eth.has_device(gi)):
                    if isinstance(binary, Exception) or binary is None:
                        reason = "server unavailable: %s" % str(binary).strip().splitlines()[0]
                        break
                    targs = topo.server_args(gi, binary) if topo else []
                    if eth:
                        try:
                            targs = targs + eth.server_args(gi, binary)
                        except RuntimeError as e:
                            reason = str(e)
                            break
                    s = qemu.Server(binary, os.path.join(outdir, "vrnic%d.sock" % (ri * nguests + gi)),
                                 os.path.join(outdir, "vrnic%d.ctl" % (ri * nguests + gi)),
                                 base_args + targs + sc.get("guest_server_args", lambda i: [])(gi) + sargs
                                 + ctx_server_extra(),
                                 log=os.path.join(outdir, "server-%s%s.log" % (tag, sfx)),
                                 wrap=eth.wrap(gi) if eth else ())
                    servers.append(s)
                    if not s.wait_socket():
                        reason = "server%s did not create %s (rc %s): %s" % (
                            sfx, s.sock, s.p.poll(), s.log_text().strip()[-300:].replace("\n", " | "))
                        break
                    say("[run] %s%s: server pid %d: %s" % (tag, sfx, s.pid, " ".join(s.argv)))
                    sockets = [s.sock]
                initrd = qemu.make_initrd(cache, os.path.join(outdir, "initrd-%d%s" % (ri, sfx)),
                                       qemu.scenario_files(cache, script))
                append = "vrnic.scenario=%s" % name
                if nguests > 1:
                    append += " vrnic.guest=%d vrnic.guests=%d" % (gi, nguests)
                if topo:
                    append = (append + " " + topo.append(gi)).strip()
                if eth:
                    append = (append + " " + eth.append(gi)).strip()
                if sc.get("iommu"):
                    append += " intel_iommu=on iommu=pt"
                append = " ".join([append] + GUEST_EXTRA)
                g = qemu.Guest(cache, "g%d" % gi, initrd, append=append, sockets=sockets, accel=accel,
                            reboot=sc.get("reboot", False), timeout=sc["timeout"],
                            log=os.path.join(outdir, "console-%s%s.log" % (tag, sfx)), iommu=sc.get("iommu"),
                            smp=sc.get("smp", 2),
                            extra=(topo.qemu_args(gi) if topo else []) + (eth.qemu_args(gi) if eth else []),
                            wrap=eth.wrap(gi) if eth else ())
                guests.append(g)
                say("[run] %s%s: qemu %s" % (tag, sfx, " ".join(g.argv)))
            if reason is not None:
                for g in guests:
                    g.kill()
            else:
                if sc.get("interact"):
                    reason = sc["interact"](ctx)
                if not ctx["killed_ok"]:
                    wait_guests(guests, tag, sc["timeout"])
            if ctx["switch"]:
                stop_switch(ctx, tag)
            for g in guests:
                rc, timed_out = g.wait_exit()
                gtag = tag if nguests == 1 else "%s/%s" % (tag, g.name)
                if g.marker_wall:
                    say("BOOT %s: kernel start->init %.2f s (guest uptime), QEMU start->init marker %.2f s wall%s" % (
                        gtag, g.marker_uptime[0], g.marker_wall[0],
                        "; later boots: " + ", ".join("%.2f s" % (b - a) for a, b in
                                                      zip(g.marker_wall, g.marker_wall[1:])) if len(g.marker_wall) > 1 else ""))
                else:
                    qerr = [l for l in g.lines if l.startswith("qemu-system-x86_64:") and "warning:" not in l
                            and "terminating on signal" not in l]
                    reason = reason or "%sguest never reached /init (no VRNIC-INIT-START marker)%s" % (
                        "" if nguests == 1 else g.name + ": ",
                        ("; QEMU: " + qerr[0][len("qemu-system-x86_64:"):].strip()) if qerr else "")
                gtext = g.text()
                if reason is None and timed_out and not ctx["killed_ok"]:
                    reason = "%stimeout after %.0f s (QEMU killed)" % ("" if nguests == 1 else g.name + ": ",
                                                                     sc["timeout"])
                if reason is None and not ctx["killed_ok"]:
                    r = guest_reason(g, gtext)
                    if r:
                        reason = r if nguests == 1 else "%s: %s" % (g.name, r)
                r = kernel_health_reason(gtext, sc.get("kernel_allow"))
                if r:
                    reason = reason or (r if nguests == 1 else "%s: %s" % (g.name, r))
            if ctx["switch"]:
                r = kernel_health_reason(ctx["switch_text"], sc.get("kernel_allow"))
                reason = reason or (("switch guest: " + r) if r else None)
            texts = [g.text() for g in guests]
            ctx["texts"] = texts
            if nguests == 1:
                text = texts[0] if texts else ""
            else:
                text = "\n".join("[%s] %s" % (g.name, l) for g in guests for l in g.text().split("\n"))
            ctx["text"] = text
            ctx["run_texts"].append((run_nic[0] if run_nic else sargs[-1] if sargs else "default", text))
            for sv in servers:
                if not sv.alive() and sv.pid not in ctx.get("expect_dead", ()):
                    reason = reason or "server pid %d exited early (%s)" % (sv.pid, exit_text(sv.p.returncode))
            if reason is None and sc.get("check") and ri == len(runs) - 1:
                reason = sc["check"](ctx)
            elif reason is None and sc.get("check") and name != "barbench" and not sc.get("eth_runs"):
                reason = sc["check"](ctx)
        finally:
            for g in guests + ([ctx["switch"]] if ctx["switch"] else []):
                g.kill()
            for sv in servers:
                sv.stop()
                if reason:
                    tail = sv.log_text().strip().splitlines()[-25:]
                    if tail:
                        say("[run] %s: server log tail (%s):" % (tag, sv.logpath))
                        for l in tail:
                            say("    " + l)
            if topo:
                topo.stop()
            if eth:
                eth.stop()
        if reason and sc.get("eth_runs") and ri < len(runs) - 1:
            # a bench: a failed run (vrnic not there yet) becomes NA figures; the next NIC kind still runs
            ctx.setdefault("failed_runs", []).append("[%s] %s" % (tag, reason))
            say("[run] %s failed: %s (its figures are NA; the next run goes on)" % (tag, reason))
            if not any(t == (run_nic[0] if run_nic else "default") for t, _ in ctx["run_texts"]):
                ctx["run_texts"].append((run_nic[0] if run_nic else "default", ""))
            reason = None
            continue
        if reason:
            if len(runs) > 1:
                reason = "[%s] %s" % (tag, reason)
            break
    return reason
