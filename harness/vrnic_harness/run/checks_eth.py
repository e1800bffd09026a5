"""Checks of the Ethernet scenarios (eth-*): what the guests printed (scenarios/eth-*.sh through eth-lib.sh:
ETH-UP, ETH-PING, ETH-TOOL blocks, ETH-STATS blocks, ...) against the topology the harness built (ethtopo).
Each check says what it verified (ETH ... lines) and returns None or the reasons it failed."""
import re

from ..common import say
from ..ethtopo import guest_ip, guest_ip6
from .console import bad_lines_reason, console_lines

ETH_TOOL = re.compile(r"^=== ETH-TOOL (\S+) g(\d+): (.*?) ===\n(.*?)^=== ETH-TOOL-END \1 g\2 rc=(\d+) "
                      r"seconds=(\S+) ===$", re.S | re.M)
ETH_STATS = re.compile(r"^=== ETH-STATS (\S+) g(\d+) ===\n(.*?)^=== ETH-STATS-END \1 g\2 ===$", re.S | re.M)
ETH_PING = re.compile(r"^ETH-PING (\S+) g(\d+) sent=(\S+) recv=(\S+) loss=(\S+)% rtt_avg=(\S+) rc=(\d+)$", re.M)


def texts(ctx):
    """Each guest's console lines joined (without the [gN] prefixes)."""
    return ["\n".join(console_lines(t)) for t in (ctx.get("texts") or [ctx.get("text", "")])]


def alltext(ctx):
    return "\n".join(texts(ctx))


def nics(ctx):
    eth = ctx.get("eth")
    return eth.nics if eth else []


def tools(ctx):
    """{(label, guest): dict(cmd, out, rc, seconds)} of every ETH-TOOL block."""
    return {(m.group(1), int(m.group(2))): dict(cmd=m.group(3), out=m.group(4), rc=int(m.group(5)),
                                                seconds=m.group(6)) for m in ETH_TOOL.finditer(alltext(ctx))}


def stats(ctx):
    """{(label, guest): {counter: value}} of every ETH-STATS block (ethtool -S)."""
    res = {}
    for m in ETH_STATS.finditer(alltext(ctx)):
        res[(m.group(1), int(m.group(2)))] = {k: int(v) for k, v in re.findall(r"^\s*([\w\[\]./-]+): (\d+)$",
                                                                                m.group(3), re.M)}
    return res


def rx_queues_moved(before, after):
    """RX queues (rx<N>_packets / rx_queue_<N>_packets) whose packet counter moved between two ethtool -S."""
    moved = []
    for k, v in after.items():
        m = re.match(r"^rx(?:_queue_)?(\d+)_packets$", k)
        if m and v > before.get(k, 0):
            moved.append(int(m.group(1)))
    return sorted(moved)


def up_lines(ctx, errs):
    """Every guest printed ETH-UP with its netdev, the right driver and MAC, carrier 1."""
    eth = ctx.get("eth")
    ups = {}
    for gi, t in enumerate(texts(ctx)):
        m = re.search(r"^ETH-UP g(\d+) dev=(\S+) nic=(\S+) driver=(\S*) mac=(\S+) ip=(\S+) carrier=(\d) after=(\S+)$",
                      t, re.M)
        if not m:
            errs.append("g%d: no ETH-UP line (netdev never came up)" % gi)
            continue
        ups[gi] = m
        want_drv = "mlx5_core" if eth.nics[gi] == "vrnic" else "virtio_net"
        if m.group(4) != want_drv:
            errs.append("g%d: %s is driven by %r, not %s" % (gi, m.group(2), m.group(4), want_drv))
        if m.group(5) != eth.mac(gi):
            errs.append("g%d: %s has MAC %s, not %s" % (gi, m.group(2), m.group(5), eth.mac(gi)))
        say("ETH g%d %s: netdev %s driver %s mac %s carrier %s, up %s s after modprobe" % (
            gi, eth.nics[gi], m.group(2), m.group(4), m.group(5), m.group(7), m.group(8)))
    return ups


def finish(ctx, errs):
    r = bad_lines_reason(ctx["text"])
    if r:
        errs.append(r)
    return "; ".join(errs) or None


# ---- eth-probe ---------------------------------------------------------------------------------------------
def check_eth_probe(ctx):
    errs = []
    up_lines(ctx, errs)
    t = texts(ctx)[0]
    vr = nics(ctx)[0] == "vrnic"
    drv = re.search(r"^ETH-INFO driver: (\S+)", t, re.M)
    say("ETH ethtool -i driver: %s" % (drv.group(1) if drv else "none"))
    if vr and (not drv or drv.group(1) != "mlx5_core"):
        errs.append("ethtool -i driver %s, not mlx5_core" % (drv.group(1) if drv else "missing"))
    if vr:
        binds = dict(re.findall(r"BINDING (\S+) -> (\S*)", t))
        if not any(v == "mlx5_core" for v in binds.values()):
            errs.append("the PCI function is not bound to mlx5_core: %s" % binds)
    ch = re.search(r"^ETH-CHANNELS Current hardware settings:\n(?:ETH-CHANNELS .*\n)*?ETH-CHANNELS Combined:\s+(\d+)",
                   t, re.M)
    mx = re.search(r"^ETH-CHANNELS Pre-set maximums:\n(?:ETH-CHANNELS .*\n)*?ETH-CHANNELS Combined:\s+(\d+)", t, re.M)
    say("ETH ethtool -l: combined max %s current %s" % (mx.group(1) if mx else "?", ch.group(1) if ch else "?"))
    if not ch or int(ch.group(1)) < 1:
        errs.append("ethtool -l shows no combined channels")
    h0 = re.search(r"ETH-HEALTH-WAIT from=([\d.]+)", t)
    h1 = re.search(r"ETH-HEALTH-DONE at=([\d.]+) carrier=(\d) operstate=(\S+)", t)
    if not (h0 and h1):
        errs.append("health wait markers missing")
    else:
        waited = float(h1.group(1)) - float(h0.group(1))
        say("ETH health polling: %.1f s of guest time with the link up; then carrier %s operstate %s" % (
            waited, h1.group(2), h1.group(3)))
        if waited < 12:
            errs.append("only %.1f s of guest time after link up" % waited)
        if h1.group(2) != "1" or h1.group(3) != "up":
            errs.append("after the health wait: carrier %s operstate %s" % (h1.group(2), h1.group(3)))
    if "ETH-CARRIER-LOST" in t:
        errs.append("carrier dropped during the health wait")
    return finish(ctx, errs)


# ---- eth-ping ------------------------------------------------------------------------------------------------
def eui64_ll(mac):
    b = [int(x, 16) for x in mac.split(":")]
    b[0] ^= 2
    w = [(b[0] << 8) | b[1], (b[2] << 8) | 0xff, (0xfe << 8) | b[3], (b[4] << 8) | b[5]]
    return "fe80::" + ":".join("%x" % x for x in w)


def pings(ctx, errs, want_count=None):
    """Every ETH-PING line: rc 0, 0% loss, all replies (and at least want_count sent)."""
    res = {}
    for m in ETH_PING.finditer(alltext(ctx)):
        lab, sent, recv, loss = m.group(1), m.group(3), m.group(4), m.group(5)
        res[lab] = m
        say("ETH ping %-28s sent %s received %s loss %s%% rtt avg %s ms" % (lab, sent, recv, loss, m.group(6)))
        if m.group(7) != "0" or loss != "0" or sent != recv:
            errs.append("ping %s: sent %s received %s loss %s%% rc %s" % (lab, sent, recv, loss, m.group(7)))
        elif want_count and (not sent.isdigit() or int(sent) < want_count):
            errs.append("ping %s: only %s sent (want %d)" % (lab, sent, want_count))
    return res


def check_eth_ping(ctx):
    errs = []
    up_lines(ctx, errs)
    eth = ctx["eth"]
    n = eth.n
    got = pings(ctx, errs, 1000)
    for i in range(n):
        for j in range(n):
            if i != j:
                for fam in ("v4", "v6"):
                    lab = "%s-g%d-g%d-%s-%s" % (fam, i, j, eth.nics[i], eth.nics[j])
                    if lab not in got:
                        errs.append("ping %s did not run" % lab)
    t = alltext(ctx)
    for i in range(n):
        neigh = dict(re.findall(r"^ETH-NEIGH (\S+) lladdr (\S+)", texts(ctx)[i], re.M))
        for j in range(n):
            if i == j:
                continue
            for addr in (guest_ip(j), guest_ip6(j)):
                if neigh.get(addr) != eth.mac(j):
                    errs.append("g%d: neighbour %s -> %s, not %s (ARP/ND)" % (i, addr, neigh.get(addr), eth.mac(j)))
        say("ETH g%d neighbours: %s" % (i, " ".join("%s=%s" % kv for kv in sorted(neigh.items()))))
        for kind, addr in (("BCAST", guest_ip), ("MCAST4", guest_ip), ("MCAST6", lambda j: eui64_ll(eth.mac(j)))):
            replies = set(re.findall(r"^ETH-%s g%d reply-from (\S+)$" % (kind, i), t, re.M))
            want = {addr(j) for j in range(n) if j != i}
            say("ETH g%d %s ping: replies from %s" % (i, kind.lower(), " ".join(sorted(replies)) or "nobody"))
            if not want <= replies:
                errs.append("g%d: %s ping not answered by %s" % (i, kind.lower(), " ".join(sorted(want - replies))))
    return finish(ctx, errs)
