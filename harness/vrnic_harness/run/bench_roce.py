"""bench-roce: the perftest set over RoCE between two vrnic guests against two rxe guests (virtio-net) on the same
Ethernet link (udp point to point), in bench-2vm's format: BENCH <test> <size> roce vrnic=<v> rxe=<x> unit=<u>
better=<ratio>: latency = the client's t_typical (perftest's median) in usec, bandwidth = its BW average in MB/s;
each figure the median over the repetitions (bench-roce.sh REPS); better > 1: vrnic wins (targets as for the IB
fabric: latency >= 5x, bandwidth >= 20x)."""
import re
import statistics

from ..common import say
from .bench import BENCH_TESTS
from .checks_pairs import PERF_ROW, guest_texts, tool_runs_in

TARGET = {"lat": 5.0, "bw": 20.0}


def figures(text):
    """{test: (size, [figure per repetition])} of one run (the vrnic run or the rxe run)."""
    res = {}
    for (lab, role), r in tool_runs_in(guest_texts(text)).items():
        m = re.match(r"bench-(ib_\w+_(?:lat|bw))-r\d+$", lab)
        if role != "client" or not m or r["rc"] != 0:
            continue
        rows = PERF_ROW.findall(r["out"])
        if rows:
            f = rows[0].split()
            size, figs = res.setdefault(m.group(1), (f[0], []))
            figs.append(float(f[4]) if m.group(1).endswith("_lat") else float(f[3]))
    return res


def check_bench_roce(ctx):
    runs = dict(ctx.run_texts)
    figs = {nic: figures(runs.get(nic, "")) for nic in ("vrnic", "virtio")}
    fmt = lambda x: "%.2f" % x if x is not None else "NA"
    for t in BENCH_TESTS:
        lat = t.endswith("_lat")
        size = (figs["vrnic"].get(t) or figs["virtio"].get(t) or ("?", []))[0]
        v, x = (statistics.median(figs[n][t][1]) if figs[n].get(t) else None for n in ("vrnic", "virtio"))
        better = ((x / v) if lat else (v / x)) if v and x else None
        goal = TARGET["lat" if lat else "bw"]
        say("BENCH %s %s roce vrnic=%s rxe=%s unit=%s better=%s%s" % (
            t, size, fmt(v), fmt(x), "usec" if lat else "MBps", fmt(better),
            "" if better is None else " target=%gx %s" % (goal, "met" if better >= goal else "missed")))
        say("  each run: vrnic %s | rxe %s" % (" ".join(fmt(y) for y in (figs["vrnic"].get(t) or ("", []))[1]) or "-",
                                               " ".join(fmt(y) for y in (figs["virtio"].get(t) or ("", []))[1]) or "-"))
    errs = list(ctx.failed_runs)
    if not any(figs["virtio"].values()):
        errs.append("the rxe run produced no figures")
    return "; ".join(errs) or None
