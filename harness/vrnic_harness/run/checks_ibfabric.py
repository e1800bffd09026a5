"""Checks of the InfiniBand fabric service scenarios (issue 23): ib-diag (infiniband-diags between two guests:
distinct identities, SMPs and PerfMgt MADs across the UDP fabric) and ib-sm-failover (the master SM's server
killed: a standby takes over, traffic keeps running)."""
import json
import re
import time

from ..common import say
from .checks_pairs import check_pairs, judge_pingpong
from .console import console_lines, mlx5_up_reason

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


# ---- ib-sm-failover: the master SM's server is killed, the standby of LID 2 takes over
SMFO_TOOL_RX = re.compile(r"^=== SMFO-TOOL (\S+): (.*?) ===\n(.*?)^=== SMFO-TOOL-END \1 rc=(\d+) ===$", re.S | re.M)
SMFO_LIMIT_S = 10.0
SMFO_NEW_SM = 2


def sm_view(server):
    """The server's `stats` firmware.sm object ({} if it does not answer)."""
    try:
        return (json.loads(server.command("stats")).get("firmware") or {}).get("sm") or {}
    except (OSError, ValueError):
        return {}


def interact_sm_failover(ctx):
    """Once guest 1's RC transfer to guest 2 runs, ends guest 0 and kills its vrnic (the master SM's server);
    measures when LID 2's server is master and when guests 1 and 2 see sm_lid 2; waits for both to end."""
    (g0, g1, g2), (s0, s1, s2) = ctx["guests"], ctx["servers"]
    if not g1.wait_for(r"SMFO-RC-START g1", timeout=200):
        return "guest 1 never started its RC transfer"
    for s in (s0, s1, s2):
        v = sm_view(s)
        if v.get("master_lid") != 1:
            return "before the kill, server %d's SM view is not master LID 1: %s" % (s.pid, v)
    end, rx = time.time() + 90, 0
    while time.time() < end:
        try:
            m = re.search(r'"rx_packets":\s*(\d+)', s2.command("stats"))
            rx = int(m.group(1)) if m else 0
        except OSError:
            rx = 0
        if rx >= 2000:
            break
        time.sleep(0.2)
    else:
        return "LID 3's vrnic saw only %d packets in 90 s: no transfer to keep running" % rx
    g0.kill()
    s0.p.kill()
    s0.p.wait()
    t_kill = time.time()
    ctx["expect_dead"] = {s0.pid}
    ctx["killed_ok"] = True
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
    ctx["smfo"] = dict(master=t_master, seen=seen, views=[sm_view(s1), sm_view(s2)])
    # as for any scenario: each guest gets 8 s from its end to power off, then its QEMU is stopped (an mlx5
    # teardown blocks the power-off; 20 s of it reads as a hung task)
    from .runner import wait_guests
    wait_guests([g1, g2], ctx["name"], 200)
    return None


def check_sm_failover(ctx):
    texts = ctx.get("texts") or []
    if len(texts) < 3:
        return "expected three guests' output"
    fo = ctx.get("smfo") or {}
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
    v1 = (fo.get("views") or [{}])[0]
    if v1.get("takeovers") != 1 or v1.get("state") != "master":
        errs.append("LID 2's server stats after the takeover: %s" % v1)
    if errs:
        return "; ".join(errs)
    say("SMFO takeover: LID 2's server master %.1f s after the kill (poll %s ms x %s misses); sm_lid 2 in guest 1 "
        "after %.1f s, guest 2 after %.1f s (limit %.0f s)" % (
            t_master, v1.get("period_ms"), v1.get("max_misses"), seen[1], seen[2], SMFO_LIMIT_S))
    say("SMFO LID 2's SM: polls %s answers %s misses %s peers_lost %s takeovers %s; saquery from both: 2 "
        "NodeRecords (LIDs 2, 3); ib_write_bw g1->g2 through the failover: %s iterations, %s MB/s, no error" % (
            v1.get("polls"), v1.get("answers"), v1.get("misses"), v1.get("peers_lost"), v1.get("takeovers"),
            *(fo.get("bw") or ("?", "?"))))
    return None
