"""Checks of the RoCE scenarios (roce-*): what the guests printed through scenarios/roce-lib.sh (ROCE-UP, ROCE-GID,
ROCE-COUNTERS blocks, TOOL blocks of roce_pair) against the topology (ethtopo: which guest is a vrnic port, which
a virtio-net NIC turned into rxe). Each check says what it verified (ROCE ... lines) and returns None or the
reasons it failed."""
import math
import os
import re
import subprocess

from .. import roce_pcap
from ..common import say
from ..ethtopo import guest_ip
from . import stats
from .checks_eth import finish, nics, texts, tools
from .checks_pairs import PP_BYTES, PP_ITERS, PERF_ROW, tool_brief, tool_runs

ROCE_UP = re.compile(r"^ROCE-UP g(\d+) dev=(\S+) nic=(\S+) netdev=(\S+) state=(\S*) link_layer=(\S+) gid4=(\d+) "
                     r"gid6=(\d+) after=(\S+)$", re.M)
ROCE_GID = re.compile(r"^ROCE-GID (\S+) g(\d+) idx=(\d+) gid=(\S+) type=(\S+) ndev=(\S*)$", re.M)
ROCE_COUNTERS = re.compile(r"^=== ROCE-COUNTERS (\S+) g(\d+) ===\n(.*?)^=== ROCE-COUNTERS-END \1 g\2 ===$", re.S | re.M)


def gid4(ip):
    """The sysfs form of the v4-mapped GID of an IPv4 address."""
    a = [int(x) for x in ip.split(".")]
    return "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x" % tuple(a)


def gid6(ip6):
    """The sysfs form (8 groups of 4 hex digits) of an IPv6 address."""
    head, _, tail = ip6.partition("::")
    h = [x for x in head.split(":") if x]
    t = [x for x in tail.split(":") if x]
    return ":".join("%04x" % int(x, 16) for x in h + ["0"] * (8 - len(h) - len(t)) + t)


def up_lines(ctx, errs):
    """{guest: match} of every guest's ROCE-UP line: ACTIVE (4), link layer Ethernet, the device kind its NIC
    implies (mlx5_* for a vrnic port, rxe for virtio-net)."""
    eth = ctx.eth
    ups = {}
    for gi, t in enumerate(texts(ctx)):
        m = ROCE_UP.search(t)
        if not m:
            errs.append("g%d: no ROCE-UP line (no RDMA device over the port)" % gi)
            continue
        ups[gi] = m
        nic = eth.nics[gi] if eth else m.group(3)
        say("ROCE g%d %s: device %s over %s, port state %s, link layer %s, RoCE v2 GID index IPv4 %s IPv6 %s (%s s)"
            % (gi, nic, m.group(2), m.group(4), m.group(5), m.group(6), m.group(7), m.group(8), m.group(9)))
        want = "mlx5_" if nic == "vrnic" else "rxe"
        if not m.group(2).startswith(want):
            errs.append("g%d: RDMA device %s, want %s*" % (gi, m.group(2), want))
        if m.group(5) != "4":
            errs.append("g%d: port state %s, not 4 (ACTIVE)" % (gi, m.group(5)))
        if m.group(6) != "Ethernet":
            errs.append("g%d: link layer %s, not Ethernet" % (gi, m.group(6)))
    return ups


def gid_tables(ctx):
    """{(label, guest): {idx: (gid, type, ndev)}} of every roce_gids listing."""
    res = {}
    for m in ROCE_GID.finditer("\n".join(texts(ctx))):
        res.setdefault((m.group(1), int(m.group(2))), {})[int(m.group(3))] = (m.group(4), m.group(5), m.group(6))
    return res


def counters(ctx):
    """{(label, guest): {name: value}} of every ROCE-COUNTERS block."""
    res = {}
    for m in ROCE_COUNTERS.finditer("\n".join(texts(ctx))):
        res[(m.group(1), int(m.group(2)))] = {k: int(v) for k, v in re.findall(r"^(\S+) (\d+)$", m.group(3), re.M)}
    return res


# ---- roce-devinfo ------------------------------------------------------------------------------------------
def check_roce_devinfo(ctx):
    errs = []
    ups = up_lines(ctx, errs)
    t = texts(ctx)[0]
    dev = ups[0].group(2) if 0 in ups else "?"
    netdev = ups[0].group(4) if 0 in ups else "?"
    m = re.search(r"^=== ROCE-DEVINFO g0 ===\n(.*?)^=== ROCE-DEVINFO-END g0 ===$", t, re.S | re.M)
    info = m.group(1) if m else ""
    for rx, what in ((r"^\s*link_layer:\s+Ethernet$", "link_layer: Ethernet"),
                     (r"^\s*state:\s+PORT_ACTIVE \(4\)$", "state: PORT_ACTIVE (4)"),
                     (r"^\s*hca_id:\s+%s$" % re.escape(dev), "hca_id: %s" % dev)):
        ok = re.search(rx, info, re.M)
        say("ROCE ibv_devinfo -v: %s %s" % (what, "yes" if ok else "MISSING"))
        if not ok:
            errs.append("ibv_devinfo -v shows no %r" % what)
    dgids = re.findall(r"GID\[\s*(\d+)\]:\s+(\S+), RoCE v2", info)
    say("ROCE ibv_devinfo -v RoCE v2 GIDs: %s" % (", ".join("%s=%s" % g for g in dgids) or "none"))
    if not any(g == "::ffff:" + guest_ip(0) for _, g in dgids):
        errs.append("ibv_devinfo -v lists no RoCE v2 GID ::ffff:%s" % guest_ip(0))
    tabs = gid_tables(ctx)
    init = tabs.get(("initial", 0), {})
    for idx, (g, ty, nd) in sorted(init.items()):
        say("ROCE GID[%d] %s %s %s" % (idx, g, ty, nd))
    want = {gid4(guest_ip(0)): "IPv4 10.1.0.1", gid6("fd00:1::1"): "IPv6 fd00:1::1"}
    for g, what in want.items():
        hits = [(i, ty, nd) for i, (gg, ty, nd) in init.items() if gg == g]
        if not any(ty == "RoCE_v2" and nd == netdev for _, ty, nd in hits):
            errs.append("GID table: no RoCE v2 entry on %s for %s (%s): %s" % (netdev, what, g, hits))
    if not any(gg.startswith("fe80:") for gg, _, _ in init.values()):
        errs.append("GID table: no link-local (fe80::) GID")
    # the table follows ip addr add/del
    follow = re.findall(r"^ROCE-GID-FOLLOW (add|del) (\S+) (.*)$", t, re.M)
    for op, addr, res in follow:
        say("ROCE ip addr %s %s: GID %s" % (op, addr, res))
    for op, addr in (("add", "10.1.0.101"), ("add", "fd00:2::1"), ("del", "10.1.0.101"), ("del", "fd00:2::1")):
        res = [r for o, a, r in follow if o == op and a == addr]
        if not res or not res[0].startswith("idx=" if op == "add" else "gone"):
            errs.append("ip addr %s %s: GID %s" % (op, addr, res[0] if res else "not reported"))
    added = tabs.get(("added", 0), {})
    deleted = tabs.get(("deleted", 0), {})
    for addr, g in (("10.1.0.101", gid4("10.1.0.101")), ("fd00:2::1", gid6("fd00:2::1"))):
        if not any(gg == g and ty == "RoCE_v2" for gg, ty, _ in added.values()):
            errs.append("after ip addr add %s the table has no RoCE v2 entry %s" % (addr, g))
        if any(gg == g for gg, _, _ in deleted.values()):
            errs.append("after ip addr del %s the table still has %s" % (addr, g))
    if {v[0] for v in deleted.values()} != {v[0] for v in init.values()}:
        errs.append("after add+del the GID table differs from the initial one: %s vs %s" % (
            sorted(v[0] for v in deleted.values()), sorted(v[0] for v in init.values())))
    c = counters(ctx).get(("devinfo", 0))
    say("ROCE port counters: %d (%s)" % (len(c or {}), " ".join(sorted(c or {})[:12])))
    if not c:
        errs.append("no port counters in sysfs (hw_counters/counters)")
    check_cc(ctx, t, errs)
    return finish(ctx, errs)


CC_COUNTERS = ("rp_cnp_ignored", "rp_cnp_handled", "np_ecn_marked_roce_packets", "np_cnp_sent")


def check_cc(ctx, t, errs):
    """roce-devinfo's congestion-control part (a vrnic port: cc_query/modify_allowed): debugfs cc_params (a write of
    rp_ai_rate reads back, the ConnectX defaults before it) and the four congestion counters at 0 in hw_counters and
    in `rdma statistic show link`."""
    if nics(ctx)[0] != "vrnic":
        return
    files = re.search(r"^ROCE-CC files (.*)$", t, re.M)
    say("ROCE cc_params: %s" % (files.group(1).strip() if files else "no directory"))
    if not files:
        errs.append("no debugfs cc_params directory")
        return
    rw = re.search(r"^ROCE-CC rp_ai_rate before=(\S*) write_rc=(\S*) after=(\S*) restored=(\S*)$", t, re.M)
    say("ROCE cc_params %s" % (rw.group(0)[len("ROCE-CC "):] if rw else "rp_ai_rate: not reported"))
    if not rw or rw.groups() != ("5", "0", "42", "5"):
        errs.append("cc_params/rp_ai_rate: want before=5 write_rc=0 after=42 restored=5, got %s" % (
            rw.group(0) if rw else "nothing"))
    d = re.search(r"^ROCE-CC np_cnp_dscp=(\S*) np_cnp_prio=(\S*) rp_gd=(\S*)$", t, re.M)
    if not d or d.groups() != ("48", "6", "11"):
        errs.append("cc_params defaults: want np_cnp_dscp=48 np_cnp_prio=6 rp_gd=11, got %s" % (
            d.group(0) if d else "nothing"))
    got = dict(re.findall(r"^ROCE-CC-COUNTER (\S+) (.*)$", t, re.M))
    stat = " ".join(re.findall(r"^ROCE-CC-STAT (.*)$", t, re.M))
    say("ROCE congestion counters: %s" % " ".join("%s=%s" % (k, got.get(k, "?")) for k in CC_COUNTERS))
    for k in CC_COUNTERS:
        if got.get(k) != "0":
            errs.append("hw_counters/%s: %r, want 0" % (k, got.get(k)))
        if not re.search(r"\b%s 0\b" % k, stat):
            errs.append("rdma statistic show link: no '%s 0'" % k)


# ---- tool pairs ----------------------------------------------------------------------------------------------
def judge_pingpong(expect_bytes):
    """A pingpong pair's judge: both sides print their byte count and iteration lines; the client's bytes equal
    2 * size * iterations (pingpong counts both directions)."""
    def judge(lab, role, r):
        b, i = PP_BYTES.search(r["out"]), PP_ITERS.search(r["out"])
        if not (b and i):
            return "no result lines"
        want = expect_bytes(lab, r["cmd"])
        got = int(b.group(0).split()[0])
        if want is not None and got != want:
            return "%d bytes, want %d" % (got, want)
        if role == "client":
            say("ROCE PINGPONG %-18s %s; %s (g%d, %s s)" % (lab, b.group(0), i.group(0), r["guest"], r["seconds"]))
        return None
    return judge


def pingpong_bytes(lab, cmd):
    s, n = re.search(r"-s (\d+)", cmd), re.search(r"-n (\d+)", cmd)
    return 2 * int(s.group(1)) * int(n.group(1)) if s and n else None


def judge_perftest(lab, role, r):
    if role == "server":
        return None
    rows = PERF_ROW.findall(r["out"])
    if not rows:
        return "no result table row"
    f = rows[0].split()
    if "_bw" in lab and not (len(f) >= 4 and float(f[3]) > 0):
        return "bandwidth row with no bandwidth: %s" % rows[0]
    say("ROCE PERFTEST %-18s %s" % (lab, re.sub(r"\s+", " ", rows[0]).strip()))
    return None


def check_labels(ctx, labels, judge, what, errs):
    """Every label's server and client ran, exited 0 and satisfy judge(label, role, run) (None: fine)."""
    runs = tool_runs(ctx)
    bad = set()
    for lab in labels:
        for role in ("server", "client"):
            r = runs.get((lab, role))
            if r is None:
                errs.append("%s %s: did not run" % (lab, role))
                bad.add(lab)
                continue
            why = judge(lab, role, r)
            if r["rc"] != 0 or why:
                errs.append("%s %s: %s%s" % (lab, role, why + "; " if why else "", tool_brief(r)))
                bad.add(lab)
    say("ROCE %s: %d of %d pairs passed" % (what, len(labels) - len(bad), len(labels)))
    return bad


# ---- roce-pingpong -------------------------------------------------------------------------------------------
def pingpong_labels(mtu):
    labs = ["v%d-%s" % (f, x) for f in (4, 6) for x in ("rc-s1", "rc-s4096-c", "uc-s4096-c", "ud-s%d-c" % mtu,
                                                        "srq-s4096-c")]
    return labs + ["v4-rc-s65536-c", "v4-rc-s1048576-c", "v4-rc-e-s1", "v4-rc-e-s4096-c", "v6-rc-e-s65536-c",
                   "v4-ud-e-s%d-c" % mtu]


def srq_bytes(lab, cmd):
    """ibv_srq_pingpong runs -q (16) QPs: its byte line counts every QP's traffic; 2 * size * iters each."""
    if "srq_pingpong" in cmd:
        return None
    return pingpong_bytes(lab, cmd)


def check_roce_pingpong(ctx):
    errs = []
    up_lines(ctx, errs)
    m = re.search(r"^ROCE-PINGPONG-START g0 mtu=(\d+)$", texts(ctx)[0], re.M)
    if not m:
        errs.append("g0: no ROCE-PINGPONG-START line")
        return finish(ctx, errs)
    say("ROCE active MTU %s: UD messages of %s bytes" % (m.group(1), m.group(1)))
    runs = tool_runs(ctx)
    for lab in pingpong_labels(int(m.group(1))):
        r = runs.get((lab, "client"))
        if r and ("-g " not in r["cmd"]):
            errs.append("%s ran without -g: %s" % (lab, r["cmd"]))
    check_labels(ctx, pingpong_labels(int(m.group(1))), judge_pingpong(srq_bytes), "PINGPONG", errs)
    check_congestion(ctx, errs)
    return finish(ctx, errs)


# Every vrnic port of roce-pingpong marks every 64th ECN-capable RoCEv2 frame it receives CE (as a congested switch
# would): the pingpongs must still pass, and congestion control must have acted on both sides.
PINGPONG_FAULTS = "rx:ce_every=64"
CONGESTION_COUNTERS = ("np_ecn_marked_roce_packets", "np_cnp_sent", "rp_cnp_handled", "rp_cnp_ignored")


def check_congestion(ctx, errs):
    """The vrnic servers' congestion counters (stats -> firmware.roce.congestion: the port's CcControl, what
    QUERY_CONG_STATISTICS reads) after the CE-marked run: each port marked frames, its notification point sent CNPs
    and its reaction point handled the peer's."""
    for i in range(len(ctx.servers)):
        try:
            st = ctx.server_stats(i)
        except stats.StatsError as e:
            errs.append("vrnic %d: no stats (%s)" % (i, e))
            continue
        cc = stats.get(st, "firmware", "roce", "congestion", default=None) or {}
        marked = stats.get(st, "eth_link", "fault_ce_marked", default=0)
        say("ROCE congestion vrnic %d: link CE-marked %d; %s" % (
            i, marked, " ".join("%s=%s" % (k, cc.get(k, "?")) for k in CONGESTION_COUNTERS)))
        for k in ("np_ecn_marked_roce_packets", "np_cnp_sent", "rp_cnp_handled"):
            if not cc.get(k):
                errs.append("vrnic %d: firmware.roce.congestion.%s did not move (%s marked CE)" % (i, k, marked))


# ---- roce-perftest -------------------------------------------------------------------------------------------
PERFTEST_X = ["x-ib_%s_%s" % (t, k) for k in ("lat", "bw") for t in ("write", "send", "read", "atomic")]
PERFTEST_LABELS = PERFTEST_X + ["x6-ib_send_bw", "x-ib_write_bw_q1024"] + ["R-ib_%s_%s" % (t, k) for t in ("write", "send", "read")
                                                    for k in ("lat", "bw")]
PERFTEST_EVENTS = ["e-ib_send_lat", "e-ib_send_lat_ud", "e-ib_send_bw", "e-ib_send_bw_bidir"]


def check_roce_perftest(ctx):
    errs = []
    up_lines(ctx, errs)
    runs = tool_runs(ctx)
    for lab in PERFTEST_LABELS:
        r = runs.get((lab, "client"))
        want = " -R " if lab.startswith("R-") else " -x "
        if r and want not in r["cmd"] + " ":
            errs.append("%s ran without%s: %s" % (lab, want.rstrip(), r["cmd"]))
    check_labels(ctx, PERFTEST_LABELS, judge_perftest, "PERFTEST", errs)
    for lab in PERFTEST_EVENTS:
        r = runs.get((lab, "client"))
        if r and " -e " not in r["cmd"] + " ":
            errs.append("%s ran without -e: %s" % (lab, r["cmd"]))
    check_labels(ctx, PERFTEST_EVENTS, judge_perftest, "PERFTEST -e", errs)
    return finish(ctx, errs)


# ---- rdma_cm tools (roce-cm, roce-rxe) ------------------------------------------------------------------------
def cm_count(cmd, flag, default):
    m = re.search(r" %s (\d+)" % flag, " " + cmd)
    return int(m.group(1)) if m else default


def judge_cm(lab, role, r):
    """What an rdma_cm tool prints when it completed: rping (verbose: its ping data lines, as many as -C),
    ucmatose/udaddy/mckey "test complete" + "return status 0", rdma_*server/client "end 0"."""
    out, cmd = r["out"], r["cmd"]
    tool = cmd.split()[0]
    if tool == "rping":
        if " -v" in cmd:
            el = re.search(r"^ROCE-ELIDED lines=\d+ ping_data=(\d+)$", out, re.M)
            n = int(el.group(1)) if el else len(re.findall(r"ping data: rdma-ping-", out))
            want = cm_count(cmd, "-C", 0)
            if n != want:
                return "%d ping data lines, want %d" % (n, want)
            if role == "client":
                say("ROCE CM %-22s %d verbose ping data lines each side (g%d, %s s)" % (
                    lab, n, r["guest"], r["seconds"]))
        elif role == "client":
            say("ROCE CM %-22s rping -C %d -S %d -V completed (g%d, %s s)" % (
                lab, cm_count(cmd, "-C", 0), cm_count(cmd, "-S", 100), r["guest"], r["seconds"]))
        if re.search(r"(?i)error|failed|miscompare", out):
            return "rping reported an error"
        return None
    if tool in ("ucmatose", "udaddy", "mckey"):
        if "test complete" not in out or not re.search(r"return status 0\b", out):
            return "no 'test complete' / 'return status 0'"
        if role == "client":
            say("ROCE CM %-22s %s: test complete, return status 0 (g%d, %s s)" % (lab, tool, r["guest"], r["seconds"]))
        return None
    if tool.startswith("rdma_"):
        if not re.search(r"%s: end 0\b" % tool, out):
            return "no '%s: end 0'" % tool
        if role == "client":
            say("ROCE CM %-22s %s: end 0 (g%d, %s s)" % (lab, tool, r["guest"], r["seconds"]))
        return None
    return "unknown tool %s" % tool


CM_LABELS = ["cm-rping", "cm-rping-v", "cm-ucmatose", "cm-udaddy", "cm-mckey", "cm-rdma-server", "cm-rdma-xserver"]


def check_refused(ctx, errs):
    """cm-refused: an rping to a port nobody listens on ends with an error (not a timeout) within 30 s."""
    r = tools(ctx).get(("cm-refused", 1))
    if r is None:
        errs.append("cm-refused did not run")
        return
    secs = float(r["seconds"])
    say("ROCE CM rping to a port nobody listens on: rc %d after %.1f s: %s" % (
        r["rc"], secs, " | ".join(l.strip() for l in r["out"].strip().splitlines()[-2:])))
    if r["rc"] in (0, 124) or secs > 30:
        errs.append("rping to a closed port: rc %d after %.1f s (want a clean failure)" % (r["rc"], secs))
    elif not re.search(r"(?i)REJECTED|refused|unreachable|connect error|error", r["out"]):
        errs.append("rping to a closed port failed without saying why: %s" % r["out"].strip()[-200:])


def check_roce_cm(ctx):
    errs = []
    up_lines(ctx, errs)
    check_labels(ctx, CM_LABELS, judge_cm, "CM", errs)
    check_refused(ctx, errs)
    return finish(ctx, errs)


# ---- roce-rxe ------------------------------------------------------------------------------------------------
RXE_TOOLS = ["rc-pingpong", "ud-pingpong", "ib_write_bw", "ib_read_lat", "ib_send_bw", "ib_atomic_lat", "rping",
             "ucmatose", "udaddy", "rdma-server"]


def judge_rxe(lab, role, r):
    tool = lab.split("-", 1)[1]
    if tool.endswith("pingpong"):
        return judge_pingpong(pingpong_bytes)(lab, role, r)
    if tool.startswith("ib_"):
        return judge_perftest(lab, role, r)
    return judge_cm(lab, role, r)


def check_roce_rxe(ctx):
    """Every pair in both roles; the interop matrix printed: for each tool, which NIC served and which was the
    client, and whether the pair passed."""
    errs = []
    up_lines(ctx, errs)
    eth = ctx.eth
    kind = lambda gi: "vrnic" if eth.nics[gi] == "vrnic" else "rxe"
    labels = ["s%d-%s" % (s, t) for s in (0, 1) for t in RXE_TOOLS]
    bad = check_labels(ctx, labels, judge_rxe, "RXE interop", errs)
    for t in RXE_TOOLS:
        say("ROCE INTEROP %-14s %s server / %s client: %s; %s server / %s client: %s" % (
            t, kind(0), kind(1), "FAIL" if "s0-" + t in bad else "ok",
            kind(1), kind(0), "FAIL" if "s1-" + t in bad else "ok"))
    return finish(ctx, errs)


# ---- roce-pcap -----------------------------------------------------------------------------------------------
WRITE_OPS = {6: "first", 7: "middle", 8: "last", 10: "only"}
TSHARK_ERROR = ("8388608", "Error", "error")


def perftest_shape(out):
    """(size, iterations, MTU) from a perftest client's output (its result row and its 'Mtu' line)."""
    row = PERF_ROW.search(out)
    mtu = re.search(r"^\s*Mtu\s*:\s*(\d+)\[B\]", out, re.M)
    if not (row and mtu):
        return None
    f = row.group(1).split()
    return int(f[0]), int(f[1]), int(mtu.group(1))


def check_roce_pcap(ctx):
    errs = []
    up_lines(ctx, errs)
    check_labels(ctx, ["pcap-ib_write_bw", "pcap-ib_send_lat"], judge_perftest, "PCAP perftest", errs)
    eth = ctx.eth
    path = ctx.capture("eth0.pcap")
    if not eth.pcap_dir or not os.path.exists(path):
        errs.append("no capture %s" % path)
        return finish(ctx, errs)
    fr = list(roce_pcap.frames(path))
    say("ROCE pcap %s: %d RoCEv2 frames (UDP 4791)" % (path, len(fr)))
    if not fr:
        errs.append("the capture has no RoCEv2 frame")
        return finish(ctx, errs)
    # our own ICRC verifier over every frame
    bad = [(f.num, g, w) for f in fr for g, w in [roce_pcap.icrc(f)] if g != w]
    say("ROCE pcap ICRC: %d of %d frames verified, %d bad%s" % (len(fr) - len(bad), len(fr), len(bad), (
        " (first: frame %d carries %s, want %08x)" % (bad[0][0], "%08x" % bad[0][1] if bad[0][1] is not None
                                                      else "none", bad[0][2])) if bad else ""))
    if bad:
        errs.append("%d frames with a bad ICRC, first frame %d" % (len(bad), bad[0][0]))
    # tshark decodes every frame as InfiniBand, nothing malformed or in error
    try:
        rows = roce_pcap.tshark_fields(path)
    except (OSError, RuntimeError, subprocess.SubprocessError) as e:
        errs.append("tshark: %s" % e)
        rows = []
    undecoded = [r["frame.number"] for r in rows if not r["infiniband.bth.opcode"]]
    malformed = [r["frame.number"] for r in rows if r["_ws.malformed"] or
                 any(x in TSHARK_ERROR for x in r["_ws.expert.severity"].split(","))]
    say("ROCE pcap tshark: %d frames, %d decoded as infiniband (BTH opcode), %d malformed/expert errors" % (
        len(rows), len(rows) - len(undecoded), len(malformed)))
    if len(rows) != len(fr):
        errs.append("tshark saw %d UDP 4791 frames, our walk %d" % (len(rows), len(fr)))
    if undecoded:
        errs.append("%d frames not decoded as infiniband, first %s" % (len(undecoded), undecoded[0]))
    if malformed:
        errs.append("%d frames malformed or with expert errors, first %s" % (len(malformed), malformed[0]))
    # the RDMA WRITE frames from guest 1 match perftest's message count x size / MTU
    r = tool_runs(ctx).get(("pcap-ib_write_bw", "client"))
    shape = perftest_shape(r["out"]) if r else None
    if not shape:
        errs.append("no perftest size/iterations/MTU for ib_write_bw")
        return finish(ctx, errs)
    size, iters, mtu = shape
    per = math.ceil(size / mtu)
    want = {"first": iters, "middle": iters * (per - 2), "last": iters, "only": 0} if per > 1 else \
        {"first": 0, "middle": 0, "last": 0, "only": iters}
    g1 = bytes(int(x) for x in "10.1.0.2".split("."))
    got = {k: 0 for k in WRITE_OPS.values()}
    seen, again = set(), 0
    for f in fr:
        if f.src == g1 and f.opcode in WRITE_OPS:
            if (f.dqpn, f.psn) in seen:   # a retransmission (same PSN again): counted once
                again += 1
                continue
            seen.add((f.dqpn, f.psn))
            got[WRITE_OPS[f.opcode]] += 1
    say("ROCE pcap RDMA WRITE retransmitted frames (a PSN seen again): %d" % again)
    say("ROCE pcap RDMA WRITE frames g1->g0: %s; perftest %d x %d B at MTU %d = %d packets a message: want %s" % (
        " ".join("%s=%d" % kv for kv in got.items()), iters, size, mtu, per,
        " ".join("%s=%d" % kv for kv in want.items())))
    if got != want:
        errs.append("RDMA WRITE frames %s, want %s" % (got, want))
    sends = len([f for f in fr if f.src == g1 and f.opcode == 4])
    r = tool_runs(ctx).get(("pcap-ib_send_lat", "client"))
    shape = perftest_shape(r["out"]) if r else None
    say("ROCE pcap SEND Only frames g1->g0: %d (ib_send_lat %s iterations)" % (sends, shape[1] if shape else "?"))
    if shape and sends < shape[1]:
        errs.append("%d SEND Only frames from g1, ib_send_lat ran %d iterations" % (sends, shape[1]))
    return finish(ctx, errs)


# ---- roce-faults ---------------------------------------------------------------------------------------------
NETEM = ["netem", "loss", "3%", "reorder", "5%", "50%", "duplicate", "1%", "delay", "1ms"]
PORT_FAULTS = "tx:drop=0.03,tx:reorder=0.05,tx:duplicate=0.01,seed=%d"
# counters that move when packets are lost, reordered or duplicated: mlx5_ib's hw_counters and rxe's
RETRANS_COUNTERS = ("out_of_sequence", "duplicate_request", "local_ack_timeout_err", "packet_seq_err",
                    "implied_nak_seq_err", "completer_retry_err", "out_of_seq_request", "rcvd_seq_err")


def interact_roce_faults(ctx):
    """netem on every TAP of the bridge (the host's qdisc; absent where the kernel has no sch_netem)."""
    eth = ctx.eth
    ok = []
    for i in range(eth.n):
        rc, out = eth.ns_run(["tc", "qdisc", "add", "dev", eth.tap(i), "root"] + NETEM)
        say("[roce-faults] tc qdisc add dev %s root %s: rc %d %s" % (eth.tap(i), " ".join(NETEM), rc, out.strip()))
        ok.append(rc == 0)
    ctx.notes["netem"] = all(ok)
    return None


def rping_lost_disconnect(ctx, err):
    """rping's server ends only on the client's disconnect (its one DREQ: the client destroys its cm_id at once,
    which stops ib_cm's DREQ retries). On a lossy link that MAD can be lost, and the server waits until its limit
    kills it (rc 143), as it would on any fabric. That is not a failure of the device when the client completed every
    ping with its data verified: each ping waited for the server's last SEND, so the server's data path had done
    all of them. Any other error of the pair stands."""
    runs = tool_runs(ctx)
    srv, cli = runs.get(("f-rping", "server")), runs.get(("f-rping", "client"))
    if not err.startswith("f-rping server:") or not srv or not cli or srv["rc"] != 143:
        return False
    if cli["rc"] != 0 or judge_cm("f-rping", "client", cli):
        return False
    say("ROCE faults: f-rping server killed at its limit after its client completed every verified ping: the "
        "client's DREQ was lost on the impaired link (accepted; rping learns a disconnect only from it)")
    return True


def check_roce_faults(ctx):
    errs = []
    up_lines(ctx, errs)
    eth = ctx.eth
    port_faults = any(n == "vrnic" for n in eth.nics)
    say("ROCE faults: netem on the TAPs %s; vrnic link faults %s" % (
        "applied" if ctx.notes.get("netem") else "not available on this host (no sch_netem)",
        "on (%s, seed 7 + guest)" % PORT_FAULTS.replace(",seed=%d", "") if port_faults else "none (no vrnic port)"))
    check_labels(ctx, ["f-ib_write_bw", "f-ib_read_bw"], judge_perftest, "FAULTS perftest", errs)
    rping_errs = []
    check_labels(ctx, ["f-rping"], judge_cm, "FAULTS rping -V", rping_errs)
    errs += [e for e in rping_errs if not rping_lost_disconnect(ctx, e)]
    cs = counters(ctx)
    moved = {}
    for gi in range(eth.n):
        a, b = cs.get(("before", gi), {}), cs.get(("after", gi), {})
        d = {k: b.get(k, 0) - a.get(k, 0) for k in RETRANS_COUNTERS if k in b}
        say("ROCE faults g%d retransmission counters moved: %s" % (gi, " ".join("%s+%d" % kv for kv in d.items())
                                                               or "(none exposed)"))
        moved[gi] = sum(d.values())
    for i in range(len(ctx.servers)):
        try:
            f = stats.counters(ctx.server_stats(i), r"fault_\w+|\w*retrans\w*|\w*timeout\w*|\w*dup\w*")
        except stats.StatsError as e:
            errs.append("vrnic %d: no stats (%s)" % (i, e))
            continue
        say("ROCE faults vrnic %d stats: %s" % (i, " ".join("%s=%s" % kv for kv in sorted(f.items())) or "none"))
        if port_faults and not f.get("fault_dropped", 0):
            errs.append("vrnic %d: its link dropped no frame (faults not applied?)" % i)
    if (ctx.notes.get("netem") or port_faults) and not any(moved.values()):
        errs.append("faults applied but no retransmission counter moved on any guest")
    return finish(ctx, errs)
