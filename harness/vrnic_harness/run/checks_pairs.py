"""Checks of the data path scenarios: unmodified rdma-core and perftest tools in pairs (scenarios/lib.sh
vr_pair): rc-pingpong, loopback, perftest, events, net2, grh."""
import re

from ..common import say
from . import stats
from .console import bad_lines_reason, console_lines


TOOL_RX = re.compile(r"^=== TOOL (\S+) g(\d+) (server|client): (.*?) ===\n(.*?)^=== TOOL-END \1 g\2 \3 "
                     r"rc=(\d+) seconds=(\S+) tries=(\d+) ===$", re.S | re.M)
PINGPONG_LABELS = ["rc-s1", "rc-s4096-c", "rc-s65536-c", "rc-s1048576-c", "rc-e-s1", "rc-e-s4096-c",
                   "rc-e-s1048576-c", "uc-s4096-c", "ud-s2048-c", "srq-s4096-c"]
PERFTEST_LABELS = ["ib_write_lat", "ib_send_lat", "ib_read_lat", "ib_atomic_lat",
                   "ib_write_bw", "ib_send_bw", "ib_read_bw", "ib_atomic_bw"]
# 1024 QPs of traffic: the trap-mode boot runs it (perftest.sh)
PERFTEST_MANY_QP = "ib_write_bw_q1024"
PP_BYTES = re.compile(r"^\d+ bytes in [\d.]+ seconds = [\d.]+ \S+$", re.M)
PP_ITERS = re.compile(r"^\d+ iters in [\d.]+ seconds = [\d.]+ usec/iter$", re.M)
PERF_ROW = re.compile(r"^\s*(\d+\s+\d+\s+[\d.]+.*)$", re.M)


def tool_runs(ctx):
    """{(label, role): dict(guest, cmd, out, rc, seconds, tries)} from every guest's console."""
    return tool_runs_in(ctx.texts)


def guest_texts(text):
    """A run's combined text (lines prefixed [g<i>], RunContext.text) split back into each guest's."""
    per = {}
    for line in text.split("\n"):
        m = re.match(r"^\[g(\d+)\] ", line)
        per.setdefault(int(m.group(1)) if m else 0, []).append(line[m.end():] if m else line)
    return ["\n".join(per[g]) for g in sorted(per)]


def tool_runs_in(texts):
    """tool_runs over these consoles (one per guest)."""
    runs = {}
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
    r = bad_lines_reason(ctx.text)
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
    many = [] if ctx.tag.endswith("doorbell-poll") else [PERFTEST_MANY_QP]
    return check_pairs(ctx, PERFTEST_LABELS + many, judge_perftest, "PERFTEST")


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
    for gi, t in enumerate(ctx.texts):
        for rx in (r"VRNIC-NET eth0 10\.0\.0\.%d/24" % (gi + 1), r"NET2-PING-OK g%d" % gi,
                   r"NET2-TCP g%d received: hello from g%d" % (gi, 1 - gi)):
            if not re.search(rx, t):
                errs.append("g%d: no /%s/" % (gi, rx))
    return "; ".join(errs) or None


GRH_PERFTEST = ["send-bw", "write-lat", "read-bw", "ud-send-lat"]
GRH_LABELS = ["2vm-" + t for t in GRH_PERFTEST] + ["2vm-rc-pingpong", "2vm-ud-pingpong"] + ["lo-" + t for t in GRH_PERFTEST]


GRH_FABRIC = ("tx_packets", "tx_grh_packets", "rx_packets", "rx_grh_packets", "tx_no_route", "rx_dgid_mismatch")


def check_grh(ctx):
    """Every GRH pair exits 0 with its result (perftest table row / pingpong summary); grh_ah passes its 9 checks
    (UD GRH area, IBV_WC_GRH only with a GRH, ibv_create_ah_from_wc answers back); each vrnic's fabric
    counters (stats firmware.fabric, moved in the scenario's window) show GRH packets both ways, tx_no_route 0 and
    rx_dgid_mismatch 0."""
    def judge(lab, role, r):
        if "pingpong" in lab:
            return judge_pingpong(lab, role, r)
        return judge_perftest(lab, role, r)
    errs = []
    r = check_pairs(ctx, GRH_LABELS, judge, "GRH")
    if r:
        errs.append(r)
    text = "\n".join(console_lines(ctx.text))
    m = re.search(r"^GRH-AH (PASS (\d+) checks|FAIL .*)$", text, re.M)
    if not m or not m.group(1).startswith("PASS") or int(m.group(2)) < 9:
        errs.append("grh_ah: %s" % (m.group(0) if m else "no GRH-AH result line"))
    else:
        say("GRH grh_ah: %s" % m.group(1))
    gids = re.findall(r"^(?:\[g\d\] )?GRH-GID0 g(\d) (\S+)$", text, re.M)
    say("GRH GID 0 of each guest: %s" % (", ".join("g%s %s" % g for g in gids) or "none printed"))
    if len(gids) != 2 or not all(g[1].startswith("fe80:0000:0000:0000:") for g in gids) or gids[0][1] == gids[1][1]:
        errs.append("GID 0 is not fe80::/64 + a distinct port GUID on each guest: %s" % gids)
    for i in range(len(ctx.servers)):
        try:
            fab = stats.get(ctx.server_stats(i), "firmware", "fabric", default={})
        except stats.StatsError as e:
            errs.append("vrnic %d: no stats (%s)" % (i, e))
            continue
        f = {k: fab.get(k) for k in GRH_FABRIC}
        say("GRH vrnic %d fabric: %s" % (i, " ".join("%s=%s" % (k, "?" if f[k] is None else f[k]) for k in GRH_FABRIC)))
        if f["tx_no_route"] != 0:
            errs.append("vrnic %d: tx_no_route %s (GRH traffic must route by LID)" % (i, f["tx_no_route"]))
        if f["rx_dgid_mismatch"] != 0:
            errs.append("vrnic %d: rx_dgid_mismatch %s" % (i, f["rx_dgid_mismatch"]))
        if not f["tx_grh_packets"] or not f["rx_grh_packets"]:
            errs.append("vrnic %d: no GRH packets sent/received (tx %s rx %s)" % (
                i, f["tx_grh_packets"], f["rx_grh_packets"]))
    return "; ".join(errs) or None
