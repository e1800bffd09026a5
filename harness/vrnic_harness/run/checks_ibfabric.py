"""Checks of the InfiniBand fabric service scenarios (issue 23): ib-sa (infiniband-diags between three guests:
distinct identities, SMPs and PerfMgt MADs across the UDP fabric, the SA and SM on LID 1, the modeled switch),
ipoib (IPoIB datagram and connected mode, rdma_cm over IPoIB addresses), ib-sm-failover (the master SM's server
killed: a standby takes over, traffic keeps running) and ib-opensm (OpenSM in guest 0 in place of vrnic's SM: the
ib-sa and ipoib checks against it). The servers' IB stage is `stats` -> `subnet`."""
import json
import re
import time

from ..common import say
from . import stats
from .checks_pairs import check_pairs, judge_pingpong
from .checks_roce import check_labels, judge_cm, judge_perftest
from .checks_verbs import server_rx_packets, wait_server_rx
from .console import console_lines, mlx5_up_reason

IBSTAT_RX = re.compile(r"^IBSTAT g(\d+) (Node GUID|System image GUID|Port GUID|Base lid|SM lid|State): (\S+)", re.M)
IBDIAG_TOOL_RX = re.compile(r"^=== IBDIAG-TOOL (\S+): (.*?) ===\n(.*?)^=== IBDIAG-TOOL-END \1 rc=(\d+) ===$",
                            re.S | re.M)
SMP_FIELD = re.compile(r"^(\w+):\.+(.*)$", re.M)
IBSTATUS_SM_RX = re.compile(r"^IBSTATUS g(\d+) sm lid:\s+(0x[0-9a-fA-F]+)", re.M)
SMINFO_RX = re.compile(r"sminfo: sm lid (\d+) sm guid (0x[0-9a-fA-F]+), activity count (\d+) priority (\d+) "
                       r"state (\d+) (\S+)")
NETDISC_NODE_RX = re.compile(r'^(Ca|Switch)\s+(\d+)\s+"[HS]-([0-9a-fA-F]+)"', re.M)
IB_DIAG_PEER_LID = 2
IB_DIAG_SM_LID = 1
IB_DIAG_UD_ITERS = 500
IB_SA_GUESTS = 3
# the modeled switch's LID: the highest CA LID + 1 (docs/ib-fabric.md)
IB_SA_SWITCH_LID = IB_SA_GUESTS + 1


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


def check_ib_sa(ctx):
    texts = ctx.texts
    text = "\n".join("\n".join(console_lines(t)) for t in texts)
    errs = []
    ib = ibstat_fields(text)
    guests = range(IB_SA_GUESTS)
    for g in guests:
        f = ib.get(g, {})
        for k in ("Node GUID", "Port GUID", "System image GUID", "Base lid", "SM lid"):
            if k not in f:
                errs.append("g%d ibstat has no %s" % (g, k))
        if f.get("SM lid") not in (None, str(IB_DIAG_SM_LID)):
            errs.append("g%d ibstat SM lid %s, want %d (the lowest LID)" % (g, f.get("SM lid"), IB_DIAG_SM_LID))
    g0, g1 = ib.get(0, {}), ib.get(1, {})
    for k in ("Node GUID", "Port GUID", "System image GUID"):
        vals = [ib[g][k] for g in guests if k in ib.get(g, {})]
        if len(set(vals)) != len(vals):
            errs.append("guests share a %s: %s" % (k, " ".join(vals)))
    say("IBDIAG ibstat " + "; ".join("g%d node %s port %s lid %s sm %s" % ((g,) + tuple(
        ib.get(g, {}).get(k, "?") for k in ("Node GUID", "Port GUID", "Base lid", "SM lid"))) for g in guests))
    ibstatus = {int(g): int(v, 16) for g, v in IBSTATUS_SM_RX.findall(text)}
    say("IBDIAG ibstatus sm lid: %s" % ", ".join("g%d %s" % (g, ibstatus.get(g, "?")) for g in guests))
    for g in guests:
        if ibstatus.get(g) != IB_DIAG_SM_LID:
            errs.append("g%d ibstatus sm lid %s, want %d" % (g, ibstatus.get(g), IB_DIAG_SM_LID))
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
    want_guids = {int(ib[g]["Node GUID"], 16) for g in guests if "Node GUID" in ib.get(g, {})}
    for g in guests:
        for name in ("sa-nodes-g%d" % g, "sa-paths-g%d" % g, "sminfo-g%d" % g):
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
            if len(want_guids) < IB_SA_GUESTS or not want_guids <= got:
                errs.append("g%d saquery lacks node GUIDs %s" % (g, sorted(want_guids - got)))
        if "sa-paths-g%d" % g in tools:
            out = tools["sa-paths-g%d" % g][1]
            n = len(re.findall(r"PathRecord dump", out))
            say("IBDIAG saquery -p from g%d: %d PathRecords" % (g, n))
            if n < IB_SA_GUESTS * IB_SA_GUESTS:
                errs.append("g%d saquery -p: %d PathRecords, want %d (%d ports, each pair)" % (
                    g, n, IB_SA_GUESTS * IB_SA_GUESTS, IB_SA_GUESTS))
        # The SM (LID 1's vrnic answers SMInfo): lid 1, g0's port GUID, MASTER.
        if "sminfo-g%d" % g in tools:
            m = SMINFO_RX.search(tools["sminfo-g%d" % g][1])
            if not m:
                errs.append("g%d sminfo printed no SMInfo" % g)
            else:
                say("IBDIAG sminfo from g%d: sm lid %s guid %s activity %s priority %s state %s %s" % ((g,) + m.groups()))
                want = ib.get(0, {}).get("Port GUID")
                if int(m.group(1)) != IB_DIAG_SM_LID or m.group(6) != "SMINFO_MASTER" or \
                        (want and int(m.group(2), 16) != int(want, 16)):
                    errs.append("g%d sminfo: %s (want lid %d, g0's port GUID %s, SMINFO_MASTER)" % (
                        g, m.group(0), IB_DIAG_SM_LID, want))
    # The modeled switch: ibnetdiscover (directed routes) from g0 and g2 finds every CA and one switch.
    for g in (0, 2):
        name = "netdiscover-g%d" % g
        if name not in tools:
            errs.append("%s did not run" % name)
            continue
        out, rc = tools[name][1], tools[name][2]
        nodes = NETDISC_NODE_RX.findall(out)
        cas = {int(guid, 16) for kind, _, guid in nodes if kind == "Ca"}
        sws = {guid for kind, _, guid in nodes if kind == "Switch"}
        say("IBDIAG ibnetdiscover from g%d: %d CAs (%s), %d switch (%s, %s ports), rc %d" % (
            g, len(cas), " ".join("%#018x" % x for x in sorted(cas)), len(sws), " ".join(sorted(sws)),
            "/".join(n for k, n, _ in nodes if k == "Switch"), rc))
        if rc != 0:
            errs.append("%s rc %d: %s" % (name, rc, out.strip()[-200:]))
        if cas != want_guids or len(cas) != IB_SA_GUESTS:
            errs.append("g%d ibnetdiscover CAs %s, want the guests' node GUIDs %s" % (
                g, sorted(cas), sorted(want_guids)))
        if len(sws) != 1 or any(n != str(IB_SA_GUESTS) for k, n, _ in nodes if k == "Switch"):
            errs.append("g%d ibnetdiscover: switches %s, want one of %d ports" % (g, sorted(sws), IB_SA_GUESTS))
    if "ibroute" in tools:
        out = tools["ibroute"][1]
        routes = dict(re.findall(r"^0x([0-9a-fA-F]{4}) (\d{3}) ", out, re.M))
        say("IBDIAG ibroute %d: %s" % (IB_SA_SWITCH_LID, ", ".join(
            "lid %d -> port %d" % (int(l, 16), int(p)) for l, p in sorted(routes.items()))))
        want_routes = {"%04x" % (l + 1): "%03d" % (l + 1) for l in guests}
        want_routes["%04x" % IB_SA_SWITCH_LID] = "000"
        if tools["ibroute"][2] != 0 or {k.lower(): v for k, v in routes.items()} != want_routes:
            errs.append("ibroute %d: %s, want %s" % (IB_SA_SWITCH_LID, routes, want_routes))
    else:
        errs.append("ibroute did not run")
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
    texts = ctx.texts
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
                # ping runs with a deadline: it sends until it has its count of replies (a probe more
                # while one is late), so the verdict is the sequence numbers never answered
                missing = re.search(r"missing=(\d+)(?::(\S+))?", rest)
                if int(m.group(2)) < 100 or not missing or missing.group(1) != "0":
                    errs.append("%s g%d->g%d: %s/%s received, never answered: %s" % (
                        mode, a, b, m.group(2), m.group(1), missing.group(2) if missing else "(no count)"))
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
    for i in range(len(ctx.servers)):
        try:
            st = ctx.server_stats(i)
        except stats.StatsError as e:
            errs.append("vrnic %d: no stats (%s)" % (i, e))
            continue
        fw = st.get("firmware") or {}
        fab, port, eng = fw.get("fabric") or {}, fw.get("port_counters") or {}, fw.get("engine") or {}
        sa = (st.get("subnet") or {}).get("sa")
        say("IPOIB vrnic %d stats: %s; %s; %s%s" % (
            i, " ".join("%s=%s" % (k, fab.get(k, "?")) for k in IPOIB_FABRIC),
            " ".join("%s=%s" % (k, port.get(k, "?")) for k in IPOIB_PORT),
            " ".join("%s=%s" % (k, eng.get(k, "?")) for k in IPOIB_ENGINE),
            ("; sa %s" % json.dumps(sa)) if sa else ""))
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


# ---- ib-sm-failover: the master SM's server is killed, the standby of LID 2 takes over
SMFO_TOOL_RX = re.compile(r"^=== SMFO-TOOL (\S+): (.*?) ===\n(.*?)^=== SMFO-TOOL-END \1 rc=(\d+) ===$", re.S | re.M)
SMFO_LIMIT_S = 10.0
SMFO_NEW_SM = 2
SMFO_MIN_RX = 1000  # LID 3's packets from the kill to the takeover's end (an RC write stream: thousands a second)


def subnet_view(server):
    """The server's `stats` subnet object, its IB stage ({} if it does not answer)."""
    return stats.get(stats.snapshot(server), "subnet", default=None) or {}


def sm_view(server):
    """The server's `stats` subnet.sm object, its SM roles ({} if it does not answer)."""
    return subnet_view(server).get("sm") or {}


def interact_sm_failover(ctx):
    """Once guest 1's RC transfer to guest 2 runs, ends guest 0 and kills its vrnic (the master SM's server);
    measures when LID 2's server is master and when guests 1 and 2 see sm_lid 2; waits for both to end."""
    (g0, g1, g2), (s0, s1, s2) = ctx.guests, ctx.servers
    if not g1.wait_for(r"SMFO-RC-START g1", timeout=200):
        return "guest 1 never started its RC transfer"
    for s in (s0, s1, s2):
        v = sm_view(s)
        if v.get("master_lid") != 1:
            return "before the kill, server %d's SM view is not master LID 1: %s" % (s.pid, v)
    rx0 = server_rx_packets(s2) or 0
    ok, rx = wait_server_rx(s2, rx0 + 2000, 90)
    if not ok:
        return "LID 3's vrnic saw only %d packets in 90 s: no transfer to keep running" % (rx - rx0)
    g0.kill()
    s0.p.kill()
    s0.p.wait()
    t_kill = time.time()
    ctx.expect_dead = {s0.pid}
    ctx.killed_ok = True
    say("SMFO killed guest 0 and its vrnic (pid %d, the master SM LID 1) with LID 3 at %d rx packets" % (s0.pid, rx))
    t_master = None
    while time.time() < t_kill + 30:
        if sm_view(s1).get("state") == "master":
            t_master = time.time() - t_kill
            break
        time.sleep(0.1)
    seen = {}
    while len(seen) < 2 and time.time() < t_kill + 60:
        for gi, g in ((1, g1), (2, g2)):
            if gi not in seen and g.wait_for(r"SMFO-SM-CHANGED g%d sm_lid %d" % (gi, SMFO_NEW_SM), timeout=0.1):
                seen[gi] = time.time() - t_kill
    # the RC transfer kept running through the failover: LID 3's packets from the kill to the takeover's end
    rx_after = server_rx_packets(s2)
    ctx.notes["smfo"] = dict(master=t_master, seen=seen, views=[sm_view(s1), sm_view(s2)], rx=(rx, rx_after),
                       rx_s=time.time() - t_kill)
    # as for any scenario: each guest gets 8 s from its end to power off, then its QEMU is stopped (an mlx5
    # teardown blocks the power-off; 20 s of it reads as a hung task)
    ctx.wait_end([g1, g2], 200)
    return None


def check_sm_failover(ctx):
    texts = ctx.texts
    if len(texts) < 3:
        return "expected three guests' output"
    fo = ctx.notes.get("smfo") or {}
    errs = []
    t_master, seen = fo.get("master"), fo.get("seen", {})
    if t_master is None:
        errs.append("LID 2's server never became master SM in 30 s")
    for gi in (1, 2):
        t = "\n".join(console_lines(texts[gi]))
        if not re.search(r"VRNIC-SCENARIO-END \S+ rc=0", t):
            errs.append("guest %d's scenario did not end with rc=0" % gi)
        r = mlx5_up_reason(t)
        if r:
            errs.append("guest %d: %s" % (gi, r))
        if seen.get(gi) is None or seen[gi] > SMFO_LIMIT_S:
            errs.append("guest %d's sm_lid was not %d within %.0f s of the kill (%s)" % (
                gi, SMFO_NEW_SM, SMFO_LIMIT_S, seen.get(gi)))
        st = ibstat_fields(t).get(gi, {})
        if st.get("SM lid") != str(SMFO_NEW_SM) or st.get("State") != "Active":
            errs.append("guest %d's ibstat after the takeover: %s" % (gi, st))
        tools = {m.group(1): (m.group(2), m.group(3), int(m.group(4))) for m in SMFO_TOOL_RX.finditer(t)}
        sa = tools.get("sa-nodes-g%d" % gi)
        guids = re.findall(r"node_guid\.*(0x[0-9a-fA-F]+)", sa[1]) if sa else []
        if not sa or sa[2] != 0 or len(guids) != 2:
            errs.append("guest %d's saquery after the takeover: want 2 NodeRecords (the live ports) from the "
                        "new SA, got %s" % (gi, (sa[2], guids) if sa else "no output"))
        rc = tools.get("rc-g%d" % gi)
        if not rc or rc[2] != 0 or re.search(r"status|error|fail", rc[1], re.I):
            errs.append("guest %d's ib_write_bw through the failover: %s" % (
                gi, ("rc=%d " % rc[2] + rc[1].strip()[-300:]) if rc else "no output"))
        elif gi == 1:
            bw = re.search(r"^\s*4096\s+(\d+)\s+\S+\s+([\d.]+)", rc[1], re.M)
            fo["bw"] = bw.groups() if bw else None
    rx0, rx1 = fo.get("rx") or (0, 0)
    if rx1 is None:
        errs.append("LID 3's vrnic did not answer stats after the takeover")
        rx1 = rx0
    elif rx1 - rx0 < SMFO_MIN_RX:
        errs.append("LID 3's vrnic received %d packets between the kill and the takeover's end (%.1f s): the RC "
                    "transfer did not keep running (want >= %d)" % (rx1 - rx0, fo.get("rx_s", 0), SMFO_MIN_RX))
    v1 = (fo.get("views") or [{}])[0]
    if v1.get("takeovers") != 1 or v1.get("state") != "master":
        errs.append("LID 2's server stats after the takeover: %s" % v1)
    if errs:
        return "; ".join(errs)
    say("SMFO takeover: LID 2's server master %.1f s after the kill (poll %s ms x %s misses); sm_lid 2 in guest 1 "
        "after %.1f s, guest 2 after %.1f s (limit %.0f s)" % (
            t_master, v1.get("period_ms"), v1.get("max_misses"), seen[1], seen[2], SMFO_LIMIT_S))
    say("SMFO LID 2's SM: polls %s answers %s misses %s peers_lost %s takeovers %s; saquery from both: 2 "
        "NodeRecords (LIDs 2, 3); ib_write_bw g1->g2 through the failover: LID 3 received %d packets in the %.1f s "
        "from the kill to the takeover's end; perftest's summary %s iterations, %s MB/s, no error" % (
            v1.get("polls"), v1.get("answers"), v1.get("misses"), v1.get("peers_lost"), v1.get("takeovers"),
            rx1 - rx0, fo.get("rx_s", 0), *(fo.get("bw") or ("?", "?"))))
    return None


# ---- ib-opensm: OpenSM in guest 0 sweeps and configures the fabric; vrnic's servers run no SM (--sm off)
OPENSM_PORT_RX = re.compile(r"^OPENSM g(\d+) (before|after): state=(\S+ \S+) phys=(\S+ \S+) lid=(\S+) sm_lid=(\S+)",
                            re.M)
OPENSM_UP_RX = re.compile(r"^OPENSM g0 subnet up after (\S+) s: (\d+) SUBNET UP", re.M)
OPENSM_G2L_RX = re.compile(r"^OPENSM g0 port (\S+) switch (\S+) guid2lid: (.*)$", re.M)
OPENSM_LOG_RX = re.compile(r"^=== OPENSM-LOG-END lines=(\d+) err=(\d+) ===$", re.M)


def check_ib_opensm(ctx):
    """ib-sa's and ipoib's checks against OpenSM, and that it was OpenSM: every port came up unconfigured (INIT,
    LID 0) and OpenSM brought it ACTIVE with the fabric's LID and SM LID 1; no server ran an SM (stats subnet.sm and
    subnet.sa null); OpenSM's SMPs configured the modeled switch through guest 0's server (its copy: port 0 LID 4,
    every port ACTIVE, LinearFDBTop 4, SubnSets counted)."""
    texts = ctx.texts
    text = "\n".join("\n".join(console_lines(t)) for t in texts)
    errs = []
    ports = {(int(g), when): (st, ph, lid, sm) for g, when, st, ph, lid, sm in OPENSM_PORT_RX.findall(text)}
    for g in range(IB_SA_GUESTS):
        before, after = ports.get((g, "before")), ports.get((g, "after"))
        if not before or not after:
            errs.append("g%d printed no port state before/after OpenSM" % g)
            continue
        say("OPENSM g%d port before OpenSM: %s, lid %s, sm_lid %s; after: %s, lid %s, sm_lid %s" % (
            g, before[0], before[2], before[3], after[0], after[2], after[3]))
        if "INIT" not in before[0] or int(before[2], 0) != 0:
            errs.append("g%d's port before OpenSM: %s lid %s (want INIT, no LID)" % (g, before[0], before[2]))
        if "ACTIVE" not in after[0] or int(after[2], 0) != g + 1 or int(after[3], 0) != IB_DIAG_SM_LID:
            errs.append("g%d's port after OpenSM: %s lid %s sm_lid %s (want ACTIVE, LID %d, SM LID %d)" % (
                g, after[0], after[2], after[3], g + 1, IB_DIAG_SM_LID))
    m = OPENSM_G2L_RX.search(text)
    if m:
        say("OPENSM g0 port %s, switch %s, guid2lid %s" % m.groups())
    up = OPENSM_UP_RX.search(text)
    if not up or up.group(2) == "0":
        errs.append("OpenSM never logged SUBNET UP")
    else:
        say("OPENSM subnet up %s s after OpenSM started" % up.group(1))
    lg = OPENSM_LOG_RX.search(text)
    if lg:
        say("OPENSM log: %s lines, %s ERR lines" % lg.groups())
    for i, sv in enumerate(ctx.servers):
        v = subnet_view(sv)
        sw = v.get("switch") or {}
        say("OPENSM vrnic %d stage: sm %s sa %s; switch copy: port0_lid %s port_states %s linear_fdb_top %s sets %s; "
            "dr_smp_routed %s dr_smp_drops %s switch_smp_answered %s" % (
                i, v.get("sm"), v.get("sa"), sw.get("port0_lid"), sw.get("port_states"), sw.get("linear_fdb_top"),
                sw.get("sets"), v.get("dr_smp_routed"), v.get("dr_smp_drops"), v.get("switch_smp_answered")))
        if not v:
            errs.append("vrnic %d: no stats subnet" % i)
        elif v.get("sm") is not None or v.get("sa") is not None:
            errs.append("vrnic %d ran an SM of its own: sm %s sa %s" % (i, v.get("sm"), v.get("sa")))
        if i == 0 and v and (sw.get("port0_lid") != IB_SA_SWITCH_LID or sw.get("linear_fdb_top") != IB_SA_SWITCH_LID
                             or set(sw.get("port_states") or [0]) != {4} or not sw.get("sets")):
            errs.append("guest 0's switch copy was not configured by OpenSM: %s" % sw)
    for f in (check_ib_sa, check_ipoib):
        r = f(ctx)
        if r:
            errs.append("%s: %s" % (f.__name__, r))
    return "; ".join(errs) if errs else None
