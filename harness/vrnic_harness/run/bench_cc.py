"""bench-cc: two ib_write_bw flows into one receiver through the switch guest's marking egress (roce-ecn's topology),
with congestion control on and off, and an ib_write_lat probe through the same bottleneck, idle and under the
load. BENCH lines (each figure the median over the repetitions):

  BENCH cc_goodput cc=<on|tuned|off> total_mbps=<M> of_bottleneck=<fraction> share_g1=<x> share_g2=<y> jain=<j>
  BENCH cc_probe_p99 cc=<on|off> idle_usec=<p99 alone> load_usec=<p99 under load> ratio=<load/idle>
  BENCH cc_switch cc=<on|off> marked=<pkts> dropped=<pkts> (the switch's AQM, per repetition) drain_mbps=<M>
      backlog_pkts=<a/b> (the median of what the bottleneck sent between two samples in the middle of the load, and
      the AQM's backlog at those samples: whether the switch guest drains its rate while the flows run)

cc=on: CC on with the ConnectX defaults; cc=tuned: CC on with the tuned parameters (bench-cc.sh's vrnic.cc_tuned);
cc=off: `cc off`. Targets (issue 21): with CC on (on and tuned), ratio <= 2 and of_bottleneck >= 0.9; reported as met/missed, never a failure (a
bench). A mode whose `cc on|off` no server took is still measured, and its lines say cc_cmd=absent."""
import re
import statistics

from ..common import say
from .checks_cc import cc_command_ok
from .checks_pairs import PERF_ROW, tool_runs
from .checks_switch import aqm_delta, switch_stats
from .console import console_lines

UNITS = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}
MIB_MBIT = 1048576 * 8 / 1e6  # perftest's MiB/sec in Mbit/s


def rate_bps(text):
    """The switch's bottleneck rate (bit/s) from its SWITCH-READY line (tc's "100mbit" etc.), or None."""
    m = re.search(r"^SWITCH-READY .* rate=(\d+(?:\.\d+)?)([kmg]?)(bit|bps)\b", "\n".join(console_lines(text)),
                  re.M | re.I)
    if not m:
        return None
    return float(m.group(1)) * UNITS[m.group(2).lower()] * (8 if m.group(3).lower() == "bps" else 1)


def _p99(r):
    rows = PERF_ROW.findall(r["out"]) if r and r["rc"] == 0 else []
    f = rows[0].split() if rows else []
    return float(f[7]) if len(f) >= 8 else None


def _bw(r):
    rows = PERF_ROW.findall(r["out"]) if r and r["rc"] == 0 else []
    f = rows[0].split() if rows else []
    return float(f[3]) if len(f) >= 4 else None


def _med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def check_bench_cc(ctx):
    runs = tool_runs(ctx)
    sw = switch_stats(ctx.switch_text)
    rate = rate_bps(ctx.switch_text)
    fmt = lambda x, f="%.2f": f % x if x is not None else "NA"
    got = 0
    for mode in ("on", "tuned", "off"):
        reps = sorted({int(m.group(1)) for (lab, _r) in runs for m in [re.match(r"cc%s-r(\d+)-" % mode, lab)] if m})
        tot, sh1, sh2, jain, idle, load, marked, dropped, drain, backlog = [], [], [], [], [], [], [], [], [], []
        for r in reps:
            p = "cc%s-r%d" % (mode, r)
            b1, b2 = _bw(runs.get((p + "-flow1", "client"))), _bw(runs.get((p + "-flow2", "client")))
            if b1 and b2:
                t = b1 + b2
                tot.append(t * MIB_MBIT)
                sh1.append(b1 / t)
                sh2.append(b2 / t)
                jain.append(t * t / (2 * (b1 * b1 + b2 * b2)))
            idle.append(_p99(runs.get((p + "-idle", "client"))))
            load.append(_p99(runs.get((p + "-probe", "client"))))
            d = aqm_delta(sw, "before-" + p, "after-" + p)
            if d:
                marked.append(d["marked"])
                dropped.append(d["dropped"])
            m = aqm_delta(sw, "mid1-" + p, "mid2-" + p)
            if m and m["seconds"] > 0:
                drain.append(m["bytes"] * 8 / m["seconds"] / 1e6)
                backlog.append("%s/%s" % tuple(sw[k + p]["qdiscs"].get(m["kind"], {}).get("backlog_pkts", "NA")
                                               for k in ("mid1-", "mid2-")))
            say("  cc=%s rep %d: flows %s/%s MiB/s, probe p99 idle %s load %s usec, switch marked %s dropped %s, "
                "drained %s Mbit/s mid-load (backlog %s pkts)" % (
                    mode, r, fmt(b1, "%.1f"), fmt(b2, "%.1f"), fmt(idle[-1], "%.1f"), fmt(load[-1], "%.1f"),
                    d["marked"] if d else "NA", d["dropped"] if d else "NA",
                    fmt(drain[-1], "%.1f") if m else "NA", backlog[-1] if m else "NA"))
        if not reps:
            continue
        total = _med(tot)
        frac = total * 1e6 / rate if total and rate else None
        i, lo = _med(idle), _med(load)
        ratio = lo / i if i and lo else None
        cmd = "" if cc_command_ok(ctx) else " cc_cmd=absent"
        say("BENCH cc_goodput cc=%s total_mbps=%s of_bottleneck=%s share_g1=%s share_g2=%s jain=%s reps=%d%s%s" % (
            mode, fmt(total, "%.1f"), fmt(frac), fmt(_med(sh1)), fmt(_med(sh2)), fmt(_med(jain), "%.3f"), len(tot), cmd,
            " target=0.9 %s" % ("met" if frac >= 0.9 else "missed") if mode != "off" and frac else ""))
        say("BENCH cc_probe_p99 cc=%s idle_usec=%s load_usec=%s ratio=%s reps=%d%s%s" % (
            mode, fmt(i, "%.1f"), fmt(lo, "%.1f"), fmt(ratio), len([x for x in load if x]), cmd,
            " target=2x %s" % ("met" if ratio <= 2 else "missed") if mode != "off" and ratio else ""))
        say("BENCH cc_switch cc=%s marked=%s dropped=%s bottleneck_mbps=%s drain_mbps=%s backlog_pkts=%s" % (
            mode, "/".join(str(x) for x in marked) or "NA", "/".join(str(x) for x in dropped) or "NA",
            fmt(rate / 1e6 if rate else None, "%.0f"), fmt(_med(drain), "%.1f"), ",".join(backlog) or "NA"))
        got += len(tot)
    return None if got else "no repetition produced both flows' figures"
