"""Checks over the switch guest of an Ethernet "switch" topology (ethswitch.py, guest-tests/scenarios/switch-guest.sh):
its counter blocks (SWITCH-STATS), the ECN codepoints in a port's capture, and the eth-switch scenario (TCP with
ECN through the marking qdisc)."""
import os
import re

from ..common import say
from ..roce_pcap import records
from .checks_eth import finish, iperf_result, texts, tools, up_lines
from .console import console_lines

SW_STATS = re.compile(r"^=== SWITCH-STATS (\S+) uptime=(\S+) ===\n(.*?)^=== SWITCH-STATS-END \1 ===", re.M | re.S)
QDISC = re.compile(r"^qdisc (\S+) (\S+)(?: root| parent (\S+))?[^\n]*\n Sent (\d+) bytes (\d+) pkt \(dropped (\d+), "
                   r"overlimits (\d+) requeues (\d+)\)\s*\n backlog (\S+) (\d+)p.*?(?=^qdisc |\Z)", re.M | re.S)


def _int(s):
    return int(re.sub(r"[^0-9]", "", s) or 0)


def switch_stats(text):
    """{label: {"uptime": s, "qdiscs": {kind: {...}}, "ports": {gi: {"rx_dropped", "tx_dropped", ...}}}} from the
    switch guest's console; a qdisc's dict: bytes, pkts, dropped, overlimits, and for red marked/early/pdrop/other,
    for fq_codel ecn_mark/drop_overlimit."""
    res = {}
    for m in SW_STATS.finditer("\n".join(console_lines(text))):
        body = m.group(3)
        qd = {}
        for q in QDISC.finditer(body):
            d = dict(bytes=int(q.group(4)), pkts=int(q.group(5)), dropped=int(q.group(6)),
                     overlimits=int(q.group(7)), backlog_pkts=int(q.group(10)))
            for k, v in re.findall(r"\b(marked|early|pdrop|other|ecn_mark|drop_overlimit) (\d+)", q.group(0)):
                d[k] = int(v)
            qd[q.group(1)] = d
        ports = {}
        for p in re.finditer(r"^PORT g(\d+) (\S+)\n(.*?)(?=^PORT |\Z)", body, re.M | re.S):
            rx = re.search(r"RX:.*\n\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)", p.group(3))
            tx = re.search(r"TX:.*\n\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)", p.group(3))
            ports[int(p.group(1))] = dict(rx_bytes=int(rx.group(1)) if rx else 0, rx_pkts=int(rx.group(2)) if rx else 0,
                                          rx_dropped=int(rx.group(4)) if rx else 0,
                                          tx_bytes=int(tx.group(1)) if tx else 0, tx_pkts=int(tx.group(2)) if tx else 0,
                                          tx_dropped=int(tx.group(4)) if tx else 0)
        res[m.group(1)] = dict(uptime=float(m.group(2)), qdiscs=qd, ports=ports)
    return res


def aqm_delta(stats, a, b):
    """The AQM qdisc's counters between two SWITCH-STATS labels (b - a): {kind, marked, dropped, pkts, bytes}."""
    if a not in stats or b not in stats:
        return None
    for kind in ("red", "fq_codel", "htb", "pfifo"):  # the AQM; without one (aqm none) the shaper
        if kind in stats[b]["qdiscs"]:
            x, y = stats[a]["qdiscs"].get(kind, {}), stats[b]["qdiscs"][kind]
            marked = "ecn_mark" if kind == "fq_codel" else "marked"
            return dict(kind=kind, marked=y.get(marked, 0) - x.get(marked, 0),
                        dropped=y["dropped"] - x.get("dropped", 0), pkts=y["pkts"] - x.get("pkts", 0),
                        bytes=y["bytes"] - x.get("bytes", 0), seconds=stats[b]["uptime"] - stats[a]["uptime"])
    return None


def say_switch(stats, a, b, what):
    d = aqm_delta(stats, a, b)
    if d:
        say("SWITCH %s (%s -> %s, %.1f s): %s sent %d pkts %.1f Mbit/s, marked %d, dropped %d" % (
            what, a, b, d["seconds"], d["kind"], d["pkts"], d["bytes"] * 8 / max(d["seconds"], 0.001) / 1e6,
            d["marked"], d["dropped"]))
    return d


def ecn_counts(path):
    """{"not-ect", "ect1", "ect0", "ce"}: IPv4/IPv6 frames of a capture by the ECN field; + "roce_ce": CE RoCEv2."""
    names = ("not-ect", "ect1", "ect0", "ce")
    res = dict.fromkeys(names + ("roce_ce",), 0)
    for _n, raw in records(path):
        off = 12
        et = int.from_bytes(raw[off:off + 2], "big") if len(raw) >= 14 else 0
        while et == 0x8100 and len(raw) >= off + 6:
            off += 4
            et = int.from_bytes(raw[off:off + 2], "big")
        l3 = off + 2
        if et == 0x0800 and len(raw) >= l3 + 20:
            ecn, proto, udp = raw[l3 + 1] & 3, raw[l3 + 9], l3 + (raw[l3] & 0xF) * 4
        elif et == 0x86DD and len(raw) >= l3 + 40:
            ecn, proto, udp = (raw[l3 + 1] >> 4) & 3, raw[l3 + 6], l3 + 40
        else:
            continue
        res[names[ecn]] += 1
        if ecn == 3 and proto == 17 and int.from_bytes(raw[udp + 2:udp + 4], "big") == 4791:
            res["roce_ce"] += 1
    return res


def netstat(text, guest):
    """{TcpExt counter: value} of a guest's NETSTAT block (/proc/net/netstat)."""
    m = re.search(r"=== NETSTAT g%d ===\n(.*?)=== NETSTAT-END" % guest, text, re.S)
    res = {}
    if m:
        lines = [l.split() for l in m.group(1).splitlines() if l.strip()]
        for h, v in zip(lines[::2], lines[1::2]):
            if h and v and h[0] == v[0]:
                res.update({k: _int(x) for k, x in zip(h[1:], v[1:])})
    return res


def switch_health(ctx, errs):
    """The switch guest came up (SWITCH-READY) and did not fail."""
    t = "\n".join(console_lines(ctx.switch_text))
    m = re.search(r"^SWITCH-READY (.*)$", t, re.M)
    if not m:
        f = re.search(r"GUEST-FAIL (.*)", t)
        errs.append("switch guest not ready%s" % (": " + f.group(1) if f else ""))
    else:
        say("SWITCH ready: %s" % m.group(1))
    drops = ctx.notes.get("switch_ingress_drops")
    if drops is not None:  # datagrams the switch's NIC sockets dropped (ethswitch.INGRESS_BUFFER), whole boot
        say("SWITCH ingress socket drops: %s" % (" ".join("g%d=%d" % kv for kv in sorted(drops.items())) or "NA"))
    return bool(m)


# ---- eth-switch --------------------------------------------------------------------------------------------
def check_eth_switch(ctx):
    errs = []
    up_lines(ctx, errs)
    switch_health(ctx, errs)
    eth = ctx.eth
    r = tools(ctx).get(("tcp-ecn", 1))
    if not r:
        errs.append("iperf3 through the switch did not run")
    else:
        res = iperf_result(r["out"])
        if r["rc"] or not res:
            errs.append("iperf3 rc %d: %s" % (r["rc"], r["out"].strip()[-200:]))
        else:
            say("SWITCH TCP-ECN iperf3 g1 -> g0: %.1f Mbit/s, %s retransmits" % (res[0] / 1e6, res[2]))
    st = switch_stats(ctx.switch_text)
    d = say_switch(st, "before", "after", "egress to g%d" % int(eth.switch.cfg["egress"]))
    if d is None:
        errs.append("no switch counters before and after (SWITCH-STATS before/after)")
    elif eth.switch.cfg["aqm"] != "none" and d["marked"] <= 0:
        errs.append("the switch's %s qdisc marked no packet" % d["kind"])
    ns = netstat(texts(ctx)[1] if len(texts(ctx)) > 1 else "", 1)
    say("SWITCH TCP-ECN sender g1 TcpExt: TCPDeliveredCE %s, TCPECN... %s" % (
        ns.get("TCPDeliveredCE"), {k: v for k, v in ns.items() if "ECN" in k and v}))
    if ns and ns.get("TCPDeliveredCE", 0) <= 0:
        errs.append("the sender's TCP saw no CE echoed back (TcpExt TCPDeliveredCE 0)")
    pcap = ctx.capture("eth0.pcap")
    if eth.pcap_dir and os.path.exists(pcap):
        c = ecn_counts(pcap)
        say("SWITCH capture of g0's port (%s): %s" % (pcap, " ".join("%s=%d" % kv for kv in c.items())))
        if c["ce"] <= 0:
            errs.append("g0's port capture holds no CE frame")
    else:
        errs.append("no capture of g0's port (%s)" % pcap)
    return finish(ctx, errs)


# ---- the parsers on captured text (guest-tests/run --self-test) --------------------------------------------
SAMPLE = """=== SWITCH-STATS before uptime=20.42 ===
qdisc htb 1: root refcnt 2 r2q 10 default 0x1 direct_packets_stat 0 direct_qlen 1000
 Sent 784 bytes 9 pkt (dropped 0, overlimits 0 requeues 0) 
 backlog 0b 0p requeues 0
qdisc red 10: parent 1:1 limit 300000b min 15000b max 45000b ecn 
 Sent 784 bytes 9 pkt (dropped 0, overlimits 0 requeues 0) 
 backlog 0b 0p requeues 0
  marked 0 early 0 pdrop 0 other 0 
PORT g0 eth1
3: eth1: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9000 qdisc htb master br0 state UP mode DEFAULT group default qlen 1000
    link/ether 52:54:00:5e:00:01 brd ff:ff:ff:ff:ff:ff
    RX:  bytes packets errors dropped  missed   mcast           
           844      10      0       0       0       0 
    TX:  bytes packets errors dropped carrier collsns           
           784       9      0       0       0       0 
=== SWITCH-STATS-END before ===
=== SWITCH-STATS after uptime=31.63 ===
qdisc htb 1: root refcnt 2 r2q 10 default 0x1 direct_packets_stat 0 direct_qlen 1000
 Sent 45211820 bytes 29896 pkt (dropped 7, overlimits 3961 requeues 0) 
 backlog 0b 0p requeues 0
qdisc red 10: parent 1:1 limit 300000b min 15000b max 45000b ecn 
 Sent 45211820 bytes 29896 pkt (dropped 7, overlimits 138 requeues 0) 
 backlog 1514b 1p requeues 0
  marked 138 early 7 pdrop 0 other 0 
PORT g0 eth1
3: eth1: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9000 qdisc htb master br0 state UP mode DEFAULT group default qlen 1000
    link/ether 52:54:00:5e:00:01 brd ff:ff:ff:ff:ff:ff
    RX:  bytes packets errors dropped  missed   mcast           
        214196    3235      0       2       0       0 
    TX:  bytes packets errors dropped carrier collsns           
      45211820   29896      0       0       0       0 
=== SWITCH-STATS-END after ===
"""


def self_test():
    """switch_stats and aqm_delta on a captured SWITCH-STATS pair (the real layout of tc -s and ip -s)."""
    fails = []
    st = switch_stats(SAMPLE)
    d = aqm_delta(st, "before", "after")
    want = dict(kind="red", marked=138, dropped=7, pkts=29887)
    if not d or any(d.get(k) != v for k, v in want.items()):
        fails.append("aqm_delta %s, want %s" % (d, want))
    if st.get("after", {}).get("ports", {}).get(0, {}).get("rx_dropped") != 2:
        fails.append("port g0 rx_dropped %s, want 2" % st.get("after", {}).get("ports"))
    if st.get("after", {}).get("qdiscs", {}).get("red", {}).get("backlog_pkts") != 1:
        fails.append("red backlog %s, want 1 packet" % st.get("after", {}).get("qdiscs"))
    return fails
