"""Check of roce-dscp (scenarios/roce-dscp.sh): the dcb tool's answers through mlx5e's dcbnl ops, and the DSCP /
802.1Q PCP of the RoCE frames in guest 0's capture, phase by phase (the phases are split on guest 1's marker pings:
ICMP echo requests of 1100+n data bytes)."""
import os
import re
import struct

from .. import roce_pcap
from ..common import say
from .checks_eth import finish, tools
from .checks_pairs import tool_runs
from .checks_roce import check_labels, up_lines

MARK_BASE = 1100
# phase -> (what, perftest label (its test QP's frames are judged) or None (every QP's), want DSCP, want VLAN
# (vid, pcp) or None for untagged). In a perftest phase every other QP's frames (perftest -R's own rdma_cm
# control connection, which it opens without the ToS) must carry the default class: DSCP 0 and, on the VLAN, the
# PCP of priority 0 (3).
PHASES = {
    1: ("ib_write_bw --tclass=104", "dscp-write-bw", 26, None),
    2: ("ib_write_bw -R -T 104 (rdma_cm ToS)", "dscp-cm-write-bw", 26, None),
    3: ("rping (ToS 0)", None, 0, None),
    4: ("ib_write_bw -R -T 104 over vl10 (egress-qos-map 2:5)", "dscp-vl-cm-write-bw", 26, (10, 5)),
    5: ("rping over vl10 (egress-qos-map 0:3)", None, 0, (10, 3)),
}
DEFAULT = {None: (0, None), (10, 5): (0, (10, 3))}
DCB_LABELS = ["dcb-app-add", "dcb-app-show", "dcb-ets-show", "dcb-ets-set", "dcb-ets-show2", "dcb-pfc-set",
              "dcb-pfc-show"]


def walk(path):
    """(phase, kind, info) for the frames of a capture: kind 'roce' with (tos, vlan tci or None, src, dqpn) for a
    RoCEv2 frame, 'icmp' with (tci, length) for ICMP echo requests; the phase is the last marker seen."""
    phase = 0
    for _, raw in roce_pcap.records(path):
        if len(raw) < 34:
            continue
        off, tci = 12, None
        et = struct.unpack(">H", raw[12:14])[0]
        if et == roce_pcap.ETH_VLAN:
            tci = struct.unpack(">H", raw[14:16])[0]
            off = 16
            et = struct.unpack(">H", raw[off:off + 2])[0]
        l3 = off + 2
        if et != roce_pcap.ETH_IPV4 or len(raw) < l3 + 28:
            continue
        ihl = (raw[l3] & 0xF) * 4
        tos, proto, tot = raw[l3 + 1], raw[l3 + 9], struct.unpack(">H", raw[l3 + 2:l3 + 4])[0]
        l4 = l3 + ihl
        if proto == 1 and raw[l4] == 8:
            data = tot - ihl - 8
            if tci is None and MARK_BASE < data <= MARK_BASE + 10:
                phase = data - MARK_BASE
                yield phase, "mark", None
                continue
            yield phase, "icmp", (tci, tos)
        elif proto == 17 and struct.unpack(">H", raw[l4 + 2:l4 + 4])[0] == roce_pcap.ROCE_PORT and len(raw) >= l4 + 20:
            dqpn = int.from_bytes(raw[l4 + 13:l4 + 16], "big")
            yield phase, "roce", (tos, tci, bytes(raw[l3 + 12:l3 + 16]), dqpn)


def check_dcb(ctx, errs):
    t = tools(ctx)
    for g in (0, 1):
        for lab in DCB_LABELS:
            r = t.get((lab, g))
            if r is None or r["rc"] != 0:
                errs.append("g%d %s: %s" % (g, lab, "did not run" if r is None else "rc=%d %s" % (
                    r["rc"], r["out"].strip()[-200:])))
    if errs:
        return
    out = lambda lab: re.sub(r"\s+", " ", t[(lab, 0)]["out"]).strip()
    say("QOS g0 dcb app show: %s" % out("dcb-app-show"))
    say("QOS g0 dcb ets show: %s" % out("dcb-ets-show"))
    say("QOS g0 dcb ets show prio-tc after set 3:5: %s" % out("dcb-ets-show2"))
    say("QOS g0 dcb pfc show: %s" % out("dcb-pfc-show"))
    # dcb names DSCP 26 AF31
    if not re.search(r"dscp-prio (26|AF31):3", out("dcb-app-show")):
        errs.append("dcb app show has no dscp-prio 26:3: %s" % out("dcb-app-show"))
    # mlx5e_ets_init programs prio->tc {0:1 1:0 i:i} at probe; the read comes from QTCT
    if not re.search(r"prio-tc 0:1 1:0 2:2 3:3", out("dcb-ets-show")):
        errs.append("dcb ets show: prio-tc is not the probe's 0:1 1:0 2:2 3:3 ...: %s" % out("dcb-ets-show"))
    if not re.search(r"\b3:5\b", out("dcb-ets-show2")):
        errs.append("dcb ets set prio-tc 3:5 not read back: %s" % out("dcb-ets-show2"))
    m = re.search(r"prio-pfc ((?:\d:\w+ ?)+)", out("dcb-pfc-show"))
    on = sorted(int(p) for p, v in re.findall(r"(\d):(\w+)", m.group(1)) if v == "on") if m else None
    if on != [3]:
        errs.append("dcb pfc show: PFC on for %s, want [3]: %s" % (on, out("dcb-pfc-show")))


def check_roce_dscp(ctx):
    errs = []
    up_lines(ctx, errs)
    check_dcb(ctx, errs)
    check_labels(ctx, ["dscp-write-bw", "dscp-cm-write-bw", "dscp-rping-t0", "dscp-vl-cm-write-bw", "dscp-vl-rping-t0"],
                 lambda lab, role, r: None, "DSCP tool", errs)
    eth = ctx.eth
    path = ctx.capture("eth0.pcap")
    if not eth.pcap_dir or not os.path.exists(path):
        errs.append("no capture %s" % path)
        return finish(ctx, errs)
    runs = tool_runs(ctx)
    qpns = {}
    for p, (_, lab, _, _) in PHASES.items():
        r = runs.get((lab, "client")) if lab else None
        if lab:
            qpns[p] = {int(x, 16) for x in re.findall(r"address: LID \w+ QPN (0x[0-9a-fA-F]+)", r["out"])} if r else set()
            if not qpns[p]:  # local and remote (each device numbers its own QPs: often the same number)
                errs.append("phase %d: %s printed no QPN" % (p, lab))
    per = {p: {} for p in PHASES}
    other = {p: {} for p in PHASES}
    icmp_vl = []
    seen = set()
    for phase, kind, info in walk(path):
        if kind == "mark":
            seen.add(phase)
            continue
        if kind == "icmp":
            if phase == 4 and info[0] is not None:
                icmp_vl.append(info[0] >> 13)
            continue
        tos, tci, src, dqpn = info
        if phase not in per or dqpn == 1:  # QP1 (CM MADs) is not the connection's QP
            continue
        key = (tos >> 2, None if tci is None else (tci & 0xFFF, tci >> 13))
        d = per if phase not in qpns or dqpn in qpns[phase] else other
        d[phase][key] = d[phase].get(key, 0) + 1
    if seen != set(range(1, 7)):
        errs.append("markers in the capture: %s, want 1..6" % sorted(seen))
    for p, (what, lab, dscp, vlan) in PHASES.items():
        got = per[p]
        say("QOS phase %d %s: %s RoCE frames by (DSCP, (VID, PCP)): %s" % (
            p, what, "its test QP's" if lab else "every QP's (QP1 aside)", got or "none"))
        if not got:
            errs.append("phase %d (%s): no RoCE frame" % (p, what))
        elif list(got) != [(dscp, vlan)]:
            errs.append("phase %d (%s): frames %s, want all DSCP %d %s" % (
                p, what, got, dscp, "untagged" if vlan is None else "VLAN %d PCP %d" % vlan))
        if lab:
            say("QOS phase %d: other QPs' frames (perftest's control connection, no ToS): %s" % (p, other[p] or "none"))
            if any(k != DEFAULT[vlan] for k in other[p]):
                errs.append("phase %d: other QPs' frames %s, want the default class %s" % (p, other[p], DEFAULT[vlan]))
    say("QOS vl10 ping (priority 0, egress-qos-map 0:3): echo requests' PCP %s" % icmp_vl)
    if not icmp_vl or set(icmp_vl) != {3}:
        errs.append("ICMP over vl10: PCP %s, want 3" % icmp_vl)
    return finish(ctx, errs)
