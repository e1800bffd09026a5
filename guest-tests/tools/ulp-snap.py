#!/usr/bin/env python3
"""Where the time of an NVMe-oF I/O goes: run a bench-ulp command and account each of its NVMe 4 KiB windows.

    guest-tests/tools/ulp-snap.py [--out FILE] -- guest-tests/run bench-ulp --guest-arg vrnic.bench_ulp=nvme ...

bench-ulp.sh prints "ULP-SNAP g<i> <label> begin" in each guest before (pre-r<k>) and after (post-r<k>) its fio
4 KiB random read run, then that guest's /proc/interrupts and /proc/stat rows. This tool follows the run's console
logs (guest-tests/out/bench-ulp/console-*.log); on each "begin" it records the host's side at that moment: the CPU
time (utime+stime) of every thread of every QEMU and vrnic process whose command line names this worktree or
VRNIC_CACHE, and each vrnic server's control-socket `stats`. At the end it prints, per console log and window:
the guest's vCPU busy share and interrupt counts, the host threads' CPU seconds per process, and every vrnic
counter that moved, each also per I/O (the fio IOPS of that window times its runtime). Records go to FILE (JSON
lines) too."""
import glob
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "harness"))
from vrnic_harness.run.checks_eth import ETH_TOOL  # noqa: E402
from vrnic_harness.run.checks_ulp import fio_result  # noqa: E402
from vrnic_harness.qemu import control_command  # noqa: E402
from vrnic_harness.run.console import console_lines  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
SNAP = re.compile(r"ULP-SNAP g(\d) (\S+) (begin|irq|stat|end)(.*)$")


def ours():
    """{pid: (kind, cmdline list)} of this worktree's / cache's QEMU and vrnic processes."""
    keys = [ROOT, os.environ.get("VRNIC_CACHE", "/nonexistent")]
    out = {}
    for d in glob.glob("/proc/[0-9]*"):
        try:
            argv = open(d + "/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        cl = b" ".join(argv).decode(errors="replace")
        names = [os.path.basename(a.decode(errors="replace")) for a in argv[:4]]
        kind = ("qemu" if any(n.startswith("qemu-system") for n in names) else "vrnic" if names[0] == "vrnic"
                else None)
        if kind and any(k in cl for k in keys):
            out[int(d[6:])] = (kind, [a.decode(errors="replace") for a in argv])
    return out


def thread_cpu(pid):
    """{tid comm: CPU seconds} of one process's threads."""
    res = {}
    for t in glob.glob("/proc/%d/task/*" % pid):
        try:
            f = open(t + "/stat").read()
        except OSError:
            continue
        comm = f[f.index("(") + 1:f.rindex(")")]
        rest = f[f.rindex(")") + 2:].split()
        res["%s %s" % (os.path.basename(t), comm)] = (int(rest[11]) + int(rest[12])) / TICK
    return res


def stats(argv):
    if "--control" not in argv:
        return None
    try:
        return json.loads(control_command(argv[argv.index("--control") + 1], "stats", 5))
    except (OSError, ValueError):
        return None


def host_snap():
    procs = {}
    for pid, (kind, argv) in ours().items():
        tag = next((os.path.basename(a) for a in argv if a.endswith(".sock") or "/initrd-" in a), "")
        procs["%s %d %s" % (kind, pid, tag)] = {"threads": thread_cpu(pid), "stats": stats(argv) if kind == "vrnic"
                                                 else None}
    return {"t": time.time(), "procs": procs}


def flat(d, pre=""):
    if isinstance(d, dict):
        for k, v in d.items():
            yield from flat(v, pre + k + ".")
    elif isinstance(d, (int, float)) and not isinstance(d, bool):
        yield pre[:-1], d


def run_of(log):
    """The run a console log belongs to (its guests share it): console-<tag>-g<i>.log."""
    return re.sub(r"-g\d+\.log$", "", os.path.basename(log))


def report(recs, logs):
    ios = {}
    for log in logs:
        text = "\n".join(console_lines(open(log, errors="replace").read()))
        for m in ETH_TOOL.finditer(text):
            t = re.match(r"fio-bench-nvme-randread4k-r(\d+)$", m.group(1))
            r = fio_result(m.group(4)) if t else None
            if r and "read" in r:
                ios[(run_of(log), t.group(1))] = r["read"][0]
    by = {(r["log"], r["label"]): r for r in recs}
    for (log, label), post in sorted(by.items()):
        if not label.startswith("post-r"):
            continue
        k = label[6:]
        pre = by.get((log, "pre-r" + k))
        if not pre:
            continue
        iops = ios.get((run_of(log), k))
        wall = post["host"]["t"] - pre["host"]["t"]
        n = iops * wall if iops else None
        print("== %s window r%s: %.1f s, fio %s IOPS -> %s I/Os" % (
            os.path.basename(log), k, wall, "%.0f" % iops if iops else "?", "%.0f" % n if n else "?"))
        per = lambda x: "" if not n else " (%.3f per I/O)" % (x / n)
        a, b = pre["guest"], post["guest"]
        for cpu in sorted(b.get("stat", {})):
            v0, v1 = a["stat"].get(cpu), b["stat"][cpu]
            if v0:
                d = [y - x for x, y in zip(v0, v1)]
                busy = sum(d) - d[3] - d[4]
                print("  guest %s busy %.0f%% (user %d sys %d irq %d softirq %d idle %d iowait %d ticks)" % (
                    cpu, 100.0 * busy / max(1, sum(d)), d[0], d[2], d[5], d[6], d[3], d[4]))
        for row, v1 in sorted(b.get("irq", {}).items()):
            d = v1 - a["irq"].get(row, 0)
            if d:
                print("  guest irq %-40s %8d%s" % (row, d, per(d)))
        for p, hp in sorted(post["host"]["procs"].items()):
            h0 = pre["host"]["procs"].get(p)
            if not h0:
                continue
            tot = 0.0
            rows = []
            for th, c in hp["threads"].items():
                d = c - h0["threads"].get(th, 0.0)
                tot += d
                if d >= 0.05:
                    rows.append("%s=%.2f" % (th.split(" ", 1)[1], d))
            print("  host %s: %.2f CPU s = %.0f%% of one CPU%s  [%s]" % (
                p, tot, 100 * tot / wall, "" if not n else ", %.0f us per I/O" % (1e6 * tot / n), " ".join(rows)))
            if hp["stats"] and h0["stats"]:
                s0 = dict(flat(h0["stats"]))
                for key, v in flat(hp["stats"]):
                    d = v - s0.get(key, 0)
                    if d and not key.startswith(("cpu_latency_qos", "uptime")) and ".last_" not in key:
                        print("    %-55s %10d%s" % (key, d, per(d)))


def main():
    args = sys.argv[1:]
    out = None
    if args[:1] == ["--out"]:
        out, args = args[1], args[2:]
    if args[:1] == ["--"]:
        args = args[1:]
    name = next((a for a in args[1:] if not a.startswith("-")), "bench-ulp")
    outdir = os.path.join(ROOT, "guest-tests", "out", name)
    start = time.time()
    p = subprocess.Popen(args)
    seen, recs, guest, pos = {}, [], {}, {}
    while True:
        done = p.poll() is not None
        logs = [f for f in glob.glob(os.path.join(outdir, "console-*.log")) if os.path.getmtime(f) >= start - 1]
        for log in logs:
            with open(log, "rb") as f:
                f.seek(pos.get(log, 0))
                data = f.read()
            cut = data.rfind(b"\n") + 1
            pos[log] = pos.get(log, 0) + cut
            for line in data[:cut].decode(errors="replace").splitlines():
                m = SNAP.search(line.strip())
                if not m:
                    continue
                key = (log, m.group(2))
                g = guest.setdefault(key, {"irq": {}, "stat": {}})
                if m.group(3) == "begin" and key not in seen:
                    seen[key] = host_snap()
                elif m.group(3) == "irq":
                    f = m.group(4).split()
                    if f and f[0].endswith(":"):
                        cnt = [int(x) for x in f[1:] if x.isdigit()]
                        names = [x for x in f[1:] if not x.isdigit()]
                        g["irq"]["%s %s" % (f[0], names[-1] if names else "")] = sum(cnt)
                elif m.group(3) == "stat":
                    f = m.group(4).split()
                    g["stat"][f[0]] = [int(x) for x in f[1:9]]
        if done:
            break
        time.sleep(0.3)
    for key, h in seen.items():
        recs.append({"log": key[0], "label": key[1], "host": h, "guest": guest.get(key, {})})
    if out:
        with open(out, "w") as f:
            for r in recs:
                f.write(json.dumps(r) + "\n")
    report(recs, sorted({r["log"] for r in recs}))
    return p.returncode


if __name__ == "__main__":
    sys.exit(main())
