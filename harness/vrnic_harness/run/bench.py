"""The perftest bench (bench-loopback, bench-2vm): vrnic against Soft-RoCE, BENCH lines."""
import os
import re
import statistics
import subprocess

from ..common import REPO, say
from .checks_pairs import PERF_ROW, check_pairs, tool_runs
from .console import console_lines


BENCH_TESTS = ["ib_write_lat", "ib_send_lat", "ib_read_lat", "ib_atomic_lat",
               "ib_write_bw", "ib_send_bw", "ib_read_bw", "ib_atomic_bw"]


_HOST_PROBE = []


def host_probe():
    """The host's wake-up costs (vrnic-hostprobe, built with the server), measured once per harness run: the floor
    under one guest's ping-pong when the device has no CPU of its own (docs/performance.md)."""
    if not _HOST_PROBE:
        exe = os.path.join(REPO, "target", "release", "vrnic-hostprobe")
        line = "HOST NA (no %s)" % exe
        if os.path.exists(exe):
            try:
                out = subprocess.run([exe], capture_output=True, text=True, timeout=60).stdout
                line = next((l for l in out.splitlines() if l.startswith("HOST ")), "HOST NA (no output)")
            except (OSError, subprocess.SubprocessError) as e:
                line = "HOST NA (%s)" % e
        _HOST_PROBE.append(line)
    return _HOST_PROBE[0]


def check_bench(ctx):
    """BENCH <test> <size> <loopback|2vm> vrnic=<figure> rxe=<figure> unit=<usec|MBps> better=<factor>:
    latency = the client's t_typical (perftest's median), bandwidth = its BW average; each figure is the median
    over the guest's repetitions of the pair (bench.sh's reps, vrnic and rxe alternating); better > 1: vrnic wins."""
    topo = "2vm" if len(ctx.texts) > 1 else "loopback"
    mode = ctx.run_texts[-1][0] if ctx.run_texts else "default"
    tests, devs, reps = BENCH_TESTS, ("mlx5_0", "rxe0"), 1
    texts = ctx.texts
    m = re.search(r"^BENCH-SET tests=(\S+) devs=(\S+) reps=(\d+)", "\n".join("\n".join(console_lines(t)) for t in texts),
                  re.M)
    if m:  # a --guest-arg vrnic.bench=/vrnic.bench_devs= run: only what the guest ran
        tests = [t for t in BENCH_TESTS if t in m.group(1).split(",")]
        devs = tuple(d for d in devs if d in m.group(2).split(","))
        reps = max(1, int(m.group(3)))
    labels = ["bench-%s-%s-r%d" % (d, t, k) for t in tests for k in range(1, reps + 1) for d in devs]
    runs = tool_runs(ctx)
    table = []
    say("BENCH-RUN topology=%s doorbell=%s reps=%d" % (topo, mode, reps))
    say("BENCH-" + host_probe())
    fmt = lambda x: "%.2f" % x if x is not None else "NA"
    for t in tests:
        figs, size = {}, "?"
        lat = t.endswith("_lat")
        for d in ("mlx5_0", "rxe0"):
            for k in range(1, reps + 1):
                r = runs.get(("bench-%s-%s-r%d" % (d, t, k), "client"))
                rows = PERF_ROW.findall(r["out"]) if r and r["rc"] == 0 else []
                if rows:
                    f = rows[0].split()
                    size = f[0]
                    figs.setdefault(d, []).append(float(f[4]) if lat else float(f[3]))
        unit = "usec" if lat else "MBps"
        v, x = (statistics.median(figs[d]) if figs.get(d) else None for d in ("mlx5_0", "rxe0"))
        better = (x / v if lat else v / x) if v and x else None
        say("BENCH %s %s %s vrnic=%s rxe=%s unit=%s better=%s" % (t, size, topo, fmt(v), fmt(x), unit, fmt(better)))
        table.append((t, size, v, x, unit, better, figs))
    # MR registration rate (bench.sh mr_reg, guest 0): "MRBENCH <dev> <bytes> <per-second>" lines.
    mrb = {}
    for mm in re.finditer(r"^MRBENCH (\S+) (\d+) ([\d.]+)$", "\n".join(console_lines(texts[0])), re.M):
        mrb.setdefault(int(mm.group(2)), {}).setdefault(mm.group(1), []).append(float(mm.group(3)))
    for size in sorted(mrb):
        figs = mrb[size]
        v, x = (statistics.median(figs[d]) if figs.get(d) else None for d in ("mlx5_0", "rxe0"))
        better = v / x if v and x else None
        say("BENCH mr_reg %d %s vrnic=%s rxe=%s unit=reg+dereg/s better=%s" % (size, topo, fmt(v), fmt(x), fmt(better)))
        table.append(("mr_reg", str(size), v, x, "reg/s", better, figs))
    say("  %-14s %7s %-9s %12s %12s %6s %8s  %s" % ("test", "size", "topology", "vrnic", "rxe", "unit", "better",
                                                 "each run: vrnic | rxe"))
    for t, size, v, x, unit, better, figs in table:
        say("  %-14s %7s %-9s %12s %12s %6s %8s  %s | %s" % (
            t, size, topo, fmt(v), fmt(x), unit, "%.2fx" % better if better is not None else "NA",
            " ".join(fmt(y) for y in figs.get("mlx5_0", [])) or "-", " ".join(fmt(y) for y in figs.get("rxe0", [])) or "-"))
    return check_pairs(ctx, labels, lambda lab, role, r: None if role == "server" or PERF_ROW.search(r["out"])
                       else "no result table row", "BENCH %s %s" % (topo, mode))
