"""Checks of the InfiniBand fabric service scenarios (issue 23): ib-diag (infiniband-diags between two guests:
distinct identities, SMPs and PerfMgt MADs across the UDP fabric)."""
import json
import re

from ..common import say
from .checks_pairs import check_pairs, judge_pingpong
from .checks_roce import check_labels, judge_cm, judge_perftest
from .console import console_lines

IBSTAT_RX = re.compile(r"^IBSTAT g(\d+) (Node GUID|System image GUID|Port GUID|Base lid|SM lid|State): (\S+)", re.M)
IBDIAG_TOOL_RX = re.compile(r"^=== IBDIAG-TOOL (\S+): (.*?) ===\n(.*?)^=== IBDIAG-TOOL-END \1 rc=(\d+) ===$",
                            re.S | re.M)
SMP_FIELD = re.compile(r"^(\w+):\.+(.*)$", re.M)
IB_DIAG_PEER_LID = 2
IB_DIAG_SM_LID = 1
IB_DIAG_UD_ITERS = 500


def ibstat_fields(text):
    """{guest: {field: value}} from the scenario's IBSTAT lines."""
    out = {}
    for g, k, v in IBSTAT_RX.findall(text):
        out.setdefault(int(g), {})[k] = v
    return out


def diag_tools(text):
    """{name: (command, output, rc)} from guest 0's IBDIAG-TOOL blocks."""
    return {m.group(1): (m.group(2), m.group(3), int(m.group(4))) for m in IBDIAG_TOOL_RX.finditer(text)}


def smp_fields(out):
    return {k: v.strip() for k, v in SMP_FIELD.findall(out)}


def counter_moves(before, after, field):
    a, b = smp_fields(before).get(field), smp_fields(after).get(field)
    if a is None or b is None:
        return None
    return int(b, 0) - int(a, 0)


def check_ib_diag(ctx):
    texts = ctx.get("texts") or [ctx["text"]]
    text = "\n".join("\n".join(console_lines(t)) for t in texts)
    errs = []
    ib = ibstat_fields(text)
    for g in (0, 1):
        f = ib.get(g, {})
        for k in ("Node GUID", "Port GUID", "System image GUID", "Base lid", "SM lid"):
            if k not in f:
                errs.append("g%d ibstat has no %s" % (g, k))
        if f.get("SM lid") not in (None, str(IB_DIAG_SM_LID)):
            errs.append("g%d ibstat SM lid %s, want %d (the lowest LID)" % (g, f.get("SM lid"), IB_DIAG_SM_LID))
    g0, g1 = ib.get(0, {}), ib.get(1, {})
    for k in ("Node GUID", "Port GUID", "System image GUID"):
        if k in g0 and k in g1 and g0[k] == g1[k]:
            errs.append("both guests have %s %s" % (k, g0[k]))
    say("IBDIAG ibstat g0 node %s port %s lid %s sm %s; g1 node %s port %s lid %s sm %s" % tuple(
        d.get(k, "?") for d in (g0, g1) for k in ("Node GUID", "Port GUID", "Base lid", "SM lid")))
    tools = diag_tools(text)
    for name in ("nodeinfo", "nodedesc", "portinfo", "perf-before", "perf-after"):
        if name not in tools:
            errs.append("%s did not run" % name)
        elif tools[name][2] != 0:
            tail = " | ".join(l for l in tools[name][1].strip().split("\n")[-2:])
            errs.append("%s rc %d: %s" % (name, tools[name][2], tail[-200:]))
    if "nodeinfo" in tools:
        ni = smp_fields(tools["nodeinfo"][1])
        want = g1.get("Node GUID")
        say("IBDIAG smpquery -L nodeinfo %d from g0: Guid %s PortGuid %s (g1's ibstat: node %s)" % (
            IB_DIAG_PEER_LID, ni.get("Guid"), ni.get("PortGuid"), want))
        if want and ni.get("Guid") and int(ni["Guid"], 16) != int(want, 16):
            errs.append("smpquery nodeinfo Guid %s is not g1's node GUID %s" % (ni.get("Guid"), want))
        if want and not ni.get("Guid"):
            errs.append("smpquery nodeinfo printed no Guid")
    if "nodedesc" in tools:
        say("IBDIAG smpquery -L nodedesc %d: %s" % (IB_DIAG_PEER_LID, tools["nodedesc"][1].strip().split("\n")[-1]))
    if "portinfo" in tools:
        pi = smp_fields(tools["portinfo"][1])
        say("IBDIAG smpquery -L portinfo %d: Lid %s SMLid %s LinkState %s" % (
            IB_DIAG_PEER_LID, pi.get("Lid"), pi.get("SMLid"), pi.get("LinkState")))
        if pi.get("Lid") not in (None, str(IB_DIAG_PEER_LID)):
            errs.append("portinfo Lid %s, want %d" % (pi.get("Lid"), IB_DIAG_PEER_LID))
    if "perf-before" in tools and "perf-after" in tools:
        moves = {f: counter_moves(tools["perf-before"][1], tools["perf-after"][1], f)
                 for f in ("PortXmitPkts", "PortRcvPkts", "PortXmitData", "PortRcvData")}
        say("IBDIAG perfquery %d 1 across %d ibv_ud_pingpong round trips: %s" % (
            IB_DIAG_PEER_LID, IB_DIAG_UD_ITERS, ", ".join("%s +%s" % kv for kv in moves.items())))
        for f in ("PortXmitPkts", "PortRcvPkts"):
            if moves[f] is None:
                errs.append("perfquery printed no %s" % f)
            elif moves[f] < IB_DIAG_UD_ITERS:
                errs.append("g1's %s moved by %d across %d round trips" % (f, moves[f], IB_DIAG_UD_ITERS))
    # The SA (on LID 1's vrnic): every guest's node GUID in every guest's NodeRecords, a path for each pair.
    want_guids = {int(d["Node GUID"], 16) for d in (g0, g1) if "Node GUID" in d}
    for g in (0, 1):
        for name in ("sa-nodes-g%d" % g, "sa-paths-g%d" % g):
            if name not in tools:
                errs.append("%s did not run" % name)
            elif tools[name][2] != 0:
                errs.append("%s rc %d: %s" % (name, tools[name][2], tools[name][1].strip()[-200:]))
        if "sa-nodes-g%d" % g in tools:
            out = tools["sa-nodes-g%d" % g][1]
            got = {int(x, 16) for x in re.findall(r"node_guid\.*(0x[0-9a-fA-F]+)", out)}
            say("IBDIAG saquery from g%d (%s): %d NodeRecords, node GUIDs %s" % (
                g, "local" if g == 0 else "over the fabric", len(re.findall(r"NodeRecord dump", out)),
                " ".join("%#018x" % x for x in sorted(got))))
            if not want_guids <= got:
                errs.append("g%d saquery lacks node GUIDs %s" % (g, sorted(want_guids - got)))
        if "sa-paths-g%d" % g in tools:
            out = tools["sa-paths-g%d" % g][1]
            n = len(re.findall(r"PathRecord dump", out))
            say("IBDIAG saquery -p from g%d: %d PathRecords" % (g, n))
            if n < 4:
                errs.append("g%d saquery -p: %d PathRecords, want 4 (2 ports, each pair)" % (g, n))
    r = check_pairs(ctx, ["ud-500"], judge_pingpong, "IBDIAG")
    if r:
        errs.append(r)
    return "; ".join(errs) if errs else None


IPOIB_GUESTS = 3
IPOIB_PING_RX = re.compile(r"^IPOIB-PING (\S+) g(\d+)->g(\d+) first-after=(\d+) seconds=(\S+) (.*)$", re.M)
IPOIB_IPERF_RX = re.compile(r"^=== IPOIB-IPERF (\S+) (\S+) ===\n(.*?)^=== IPOIB-IPERF-END \1 \2 tries=(\d+) ===$",
                            re.S | re.M)
IPOIB_CARRIER_RX = re.compile(r"^IPOIB g(\d+) ib0 carrier=(\d*) after (\S+) s mode=(\S+) mtu=(\d+)", re.M)
IPOIB_MODE_RX = re.compile(r"^IPOIB g(\d+) mode=(\S+) mtu=(\d+)$", re.M)


def iperf_mbits(out):
    """The receiver's Mbit/s of an iperf3 -f m client run, or None."""
    m = re.findall(r"([\d.]+) Mbits/sec\s+(?:\d+\s+)?receiver", out)
    return float(m[-1]) if m else None


def check_ipoib(ctx):
    texts = ctx.get("texts") or [ctx["text"]]
    text = "\n".join("\n".join(console_lines(t)) for t in texts)
    errs = []
    carrier = {int(g): (c, float(s), mode, int(mtu)) for g, c, s, mode, mtu in IPOIB_CARRIER_RX.findall(text)}
    for g in range(IPOIB_GUESTS):
        if g not in carrier:
            errs.append("g%d: no ib0 line" % g)
        elif carrier[g][0] != "1":
            errs.append("g%d: ib0 carrier %r (the broadcast group join failed?)" % (g, carrier[g][0]))
        else:
            say("IPOIB g%d ib0 carrier after %.1f s, mode %s, MTU %d" % (g, carrier[g][1], carrier[g][2], carrier[g][3]))
    modes = {int(g): (m, int(mtu)) for g, m, mtu in IPOIB_MODE_RX.findall(text)}
    for g in range(IPOIB_GUESTS):
        if modes.get(g) != ("connected", 65520):
            errs.append("g%d: connected mode/MTU %s, want connected 65520" % (g, modes.get(g)))
    pings = {(mode, int(a), int(b)): rest for mode, a, b, _, _, rest in IPOIB_PING_RX.findall(text)}
    for mode in ("datagram", "connected"):
        for a in range(IPOIB_GUESTS):
            for b in range(IPOIB_GUESTS):
                if a == b:
                    continue
                rest = pings.get((mode, a, b))
                if rest is None:
                    errs.append("%s: g%d did not ping g%d" % (mode, a, b))
                    continue
                m = re.search(r"(\d+) packets transmitted, (\d+) (?:packets )?received.*?([\d.]+)% packet loss", rest)
                rtt = re.search(r"= [\d.]+/([\d.]+)/", rest)
                if not m:
                    errs.append("%s g%d->g%d: no ping summary: %s" % (mode, a, b, rest[-120:]))
                    continue
                say("IPOIB ping %s g%d->g%d: %s sent, %s received, %s%% loss, avg rtt %s ms" % (
                    mode, a, b, m.group(1), m.group(2), m.group(3), rtt.group(1) if rtt else "?"))
                if int(m.group(1)) < 100 or m.group(1) != m.group(2):
                    errs.append("%s g%d->g%d: %s/%s received" % (mode, a, b, m.group(2), m.group(1)))
    runs = {(mode, d): (out, int(tries)) for mode, d, out, tries in IPOIB_IPERF_RX.findall(text)}
    for mode in ("datagram", "connected"):
        for d, what in (("fwd", "g1->g0"), ("rev", "g0->g1")):
            if (mode, d) not in runs:
                errs.append("iperf3 %s %s did not run" % (mode, what))
                continue
            mb = iperf_mbits(runs[(mode, d)][0])
            say("IPOIB iperf3 %s %s: %s Mbit/s" % (mode, what, mb))
            if not mb:
                errs.append("iperf3 %s %s: no result: %s" % (mode, what, runs[(mode, d)][0].strip()[-200:]))
    ipoib_stats(ctx, errs)
    check_labels(ctx, IB_CM_LABELS, judge_ib_cm, "IB-CM (rdma_cm over IPoIB)", errs)
    for g in range(IPOIB_GUESTS):
        if "IPOIB-DONE g%d" % g not in text:
            errs.append("g%d did not finish" % g)
    return "; ".join(errs) if errs else None


IPOIB_FABRIC = ("tx_packets", "rx_packets", "tx_errors", "rx_malformed", "rx_unknown_peer", "tx_mcast_packets", "rx_mcast_packets", "tx_mcast_no_grh", "tx_no_route", "rx_dgid_mismatch",
                "rx_icrc_errors")
IPOIB_PORT = ("multicast_rcv", "mcast_delivered", "mcast_drops", "mad_wire_xmit", "mad_wire_rcv", "mad_wire_drops")
IPOIB_ENGINE_QUIET = ("tx_packets", "rx_packets", "tx_bytes", "rx_bytes")
IPOIB_ENGINE = ("no_recv_drops", "qkey_violations", "bad_pkey")


def ipoib_stats(ctx, errs):
    """Each vrnic server's multicast counters (stats: firmware.fabric, firmware.port_counters, firmware.engine):
    every port sent and received UD multicast (the broadcast group's ARP, IPv6 ND), none was sent without a GRH,
    no packet met no route or a foreign DGID; the SA (LID 1) answered."""
    for i, sv in enumerate(ctx.get("servers", [])):
        try:
            st = json.loads(sv.command("stats"))
        except (OSError, ValueError) as e:
            errs.append("vrnic %d: no stats (%s)" % (i, e))
            continue
        fw = st.get("firmware") or {}
        fab, port, eng = fw.get("fabric") or {}, fw.get("port_counters") or {}, fw.get("engine") or {}
        say("IPOIB vrnic %d stats: %s; %s; %s%s" % (
            i, " ".join("%s=%s" % (k, fab.get(k, "?")) for k in IPOIB_FABRIC),
            " ".join("%s=%s" % (k, port.get(k, "?")) for k in IPOIB_PORT),
            " ".join("%s=%s" % (k, eng.get(k, "?")) for k in IPOIB_ENGINE),
            ("; sa %s" % json.dumps(fw["sa"])) if fw.get("sa") else ""))
        say("IPOIB vrnic %d engine (non-zero): %s" % (i, " ".join(
            "%s=%s" % (k, v) for k, v in sorted(eng.items()) if isinstance(v, int) and v and k not in IPOIB_ENGINE_QUIET)))
        for k in ("tx_mcast_packets", "rx_mcast_packets"):
            if not fab.get(k):
                errs.append("vrnic %d: fabric %s did not move" % (i, k))
        if not port.get("mcast_delivered"):
            errs.append("vrnic %d: no multicast packet was delivered to an attached QP" % i)
        for k in ("tx_mcast_no_grh", "tx_no_route", "rx_dgid_mismatch"):
            if fab.get(k):
                errs.append("vrnic %d: fabric %s = %s" % (i, k, fab[k]))


IB_CM_LABELS = ["cm-rping-v", "cm-ucmatose", "cm-udaddy", "cm-mckey", "R-ib_write_lat", "R-ib_send_bw"]


def judge_ib_cm(lab, role, r):
    return judge_perftest(lab, role, r) if lab.startswith("R-") else judge_cm(lab, role, r)
