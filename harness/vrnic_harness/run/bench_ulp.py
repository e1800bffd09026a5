"""bench-ulp: NVMe-oF, NFS/RDMA and UCX between two vrnic guests against two rxe guests (virtio-net) on the same
Ethernet link (udp point to point), in bench-roce's format: BENCH <test> <size> roce vrnic=<v> rxe=<x> unit=<u>
better=<ratio>: fio IOPS (4 KiB random read QD16) and MB/s (128 KiB sequential read QD16; MiB/s as fio prints
them) over NVMe-oF, NFS/RDMA read MB/s, the mean round trip of a 4 KiB read at QD1 (usec = 1e6 / IOPS) over
NFS/RDMA (one READ RPC each) and over NVMe-oF (with vrnic.bench_ulp=...,nvmeqd1), ucx_perftest tag latency (one
way, usec, its average); each figure the
median over the repetitions (bench-ulp.sh REPS); better > 1: vrnic wins (targets: throughput >= 10x, latency
>= 5x)."""
import re
import statistics

from ..common import say
from .checks_eth import ETH_TOOL
from .checks_pairs import guest_texts, tool_runs_in
from .checks_ulp import fio_result, ucx_final
from .console import console_lines

# test: (size, unit, what a figure is)
TESTS = {"nvme-randread4k": ("4096", "IOPS"), "nvme-seqread128k": ("131072", "MiBps"),
         "nfs-read128k": ("131072", "MiBps"), "nvme-randread4kqd1": ("4096", "usec"),
         "nfs-randread4kqd1": ("4096", "usec"), "ucx-tag_lat": ("8", "usec")}
TARGET = {"IOPS": 10.0, "MiBps": 10.0, "usec": 5.0}


def figures(text):
    """{test: [figure per repetition]} of one run (the vrnic run or the rxe run)."""
    res = {}
    joined = "\n".join(console_lines(text))
    for m in ETH_TOOL.finditer(joined):
        t = re.match(r"fio-bench-(\S+)-r\d+$", m.group(1))
        if not t or int(m.group(5)) != 0 or t.group(1) not in TESTS:
            continue
        r = fio_result(m.group(4))
        if r and not r["err"] and "read" in r:
            iops, mib = r["read"]
            unit = TESTS[t.group(1)][1]
            # QD1: one I/O at a time, so the mean round trip is 1 / IOPS
            fig = iops if unit == "IOPS" else mib if unit == "MiBps" else (1e6 / iops if iops else None)
            if fig is not None:
                res.setdefault(t.group(1), []).append(fig)
    for (lab, role), r in tool_runs_in(guest_texts(text)).items():
        t = re.match(r"bench-(ucx-tag_lat)-r\d+$", lab)
        if role != "client" or not t or r["rc"] != 0:
            continue
        f = ucx_final(r["out"])
        if f:
            res.setdefault(t.group(1), []).append(f[2])
    return res


def check_bench_ulp(ctx):
    runs = dict(ctx.run_texts)
    figs = {nic: figures(runs.get(nic, "")) for nic in ("vrnic", "virtio")}
    fmt = lambda x: "%.2f" % x if x is not None else "NA"
    for t, (size, unit) in TESTS.items():
        lat = unit == "usec"
        v, x = (statistics.median(figs[n][t]) if figs[n].get(t) else None for n in ("vrnic", "virtio"))
        better = ((x / v) if lat else (v / x)) if v and x else None
        goal = TARGET[unit]
        say("BENCH %s %s roce vrnic=%s rxe=%s unit=%s better=%s%s" % (
            t, size, fmt(v), fmt(x), unit, fmt(better),
            "" if better is None else " target=%gx %s" % (goal, "met" if better >= goal else "missed")))
        say("  each run: vrnic %s | rxe %s" % (" ".join(fmt(y) for y in figs["vrnic"].get(t, [])) or "-",
                                               " ".join(fmt(y) for y in figs["virtio"].get(t, [])) or "-"))
    errs = list(ctx.failed_runs)
    if not any(figs["virtio"].values()):
        errs.append("the rxe run produced no figures")
    return "; ".join(errs) or None
