"""Checks of the XRC scenarios (xrc on the IB fabric, roce-xrc over RoCE v2): ibv_xsrq_pingpong pairs between two
guests (scenarios/lib.sh vr_pair, roce-lib.sh roce_perf, and xrc.sh's xrc_multi for one server with several client
processes). ibv_xsrq_pingpong prints each side's XRC QP
and SRQ numbers ("local:", "remote:" lines) and "success" once every message came back and both sides
exchanged their termination acknowledgements; it exits 1 on any error or error completion."""
import re

from ..common import say
from .checks_pairs import tool_brief, tool_runs
from .console import bad_lines_reason

XRC_PAIRS = ["xrc-s64", "xrc-e-s16384"]
ROCE_XRC_PAIRS = ["v4-xrc-s64", "v6-xrc-e-s16384"]
# label: number of client processes
XRC_MULTI = {"xrc-c2-s4096": 2}
SUCCESS = re.compile(r"^success$", re.M)
REMOTE = re.compile(r"^\s*remote: LID \S+, QPN RECV [0-9a-f]+ SEND [0-9a-f]+, PSN \S+, SRQN [0-9a-f]+", re.M)


def judge_xsrq(lab, role, r, remotes=1):
    """None when the run exited 0 with "success" and the peers' addresses (`remotes` of them), else why not."""
    if "-e-" in lab and " -e " not in r["cmd"] + " ":
        return "ran without -e"
    if r["rc"] != 0:
        return "exit %d" % r["rc"]
    if not SUCCESS.search(r["out"]):
        return "no 'success' line"
    n = len(REMOTE.findall(r["out"]))
    if n != remotes:
        return "%d remote address lines, expected %d" % (n, remotes)
    return None


def check_xrc(ctx):
    return check_xsrq_runs(ctx, XRC_PAIRS, XRC_MULTI, "XRC")


def check_roce_xrc(ctx):
    return check_xsrq_runs(ctx, ROCE_XRC_PAIRS, {}, "ROCE-XRC")


def check_xsrq_runs(ctx, pairs, multi, what):
    """Every pair's server and client, and every multi-client server and its clients, passed judge_xsrq."""
    runs = tool_runs(ctx)
    expect = [(lab, role, lab, 1) for lab in pairs for role in ("server", "client")]
    for lab, n in multi.items():
        expect.append((lab, "server", lab, n))
        expect += [("%s-%d" % (lab, i), "client", lab, 1) for i in range(1, n + 1)]
    errs = []
    for name, role, lab, remotes in expect:
        r = runs.get((name, role))
        if r is None:
            errs.append("%s %s: did not run" % (name, role))
            continue
        bad = judge_xsrq(lab, role, r, remotes)
        if bad:
            errs.append("%s %s: %s; %s" % (name, role, bad, tool_brief(r)))
        elif role == "client":
            say("%s %-18s client on g%d: success in %s s" % (what, name, r["guest"], r["seconds"]))
    say("%s %d of %d runs passed" % (what, len(expect) - len(errs), len(expect)))
    reason = bad_lines_reason(ctx.text)
    if reason:
        errs.append(reason)
    return "; ".join(errs) or None
