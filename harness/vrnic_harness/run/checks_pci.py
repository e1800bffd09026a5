"""Checks of the PCI-level scenarios: lspci, msix, probe, reboot, rxe-baseline, barbench."""
import re
import time

from ..common import say
from . import stats
from .console import exit_text

PERFTESTS = ["ib_write_lat", "ib_send_lat", "ib_read_lat", "ib_write_bw", "ib_send_bw"]


def device_section(text, vid_did="15b3:1017"):
    lines = text.split("\n")
    out, on = [], False
    for l in lines:
        l2 = re.sub(r"^\[g\d+\] ", "", l)
        if re.match(r"^[0-9a-f]{2}:[0-9a-f]{2}\.[0-7] ", l2) or re.match(r"^[0-9a-f]{4}:", l2):
            on = ("[%s]" % vid_did) in l2
        elif l2.startswith("=== end lspci"):
            on = False
        if on:
            out.append(l2)
    return out


def check_lspci(ctx):
    text = ctx.text
    sec = device_section(text)
    if not sec:
        return "no [15b3:1017] function in lspci -nn -vvv output"
    head, body = sec[0], "\n".join(sec)
    errs = []
    if "[0207]" not in head:
        errs.append("class is not [0207]: %s" % head.strip())
    for reg, size in (("0", "32M"), ("2", "16K"), ("4", "1M")):
        rx = r"Region %s: Memory at [0-9a-f]+ \(64-bit, prefetchable\) \[size=%s\]" % (reg, size)
        if not re.search(rx, body):
            m = re.search(r"Region %s:.*" % reg, body)
            errs.append("Region %s not 64-bit prefetchable size %s (%s)" % (reg, size, m.group(0) if m else "absent"))
    if not re.search(r"MSI-X: Enable- Count=64\b", body):
        m = re.search(r"MSI-X:.*", body)
        errs.append("MSI-X not 'Enable- Count=64' (%s)" % (m.group(0) if m else "no MSI-X capability"))
    return "; ".join(errs) or None


MSIX_PLAN = [(0, 5), (3, 3)]


def interact_msix(ctx):
    g, s = ctx.guests[0], ctx.servers[0]
    m = g.wait_for(r"MSIX-READY nvec=(\d+)", timeout=120)
    if not m:
        bad = g.wait_for(r"MSIX-ERROR.*|GUEST-FAIL.*", timeout=0.1)
        return "guest never printed MSIX-READY (%s)" % (bad.group(0) if bad else "timeout")
    nvec = int(m.group(1))
    ctx.notes["nvec"] = nvec
    errs = []
    for vec, n in MSIX_PLAN:
        for k in range(1, n + 1):
            start = len(g.lines)
            try:
                rep = s.command("raise %d" % vec)
            except OSError as e:
                return "control socket: raise %d: %s" % (vec, e)
            if not rep.startswith("ok"):
                return "control socket: 'raise %d' replied %r" % (vec, rep)
            # pace: wait until the guest counted this interrupt before raising the next one
            if not g.wait_for(r"MSIX-EVENT vec=%d n=%d\b" % (vec, k), timeout=15, start=0):
                errs.append("raise %d #%d: guest did not count it within 15 s" % (vec, k))
                break
    ctx.notes["stats"] = stats.snapshot(s) or "stats failed"
    if not g.wait_for(r"MSIX-DONE", timeout=30):
        errs.append("guest did not print MSIX-DONE")
    return "; ".join(errs) or None


def check_msix(ctx):
    text = ctx.text
    counts = {int(v): int(n) for v, n in re.findall(r"MSIX-COUNT vec=(\d+) n=(\d+)", text)}
    if not counts:
        return "no MSIX-COUNT lines"
    want = dict(MSIX_PLAN)
    errs = []
    for v in sorted(set(counts) | set(want)):
        if counts.get(v, 0) != want.get(v, 0):
            errs.append("vec %d: counted %s, raised %d" % (v, counts.get(v), want.get(v, 0)))
    say("MSIX counts: %s (raised %s); server stats: %s" % (
        " ".join("vec%d=%d" % (v, counts[v]) for v in sorted(counts)),
        " ".join("vec%d=%d" % kv for kv in MSIX_PLAN), ctx.notes.get("stats")))
    return "; ".join(errs) or None


def check_probe(ctx):
    m = re.search(r"mlx5_core \S+: firmware version: (\S+)", ctx.text)
    if not m:
        return "no 'mlx5_core ...: firmware version:' line in dmesg"
    want = ctx.fw
    say("PROBE firmware line: %s" % m.group(0))
    if m.group(1) != want:
        return "firmware version %s, expected %s" % (m.group(1), want)
    return None


def interact_reboot(ctx):
    g = ctx.guests[0]
    for i in range(1, 4):
        m = g.wait_for(r"REBOOT-DEVICE-(SEEN|MISSING)", timeout=90, count=i)
        if not m:
            return "boot %d: no REBOOT-DEVICE marker (%d init markers seen)" % (i, len(g.marker_wall))
        if m.group(1) == "MISSING":
            return "boot %d: lspci does not show 15b3:1017" % i
        say("REBOOT boot %d saw the device (t=%.1f s)" % (i, time.time() - g.t0))
    g.kill()
    s = ctx.servers[0]
    if not s.alive():
        return "server pid %d died (%s)" % (s.pid, exit_text(s.p.returncode))
    say("REBOOT server pid %d alive after 3 boots (2 guest reboots)" % s.pid)
    ctx.killed_ok = True
    return None


def check_reboot(ctx):
    n = len(re.findall(r"REBOOT-DEVICE-SEEN", ctx.text))
    if n < 3:
        return "device seen in %d boots, expected 3" % n
    return None


def check_rxe(ctx):
    text = re.sub(r"(?m)^\[g\d+\] ", "", ctx.text)
    errs = []
    for t in PERFTESTS:
        m = re.search(r"=== PERFTEST %s ===\n(.*?)PERFTEST-RESULT %s client_rc=(\d+) server_rc=(\d+)" % (t, t),
                      text, re.S)
        if not m:
            errs.append("%s: did not run" % t)
            continue
        client = m.group(1).partition("--- server")[0]
        rows = re.findall(r"^\s*(\d+\s+\d+\s+[\d.]+.*)$", client, re.M)
        # perftest's own teardown: the client measured and printed its row, then the closing handshake
        # over TCP failed ("Failed to close connection between server and client") and the server side
        # exited 1. The figure is the client's; the scenario only reports it.
        teardown = m.group(3) == "1" and "Failed to close connection" in client
        if m.group(2) != "0" or (m.group(3) != "0" and not teardown) or not rows:
            errs.append("%s: client rc %s server rc %s, %d result rows" % (t, m.group(2), m.group(3), len(rows)))
            continue
        say("RXE %-13s %s%s" % (t, re.sub(r"\s+", " ", rows[0]).strip(),
                                "  (perftest's closing handshake failed after the result)" if teardown else ""))
    return "; ".join(errs) or None


def check_barbench(ctx):
    res = []
    for mode, text in ctx.run_texts:
        f = dict(re.findall(r"BARBENCH (\S+@0x[0-9a-f]+) iters=\d+ ns_per_access=([\d.]+)", text))
        if len(f) < 3:
            return "doorbell %s: barbench printed %d of 3 figures" % (mode, len(f))
        res.append("%s: read32@0x0 %s ns, write32@0x100 %s ns, write64@0x8800 %s ns" % (
            mode, f.get("read32@0x0"), f.get("write32@0x100"), f.get("write64@0x8800")))
    for r in res:
        say("BARBENCH doorbell " + r)
    return None
