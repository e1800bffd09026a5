"""Checks of the mlx5 firmware scenarios: mlx5-probe, devinfo, reload."""
import re
import time

from ..common import say
from .console import (bad_lines_reason, console_lines, dmesg_sections, exit_text,
                      mlx5_up_reason)


def check_mlx5_probe(ctx):
    text = ctx.text
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
    if not re.search(r"mlx5_core %s: firmware version: %s" % (re.escape(bdf), re.escape(ctx.fw)), dm):
        errs.append("dmesg has no 'mlx5_core %s: firmware version: %s' line" % (bdf, ctx.fw))
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
    text = "\n".join(console_lines(ctx.text))
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
    g = ctx.guests[0]
    m = g.wait_for(r"RELOAD-CYCLES-DONE|GUEST-FAIL.*", timeout=ctx.timeout)
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
    s = ctx.servers[0]
    if not s.alive():
        return "server pid %d died (%s)" % (s.pid, exit_text(s.p.returncode))
    ctx.killed_ok = True
    return None


def check_reload(ctx):
    text = "\n".join(console_lines(ctx.text))
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
