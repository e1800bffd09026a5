"""bench-eth: the Ethernet port against virtio-net on the same link (two guests, udp point to point), BENCH lines
in bench-2vm's format: BENCH <test> <size> eth vrnic=<v> virtio=<x> unit=<u> better=<ratio> (better > 1: vrnic
wins; throughput v/x, latency x/v). Each figure is the median over the guest's repetitions (bench-eth.sh REPS)."""
import re
import statistics

from ..common import say
from .checks_eth import ETH_TOOL, iperf_result
from .console import console_lines

TESTS = [("eth_tcp_bw", "1stream", "tcp1", "Mbps", True), ("eth_tcp_bw", "4streams", "tcp4", "Mbps", True),
         ("eth_ping_rtt", "64", "ping", "usec", False), ("eth_tcp_rr", "64", "rr", "usec", False)]


def figure(kind, out):
    """One repetition's figure: Mbit/s (iperf3 receiver), median ping RTT or tcp_rr median, in usec."""
    if kind in ("tcp1", "tcp4"):
        r = iperf_result(out)
        return r[0] / 1e6 if r else None
    if kind == "ping":
        rtts = [float(x) * 1000 for x in re.findall(r"time=([\d.]+) ms", out)]
        return statistics.median(rtts) if rtts else None
    m = re.search(r"TCP_RR size=\d+ n=\d+ median_us=([\d.]+)", out)
    return float(m.group(1)) if m else None


def figures(text):
    """{kind: [figure per repetition]} from one run's console text."""
    res = {}
    for m in ETH_TOOL.finditer("\n".join(console_lines(text))):
        lab = re.match(r"bench-(\w+)-r\d+$", m.group(1))
        if lab and int(m.group(5)) == 0:
            f = figure(lab.group(1), m.group(4))
            if f is not None:
                res.setdefault(lab.group(1), []).append(f)
    return res


def check_bench_eth(ctx):
    runs = dict(ctx.run_texts)
    figs = {nic: figures(runs.get(nic, "")) for nic in ("vrnic", "virtio")}
    fmt = lambda x: "%.2f" % x if x is not None else "NA"
    for test, size, kind, unit, higher in TESTS:
        v, x = (statistics.median(figs[n][kind]) if figs[n].get(kind) else None for n in ("vrnic", "virtio"))
        better = ((v / x) if higher else (x / v)) if v and x else None
        say("BENCH %s %s eth vrnic=%s virtio=%s unit=%s better=%s" % (test, size, fmt(v), fmt(x), unit, fmt(better)))
        say("  each run: vrnic %s | virtio %s" % (" ".join(fmt(y) for y in figs["vrnic"].get(kind, [])) or "-",
                                                  " ".join(fmt(y) for y in figs["virtio"].get(kind, [])) or "-"))
    errs = list(ctx.failed_runs)
    if not any(figs["virtio"].values()):
        errs.append("the virtio-net run produced no figures")
    return "; ".join(errs) or None
