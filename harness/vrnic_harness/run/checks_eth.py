"""Checks of the Ethernet scenarios (eth-*): what the guests printed (scenarios/eth-*.sh through eth-lib.sh:
ETH-UP, ETH-PING, ETH-TOOL blocks, ETH-STATS blocks, ...) against the topology the harness built (ethtopo).
Each check says what it verified (ETH ... lines) and returns None or the reasons it failed."""
import re
import time

from .. import ethframes, netping
from ..common import say
from ..ethtopo import guest_ip, guest_ip6
from .console import bad_lines_reason, console_lines

ETH_TOOL = re.compile(r"^=== ETH-TOOL (\S+) g(\d+): (.*?) ===\n(.*?)^=== ETH-TOOL-END \1 g\2 rc=(\d+) "
                      r"seconds=(\S+) ===$", re.S | re.M)
ETH_STATS = re.compile(r"^=== ETH-STATS (\S+) g(\d+) ===\n(.*?)^=== ETH-STATS-END \1 g\2 ===$", re.S | re.M)
ETH_PING = re.compile(r"^ETH-PING (\S+) g(\d+) sent=(\S+) recv=(\S+) loss=(\S+)% rtt_avg=(\S+) rc=(\d+)$", re.M)


def texts(ctx):
    """Each guest's console lines joined (without the [gN] prefixes)."""
    return ["\n".join(console_lines(t)) for t in (ctx.texts)]


def alltext(ctx):
    return "\n".join(texts(ctx))


def nics(ctx):
    eth = ctx.eth
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
        m = re.match(r"^rx(?:_queue_)?(\d+)_(?:packets|bytes|kicks)$", k)
        if m and v > before.get(k, 0):
            moved.append(int(m.group(1)))
    return sorted(set(moved))


def up_lines(ctx, errs):
    """Every guest printed ETH-UP with its netdev, the right driver and MAC, carrier 1."""
    eth = ctx.eth
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
    r = bad_lines_reason(ctx.text)
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


def pings(ctx, errs, want_count=None, lossy=()):
    """Every ETH-PING line: rc 0, 0% loss, all replies (and at least want_count sent). Labels matching a regex of
    lossy: pings with a deadline (-w) that must end with all their replies, a few lost on the way allowed (<= 5%)."""
    res = {}
    for m in ETH_PING.finditer(alltext(ctx)):
        lab, sent, recv, loss = m.group(1), m.group(3), m.group(4), m.group(5)
        res[lab] = m
        say("ETH ping %-28s sent %s received %s loss %s%% rtt avg %s ms" % (lab, sent, recv, loss, m.group(6)))
        if any(re.search(x, lab) for x in lossy) and m.group(7) == "0" and float(loss) <= 5:
            pass
        elif m.group(7) != "0" or loss != "0" or sent != recv:
            errs.append("ping %s: sent %s received %s loss %s%% rc %s" % (lab, sent, recv, loss, m.group(7)))
        elif want_count and (not sent.isdigit() or int(sent) < want_count):
            errs.append("ping %s: only %s sent (want %d)" % (lab, sent, want_count))
    return res


def check_eth_ping(ctx):
    errs = []
    up_lines(ctx, errs)
    eth = ctx.eth
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


# ---- eth-mtu, eth-vlan -------------------------------------------------------------------------------------
def check_eth_mtu(ctx):
    errs = []
    up_lines(ctx, errs)
    got = pings(ctx, errs)
    for gi, t in enumerate(texts(ctx)):
        m = re.search(r"^ETH-MTU g%d mtu=(\d+) big-ping rc=(\d+): (.*)$" % gi, t, re.M)
        if not m:
            errs.append("g%d: no MTU 1500 big-ping line" % gi)
            continue
        say("ETH g%d at MTU %s: ping -M do -s 8972 rc %s (%s)" % (gi, m.group(1), m.group(2), m.group(3).strip()))
        if m.group(1) != "1500" or m.group(2) == "0" or not re.search(r"too long|mtu", m.group(3), re.I):
            errs.append("g%d: at MTU %s the 8972-byte DF ping was not refused (rc %s: %s)" % (
                gi, m.group(1), m.group(2), m.group(3).strip()))
        if not re.search(r"^ETH-MTU g%d now mtu=9000$" % gi, t, re.M):
            errs.append("g%d: MTU 9000 not set" % gi)
        for lab in ("mtu1500-s1472-g%d" % gi, "mtu9000-s8972-g%d" % gi, "mtu9000-v6-s8952-g%d" % gi):
            if lab not in got:
                errs.append("ping %s did not run" % lab)
    return finish(ctx, errs)


def check_eth_vlan(ctx):
    errs = []
    up_lines(ctx, errs)
    got = pings(ctx, errs, lossy=[r"^vlan100-"])
    t = alltext(ctx)
    for gi in range(2):
        for lab in ("vlan100-v4-g%d" % gi, "vlan100-v6-g%d" % gi):
            if lab not in got:
                errs.append("ping %s did not run" % lab)
        m = re.search(r"^ETH-VLAN-OTHER g%d vl(\d+) rx_packets=(\d+)$" % gi, t, re.M)
        if not m:
            errs.append("g%d: no other-VLAN counter line" % gi)
        else:
            say("ETH g%d VLAN %s (no peer on it) received %s packets" % (gi, m.group(1), m.group(2)))
            if m.group(2) != "0":
                errs.append("g%d: VLAN %s received %s packets of another VLAN" % (gi, m.group(1), m.group(2)))
    m = re.search(r"^ETH-VLAN-CROSS g0 vlan200->vlan201 rc=(\d+) (\d+) packets transmitted, (\d+) received", t, re.M)
    if not m:
        errs.append("no cross-VLAN ping line")
    else:
        say("ETH VLAN 200 -> 10.2.200.2 on VLAN 201: %s sent, %s received (must be 0)" % (m.group(2), m.group(3)))
        if m.group(3) != "0":
            errs.append("a VLAN 200 ping was answered from VLAN 201 (%s replies)" % m.group(3))
    return finish(ctx, errs)


# ---- eth-iperf ------------------------------------------------------------------------------------------------
IPERF_SUM = re.compile(r"^\[(?:SUM|\s*\d+)\]\s+\S+\s+sec\s+([\d.]+) (\w)Bytes\s+([\d.]+) (\w?)bits/sec\s+(.*?)(sender|receiver)$",
                       re.M)
UNIT = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9}
BUNIT = {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}


def iperf_result(out):
    """(receiver bits/s, sender bytes, retransmits or None, UDP loss % or None) from iperf3's final report."""
    rows = IPERF_SUM.findall(out)
    summ = [r for r in rows if r] if rows else []
    # with -P N the [SUM] lines come last; take the last sender and receiver line
    snd = [r for r in summ if r[5] == "sender"]
    rcv = [r for r in summ if r[5] == "receiver"]
    if not snd or not rcv:
        return None
    s, r = snd[-1], rcv[-1]
    bps = float(r[2]) * UNIT.get(r[3], 1)
    sbytes = float(s[0]) * BUNIT.get(s[1], 1)
    retr = re.match(r"\s*(\d+)\s*$", s[4])
    loss = re.search(r"\(([\d.e+-]+)%\)", r[4])
    return bps, sbytes, int(retr.group(1)) if retr else None, float(loss.group(1)) if loss else None


def check_eth_iperf(ctx):
    errs = []
    up_lines(ctx, errs)
    eth = ctx.eth
    runs = tools(ctx)
    st = stats(ctx)
    for c in range(1, eth.n):
        pair = "g%d-%s-to-g0-%s" % (c, eth.nics[c], eth.nics[0])
        for kind in ("tcp-p4", "tcp-p16", "tcp-p1", "tcp-p1-R", "tcp-p4-R", "udp"):
            lab = "%s-%s" % (kind, pair)
            r = runs.get((lab, c))
            if not r:
                errs.append("%s did not run" % lab)
                continue
            res = iperf_result(r["out"])
            if r["rc"] != 0 or not res:
                tail = " | ".join(l for l in r["out"].strip().split("\n")[-2:])
                errs.append("%s: rc %d, %s" % (lab, r["rc"], tail[-200:] or "no output"))
                continue
            bps, sbytes, retr, loss = res
            say("ETH iperf3 %-34s %8.1f Mbit/s%s%s" % (lab, bps / 1e6, "" if retr is None else ", %d retransmits" % retr,
                                                      "" if loss is None else ", %.2f%% lost" % loss))
            segs = max(sbytes / 1448, 1)
            # the 1 s 16-stream RSS probe: its slow-start burst may retransmit; only completion counts
            if kind != "tcp-p16" and retr is not None and retr > 0.05 * segs + 20:
                errs.append("%s: retransmit storm (%d retransmits for %d segments)" % (lab, retr, segs))
            if loss is not None and loss > 10:
                errs.append("%s: %.1f%% of the UDP datagrams lost" % (lab, loss))
            if bps <= 0:
                errs.append("%s: nothing received" % lab)
        b, a = st.get(("before-p4-" + pair, 0)), st.get(("after-p4-" + pair, 0))
        if b is not None and a is not None:
            q = rx_queues_moved(b, a)
            say("ETH g0 (%s) RX queues that moved with 4+16 streams from g%d: %s" % (eth.nics[0], c, q or "none counted"))
            if eth.nics[0] == "vrnic" and len(q) < 2:
                errs.append("g0's ethtool -S shows traffic on %d RX queue(s) with 4+16 streams from g%d (RSS: want > 1)"
                            % (len(q), c))
        elif eth.nics[0] == "vrnic":
            errs.append("no ethtool -S snapshots around the 4-stream run of g%d" % c)
    return finish(ctx, errs)


# ---- eth-offloads ---------------------------------------------------------------------------------------------
def interact_eth_offloads(ctx):
    """When g0 listens (ETH-INJECT-READY): on g0's udp link, a UDP datagram to 10.1.0.1:7777 with a bad UDP
    checksum (payload BADUDP), one with a bad IPv4 header checksum (BADIP), then a good one (GOOD), 3 times."""
    g, eth = ctx.guests[0], ctx.eth
    if not g.wait_for(r"ETH-INJECT-READY|GUEST-FAIL", timeout=ctx.timeout) or "ETH-INJECT-READY" not in g.text():
        return None  # the script failed before: its own GUEST-FAIL is the reason
    for _ in range(3):
        for payload, bu, bi in ((b"BADUDP\n", True, False), (b"BADIP\n", False, True), (b"GOOD\n", False, False)):
            f = ethframes.udp_frame(eth.mac(0), eth.mac(1), guest_ip(1), guest_ip(0), 40000, 7777, payload,
                                    bad_udp_csum=bu, bad_ip_csum=bi)
            ethframes.send_udp_link(f, eth.ports[0], eth.ports[1])
            time.sleep(0.1)
    say("ETH injected on g0's link (udp port %d, from %d): 3x bad UDP checksum, bad IPv4 checksum, good"
        % (eth.ports[0], eth.ports[1]))
    return None


def check_eth_offloads(ctx):
    errs = []
    up_lines(ctx, errs)
    t = alltext(ctx)
    files = dict(re.findall(r"^ETH-SHA-FILE g(\d) (\w+)$", t, re.M))
    got = {(k, int(to), int(fr)): (sha, int(n), rc) for k, to, fr, sha, n, rc in re.findall(
        r"^ETH-SHA k(\d) g(\d)<-g(\d) (\w+) bytes=\s*(\d+) rc=(\d+)$", t, re.M)}
    for k in range(8):
        states = re.findall(r"^ETH-OFFLOAD k%d g(\d) want (.*?) rc=(\d+) have (.*)$" % k, t, re.M)
        say("ETH offloads k%d: %s" % (k, " | ".join("g%s want %s: %s" % (g_, w, h.strip()) for g_, w, _, h in states)))
        for fr in (0, 1):
            r = got.get((str(k), 1 - fr, fr))
            if not r:
                errs.append("k%d: g%d -> g%d transfer missing" % (k, fr, 1 - fr))
            elif r[0] != files.get(str(fr)):
                errs.append("k%d: g%d -> g%d sha256 differs (%d bytes received)" % (k, fr, 1 - fr, r[1]))
        if ctx.eth.nics[0] == "vrnic":
            for g_, w, rc, h in states:
                want = dict(re.findall(r"(\w+)=(\w+)", w))
                have = {"tso": re.search(r"tcp-segmentation-offload: (\w+)", h),
                        "tx": re.search(r"tx-checksumming: (\w+)", h), "rx": re.search(r"rx-checksumming: (\w+)", h)}
                for f in ("tx", "rx"):
                    if not have[f] or have[f].group(1) != want[f]:
                        errs.append("k%d g%s: %s wanted %s, is %s" % (k, g_, f, want[f],
                                                                     have[f].group(1) if have[f] else "?"))
    m = re.search(r"^ETH-INJECT-RX g0: (.*)$", t, re.M)
    if not m:
        errs.append("g0: no injection result")
    else:
        words = m.group(1).split()
        say("ETH injected frames that reached g0's socket: %s" % (" ".join(words) or "none"))
        if "GOOD" not in words:
            errs.append("the good injected datagram never arrived")
        if "BADUDP" in words or "BADIP" in words:
            errs.append("a corrupted frame was delivered: %s" % " ".join(words))
    b = re.search(r"^ETH-UDP-BEFORE Udp: (.*)$", t, re.M)
    a = re.search(r"^ETH-UDP-AFTER Udp: (.*)$", t, re.M)
    ipa = re.search(r"^ETH-IP-AFTER Ip: (.*)$", t, re.M)
    ipb = re.search(r"^ETH-IP-BEFORE Ip: (.*)$", t, re.M)
    if b and a:
        # Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors ...
        bi, ai = b.group(1).split(), a.group(1).split()
        d = int(ai[6]) - int(bi[6]) if len(ai) > 6 and len(bi) > 6 else None
        st = stats(ctx).get(("inject", 0), {})
        dev = {k: v for k, v in st.items() if "csum" in k and ("err" in k or "none" in k or "bad" in k) and v}
        # Ip: Forwarding DefaultTTL InReceives InHdrErrors ...
        hdr = int(ipa.group(1).split()[3]) - int(ipb.group(1).split()[3]) if ipa and ipb else "?"
        say("ETH g0 after the injection: UDP InCsumErrors +%s, IPv4 InHdrErrors +%s, device csum counters %s" % (
            d, hdr, dev or "none non-zero"))
        if not d and not dev:
            errs.append("the bad-checksum datagrams were counted nowhere (UDP InCsumErrors, ethtool -S csum)")
    else:
        errs.append("g0: no /proc/net/snmp UDP counters around the injection")
    return finish(ctx, errs)


# ---- eth-host --------------------------------------------------------------------------------------------------
def interact_eth_host(ctx):
    """Once the guest pinged the host (ETH-HOST-READY): 50 IPv4 and 50 IPv6 pings from the namespace to the guest,
    then one TCP line to the guest's port 7000 that reports them (ETH-HOST-SAID on the guest)."""
    g, eth = ctx.guests[0], ctx.eth
    if not g.wait_for(r"ETH-HOST-READY|GUEST-FAIL", timeout=ctx.timeout) or "ETH-HOST-READY" not in g.text():
        return None
    res = ctx.notes.setdefault("host_pings", {})
    for addr in (guest_ip(0), guest_ip6(0)):
        sent, recv, rtts = netping.ping(eth.ns, addr, count=50, interval=0.02)
        res[addr] = (sent, recv)
        say("ETH host (netns %s) -> guest %s: %d sent, %d received%s" % (
            eth.ns, addr, sent, recv, ", rtt median %.2f ms" % sorted(rtts)[len(rtts) // 2] if rtts else ""))
    ok = netping.tcp_say(eth.ns, guest_ip(0), 7000, "host-pinged " + " ".join(
        "%s=%d/%d" % (a, r, s) for a, (s, r) in res.items()))
    if not ok:
        say("ETH host could not connect to the guest's TCP port 7000")
    return None


def check_eth_host(ctx):
    errs = []
    up_lines(ctx, errs)
    pings(ctx, errs, 100)
    for addr in (guest_ip(0), guest_ip6(0)):
        s, r = ctx.notes.get("host_pings", {}).get(addr, (0, 0))
        if not s or r != s:
            errs.append("host -> guest %s: %d of %d pings answered" % (addr, r, s))
    m = re.search(r"^ETH-HOST-SAID host-pinged (.*)$", alltext(ctx), re.M)
    say("ETH guest heard from the host over TCP: %s" % (m.group(1) if m else "nothing"))
    if not m:
        errs.append("the host's TCP connection to the guest did not arrive")
    return finish(ctx, errs)


# ---- eth-reload ------------------------------------------------------------------------------------------------
def interact_eth_reload(ctx):
    g = ctx.guests[0]
    m = g.wait_for(r"ETH-RELOAD-CYCLES-DONE|GUEST-FAIL.*", timeout=ctx.timeout)
    if not m:
        return "boot 1: no ETH-RELOAD-CYCLES-DONE"
    if m.group(0).startswith("GUEST-FAIL"):
        return "boot 1: " + m.group(0)
    m = g.wait_for(r"^ETH-PING boot-g0 .*|GUEST-FAIL.*", timeout=240, count=2)
    if not m:
        return "after the reboot: no second boot ping (init markers seen: %d)" % len(g.marker_wall)
    if m.group(0).startswith("GUEST-FAIL"):
        return "after the reboot: " + m.group(0)
    for x in ctx.guests:
        x.kill()
    if ctx.servers and not ctx.servers[0].alive():
        return "g0's server died across the reboot"
    ctx.killed_ok = True
    return None


def check_eth_reload(ctx):
    errs = []
    t = texts(ctx)[0]
    pings(ctx, errs)
    cyc = re.findall(r"^ETH-RELOAD-CYCLE (\d+) dev=(\S+)$", t, re.M)
    flaps = re.findall(r"^ETH-FLAP-CYCLE (\d+)$", t, re.M)
    boots = re.findall(r"^ETH-PING boot-g0 g0 sent=(\S+) recv=(\S+)", t, re.M)
    say("ETH reload: %d driver reload cycles, %d down/up flaps, %d boots that pinged (netdevs %s)" % (
        len(cyc), len(flaps), len(boots), " ".join(sorted({d for _, d in cyc}))))
    if len(cyc) != 3:
        errs.append("%d of 3 reload cycles" % len(cyc))
    if len(flaps) != 10:
        errs.append("%d of 10 down/up cycles" % len(flaps))
    if len(boots) < 2:
        errs.append("%d boots pinged (want 2: before and after the reboot)" % len(boots))
    if "ETH-FLAP-NOT-DOWN" in t:
        errs.append("ip link set down left the netdev up")
    return finish(ctx, errs)


# ---- eth-ethtool -----------------------------------------------------------------------------------------------
def interact_eth_ethtool(ctx):
    """On ETH-FLAP-READY (g0): `link down` on g0's server control socket, 3 s, `link up` (vrnic only)."""
    g = ctx.guests[0]
    if not g.wait_for(r"ETH-FLAP-READY|GUEST-FAIL", timeout=ctx.timeout) or "ETH-FLAP-READY" not in g.text():
        return None
    if ctx.eth.nics[0] != "vrnic" or not ctx.servers:
        say("ETH link flap: g0 has no vrnic server (virtio-net): not flapped")
        return None
    s = ctx.servers[0]
    for cmd in ("link down", None, "link up"):
        if cmd is None:
            time.sleep(3)
            continue
        try:
            say("ETH control socket '%s': %s" % (cmd, s.command(cmd)))
        except OSError as e:
            say("ETH control socket '%s' failed: %s" % (cmd, e))
    return None


def check_eth_ethtool(ctx):
    errs = []
    up_lines(ctx, errs)
    pings(ctx, errs)
    t = texts(ctx)[0]
    vr = ctx.eth.nics[0] == "vrnic"
    st = stats(ctx)

    def line(tag):
        m = re.search(r"^%s (.*)$" % tag, t, re.M)
        return m.group(1).strip() if m else None

    def section(tag):
        return "\n".join(re.findall(r"^%s (.*)$" % tag, t, re.M))
    for lab in ("after-ring", "channels-2", "channels-max", "after-flap"):
        if not re.search(r"^ETH-PING %s g0 " % lab, t, re.M):
            errs.append("ping %s did not run" % lab)
    ring = re.findall(r"^ETH-RING-AFTER (RX|TX):\s+(\d+)", t, re.M)
    say("ETH -G rx/tx 512: rings now %s (rc %s)" % (ring[2:] or ring, line("ETH-RING-SET-RC")))
    say("ETH -L: combined 2 -> %s; back to max -> %s" % (line("ETH-CHANNELS-2"), line("ETH-CHANNELS-MAX")))
    say("ETH -K gro: %s / %s" % (line("ETH-GRO-OFF"), line("ETH-GRO-ON")))
    say("ETH -a after -A rx off tx off: %s" % section("ETH-PAUSE-AFTER").replace("\n", "; "))
    say("ETH -t: %s" % (re.search(r"The test result is (\w+)", section("ETH-SELFTEST")) or [None, "no result"])[1])
    drop, steer, nodrop = line("ETH-DROP-RX"), line("ETH-STEER-RX"), line("ETH-NODROP-RX")
    say("ETH -N: 20 datagrams to a dropped port: %s received; steered to queue 1: %s received; rule deleted: %s"
        % (drop, steer, nodrop))
    fn, fp = line("ETH-FOREIGN-NOPROMISC"), line("ETH-FOREIGN-PROMISC")
    say("ETH foreign-MAC frames seen by tcpdump -p: %s without promisc, %s with" % (fn, fp))
    if fn is None or "listening on" not in fn:
        errs.append("tcpdump did not run on the netdev (%s)" % fn)
    elif fn.split()[0] != "0":
        errs.append("foreign-MAC frames reached the netdev without promiscuous mode (%s)" % fn)
    if fp is None or fp.split()[0] == "0":
        errs.append("promiscuous mode did not deliver the foreign-MAC frames (%s)" % fp)
    b, a = st.get(("before", 0)), st.get(("after-ping", 0))
    if b and a:
        moved = {k: a[k] - b.get(k, 0) for k in ("rx_packets", "tx_packets", "rx_bytes", "tx_bytes") if k in a}
        say("ETH -S moved with the pings: %s" % (moved or "no rx_/tx_packets counters"))
        if vr and not (moved.get("rx_packets", 0) > 0 and moved.get("tx_packets", 0) > 0):
            errs.append("ethtool -S rx_packets/tx_packets did not move with traffic: %s" % moved)
    elif vr:
        errs.append("no ethtool -S snapshots")
    car = re.findall(r"^ETH-CARRIER (\d) at=", t, re.M)
    say("ETH carrier events during the control-socket flap: %s" % (" ".join(car) or "none"))
    if vr:
        if "0" not in car or car[-1:] != ["1"]:
            errs.append("carrier events %s (want down then up)" % car)
        if not re.search(r"^ETH-RING-AFTER RX:\s+512$", t, re.M):
            errs.append("-G rx 512 did not take effect")
        if not (line("ETH-CHANNELS-2") or "").split()[-1:] == ["2"]:
            errs.append("-L combined 2 did not take effect: %s" % line("ETH-CHANNELS-2"))
        if "PASS" not in section("ETH-SELFTEST"):
            errs.append("ethtool -t did not PASS: %s" % section("ETH-SELFTEST")[-200:])
        if drop != "0":
            errs.append("the -N drop rule let %s datagrams through" % drop)
        if nodrop in (None, "0"):
            errs.append("after deleting the rules, no datagram arrived (%s)" % nodrop)
        if steer in (None, "0"):
            errs.append("the steered datagrams did not arrive (%s)" % steer)
        bs, as_ = st.get(("before-steer", 0)), st.get(("after-steer", 0))
        if bs and as_ and as_.get("rx1_packets", 0) - bs.get("rx1_packets", 0) < 20:
            errs.append("queue 1 received %d packets with the steer rule (want >= 20)" % (
                as_.get("rx1_packets", 0) - bs.get("rx1_packets", 0)))
        if "rx off" not in section("ETH-PAUSE-AFTER").replace("RX:", "rx").replace(":\t", " ").lower() and \
                not re.search(r"RX:\s+off", section("ETH-PAUSE-AFTER")):
            errs.append("-A rx off not shown by -a: %s" % section("ETH-PAUSE-AFTER"))
    return finish(ctx, errs)
