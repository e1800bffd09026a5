#!/usr/bin/env python3
"""guest-tests/run - run vrnic guest scenarios (python3 stdlib only).

usage: guest-tests/run [--list] [--cache DIR] [--accel auto|tcg|kvm] [NAME ...]
  NAME: a scenario (see --list), or "default" (lspci msix probe reboot rxe-baseline mlx5-probe devinfo
  reload verbs-objects net2 loopback rc-pingpong perftest, also used when no NAME is given), or "all"
  (every scenario: default + barbench, bench-loopback, bench-2vm); "bench" = bench-loopback bench-2vm.
For each scenario: builds the server if needed (cargo build --release -p vrnic), starts vrnic server(s)
and QEMU guest(s) (qemu/launch helpers), runs guest-tests/scenarios/<name>.sh as the guest's
/scenario.sh (appended to the initramfs as a second cpio, so editing a script needs no rebuild),
echoes the guest console, then prints exactly one line "SCENARIO <name> PASS" or
"SCENARIO <name> FAIL <reason>". The last line is "N passed, M failed". Exit 0 only if all passed.
Logs (console, server stderr) go to guest-tests/out/<name>/.
"""
import argparse
import importlib.machinery
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
L = importlib.machinery.SourceFileLoader("vrnic_launch", os.path.join(REPO, "qemu", "launch")).load_module()

DEFAULT_FW = "16.35.2000"
PERFTESTS = ["ib_write_lat", "ib_send_lat", "ib_read_lat", "ib_write_bw", "ib_send_bw"]


def say(*a):
    L.out(" ".join(str(x) for x in a))


# --------------------------------------------------------------------------------------------
# scenario checks / interactions. ctx: dict with guest(s), server(s), run index, notes list.
def exit_text(rc):
    """A server's exit status in words; SIGSYS means the seccomp allow-list refused a syscall."""
    if rc == -31:
        return ("killed by SIGSYS: a syscall outside the seccomp allow-list; rerun with "
                "--server-arg=--seccomp=log and look for type=1326 in dmesg")
    return "rc %s" % rc


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
    text = ctx["text"]
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
    g, s = ctx["guests"][0], ctx["servers"][0]
    m = g.wait_for(r"MSIX-READY nvec=(\d+)", timeout=120)
    if not m:
        bad = g.wait_for(r"MSIX-ERROR.*|GUEST-FAIL.*", timeout=0.1)
        return "guest never printed MSIX-READY (%s)" % (bad.group(0) if bad else "timeout")
    nvec = int(m.group(1))
    ctx["nvec"] = nvec
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
    try:
        ctx["stats"] = s.command("stats")
    except OSError as e:
        ctx["stats"] = "stats failed: %s" % e
    if not g.wait_for(r"MSIX-DONE", timeout=30):
        errs.append("guest did not print MSIX-DONE")
    return "; ".join(errs) or None


def check_msix(ctx):
    text = ctx["text"]
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
        " ".join("vec%d=%d" % kv for kv in MSIX_PLAN), ctx.get("stats")))
    return "; ".join(errs) or None


def check_probe(ctx):
    m = re.search(r"mlx5_core \S+: firmware version: (\S+)", ctx["text"])
    if not m:
        return "no 'mlx5_core ...: firmware version:' line in dmesg"
    want = ctx.get("fw", DEFAULT_FW)
    say("PROBE firmware line: %s" % m.group(0))
    if m.group(1) != want:
        return "firmware version %s, expected %s" % (m.group(1), want)
    return None


def interact_reboot(ctx):
    g = ctx["guests"][0]
    for i in range(1, 4):
        m = g.wait_for(r"REBOOT-DEVICE-(SEEN|MISSING)", timeout=90, count=i)
        if not m:
            return "boot %d: no REBOOT-DEVICE marker (%d init markers seen)" % (i, len(g.marker_wall))
        if m.group(1) == "MISSING":
            return "boot %d: lspci does not show 15b3:1017" % i
        say("REBOOT boot %d saw the device (t=%.1f s)" % (i, time.time() - g.t0))
    g.kill()
    s = ctx["servers"][0]
    if not s.alive():
        return "server pid %d died (%s)" % (s.pid, exit_text(s.p.returncode))
    say("REBOOT server pid %d alive after 3 boots (2 guest reboots)" % s.pid)
    ctx["killed_ok"] = True
    return None


def check_reboot(ctx):
    n = len(re.findall(r"REBOOT-DEVICE-SEEN", ctx["text"]))
    if n < 3:
        return "device seen in %d boots, expected 3" % n
    return None


def check_rxe(ctx):
    text = re.sub(r"(?m)^\[g\d+\] ", "", ctx["text"])
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
    for mode, text in ctx["run_texts"]:
        f = dict(re.findall(r"BARBENCH (\S+@0x[0-9a-f]+) iters=\d+ ns_per_access=([\d.]+)", text))
        if len(f) < 3:
            return "doorbell %s: barbench printed %d of 3 figures" % (mode, len(f))
        res.append("%s: read32@0x0 %s ns, write32@0x100 %s ns, write64@0x8800 %s ns" % (
            mode, f.get("read32@0x0"), f.get("write32@0x100"), f.get("write64@0x8800")))
    for r in res:
        say("BARBENCH doorbell " + r)
    return None


# ---- mlx5 firmware scenarios (issue 3) ------------------------------------------------------
KLINE = re.compile(r"^\[\s*\d+\.\d+\] ")
MLX5_LINE = re.compile(r"mlx5|infiniband|\bib_|\brdma", re.I)
BAD_LINE = re.compile(r"cmd timeout|failed|error|health compromised", re.I)


def console_lines(text):
    return [re.sub(r"^\[g\d+\] ", "", l) for l in text.split("\n")]


def dmesg_sections(text):
    """The `=== dmesg (...) ===` ... `=== end dmesg ===` blocks the scenarios print."""
    return re.findall(r"^=== dmesg \((.*?)\) ===\n(.*?)^=== end dmesg ===", "\n".join(console_lines(text)),
                      re.S | re.M)


def mlx5_bad_lines(text):
    """Kernel lines (console printk or dmesg dump) from mlx5/ib that report a timeout, failure, error or
    health problem; deduplicated (a line can appear on the console and in a dump)."""
    seen, bad = set(), []
    for l in console_lines(text):
        if KLINE.match(l) and MLX5_LINE.search(l) and BAD_LINE.search(l) and l not in seen:
            seen.add(l)
            bad.append(l)
    return bad


def bad_lines_reason(text):
    bad = mlx5_bad_lines(text)
    if not bad:
        return None
    for l in bad:
        say("MLX5 BAD DMESG LINE: %s" % l)
    return "%d mlx5/ib error line(s) in dmesg, first: %s" % (len(bad), bad[0])


KERNEL_BAD = re.compile(r"blocked for more than|soft lockup|hard LOCKUP|WARNING:|BUG:|Oops")


def kernel_health_reason(text, allow=None):
    """A hung task, soft or hard lockup, WARNING, BUG or Oops in a guest kernel's log fails every scenario:
    kernel lines on the console (KERN_ERR and worse) and the WARNING-level lines /init dumps from dmesg
    after the scenario (`VRNIC-KERNEL-LOG ...`). `allow`: a regex of lines a scenario provokes on purpose."""
    seen, bad = set(), []
    for l in console_lines(text):
        l = re.sub(r"^VRNIC-KERNEL-LOG ", "", l)
        if KLINE.match(l) and KERNEL_BAD.search(l) and not (allow and re.search(allow, l)):
            key = KLINE.sub("", l)
            if key not in seen:
                seen.add(key)
                bad.append(l)
    if not bad:
        return None
    for l in bad:
        say("GUEST KERNEL BAD LINE: %s" % l)
    return "guest kernel: %d hung-task/lockup/WARNING/BUG/Oops line(s), first: %s" % (len(bad), bad[0])


def mlx5_up_reason(text):
    m = re.search(r"MLX5-UP-FAIL (.*)", text)
    if m:
        return "mlx5 bring-up: " + m.group(1).strip()
    if not re.search(r"MLX5-UP start=", text):
        return "no MLX5-UP marker"
    return None


def check_mlx5_probe(ctx):
    text = ctx["text"]
    errs = []
    r = mlx5_up_reason(text)
    if r:
        return r
    m = re.search(r"MLX5-UP start=([\d.]+) active=([\d.]+)", text)
    say("MLX5-PROBE modprobe->ACTIVE %.2f s guest time" % (float(m.group(2)) - float(m.group(1))))
    secs = dmesg_sections(text)
    if not secs:
        return "no dmesg dump"
    dm = secs[-1][1]
    bdf = re.search(r"MLX5-PROBE-BDF (\S+)", text).group(1)
    if not re.search(r"mlx5_core %s: firmware version: %s" % (re.escape(bdf), re.escape(ctx["fw"])), dm):
        errs.append("dmesg has no 'mlx5_core %s: firmware version: %s' line" % (bdf, ctx["fw"]))
    binds = dict(re.findall(r"BINDING (\S+) -> (\S*)", text))
    if binds.get(bdf) != "mlx5_core":
        errs.append("PCI function %s bound to %r, not mlx5_core" % (bdf, binds.get(bdf)))
    rdma = [d for d in binds if d.startswith("mlx5_core.rdma.")]
    if not rdma or binds[rdma[0]] != "mlx5_ib.rdma":
        errs.append("auxiliary mlx5_core.rdma device bound to %r, not mlx5_ib.rdma" % (binds.get(rdma[0]) if rdma else None))
    if not re.search(r"-> ../../devices/\S+/infiniband/mlx5_0|mlx5_0 -> ", text):
        errs.append("/sys/class/infiniband has no mlx5_0")
    h0 = re.search(r"MLX5-PROBE-HEALTH-WAIT from=([\d.]+)", text)
    h1 = re.search(r"MLX5-PROBE-HEALTH-DONE at=([\d.]+) state=(.*)", text)
    if not (h0 and h1):
        errs.append("health wait markers missing")
    else:
        waited = float(h1.group(1)) - float(h0.group(1))
        say("MLX5-PROBE health poller ran %.1f s of guest time after ACTIVE; port state then: %s" % (
            waited, h1.group(2).strip()))
        if waited < 10:
            errs.append("only %.1f s of guest time after probe" % waited)
        if "ACTIVE" not in h1.group(2):
            errs.append("port state after the health wait: %s" % h1.group(2).strip())
    r = bad_lines_reason(text)
    if r:
        errs.append(r)
    return "; ".join(errs) or None


# devinfo: non-default identity from a config file, LID from the flag (flags override the file)
DEVINFO_FW = "16.41.1234"
DEVINFO_NODE_GUID = 0x0002c9030badc0de
DEVINFO_PORT_GUID = 0x0002c9030badc0df
DEVINFO_LID_FILE = 7
DEVINFO_LID = 0x2a
DEVINFO_TOML = """[identity]
fw_version = "%s"
node_guid = "0x%016x"
port_guid = "0x%016x"
lid = %d
""" % (DEVINFO_FW, DEVINFO_NODE_GUID, DEVINFO_PORT_GUID, DEVINFO_LID_FILE)


def guid_colons(g):
    h = "%016x" % g
    return ":".join(h[i:i + 4] for i in range(0, 16, 4))


def check_devinfo(ctx):
    text = "\n".join(console_lines(ctx["text"]))
    r = mlx5_up_reason(text)
    if r:
        return r
    m = re.search(r"^=== ibv_devinfo -v ===\n(.*?)^=== end ibv_devinfo ===", text, re.S | re.M)
    if not m:
        return "no ibv_devinfo -v output"
    dv = m.group(1)
    errs = []
    ng, pg = guid_colons(DEVINFO_NODE_GUID), guid_colons(DEVINFO_PORT_GUID)
    want = [
        ("hca_id", r"^hca_id:\s+mlx5_0$"),
        ("fw_ver", r"^\s+fw_ver:\s+%s$" % re.escape(DEVINFO_FW)),
        ("node_guid", r"^\s+node_guid:\s+%s$" % ng),
        ("sys_image_guid", r"^\s+sys_image_guid:\s+%s$" % ng),
        ("port state", r"^\s+state:\s+PORT_ACTIVE \(4\)$"),
        ("phys_state", r"^\s+phys_state:\s+LINK_UP \(5\)$"),
        ("link_layer", r"^\s+link_layer:\s+InfiniBand$"),
        ("port_lid", r"^\s+port_lid:\s+%d$" % DEVINFO_LID),
        ("GID[0]", r"^\s+GID\[\s*0\]:\s+fe80:0000:0000:0000:%s$" % pg),
        ("rc", r"^ibv_devinfo rc=0$"),
    ]
    for what, rx in want:
        if not re.search(rx, dv, re.M):
            got = re.search(r"^.*%s.*$" % re.escape(what.split()[0]), dv, re.M)
            errs.append("ibv_devinfo %s: want /%s/, got %r" % (what, rx, got.group(0).strip() if got else None))
    m = re.search(r"^=== rdma link ===\n(.*?)^=== end rdma ===", text, re.S | re.M)
    rl = m.group(1) if m else ""
    lk = re.search(r"^link mlx5_0/1 .*$", rl, re.M)
    if not lk:
        errs.append("rdma link shows no mlx5_0/1")
    else:
        l = lk.group(0)
        for k, v in (("lid", str(DEVINFO_LID)), ("state", "ACTIVE"), ("physical_state", "LINK_UP"),
                     ("subnet_prefix", "fe80:0000:0000:0000")):
            mm = re.search(r"\b%s (\S+)" % k, l)
            if not mm or mm.group(1) != v:
                errs.append("rdma link %s %s, ibv_devinfo/config say %s" % (k, mm.group(1) if mm else None, v))
    dev = re.search(r"^\d+: mlx5_0: .*$", rl, re.M)
    if not dev:
        errs.append("rdma dev shows no mlx5_0")
    else:
        for k, v in (("fw", DEVINFO_FW), ("node_guid", ng), ("sys_image_guid", ng), ("protocol", "ib")):
            mm = re.search(r"\b%s (\S+)" % k, dev.group(0))
            if not mm or mm.group(1) != v:
                errs.append("rdma dev %s %s, expected %s" % (k, mm.group(1) if mm else None, v))
    sysfs = dict(re.findall(r"^SYSFS (\S+?)=(.*)$", text, re.M))
    for k, v in (("fw_ver", DEVINFO_FW), ("node_guid", ng), ("sys_image_guid", ng),
                 ("ports/1/lid", "0x%x" % DEVINFO_LID), ("ports/1/state", "4: ACTIVE"),
                 ("ports/1/phys_state", "5: LinkUp"), ("ports/1/link_layer", "InfiniBand"),
                 ("ports/1/gids/0", "fe80:0000:0000:0000:" + pg), ("ports/1/pkeys/0", "0xffff")):
        if sysfs.get(k, "").strip() != v:
            errs.append("sysfs %s = %r, expected %r" % (k, sysfs.get(k), v))
    say("DEVINFO configured fw %s node_guid %s port_guid %s lid %d (file lid %d overridden by --lid): %s" % (
        DEVINFO_FW, ng, pg, DEVINFO_LID, DEVINFO_LID_FILE, "all agree" if not errs else "%d mismatch(es)" % len(errs)))
    r = bad_lines_reason(text)
    if r:
        errs.append(r)
    return "; ".join(errs) or None


RELOAD_CYCLES = 5


def interact_reload(ctx):
    g = ctx["guests"][0]
    m = g.wait_for(r"RELOAD-CYCLES-DONE|GUEST-FAIL.*", timeout=ctx["timeout"])
    if not m:
        return "boot 1: no RELOAD-CYCLES-DONE (%d cycles reported)" % len(
            [l for l in g.lines if "RELOAD-CYCLE " in l])
    if m.group(0).startswith("GUEST-FAIL"):
        return "boot 1: " + m.group(0)
    t_reboot = time.time()
    m = g.wait_for(r"RELOAD-BOOT-ACTIVE|GUEST-FAIL.*", timeout=240, count=2)
    if not m:
        return "after the reboot: no second RELOAD-BOOT-ACTIVE (init markers seen: %d)" % len(g.marker_wall)
    if m.group(0).startswith("GUEST-FAIL"):
        return "after the reboot: " + m.group(0)
    say("RELOAD reboot -> ACTIVE again in %.1f s wall" % (time.time() - t_reboot))
    g.kill()
    s = ctx["servers"][0]
    if not s.alive():
        return "server pid %d died (%s)" % (s.pid, exit_text(s.p.returncode))
    ctx["killed_ok"] = True
    return None


def check_reload(ctx):
    text = "\n".join(console_lines(ctx["text"]))
    errs = []
    cyc = re.findall(r"^RELOAD-CYCLE (\d+) unload_s=(\S+) ibv_devinfo:(.*)$", text, re.M)
    if len(cyc) != RELOAD_CYCLES:
        errs.append("%d of %d reload cycles completed" % (len(cyc), RELOAD_CYCLES))
    for n, _, st in cyc:
        if "PORT_ACTIVE" not in st:
            errs.append("cycle %s: ibv_devinfo %s" % (n, st.strip()))
    ups = re.findall(r"^MLX5-UP start=([\d.]+) active=([\d.]+)", text, re.M)
    # boot 1 + cycles + boot 2
    if len(ups) != RELOAD_CYCLES + 2:
        errs.append("%d MLX5-UP markers, expected %d (boot, %d cycles, boot after reboot)" % (
            len(ups), RELOAD_CYCLES + 2, RELOAD_CYCLES))
    if len(re.findall(r"^RELOAD-BOOT-ACTIVE", text, re.M)) != 2:
        errs.append("RELOAD-BOOT-ACTIVE not seen in both boots")
    say("RELOAD modprobe->ACTIVE per bring-up (s): %s" % " ".join(
        "%.2f" % (float(b) - float(a)) for a, b in ups))
    r = bad_lines_reason(text)
    if r:
        errs.append(r)
    return "; ".join(errs) or None


VERBS_MIN_CHECKS = 400


def check_device_memory(ctx):
    text = "\n".join(console_lines(ctx["text"]))
    errs = []
    for line in re.findall(r"^FAIL .*$", text, re.M):
        errs.append(line)
    passes = re.findall(r"^DM-TEST PASS (\d+) checks$", text, re.M)
    if len(passes) != 2:
        errs.append("expected DM-TEST PASS from both guests, got %d (%s)" % (
            len(passes), "; ".join(re.findall(r"^DM-TEST FAIL .*$", text, re.M)) or "crash or hang?"))
    if not re.search(r"maximum available device memory:\s*\d+", text):
        errs.append("ibv_devinfo shows no device memory")
    return "; ".join(errs[:3]) or None


def check_errors(ctx):
    text = "\n".join(console_lines(ctx["text"]))
    r = mlx5_up_reason(text)
    if r:
        return r
    errs = re.findall(r"^FAIL .*$", text, re.M)
    m = re.search(r"^ERR-TEST (PASS (\d+) checks|FAIL .*)$", text, re.M)
    if not m:
        return "err_test printed no ERR-TEST line (crash or hang?)"
    if m.group(1).startswith("FAIL") or errs:
        return "err_test: %s%s" % (m.group(1), (": " + errs[0]) if errs else "")
    if int(m.group(2)) < 20:
        return "err_test PASS with only %s checks" % m.group(2)
    after = text.split("=== ibv_devinfo after ===")[-1]
    if "PORT_ACTIVE" not in after:
        return "port not ACTIVE after the errors"
    return None


def check_resize_cq(ctx):
    text = "\n".join(console_lines(ctx["text"]))
    r = mlx5_up_reason(text)
    if r:
        return r
    # The one resize below the unpolled count: the device refuses it, mlx5_core logs the status.
    refused = re.compile(r"MODIFY_CQ\(0x403\) op_mod\(0x1\) failed, status bad parameter\(0x3\)")
    lines = mlx5_bad_lines(ctx["text"])
    bad = [l for l in lines if not refused.search(l)]
    for l in bad:
        say("MLX5 BAD DMESG LINE: %s" % l)
    if bad:
        return "%d mlx5/ib error line(s) in dmesg, first: %s" % (len(bad), bad[0])
    if len(lines) != 1:
        return "expected mlx5_core to log the one refused MODIFY_CQ resize, it logged %d" % len(lines)
    say("RESIZE-CQ the too-small resize, as mlx5_core logged it: %s" % refused.search(lines[0]).group(0))
    fails = re.findall(r"^FAIL .*$", text, re.M)
    m = re.search(r"^RESIZE-CQ (PASS (\d+) checks (\d+) resizes|FAIL .*)$", text, re.M)
    if not m:
        return "resize_cq printed no RESIZE-CQ line (crash or hang?)"
    if m.group(1).startswith("FAIL") or fails:
        return "resize_cq: %s%s" % (m.group(1), (": " + fails[0]) if fails else "")
    if int(m.group(2)) < 40 or int(m.group(3)) < 10:
        return "resize_cq PASS with only %s checks, %s resizes" % (m.group(2), m.group(3))
    for l in re.findall(r"^ok   resize .*$", text, re.M):
        say("RESIZE-CQ " + l[5:])
    if "PORT_ACTIVE" not in text.split("=== ibv_devinfo after ===")[-1]:
        return "port not ACTIVE after the resizes"
    return None


def check_timestamp(ctx):
    text = "\n".join(console_lines(ctx["text"]))
    r = mlx5_up_reason(text) or bad_lines_reason(ctx["text"])
    if r:
        return r
    fails = re.findall(r"^FAIL .*$", text, re.M)
    m = re.search(r"^TIMESTAMP (PASS (\d+) checks|FAIL .*)$", text, re.M)
    if not m:
        return "timestamp printed no TIMESTAMP line (crash or hang?)"
    if m.group(1).startswith("FAIL") or fails:
        return "timestamp: %s%s" % (m.group(1), (": " + fails[0]) if fails else "")
    if int(m.group(2)) < 7:
        return "timestamp PASS with only %s checks" % m.group(2)
    clk = re.search(r"hca_core_clock:\s*(\d+)", text)
    if not clk or int(clk.group(1)) == 0:
        return "ibv_devinfo -v shows no hca_core_clock"
    for l in re.findall(r"^ok   .*$", text, re.M):
        say("TIMESTAMP " + l[5:])
    if "PORT_ACTIVE" not in text.split("=== ibv_devinfo after ===")[-1]:
        return "port not ACTIVE at the end"
    return None


# bad_opcode.c's cases (BADOP lines): a NOP that must succeed, then WQEs the device must refuse.
BAD_OPCODE_CASES = ["NOP", "opcode-0x07", "masked-cs", "local-inval", "config-cmd", "umr-on-rc", "opcode-0xff",
                    "send-ds-0", "send-opmod-1", "send-fence-mode-7", "ud-rdma-write", "ud-send-inval"]


def check_bad_opcode(ctx):
    text = "\n".join(console_lines(ctx["text"]))
    r = mlx5_up_reason(text)
    if r:
        return r
    errs = re.findall(r"^FAIL .*$", text, re.M)
    m = re.search(r"^BAD-OPCODE (PASS (\d+) checks|FAIL .*)$", text, re.M)
    if not m:
        return "bad_opcode printed no BAD-OPCODE line (crash or hang?)"
    if m.group(1).startswith("FAIL") or errs:
        return "bad_opcode: %s%s" % (m.group(1), (": " + errs[0]) if errs else "")
    cases = dict(re.findall(r"^BADOP (\S+) (.*)$", text, re.M))
    for c in BAD_OPCODE_CASES:
        line = cases.get(c)
        if line is None:
            return "case %s: no BADOP line" % c
        if c == "NOP":
            want = ["status=success", "state=RTS"]
        else:
            want = ["status=local QP operation error", "flush=yes", "state=ERR", "recovered=yes"]
        missing = [w for w in want if w not in line.split(" PASS")[0]]
        if missing or not line.endswith(" PASS"):
            return "case %s: %s (wanted %s)" % (c, line, ", ".join(want))
    vendor = sorted(set(re.findall(r"^BADOP \S+ .*vendor_err=(\S+)", text, re.M)))
    say("BAD-OPCODE %d cases: NOP executed; %d refused with LOCAL_QP_OP_ERR (vendor_err %s), next WQE flushed, "
        "QP in ERR, recovered; %s checks" % (len(BAD_OPCODE_CASES), len(BAD_OPCODE_CASES) - 1, "/".join(vendor),
                                            m.group(2)))
    if int(m.group(2)) < 60:
        return "bad_opcode PASS with only %s checks" % m.group(2)
    after = text.split("=== ibv_devinfo after ===")[-1]
    if "PORT_ACTIVE" not in after:
        return "port not ACTIVE after the bad WQEs"
    return bad_lines_reason(text)


def interact_peer_loss(ctx):
    """Waits until guest 1's vrnic has received RDMA traffic from guest 0's ib_write_bw client, then
    SIGKILLs it mid-transfer."""
    g0, s1 = ctx["guests"][0], ctx["servers"][1]
    if not g0.wait_for(r"PEERLOSS-CLIENT-START", timeout=150):
        return "guest 0 never started the ib_write_bw client"
    end, rx = time.time() + 90, 0
    while time.time() < end:
        try:
            m = re.search(r'"rx_packets":\s*(\d+)', s1.command("stats"))
            rx = int(m.group(1)) if m else 0
        except OSError:
            rx = 0
        if rx >= 2000:
            break
        time.sleep(0.2)
    else:
        return "guest 1's vrnic saw only %d packets in 90 s: no transfer to interrupt" % rx
    s1.p.kill()
    s1.p.wait()
    ctx["expect_dead"] = {s1.pid}
    say("PEERLOSS killed guest 1's vrnic (pid %d) after it had received %d packets" % (s1.pid, rx))
    # Guest 0 runs to its end; guest 1 (no device any more) gets a while to say it is alive, then stops.
    g1 = ctx["guests"][1]
    m = g0.wait_for(r"VRNIC-SCENARIO-END \S+ rc=(\d+)", timeout=200)
    g1.wait_for(r"PEERLOSS-G1-ALIVE", timeout=30)
    try:
        g0.p.wait(10)
    except subprocess.TimeoutExpired:
        pass
    g1.kill()
    ctx["killed_ok"] = True
    if m is None:
        return "guest 0 never ended its scenario after the peer was killed"
    return None


def check_peer_loss(ctx):
    texts = ctx.get("texts") or []
    if len(texts) < 2:
        return "expected two guests' output"
    t0 = "\n".join(console_lines(texts[0]))
    errs = []
    if not re.search(r"VRNIC-SCENARIO-END \S+ rc=0", t0):
        errs.append("guest 0's scenario did not end with rc=0")
    r = mlx5_up_reason(t0)
    if r:
        return r
    runs = tool_runs(ctx)
    cli = runs.get(("peer-loss", "client"))
    if cli is None:
        errs.append("the ib_write_bw client printed no result")
    else:
        st = re.search(r"status (\d+)|(retry counter exceeded)", cli["out"], re.I)
        if cli["rc"] == 0 or not st or (st.group(1) and st.group(1) != "12"):
            errs.append("client did not fail with IBV_WC_RETRY_EXC_ERR (12): %s" % tool_brief(cli))
        else:
            say("PEERLOSS guest 0's client failed as expected after %s s: %s" % (
                cli["seconds"], " | ".join(l.strip() for l in cli["out"].split("\n") if re.search(r"status|error|retry", l, re.I))[:200]))
    after = t0.split("=== ibv_devinfo after ===")[-1]
    if "PORT_ACTIVE" not in after:
        errs.append("guest 0's port not ACTIVE after the peer's loss")
    r = check_pairs(dict(ctx, texts=[texts[0]], text=texts[0]), ["after-loss"], judge_pingpong, "PEERLOSS after")
    if r:
        errs.append("guest 0's device after the loss: " + r)
    s0 = ctx["servers"][0]
    if not s0.alive():
        errs.append("guest 0's vrnic died (rc %s)" % s0.p.returncode)
    g1 = "\n".join(console_lines(texts[1]))
    say("PEERLOSS guest 1 %s" % ("reported it is alive after losing its device" if "PEERLOSS-G1-ALIVE" in g1
                                 else "did not report back (its device server is gone)"))
    return "; ".join(errs) or None


def check_ulp(ctx):
    text = "\n".join(console_lines(ctx["text"]))
    r = mlx5_up_reason(text)
    if r:
        return r
    errs = []
    # Without a subnet manager IPoIB's SA joins fail fast (status -22): expected, not an error.
    expected = re.compile(r"ib0: multicast join failed for \S+, status -22")
    bad = [l for l in mlx5_bad_lines(ctx["text"]) if not expected.search(l)]
    for l in bad:
        say("MLX5 BAD DMESG LINE: %s" % l)
    if bad:
        errs.append("%d mlx5/ib error line(s), first: %s" % (len(bad), bad[0]))
    m = re.search(r"^ULP cap_mask after=0x([0-9a-f]+)", text, re.M)
    if not m or not int(m.group(1), 16) & (1 << 16):
        errs.append("PortInfo.CapabilityMask has no CM_SUP (bit 16) after ib_cm: %s" % (m.group(1) if m else "?"))
    if "umad0" not in text:
        errs.append("no /dev/infiniband/umad0")
    f = re.search(r"^ULP ib0 flags=0x([0-9a-f]+)", text, re.M)
    if not f or not int(f.group(1), 16) & 1:
        errs.append("ib0 is not up")
    x = re.search(r"^ULP counter port_xmit_packets=(\d+)", text, re.M)
    if not x or int(x.group(1)) == 0:
        errs.append("port_xmit_packets (PerfMgt via MAD_IFC) is %s after IPoIB's MADs" % (x.group(1) if x else "missing"))
    if "ULP state=4: ACTIVE" not in text:
        errs.append("port not ACTIVE at the end")
    return "; ".join(errs) or None


def rss_kb(pid, field="RssAnon"):
    """The server's private resident memory (RssAnon): what a leak grows. VmRSS also counts the guest RAM pages
    the server's mapping of the memfd has touched (RssShmem), which grows as DMA reaches new guest pages
    (e.g. the kernel's UMR translation buffers) without the server holding anything more."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for l in f:
                if l.startswith(field + ":"):
                    return int(l.split()[1])
    except OSError:
        pass
    return None


def interact_churn(ctx):
    g, s = ctx["guests"][0], ctx["servers"][0]
    if not g.wait_for(r"CHURN-WARM-DONE", timeout=240):
        return "guest never finished the churn warm-up"
    ctx["rss0"] = rss_kb(s.pid)
    st0 = settled_stats(s, secs=0)
    if not g.wait_for(r"CHURN-DONE", timeout=240):
        return "guest never finished the churn"
    ctx["rss1"] = rss_kb(s.pid)
    st1 = settled_stats(s, secs=0)
    objs = lambda st: ((st or {}).get("firmware") or {}).get("objects")
    say("CHURN server RssAnon after warm-up %s kB, after the run %s kB (RssShmem, guest RAM it touched: %s kB); "
        "objects %s -> %s" % (ctx["rss0"], ctx["rss1"], rss_kb(s.pid, "RssShmem"), objs(st0), objs(st1)))
    return None


def check_churn(ctx):
    text = "\n".join(console_lines(ctx["text"]))
    m = re.search(r"^CHURN (PASS (\d+) iterations|FAIL .*)$", text, re.M)
    if not m:
        return "churn printed no CHURN line"
    if m.group(1).startswith("FAIL"):
        return "churn: " + m.group(1)
    r0, r1 = ctx.get("rss0"), ctx.get("rss1")
    if not r0 or not r1:
        return "server RSS not sampled"
    if r1 > r0 * 1.05:
        return "server RssAnon grew from %d kB to %d kB (> 5%%) over %s iterations" % (r0, r1, m.group(2))
    return None


def settled_stats(server, secs=4.0):
    """The server's stats once its mkey count has held still for a second (the MR cache's background fill
    may still be creating keys); None if the control socket does not answer."""
    last, since, end = None, time.time(), time.time() + secs
    while True:
        try:
            st = json.loads(server.command("stats"))
        except (OSError, ValueError):
            return None
        n = ((st.get("firmware") or {}).get("objects") or {}).get("mkey")
        if n != last:
            last, since = n, time.time()
        elif time.time() - since >= 1.0 or time.time() > end:
            return st
        time.sleep(0.2)


def interact_rereg(ctx):
    g, s = ctx["guests"][0], ctx["servers"][0]
    if not g.wait_for(r"REREG-BASELINE", timeout=200):
        return "guest never reached REREG-BASELINE"
    ctx["rereg0"] = settled_stats(s, secs=8.0)
    if not g.wait_for(r"REREG-END", timeout=400):
        return "guest never reached REREG-END"
    ctx["rereg1"] = settled_stats(s)
    return None


def check_rereg(ctx):
    text = "\n".join(console_lines(ctx["text"]))
    r = mlx5_up_reason(text) or bad_lines_reason(ctx["text"])
    if r:
        return r
    m = re.search(r"^REREG (PASS (\d+) checks (\d+) cycles|FAIL .*)$", text, re.M)
    if not m:
        return "rereg printed no REREG line (crash or hang?)"
    errs = re.findall(r"^FAIL .*$", text, re.M)
    if m.group(1).startswith("FAIL") or errs:
        return "rereg: %s%s" % (m.group(1), (": " + errs[0]) if errs else "")
    if int(m.group(2)) < 150 or int(m.group(3)) != 1000:
        return "rereg PASS with only %s checks / %s cycles" % (m.group(2), m.group(3))
    s0, s1 = ctx.get("rereg0"), ctx.get("rereg1")
    if not s0 or not s1:
        return "server stats not read at REREG-BASELINE/REREG-END"
    f0, f1 = s0["firmware"], s1["firmware"]
    k0, k1 = f0["objects"]["mkey"], f1["objects"]["mkey"]
    umr = f1["umr_wqes"] - f0["umr_wqes"]
    say("REREG mkeys at baseline %d, after 1000 cycles %d; UMR WQEs executed %d, UMR errors %d"
        % (k0, k1, umr, f1["umr_errors"]))
    if k1 != k0:
        return "mkey count %d after the cycles, %d at the baseline" % (k1, k0)
    if umr < 3000:
        return "only %d UMR WQEs executed (reg, rereg and dereg of 1000 cycles need more)" % umr
    if f1["umr_errors"]:
        return "%d UMR WQEs completed with an error" % f1["umr_errors"]
    if "PORT_ACTIVE" not in text.split("REREG-RC")[-1]:
        return "port not ACTIVE after rereg"
    return None


def check_hostile(ctx):
    text = "\n".join(console_lines(ctx["text"]))
    m = re.search(r"^HOSTILE (PASS (\d+) checks|FAIL .*)$", text, re.M)
    if not m:
        return "hostile printed no HOSTILE line (crash or hang?)"
    fails = re.findall(r"^FAIL .*$", text, re.M)
    if m.group(1).startswith("FAIL") or fails:
        return "hostile: %s%s" % (m.group(1), (": " + fails[0]) if fails else "")
    if "HOSTILE-AFTER state=4: ACTIVE" not in text:
        return "port not ACTIVE after the hostile run and a reload"
    return None


def check_verbs_objects(ctx):
    text = "\n".join(console_lines(ctx["text"]))
    r = mlx5_up_reason(text)
    if r:
        return r
    errs = []
    fails = re.findall(r"^CHECK \d+ FAIL .*$", text, re.M)
    for f in fails:
        say("VERBS " + f)
    m = re.search(r"^VERBS-OBJECTS (PASS (\d+) checks|FAIL .*)$", text, re.M)
    if not m:
        errs.append("verbs_objects printed no VERBS-OBJECTS line (crash or hang?)")
    elif m.group(1).startswith("FAIL"):
        errs.append("verbs_objects: %s%s" % (m.group(1), (": " + fails[0]) if fails else ""))
    elif int(m.group(2)) < VERBS_MIN_CHECKS or fails:
        errs.append("verbs_objects PASS with %s checks (expected >= %d) and %d FAIL lines" % (
            m.group(2), VERBS_MIN_CHECKS, len(fails)))
    rc = re.search(r"^VERBS-OBJECTS-RC (\d+) seconds=(\S+)", text, re.M)
    if rc:
        say("VERBS verbs_objects exit %s, %s s guest time; %s" % (
            rc.group(1), rc.group(2), m.group(0) if m else "no result line"))
        if rc.group(1) != "0" and not errs:
            errs.append("verbs_objects exit code %s" % rc.group(1))
    for n in re.findall(r"^NOTE .*$", text, re.M):
        say("VERBS " + n)
    m2 = re.search(r"^=== ibv_devinfo after ===\n(.*?)^=== end ibv_devinfo after ===", text, re.S | re.M)
    if not m2 or not re.search(r"^\s+state:\s+PORT_ACTIVE \(4\)$", m2.group(1), re.M):
        errs.append("ibv_devinfo after verbs_objects does not show PORT_ACTIVE")
    r = bad_lines_reason(text)
    if r:
        errs.append(r)
    return "; ".join(errs) or None


# ---- data path scenarios (issue 5): unmodified rdma-core and perftest tools in pairs ------------------
TOOL_RX = re.compile(r"^=== TOOL (\S+) g(\d+) (server|client): (.*?) ===\n(.*?)^=== TOOL-END \1 g\2 \3 "
                     r"rc=(\d+) seconds=(\S+) tries=(\d+) ===$", re.S | re.M)
PINGPONG_LABELS = ["rc-s1", "rc-s4096-c", "rc-s65536-c", "rc-s1048576-c", "rc-e-s1", "rc-e-s4096-c",
                   "rc-e-s1048576-c", "uc-s4096-c", "ud-s2048-c", "srq-s4096-c"]
PERFTEST_LABELS = ["ib_write_lat", "ib_send_lat", "ib_read_lat", "ib_atomic_lat",
                   "ib_write_bw", "ib_send_bw", "ib_read_bw", "ib_atomic_bw"]
PP_BYTES = re.compile(r"^\d+ bytes in [\d.]+ seconds = [\d.]+ \S+$", re.M)
PP_ITERS = re.compile(r"^\d+ iters in [\d.]+ seconds = [\d.]+ usec/iter$", re.M)
PERF_ROW = re.compile(r"^\s*(\d+\s+\d+\s+[\d.]+.*)$", re.M)


def tool_runs(ctx):
    """{(label, role): dict(guest, cmd, out, rc, seconds, tries)} from every guest's console."""
    runs = {}
    texts = ctx.get("texts") or [ctx["text"]]
    for t in texts:
        for m in TOOL_RX.finditer("\n".join(console_lines(t))):
            runs[(m.group(1), m.group(3))] = dict(guest=int(m.group(2)), cmd=m.group(4), out=m.group(5),
                                                  rc=int(m.group(6)), seconds=m.group(7), tries=int(m.group(8)))
    return runs


def tool_brief(r):
    tail = [l.strip() for l in r["out"].strip().split("\n") if l.strip()][-2:]
    return "g%d rc %d after %s s: %s" % (r["guest"], r["rc"], r["seconds"], " | ".join(tail)[-200:] or "no output")


def check_pairs(ctx, labels, judge, what):
    runs = tool_runs(ctx)
    errs = []
    for lab in labels:
        for role in ("server", "client"):
            r = runs.get((lab, role))
            if r is None:
                errs.append("%s %s: did not run" % (lab, role))
                continue
            bad = judge(lab, role, r)
            if r["rc"] != 0 or bad:
                errs.append("%s %s: %s%s" % (lab, role, bad + "; " if bad else "", tool_brief(r)))
    npass = len([l for l in labels if not any(e.startswith(l + " ") for e in errs)])
    say("%s %d of %d pairs passed" % (what, npass, len(labels)))
    r = bad_lines_reason(ctx["text"])
    if r:
        errs.append(r)
    return ("%d of %d failed: " % (len(labels) - npass, len(labels)) + "; ".join(errs)) if errs else None


def judge_pingpong(lab, role, r):
    b, i = PP_BYTES.search(r["out"]), PP_ITERS.search(r["out"])
    if not (b and i):
        return "no result lines"
    if role == "client":
        say("PINGPONG %-16s %s; %s (client on g%d, %s s with its setup)" % (lab, b.group(0), i.group(0), r["guest"],
                                                                          r["seconds"]))
    return None


def check_pingpong(ctx):
    return check_pairs(ctx, PINGPONG_LABELS, judge_pingpong, "PINGPONG")


def judge_perftest(lab, role, r):
    if role == "server":
        return None
    rows = PERF_ROW.findall(r["out"])
    if not rows:
        return "no result table row"
    say("PERFTEST %-13s %s" % (lab, re.sub(r"\s+", " ", rows[0]).strip()))
    return None


def check_perftest(ctx):
    return check_pairs(ctx, PERFTEST_LABELS, judge_perftest, "PERFTEST")


EVENTS_PERF = ["ev-send-lat", "ev-send-bw", "ev-send-bw-bidir", "ev-ud-send-lat", "lo-send-lat", "lo-send-bw",
               "lo-ud-send-lat"]
EVENTS_PP = ["ev-rc-pingpong", "ev-ud-pingpong", "lo-rc-pingpong", "lo-ud-pingpong"]


def check_events(ctx):
    """Every event-mode pair (perftest -e, ibv_*_pingpong -e; two guests and loopback) exits 0 with its result
    lines, and the pingpongs' -e is on their command line."""
    runs = tool_runs(ctx)
    for lab in EVENTS_PERF + EVENTS_PP:
        r = runs.get((lab, "client"))
        if r and " -e " not in r["cmd"] + " ":
            return "%s ran without -e: %s" % (lab, r["cmd"])
    errs = [e for e in (check_pairs(ctx, EVENTS_PERF, judge_perftest, "EVENTS perftest -e"),
                        check_pairs(ctx, EVENTS_PP, judge_pingpong, "EVENTS pingpong -e")) if e]
    return "; ".join(errs) or None


def check_net2(ctx):
    errs = []
    for gi, t in enumerate(ctx["texts"]):
        for rx in (r"VRNIC-NET eth0 10\.0\.0\.%d/24" % (gi + 1), r"NET2-PING-OK g%d" % gi,
                   r"NET2-TCP g%d received: hello from g%d" % (gi, 1 - gi)):
            if not re.search(rx, t):
                errs.append("g%d: no /%s/" % (gi, rx))
    return "; ".join(errs) or None


GRH_PERFTEST = ["send-bw", "write-lat", "read-bw", "ud-send-lat"]
GRH_LABELS = ["2vm-" + t for t in GRH_PERFTEST] + ["2vm-rc-pingpong", "2vm-ud-pingpong"] + ["lo-" + t for t in GRH_PERFTEST]


def check_grh(ctx):
    """Every GRH pair exits 0 with its result (perftest table row / pingpong summary); grh_ah passes its 9 checks
    (UD GRH area, IBV_WC_GRH only with a GRH, ibv_create_ah_from_wc answers back); each vrnic's fabric
    counters show GRH packets both ways, tx_no_route 0 and rx_dgid_mismatch 0."""
    def judge(lab, role, r):
        if "pingpong" in lab:
            return judge_pingpong(lab, role, r)
        return judge_perftest(lab, role, r)
    errs = []
    r = check_pairs(ctx, GRH_LABELS, judge, "GRH")
    if r:
        errs.append(r)
    text = "\n".join(console_lines(ctx["text"]))
    m = re.search(r"^GRH-AH (PASS (\d+) checks|FAIL .*)$", text, re.M)
    if not m or not m.group(1).startswith("PASS") or int(m.group(2)) < 9:
        errs.append("grh_ah: %s" % (m.group(0) if m else "no GRH-AH result line"))
    else:
        say("GRH grh_ah: %s" % m.group(1))
    gids = re.findall(r"^(?:\[g\d\] )?GRH-GID0 g(\d) (\S+)$", text, re.M)
    say("GRH GID 0 of each guest: %s" % (", ".join("g%s %s" % g for g in gids) or "none printed"))
    if len(gids) != 2 or not all(g[1].startswith("fe80:0000:0000:0000:") for g in gids) or gids[0][1] == gids[1][1]:
        errs.append("GID 0 is not fe80::/64 + a distinct port GUID on each guest: %s" % gids)
    for i, s in enumerate(ctx["servers"]):
        try:
            st = s.command("stats")
        except OSError as e:
            errs.append("vrnic %d: no stats (%s)" % (i, e))
            continue
        f = {k: int(v) for k, v in re.findall(r'"(tx_no_route|rx_dgid_mismatch|tx_grh_packets|rx_grh_packets|'
                                              r'tx_packets|rx_packets)":\s*(\d+)', st)}
        say("GRH vrnic %d fabric: %s" % (i, " ".join("%s=%s" % (k, f.get(k, "?")) for k in (
            "tx_packets", "tx_grh_packets", "rx_packets", "rx_grh_packets", "tx_no_route", "rx_dgid_mismatch"))))
        if f.get("tx_no_route") != 0:
            errs.append("vrnic %d: tx_no_route %s (GRH traffic must route by LID)" % (i, f.get("tx_no_route")))
        if f.get("rx_dgid_mismatch") != 0:
            errs.append("vrnic %d: rx_dgid_mismatch %s" % (i, f.get("rx_dgid_mismatch")))
        if not f.get("tx_grh_packets") or not f.get("rx_grh_packets"):
            errs.append("vrnic %d: no GRH packets sent/received (tx %s rx %s)" % (
                i, f.get("tx_grh_packets"), f.get("rx_grh_packets")))
    return "; ".join(errs) or None


BENCH_TESTS = ["ib_write_lat", "ib_send_lat", "ib_read_lat", "ib_atomic_lat",
               "ib_write_bw", "ib_send_bw", "ib_read_bw", "ib_atomic_bw"]


_HOST_PROBE = []


def host_probe():
    """The host's wake-up costs (vrnic-hostprobe, built with the server), measured once per harness run: the floor
    under one guest's ping-pong when the device has no CPU of its own (docs/architecture.md)."""
    if not _HOST_PROBE:
        exe = os.path.join(HERE, "..", "target", "release", "vrnic-hostprobe")
        line = "HOST NA (no %s)" % exe
        if os.path.exists(exe):
            try:
                out = subprocess.run([exe], capture_output=True, text=True, timeout=60).stdout
                line = next((l for l in out.splitlines() if l.startswith("HOST ")), "HOST NA (no output)")
            except (OSError, subprocess.SubprocessError) as e:
                line = "HOST NA (%s)" % e
        _HOST_PROBE.append(line)
    return _HOST_PROBE[0]


def check_bench(ctx):
    """BENCH <test> <size> <loopback|2vm> vrnic=<figure> rxe=<figure> unit=<usec|MBps> better=<factor>:
    latency = the client's t_typical (perftest's median), bandwidth = its BW average; each figure is the median
    over the guest's repetitions of the pair (bench.sh's reps, vrnic and rxe alternating); better > 1: vrnic wins."""
    topo = "2vm" if len(ctx.get("texts") or []) > 1 else "loopback"
    mode = ctx["run_texts"][-1][0] if ctx.get("run_texts") else "default"
    tests, devs, reps = BENCH_TESTS, ("mlx5_0", "rxe0"), 1
    texts = ctx.get("texts") or [ctx.get("text", "")]
    m = re.search(r"^BENCH-SET tests=(\S+) devs=(\S+) reps=(\d+)", "\n".join("\n".join(console_lines(t)) for t in texts),
                  re.M)
    if m:  # a --guest-arg vrnic.bench=/vrnic.bench_devs= run: only what the guest ran
        tests = [t for t in BENCH_TESTS if t in m.group(1).split(",")]
        devs = tuple(d for d in devs if d in m.group(2).split(","))
        reps = max(1, int(m.group(3)))
    labels = ["bench-%s-%s-r%d" % (d, t, k) for t in tests for k in range(1, reps + 1) for d in devs]
    runs = tool_runs(ctx)
    table = []
    say("BENCH-RUN topology=%s doorbell=%s reps=%d" % (topo, mode, reps))
    say("BENCH-" + host_probe())
    fmt = lambda x: "%.2f" % x if x is not None else "NA"
    for t in tests:
        figs, size = {}, "?"
        lat = t.endswith("_lat")
        for d in ("mlx5_0", "rxe0"):
            for k in range(1, reps + 1):
                r = runs.get(("bench-%s-%s-r%d" % (d, t, k), "client"))
                rows = PERF_ROW.findall(r["out"]) if r and r["rc"] == 0 else []
                if rows:
                    f = rows[0].split()
                    size = f[0]
                    figs.setdefault(d, []).append(float(f[4]) if lat else float(f[3]))
        unit = "usec" if lat else "MBps"
        v, x = (statistics.median(figs[d]) if figs.get(d) else None for d in ("mlx5_0", "rxe0"))
        better = (x / v if lat else v / x) if v and x else None
        say("BENCH %s %s %s vrnic=%s rxe=%s unit=%s better=%s" % (t, size, topo, fmt(v), fmt(x), unit, fmt(better)))
        table.append((t, size, v, x, unit, better, figs))
    # MR registration rate (bench.sh mr_reg, guest 0): "MRBENCH <dev> <bytes> <per-second>" lines.
    mrb = {}
    for mm in re.finditer(r"^MRBENCH (\S+) (\d+) ([\d.]+)$", "\n".join(console_lines(texts[0])), re.M):
        mrb.setdefault(int(mm.group(2)), {}).setdefault(mm.group(1), []).append(float(mm.group(3)))
    for size in sorted(mrb):
        figs = mrb[size]
        v, x = (statistics.median(figs[d]) if figs.get(d) else None for d in ("mlx5_0", "rxe0"))
        better = v / x if v and x else None
        say("BENCH mr_reg %d %s vrnic=%s rxe=%s unit=reg+dereg/s better=%s" % (size, topo, fmt(v), fmt(x), fmt(better)))
        table.append(("mr_reg", str(size), v, x, "reg/s", better, figs))
    say("  %-14s %7s %-9s %12s %12s %6s %8s  %s" % ("test", "size", "topology", "vrnic", "rxe", "unit", "better",
                                                 "each run: vrnic | rxe"))
    for t, size, v, x, unit, better, figs in table:
        say("  %-14s %7s %-9s %12s %12s %6s %8s  %s | %s" % (
            t, size, topo, fmt(v), fmt(x), unit, "%.2fx" % better if better is not None else "NA",
            " ".join(fmt(y) for y in figs.get("mlx5_0", [])) or "-", " ".join(fmt(y) for y in figs.get("rxe0", [])) or "-"))
    return check_pairs(ctx, labels, lambda lab, role, r: None if role == "server" or PERF_ROW.search(r["out"])
                       else "no result table row", "BENCH %s %s" % (topo, mode))


DOORBELL_RUNS = [["--doorbell", "trap"], ["--doorbell", "poll"]]

SCENARIOS = {
    "lspci": dict(device=True, timeout=90, check=check_lspci,
                  doc="lspci -nn -vvv shows 15b3:1017 class 0207, BARs 32M/16K/1M 64-bit pref, MSI-X Count=64"),
    "msix": dict(device=True, iommu=True, timeout=240, interact=interact_msix, check=check_msix,
                 doc="vfio-pci (vIOMMU, type1) + msixcount; server 'raise' hook, exact per-vector counts"),
    "probe": dict(device=True, timeout=120, check=check_probe,
                  doc="stock mlx5_core prints the init-segment firmware version"),
    "reboot": dict(device=True, reboot=True, timeout=240, interact=interact_reboot, check=check_reboot,
                   doc="guest reboots twice on one server process, device visible each boot"),
    "rxe-baseline": dict(device=False, timeout=300, check=check_rxe,
                         doc="Soft-RoCE on lo: perftest write/send/read lat, write/send bw"),
    "barbench": dict(device=True, timeout=240, runs=[["--doorbell", "trap"], ["--doorbell", "poll"]],
                     check=check_barbench, doc="BAR0 access cost, server --doorbell trap vs poll"),
    "mlx5-probe": dict(device=True, timeout=180, check=check_mlx5_probe,
                       doc="mlx5_core+mlx5_ib bind, mlx5_0 ACTIVE, >=12 s of health polling, no mlx5/ib errors in dmesg"),
    "devinfo": dict(device=True, timeout=180, check=check_devinfo, config=DEVINFO_TOML, fw=DEVINFO_FW,
                    server_args=["--lid", str(DEVINFO_LID)],
                    doc="ibv_devinfo -v / rdma link / sysfs agree with the configured fw, GUIDs, LID"),
    "reload": dict(device=True, reboot=True, timeout=600, interact=interact_reload, check=check_reload,
                   server_args=["--doorbell", "poll"],
                   doc="5x rmmod/modprobe mlx5_ib mlx5_core ending ACTIVE, then a guest reboot ending ACTIVE "
                       "(server in poll doorbell mode)"),
    "verbs-objects": dict(device=True, timeout=400, check=check_verbs_objects,
                          doc="verbs_objects.c: PD/MR(4K..64M, 2M hugepage)/CQ/SRQ/RC-UC-UD QP lifecycle, "
                              "transitions, query_qp, illegal ops"),
    "net2": dict(device=False, guests=2, timeout=90, check=check_net2,
                 doc="two guests, no device: the virtio-net link (10.0.0.1 <-> 10.0.0.2): ping both ways, one TCP exchange"),
    "rc-pingpong": dict(device=True, guests=2, fabric=True, timeout=300, check=check_pingpong, runs=DOORBELL_RUNS,
                        doc="two guests, two vrnic on the UDP fabric: ibv_rc_pingpong (-e, 1 B..1 MiB, -c), "
                            "ibv_uc/ud/srq_pingpong; doorbell trap, then poll"),
    "loopback": dict(device=True, fabric=True, timeout=300, check=check_pingpong, runs=DOORBELL_RUNS,
                     doc="one guest, one device: the rc-pingpong tool set, server and client over 127.0.0.1; "
                         "doorbell trap, then poll"),
    "perftest": dict(device=True, guests=2, fabric=True, timeout=300, check=check_perftest, runs=DOORBELL_RUNS,
                     doc="two guests: ib_{write,send,read,atomic}_{lat,bw} with result tables; doorbell trap, then poll"),
    "events": dict(device=True, guests=2, fabric=True, timeout=900, check=check_events, runs=DOORBELL_RUNS,
                   doc="two guests: completion events: ib_send_lat (RC, UD) and ib_send_bw (-b too) -e, ibv_rc_pingpong -e "
                       "-n 100000, ibv_ud_pingpong -e; then loopback pairs on each guest's device; doorbell trap, "
                       "then poll"),
    "hostile": dict(device=True, timeout=300, check=check_hostile,
                    doc="hostile.c: garbage BAR0 accesses, stray doorbells, malformed command entries and "
                        "mailbox chains; then FLR + reload ends ACTIVE"),
    "churn": dict(device=True, timeout=300, interact=interact_churn, check=check_churn,
                  doc="verbs objects created/destroyed in a loop; the server's RssAnon after equals after warm-up +-5%"),
    "rereg": dict(device=True, fabric=True, timeout=600, interact=interact_rereg, check=check_rereg,
                  doc="rereg.c: ibv_rereg_mr with every TRANSLATION/PD/ACCESS combination (UMR), data checked after "
                      "each, 1000 reg/rereg/dereg cycles; the server's mkey count returns to its baseline"),
    "ulp": dict(device=True, timeout=180, check=check_ulp,
                doc="ib_umad, ib_cm (CM_SUP via PCAP), ib_ipoib (ib0 up, SA joins fail fast without an SM), "
                    "port counters via PerfMgt MADs"),
    "device-memory": dict(device=True, guests=2, fabric=True, timeout=300, check=check_device_memory,
                          doc="ibv_alloc_dm/memcpy_to/from_dm/reg_dm_mr on guest 0; guest 1 RDMA-writes, reads and "
                              "fetch-and-adds into it over the fabric; bytes checked (dm_test.c)"),
    "errors": dict(device=True, fabric=True, timeout=300, check=check_errors,
                   doc="err_test.c: remote access/local protection errors, RNR (rnr_retry 0 and 7), retry "
                       "exhaustion, in-order flush; the device keeps working, port ACTIVE"),
    "bad-opcode": dict(device=True, fabric=True, timeout=240, check=check_bad_opcode, runs=DOORBELL_RUNS,
                       doc="bad_opcode.c: hand-built WQEs (unknown/unadvertised opcodes, ds 0, opmod, fence mode 7; "
                           "RC and UD) through mlx5dv and the UAR doorbell: LOC_QP_OP_ERR + CQ event, the next WQE "
                           "flushed, QP in ERR, recovery through RESET; a NOP succeeds; doorbell trap, then poll"),
    "peer-loss": dict(device=True, guests=2, fabric=True, timeout=300, interact=interact_peer_loss,
                      check=check_peer_loss,
                      doc="ib_write_bw between two guests; guest 1's vrnic SIGKILLed mid-transfer: guest 0 gets "
                          "RETRY_EXC_ERR, its device keeps working (loopback pingpong), port ACTIVE"),
    "grh": dict(device=True, guests=2, fabric=True, timeout=300, check=check_grh, runs=DOORBELL_RUNS,
                guest_server_args=lambda gi: ["--port-guid", "0x0002c90300a0b0%02x" % (0xc1 + 0x10 * gi)],
                doc="address vectors with a GRH on the IB port (routed by LID): ib_send_bw/ib_write_lat/ib_read_bw "
                    "-x 0 and ib_send_lat -c UD -x 0 between two guests and in loopback on guest 0, "
                    "ibv_rc/ud_pingpong -g 0 between the guests; tx_no_route and rx_dgid_mismatch 0; doorbell trap, then poll"),
    "bench-loopback": dict(device=True, fabric=True, timeout=900, check=check_bench, runs=DOORBELL_RUNS,
                           script="bench", doc="perftest set: vrnic loopback vs rxe on lo in one guest (BENCH lines)"),
    "bench-2vm": dict(device=True, guests=2, fabric=True, timeout=900, check=check_bench, runs=DOORBELL_RUNS,
                      script="bench", doc="perftest set: vrnic over its fabric vs rxe over the guests' virtio-net "
                                          "link (BENCH lines)"),
    "resize-cq": dict(device=True, fabric=True, timeout=300, check=check_resize_cq, runs=DOORBELL_RUNS,
                      doc="resize_cq.c: ibv_resize_cq up and down with CQEs of an RC loopback pair unpolled: all "
                          "kept, in order; traffic through the resized CQ across its wrap; too small refused; "
                          "doorbell trap, then poll"),
    "timestamp": dict(device=True, fabric=True, timeout=300, check=check_timestamp, runs=DOORBELL_RUNS,
                      doc="timestamp.c: hca_core_clock, ibv_query_rt_values_ex monotonic at the advertised rate, "
                          "IBV_WC_EX_WITH_COMPLETION_TIMESTAMP on every completion, non-decreasing, between "
                          "clock reads; doorbell trap, then poll"),
}
ALIASES = {"bench": ["bench-loopback", "bench-2vm"]}
DEFAULT = ["lspci", "msix", "probe", "reboot", "rxe-baseline", "mlx5-probe", "devinfo", "reload", "verbs-objects",
           "net2", "loopback", "rc-pingpong", "perftest", "device-memory", "errors", "peer-loss", "ulp", "churn", "hostile",
           "resize-cq", "timestamp", "grh", "bad-opcode", "events", "rereg"]


# --------------------------------------------------------------------------------------------
SERVER_EXTRA = []  # --server-arg values (e.g. --trace), appended to every server's arguments
GUEST_EXTRA = []  # --guest-arg values, appended to every guest's kernel command line
ONLY_DOORBELL = []  # --doorbell: run only the runs of scenarios with this doorbell mode


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
    """Wait for every guest's VRNIC-SCENARIO-END (then 8 s for its power-off). Once one guest has ended with
    a non-zero rc, the others get 30 s more (their peer is gone)."""
    pending = list(guests)
    end = time.time() + timeout
    while pending and time.time() < end:
        for g in list(pending):
            m = g.wait_for(r"VRNIC-SCENARIO-END \S+ rc=(\d+)", timeout=0.5 if len(guests) > 1 else end - time.time())
            if m is None and g.p.poll() is None:
                continue
            pending.remove(g)
            if m is None:
                continue
            if m.group(1) != "0" and pending:
                end = min(end, time.time() + 30)
            # a driver still probing (mlx5_core waiting on its command queue) blocks the
            # kernel's power-off in device_shutdown(): give it a few seconds, then stop QEMU
            try:
                g.p.wait(8)
            except subprocess.TimeoutExpired:
                say("[run] %s/%s: guest did not power off within 8 s of the scenario end; stopping QEMU" % (tag, g.name))
                g.kill()
    for g in pending:
        if len(guests) > 1 and g.p.poll() is None:
            say("[run] %s/%s: no scenario end; stopping QEMU" % (tag, g.name))
            g.kill()


def run_scenario(name, sc, cache, accel, binary, outdir):
    script = os.path.join(HERE, "scenarios", sc.get("script", name) + ".sh")
    if not os.path.exists(script):
        return "no script %s" % script
    if sc.get("device") and isinstance(binary, Exception):
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
    if ONLY_DOORBELL and runs is DOORBELL_RUNS:
        runs = [r for r in runs if r[1] in ONLY_DOORBELL]
    reason = None
    for ri, sargs in enumerate(runs):
        tag = "%s%s" % (name, ("-" + "-".join(a.strip("-") for a in sargs)) if sargs else "")
        servers, guests = [], []
        ctx.update(guests=guests, servers=servers, killed_ok=False)
        topo = None
        if nguests > 1 or sc.get("fabric"):
            topo = L.Topology(nguests, fabric=bool(sc.get("fabric")) and sc.get("device", False), net=nguests > 1,
                              pcap_dir=outdir if sc.get("pcap") else None)
            ctx["topology"] = topo
        try:
            if topo:
                topo.start()
                say("[run] %s: topology: %s" % (tag, topo.describe()))
            for gi in range(nguests):
                sfx = "" if nguests == 1 else "-g%d" % gi
                sockets = []
                if sc.get("device"):
                    targs = topo.server_args(gi, binary) if topo else []
                    s = L.Server(binary, os.path.join(outdir, "vrnic%d.sock" % (ri * nguests + gi)),
                                 os.path.join(outdir, "vrnic%d.ctl" % (ri * nguests + gi)),
                                 base_args + targs + sc.get("guest_server_args", lambda i: [])(gi) + sargs
                                 + ctx_server_extra(),
                                 log=os.path.join(outdir, "server-%s%s.log" % (tag, sfx)))
                    servers.append(s)
                    if not s.wait_socket():
                        reason = "server%s did not create %s (rc %s): %s" % (
                            sfx, s.sock, s.p.poll(), s.log_text().strip()[-300:].replace("\n", " | "))
                        break
                    say("[run] %s%s: server pid %d: %s" % (tag, sfx, s.pid, " ".join(s.argv)))
                    sockets = [s.sock]
                initrd = L.make_initrd(cache, os.path.join(outdir, "initrd-%d%s" % (ri, sfx)),
                                       L.scenario_files(cache, script))
                append = "vrnic.scenario=%s" % name
                if nguests > 1:
                    append += " vrnic.guest=%d vrnic.guests=%d" % (gi, nguests)
                if topo:
                    append = (append + " " + topo.append(gi)).strip()
                if sc.get("iommu"):
                    append += " intel_iommu=on iommu=pt"
                append = " ".join([append] + GUEST_EXTRA)
                g = L.Guest(cache, "g%d" % gi, initrd, append=append, sockets=sockets, accel=accel,
                            reboot=sc.get("reboot", False), timeout=sc["timeout"],
                            log=os.path.join(outdir, "console-%s%s.log" % (tag, sfx)), iommu=sc.get("iommu"),
                            smp=sc.get("smp", 2), extra=topo.qemu_args(gi) if topo else ())
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
            texts = [g.text() for g in guests]
            ctx["texts"] = texts
            if nguests == 1:
                text = texts[0] if texts else ""
            else:
                text = "\n".join("[%s] %s" % (g.name, l) for g in guests for l in g.text().split("\n"))
            ctx["text"] = text
            ctx["run_texts"].append((sargs[-1] if sargs else "default", text))
            for sv in servers:
                if not sv.alive() and sv.pid not in ctx.get("expect_dead", ()):
                    reason = reason or "server pid %d exited early (%s)" % (sv.pid, exit_text(sv.p.returncode))
            if reason is None and sc.get("check") and ri == len(runs) - 1:
                reason = sc["check"](ctx)
            elif reason is None and sc.get("check") and name != "barbench":
                reason = sc["check"](ctx)
        finally:
            for g in guests:
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
        if reason:
            if len(runs) > 1:
                reason = "[%s] %s" % (tag, reason)
            break
    return reason


def self_test():
    """The harness's own rules on captured console text (ci/test runs this before any guest)."""
    hung = "[   31.204] INFO: task rereg:241 blocked for more than 20 seconds."
    warn = "VRNIC-KERNEL-LOG [   12.001] WARNING: CPU: 1 PID: 77 at drivers/infiniband/hw/mlx5/umr.c:300 x+0x1/0x2"
    cases = [("[    1.000] mlx5_core 0000:01:00.0: firmware version: 16.35.1012\nperftest WARNING: x", False),
             ("[g1] " + hung, True), (warn, True), ("[    3.3] BUG: kernel NULL pointer dereference", True),
             ("[    3.3] watchdog: BUG: soft lockup - CPU#0 stuck for 22s!", True), ("WARNING: not a kernel line", False)]
    fails = [t for t, bad in cases if (kernel_health_reason(t) is not None) != bad]
    if kernel_health_reason(warn, allow=r"umr\.c") is not None:
        fails.append("allow pattern ignored")
    for f in fails:
        say("SELF-TEST FAIL: %s" % f)
    say("%d passed, %d failed" % (len(cases) + 1 - len(fails), len(fails)))
    return 1 if fails else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--cache", default=L.default_cache())
    ap.add_argument("--accel", choices=["auto", "tcg", "kvm"], default="auto")
    ap.add_argument("--server", help="use this server binary instead of building target/release/vrnic")
    ap.add_argument("--server-arg", action="append", default=[],
                    help="extra vrnic argument for every server (repeatable), e.g. --server-arg=--trace")
    ap.add_argument("--guest-arg", action="append", default=[],
                    help="extra guest kernel command line word (repeatable), e.g. vrnic.bench=ib_write_lat,ib_send_lat "
                         "(bench: only these tests) or vrnic.bench_devs=mlx5_0 (bench: only these devices)")
    ap.add_argument("--doorbell", choices=["trap", "poll"], action="append", default=[],
                    help="scenarios that run once per doorbell mode: only this mode (repeatable)")
    ap.add_argument("--self-test", action="store_true", help="check the harness's own rules, boot nothing")
    a = ap.parse_args()
    if a.self_test:
        return self_test()
    SERVER_EXTRA[:] = a.server_arg
    GUEST_EXTRA[:] = a.guest_arg
    ONLY_DOORBELL[:] = a.doorbell
    if a.list:
        for n, sc in SCENARIOS.items():
            say("%-13s %s%s" % (n, sc["doc"], "" if n in DEFAULT else "  (not in default set)"))
        return 0
    names = []
    for n in a.names or ["default"]:
        names += DEFAULT if n == "default" else list(SCENARIOS) if n == "all" else ALIASES.get(n, [n])
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        say("unknown scenario(s): %s (see --list)" % " ".join(unknown))
        return 2
    t0 = time.time()
    cache = os.path.abspath(a.cache)
    L.ensure_cache(cache)
    accel = L.accel_args(cache, None if a.accel == "auto" else a.accel)
    say("[run] accel: %s" % " ".join(accel))
    binary = None
    if a.server:
        binary = os.path.abspath(a.server)
        say("[run] server binary %s (given)" % binary)
    elif any(SCENARIOS[n].get("device") for n in names):
        tb = time.time()
        try:
            binary = L.server_binary(build=True)
            say("[run] server binary %s (build %.1f s)" % (binary, time.time() - tb))
        except Exception as e:  # noqa: BLE001 - reported per scenario
            binary = e
            say("[run] server build failed: %s" % e)
    passed = failed = 0
    for n in names:
        ts = time.time()
        say("[run] ===== scenario %s =====" % n)
        try:
            reason = run_scenario(n, SCENARIOS[n], cache, accel, binary, os.path.join(HERE, "out", n))
        except Exception as e:  # noqa: BLE001
            reason = "harness error: %r" % e
        say("[run] %s took %.1f s" % (n, time.time() - ts))
        if reason:
            failed += 1
            say("SCENARIO %s FAIL %s" % (n, reason.replace("\n", " ")))
        else:
            passed += 1
            say("SCENARIO %s PASS" % n)
    say("[run] total %.1f s" % (time.time() - t0))
    say("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
