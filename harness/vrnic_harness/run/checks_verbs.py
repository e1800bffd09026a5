"""Checks of the verbs scenarios run by guest C programs (guest-tests/src): device-memory, errors,
resize-cq, timestamp, bad-opcode, peer-loss, ulp, churn, rereg, hostile, verbs-objects."""
import re
import subprocess
import time
from dataclasses import replace

from ..common import say
from . import stats
from .console import bad_lines_reason, console_lines, mlx5_bad_lines, mlx5_up_reason
from .checks_pairs import check_pairs, judge_pingpong, tool_brief, tool_runs


VERBS_MIN_CHECKS = 400


def check_device_memory(ctx):
    text = "\n".join(console_lines(ctx.text))
    errs = []
    for line in re.findall(r"^FAIL .*$", text, re.M):
        errs.append(line)
    passes = re.findall(r"^DM-TEST PASS (\d+) checks$", text, re.M)
    if len(passes) != 2:
        errs.append("expected DM-TEST PASS from both guests, got %d (%s)" % (
            len(passes), "; ".join(re.findall(r"^DM-TEST FAIL .*$", text, re.M)) or "crash or hang?"))
    if not re.search(r"maximum available device memory:\s*\d+", text):
        errs.append("ibv_devinfo shows no device memory")
    return "; ".join(errs[:3]) or None


def check_errors(ctx):
    text = "\n".join(console_lines(ctx.text))
    r = mlx5_up_reason(text)
    if r:
        return r
    errs = re.findall(r"^FAIL .*$", text, re.M)
    m = re.search(r"^ERR-TEST (PASS (\d+) checks|FAIL .*)$", text, re.M)
    if not m:
        return "err_test printed no ERR-TEST line (crash or hang?)"
    if m.group(1).startswith("FAIL") or errs:
        return "err_test: %s%s" % (m.group(1), (": " + errs[0]) if errs else "")
    if int(m.group(2)) < 20:
        return "err_test PASS with only %s checks" % m.group(2)
    after = text.split("=== ibv_devinfo after ===")[-1]
    if "PORT_ACTIVE" not in after:
        return "port not ACTIVE after the errors"
    return None


def check_resize_cq(ctx):
    text = "\n".join(console_lines(ctx.text))
    r = mlx5_up_reason(text)
    if r:
        return r
    # The one resize below the unpolled count: the device refuses it, mlx5_core logs the status.
    refused = re.compile(r"MODIFY_CQ\(0x403\) op_mod\(0x1\) failed, status bad parameter\(0x3\)")
    lines = mlx5_bad_lines(ctx.text)
    bad = [l for l in lines if not refused.search(l)]
    for l in bad:
        say("MLX5 BAD DMESG LINE: %s" % l)
    if bad:
        return "%d mlx5/ib error line(s) in dmesg, first: %s" % (len(bad), bad[0])
    if len(lines) != 1:
        return "expected mlx5_core to log the one refused MODIFY_CQ resize, it logged %d" % len(lines)
    say("RESIZE-CQ the too-small resize, as mlx5_core logged it: %s" % refused.search(lines[0]).group(0))
    fails = re.findall(r"^FAIL .*$", text, re.M)
    m = re.search(r"^RESIZE-CQ (PASS (\d+) checks (\d+) resizes|FAIL .*)$", text, re.M)
    if not m:
        return "resize_cq printed no RESIZE-CQ line (crash or hang?)"
    if m.group(1).startswith("FAIL") or fails:
        return "resize_cq: %s%s" % (m.group(1), (": " + fails[0]) if fails else "")
    if int(m.group(2)) < 40 or int(m.group(3)) < 10:
        return "resize_cq PASS with only %s checks, %s resizes" % (m.group(2), m.group(3))
    for l in re.findall(r"^ok   resize .*$", text, re.M):
        say("RESIZE-CQ " + l[5:])
    if "PORT_ACTIVE" not in text.split("=== ibv_devinfo after ===")[-1]:
        return "port not ACTIVE after the resizes"
    return None


def check_timestamp(ctx):
    text = "\n".join(console_lines(ctx.text))
    r = mlx5_up_reason(text) or bad_lines_reason(ctx.text)
    if r:
        return r
    fails = re.findall(r"^FAIL .*$", text, re.M)
    m = re.search(r"^TIMESTAMP (PASS (\d+) checks|FAIL .*)$", text, re.M)
    if not m:
        return "timestamp printed no TIMESTAMP line (crash or hang?)"
    if m.group(1).startswith("FAIL") or fails:
        return "timestamp: %s%s" % (m.group(1), (": " + fails[0]) if fails else "")
    if int(m.group(2)) < 7:
        return "timestamp PASS with only %s checks" % m.group(2)
    clk = re.search(r"hca_core_clock:\s*(\d+)", text)
    if not clk or int(clk.group(1)) == 0:
        return "ibv_devinfo -v shows no hca_core_clock"
    for l in re.findall(r"^ok   .*$", text, re.M):
        say("TIMESTAMP " + l[5:])
    if "PORT_ACTIVE" not in text.split("=== ibv_devinfo after ===")[-1]:
        return "port not ACTIVE at the end"
    return None


# bad_opcode.c's cases (BADOP lines): a NOP that must succeed, then WQEs the device must refuse.
BAD_OPCODE_CASES = ["NOP", "opcode-0x07", "masked-cs", "local-inval", "config-cmd", "umr-on-rc", "opcode-0xff",
                    "send-ds-0", "send-opmod-1", "send-fence-mode-7", "ud-rdma-write", "ud-send-inval"]


def check_bad_opcode(ctx):
    text = "\n".join(console_lines(ctx.text))
    r = mlx5_up_reason(text)
    if r:
        return r
    errs = re.findall(r"^FAIL .*$", text, re.M)
    m = re.search(r"^BAD-OPCODE (PASS (\d+) checks|FAIL .*)$", text, re.M)
    if not m:
        return "bad_opcode printed no BAD-OPCODE line (crash or hang?)"
    if m.group(1).startswith("FAIL") or errs:
        return "bad_opcode: %s%s" % (m.group(1), (": " + errs[0]) if errs else "")
    cases = dict(re.findall(r"^BADOP (\S+) (.*)$", text, re.M))
    for c in BAD_OPCODE_CASES:
        line = cases.get(c)
        if line is None:
            return "case %s: no BADOP line" % c
        if c == "NOP":
            want = ["status=success", "state=RTS"]
        else:
            want = ["status=local QP operation error", "flush=yes", "state=ERR", "recovered=yes"]
        missing = [w for w in want if w not in line.split(" PASS")[0]]
        if missing or not line.endswith(" PASS"):
            return "case %s: %s (wanted %s)" % (c, line, ", ".join(want))
    vendor = sorted(set(re.findall(r"^BADOP \S+ .*vendor_err=(\S+)", text, re.M)))
    say("BAD-OPCODE %d cases: NOP executed; %d refused with LOCAL_QP_OP_ERR (vendor_err %s), next WQE flushed, "
        "QP in ERR, recovered; %s checks" % (len(BAD_OPCODE_CASES), len(BAD_OPCODE_CASES) - 1, "/".join(vendor),
                                            m.group(2)))
    if int(m.group(2)) < 60:
        return "bad_opcode PASS with only %s checks" % m.group(2)
    after = text.split("=== ibv_devinfo after ===")[-1]
    if "PORT_ACTIVE" not in after:
        return "port not ACTIVE after the bad WQEs"
    return bad_lines_reason(text)


def server_rx_packets(server, tries=3):
    """A vrnic server's fabric rx_packets (stats: firmware.fabric.rx_packets), None when its control socket does
    not answer in `tries` attempts."""
    for _ in range(tries):
        rx = stats.get(stats.snapshot(server), "firmware", "fabric", "rx_packets")
        if isinstance(rx, int):
            return rx
        time.sleep(0.2)
    return None


def wait_server_rx(server, want, limit_s):
    """Waits up to limit_s for the server's fabric rx_packets to reach `want`: (reached, last count)."""
    end, rx = time.time() + limit_s, 0
    while time.time() < end:
        rx = server_rx_packets(server, 1) or 0
        if rx >= want:
            return True, rx
        time.sleep(0.2)
    return False, rx


def interact_peer_loss(ctx):
    """Waits until guest 1's vrnic has received RDMA traffic from guest 0's ib_write_bw client (2000 packets since
    the client started), then SIGKILLs it mid-transfer."""
    g0, s1 = ctx.guests[0], ctx.servers[1]
    if not g0.wait_for(r"PEERLOSS-CLIENT-START", timeout=150):
        return "guest 0 never started the ib_write_bw client"
    rx0 = server_rx_packets(s1) or 0
    ok, rx = wait_server_rx(s1, rx0 + 2000, 90)
    if not ok:
        return "guest 1's vrnic saw only %d packets in 90 s: no transfer to interrupt" % (rx - rx0)
    s1.p.kill()
    s1.p.wait()
    ctx.expect_dead = {s1.pid}
    say("PEERLOSS killed guest 1's vrnic (pid %d) after it had received %d packets" % (s1.pid, rx - rx0))
    # Guest 0 runs to its end; guest 1 (no device any more) gets a while to say it is alive, then stops.
    g1 = ctx.guests[1]
    m = g0.wait_for(r"VRNIC-SCENARIO-END \S+ rc=(\d+)", timeout=200)
    g1.wait_for(r"PEERLOSS-G1-ALIVE", timeout=30)
    try:
        g0.p.wait(10)
    except subprocess.TimeoutExpired:
        pass
    g1.kill()
    ctx.killed_ok = True
    if m is None:
        return "guest 0 never ended its scenario after the peer was killed"
    return None


def check_peer_loss(ctx):
    texts = ctx.texts
    if len(texts) < 2:
        return "expected two guests' output"
    t0 = "\n".join(console_lines(texts[0]))
    errs = []
    if not re.search(r"VRNIC-SCENARIO-END \S+ rc=0", t0):
        errs.append("guest 0's scenario did not end with rc=0")
    r = mlx5_up_reason(t0)
    if r:
        return r
    runs = tool_runs(ctx)
    cli = runs.get(("peer-loss", "client"))
    if cli is None:
        errs.append("the ib_write_bw client printed no result")
    else:
        st = re.search(r"status (\d+)|(retry counter exceeded)", cli["out"], re.I)
        if cli["rc"] == 0 or not st or (st.group(1) and st.group(1) != "12"):
            errs.append("client did not fail with IBV_WC_RETRY_EXC_ERR (12): %s" % tool_brief(cli))
        else:
            say("PEERLOSS guest 0's client failed as expected after %s s: %s" % (
                cli["seconds"], " | ".join(l.strip() for l in cli["out"].split("\n") if re.search(r"status|error|retry", l, re.I))[:200]))
    after = t0.split("=== ibv_devinfo after ===")[-1]
    if "PORT_ACTIVE" not in after:
        errs.append("guest 0's port not ACTIVE after the peer's loss")
    r = check_pairs(replace(ctx, texts=[texts[0]], text=texts[0]), ["after-loss"], judge_pingpong, "PEERLOSS after")
    if r:
        errs.append("guest 0's device after the loss: " + r)
    s0 = ctx.servers[0]
    if not s0.alive():
        errs.append("guest 0's vrnic died (rc %s)" % s0.p.returncode)
    g1 = "\n".join(console_lines(texts[1]))
    say("PEERLOSS guest 1 %s" % ("reported it is alive after losing its device" if "PEERLOSS-G1-ALIVE" in g1
                                 else "did not report back (its device server is gone)"))
    return "; ".join(errs) or None


def check_ulp(ctx):
    text = "\n".join(console_lines(ctx.text))
    r = mlx5_up_reason(text)
    if r:
        return r
    errs = []
    bad = mlx5_bad_lines(ctx.text)
    for l in bad:
        say("MLX5 BAD DMESG LINE: %s" % l)
    if bad:
        errs.append("%d mlx5/ib error line(s), first: %s" % (len(bad), bad[0]))
    m = re.search(r"^ULP cap_mask after=0x([0-9a-f]+)", text, re.M)
    if not m or not int(m.group(1), 16) & (1 << 16):
        errs.append("PortInfo.CapabilityMask has no CM_SUP (bit 16) after ib_cm: %s" % (m.group(1) if m else "?"))
    if "umad0" not in text:
        errs.append("no /dev/infiniband/umad0")
    f = re.search(r"^ULP ib0 flags=0x([0-9a-f]+) carrier=(\d*)", text, re.M)
    if not f or not int(f.group(1), 16) & 1:
        errs.append("ib0 is not up")
    elif f.group(2) != "1":
        errs.append("ib0 has no carrier (its broadcast-group join through vrnic's SA failed)")
    x = re.search(r"^ULP counter port_xmit_packets=(\d+)", text, re.M)
    if not x or int(x.group(1)) == 0:
        errs.append("port_xmit_packets (PerfMgt via MAD_IFC) is %s after IPoIB's MADs" % (x.group(1) if x else "missing"))
    if "ULP state=4: ACTIVE" not in text:
        errs.append("port not ACTIVE at the end")
    return "; ".join(errs) or None


def rss_kb(pid, field="RssAnon"):
    """The server's private resident memory (RssAnon): what a leak grows. VmRSS also counts the guest RAM pages
    the server's mapping of the memfd has touched (RssShmem), which grows as DMA reaches new guest pages
    (e.g. the kernel's UMR translation buffers) without the server holding anything more."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for l in f:
                if l.startswith(field + ":"):
                    return int(l.split()[1])
    except OSError:
        pass
    return None


def interact_churn(ctx):
    g, s = ctx.guests[0], ctx.servers[0]
    if not g.wait_for(r"CHURN-WARM-DONE", timeout=240):
        return "guest never finished the churn warm-up"
    ctx.notes["rss0"] = rss_kb(s.pid)
    st0 = settled_stats(s, secs=0)
    if not g.wait_for(r"CHURN-DONE", timeout=240):
        return "guest never finished the churn"
    ctx.notes["rss1"] = rss_kb(s.pid)
    st1 = settled_stats(s, secs=0)
    objs = lambda st: stats.get(st, "firmware", "objects")
    say("CHURN server RssAnon after warm-up %s kB, after the run %s kB (RssShmem, guest RAM it touched: %s kB); "
        "objects %s -> %s" % (ctx.notes["rss0"], ctx.notes["rss1"], rss_kb(s.pid, "RssShmem"), objs(st0), objs(st1)))
    return None


def check_churn(ctx):
    text = "\n".join(console_lines(ctx.text))
    m = re.search(r"^CHURN (PASS (\d+) iterations|FAIL .*)$", text, re.M)
    if not m:
        return "churn printed no CHURN line"
    if m.group(1).startswith("FAIL"):
        return "churn: " + m.group(1)
    r0, r1 = ctx.notes.get("rss0"), ctx.notes.get("rss1")
    if not r0 or not r1:
        return "server RSS not sampled"
    if r1 > r0 * 1.05:
        return "server RssAnon grew from %d kB to %d kB (> 5%%) over %s iterations" % (r0, r1, m.group(2))
    return None


def settled_stats(server, secs=4.0):
    """The server's stats once its mkey count has held still for a second (the MR cache's background fill
    may still be creating keys); None if the control socket does not answer."""
    last, since, end = None, time.time(), time.time() + secs
    while True:
        st = stats.snapshot(server)
        if st is None:
            return None
        n = stats.get(st, "firmware", "objects", "mkey")
        if n != last:
            last, since = n, time.time()
        elif time.time() - since >= 1.0 or time.time() > end:
            return st
        time.sleep(0.2)


def interact_rereg(ctx):
    g, s = ctx.guests[0], ctx.servers[0]
    if not g.wait_for(r"REREG-BASELINE", timeout=200):
        return "guest never reached REREG-BASELINE"
    ctx.notes["rereg0"] = settled_stats(s, secs=8.0)
    if not g.wait_for(r"REREG-END", timeout=400):
        return "guest never reached REREG-END"
    ctx.notes["rereg1"] = settled_stats(s)
    return None


def check_rereg(ctx):
    text = "\n".join(console_lines(ctx.text))
    r = mlx5_up_reason(text) or bad_lines_reason(ctx.text)
    if r:
        return r
    m = re.search(r"^REREG (PASS (\d+) checks (\d+) cycles|FAIL .*)$", text, re.M)
    if not m:
        return "rereg printed no REREG line (crash or hang?)"
    errs = re.findall(r"^FAIL .*$", text, re.M)
    if m.group(1).startswith("FAIL") or errs:
        return "rereg: %s%s" % (m.group(1), (": " + errs[0]) if errs else "")
    if int(m.group(2)) < 150 or int(m.group(3)) != 1000:
        return "rereg PASS with only %s checks / %s cycles" % (m.group(2), m.group(3))
    s0, s1 = ctx.notes.get("rereg0"), ctx.notes.get("rereg1")
    if not s0 or not s1:
        return "server stats not read at REREG-BASELINE/REREG-END"
    f0, f1 = s0["firmware"], s1["firmware"]
    k0, k1 = f0["objects"]["mkey"], f1["objects"]["mkey"]
    umr = f1["umr_wqes"] - f0["umr_wqes"]
    # UMR errors in the scenario's window (an earlier scenario of the boot may have provoked some: bad-opcode)
    errors = f1["umr_errors"] - stats.get(ctx.stats_before[0] if ctx.stats_before else None, "firmware",
                                          "umr_errors", default=0)
    say("REREG mkeys at baseline %d, after 1000 cycles %d; UMR WQEs executed %d, UMR errors %d"
        % (k0, k1, umr, errors))
    if k1 != k0:
        return "mkey count %d after the cycles, %d at the baseline" % (k1, k0)
    if umr < 3000:
        return "only %d UMR WQEs executed (reg, rereg and dereg of 1000 cycles need more)" % umr
    if errors:
        return "%d UMR WQEs completed with an error" % errors
    if "PORT_ACTIVE" not in text.split("REREG-RC")[-1]:
        return "port not ACTIVE after rereg"
    return None


def check_hostile(ctx):
    text = "\n".join(console_lines(ctx.text))
    m = re.search(r"^HOSTILE (PASS (\d+) checks|FAIL .*)$", text, re.M)
    if not m:
        return "hostile printed no HOSTILE line (crash or hang?)"
    fails = re.findall(r"^FAIL .*$", text, re.M)
    if m.group(1).startswith("FAIL") or fails:
        return "hostile: %s%s" % (m.group(1), (": " + fails[0]) if fails else "")
    if "HOSTILE-AFTER state=4: ACTIVE" not in text:
        return "port not ACTIVE after the hostile run and a reload"
    return None


def check_verbs_objects(ctx):
    text = "\n".join(console_lines(ctx.text))
    r = mlx5_up_reason(text)
    if r:
        return r
    errs = []
    fails = re.findall(r"^CHECK \d+ FAIL .*$", text, re.M)
    for f in fails:
        say("VERBS " + f)
    m = re.search(r"^VERBS-OBJECTS (PASS (\d+) checks|FAIL .*)$", text, re.M)
    if not m:
        errs.append("verbs_objects printed no VERBS-OBJECTS line (crash or hang?)")
    elif m.group(1).startswith("FAIL"):
        errs.append("verbs_objects: %s%s" % (m.group(1), (": " + fails[0]) if fails else ""))
    elif int(m.group(2)) < VERBS_MIN_CHECKS or fails:
        errs.append("verbs_objects PASS with %s checks (expected >= %d) and %d FAIL lines" % (
            m.group(2), VERBS_MIN_CHECKS, len(fails)))
    rc = re.search(r"^VERBS-OBJECTS-RC (\d+) seconds=(\S+)", text, re.M)
    if rc:
        say("VERBS verbs_objects exit %s, %s s guest time; %s" % (
            rc.group(1), rc.group(2), m.group(0) if m else "no result line"))
        if rc.group(1) != "0" and not errs:
            errs.append("verbs_objects exit code %s" % rc.group(1))
    for n in re.findall(r"^NOTE .*$", text, re.M):
        say("VERBS " + n)
    m2 = re.search(r"^=== ibv_devinfo after ===\n(.*?)^=== end ibv_devinfo after ===", text, re.S | re.M)
    if not m2 or not re.search(r"^\s+state:\s+PORT_ACTIVE \(4\)$", m2.group(1), re.M):
        errs.append("ibv_devinfo after verbs_objects does not show PORT_ACTIVE")
    r = bad_lines_reason(text)
    if r:
        errs.append(r)
    return "; ".join(errs) or None

# ---- scale: objects up to what the device advertises, used, destroyed; counts and memory back to the baseline
SCALE_KB_PER_KEPT_MKEY = 2
SCALE_KINDS = ("pd", "uar", "eq", "cq", "srq", "qp", "xrcd", "mkey", "mtt_entries")
SCALE_LIMIT_RX = re.compile(r"(CREATE_QP|CREATE_CQ|CREATE_SRQ|CREATE_MKEY)\(0x[0-9a-f]+\) op_mod\(0x0\) failed, "
                            r"status limits exceeded\(0x8\)"
                            r"|mlx5_\d+: create_qp:\d+:\(pid \d+\): Create QP type 2 failed")  # mlx5_ib's echo of it


def scale_limit_errors(text, o0):
    """A phase asked to go to the device's maximum (argument 0) must have met it exactly: the objects the process
    created plus those the kernel had at the baseline equal what ibv_query_device advertised, and the next create
    was refused. (Without the refusal the device accepted more than it advertises.)"""
    args = re.search(r"^=== scale (-?\d+) (-?\d+) (-?\d+) (-?\d+) ===$", text, re.M)
    if not args:
        return ["scale printed no '=== scale' line"]
    errs = []
    for kind, pos, line in (("qp", 0, r"^SCALE-QP created=(\d+) max=(\d+) refusal=(\d+)"),
                            ("cq", 2, r"^SCALE-CQ created=(\d+) max=(\d+) refusal=(\d+)")):
        if args.group(pos + 1) != "0":
            continue
        m = re.search(line, text, re.M)
        if not m:
            errs.append("no SCALE-%s line" % kind.upper())
            continue
        made, most, refusal = (int(x) for x in m.groups())
        kernel = o0.get(kind) or 0
        say("SCALE %s: %d created + %d the kernel's = %d, advertised %d, the next refused with errno %d" % (
            kind, made, kernel, made + kernel, most, refusal))
        if made + kernel != most or not refusal:
            errs.append("%ss: %d created + %d the kernel's, %d advertised, refusal errno %d" % (
                kind, made, kernel, most, refusal))
    return errs


def interact_scale(ctx):
    """Samples the server (settled object counts, RssAnon) at SCALE-BASELINE and at SCALE-END."""
    g, s = ctx.guests[0], ctx.servers[0]
    if not g.wait_for(r"SCALE-BASELINE", timeout=240):
        return "guest never reached SCALE-BASELINE"
    ctx.notes["scale0"] = (settled_stats(s), rss_kb(s.pid))
    if not g.wait_for(r"SCALE-END", timeout=ctx.timeout):
        return "guest never reached SCALE-END"
    ctx.notes["scale1"] = (settled_stats(s, secs=10.0), rss_kb(s.pid))
    return None


def check_scale(ctx):
    """scale.c's own checks passed (every refusal a clean errno, every QP in RTS, every sampled pair exchanged its
    message); a phase run to the maximum met it exactly and was refused past it; the server's object counts at
    SCALE-END equal the baseline's (memory keys: mlx5_ib's MR cache keeps some); its RssAnon within 10% + 8 MiB of
    the baseline, + 2 KiB a key the cache keeps. The rates per 1024 objects are printed (flat or not)."""
    text = "\n".join(console_lines(ctx.text))
    # the refusal at the device's maximum is mlx5_core's "failed, status limits exceeded" line, one per phase
    # that reached it; any other mlx5 error line fails
    limits = [l for l in mlx5_bad_lines(ctx.text) if SCALE_LIMIT_RX.search(l)]
    other = [l for l in mlx5_bad_lines(ctx.text) if not SCALE_LIMIT_RX.search(l)]
    for l in limits:
        say("SCALE refusal at the limit: %s" % l)
    if other:
        return "%d mlx5/ib error line(s) in dmesg, first: %s" % (len(other), other[0])
    m = re.search(r"^SCALE (PASS (\d+) checks|FAIL .*)$", text, re.M)
    if not m:
        return "scale printed no SCALE line (crash or hang?)"
    for l in re.findall(r"^SCALE-(?:QP|MR|CQ) .*$", text, re.M):
        say("SCALE %s" % l)
    rates = {}
    for phase, at, per_s in re.findall(r"^SCALE-RATE (\S+) (\d+) (\d+)$", text, re.M):
        rates.setdefault(phase, []).append((int(at), int(per_s)))
    for phase, rs in rates.items():
        vals = [v for _, v in rs]
        say("SCALE rate %-10s per 1024: first %d/s, last %d/s, min %d/s, max %d/s (%d buckets)" % (
            phase, vals[0], vals[-1], min(vals), max(vals), len(vals)))
    if m.group(1).startswith("FAIL"):
        fails = re.findall(r"^FAIL .*$", text, re.M)
        return "scale: %s%s" % (m.group(1), (": " + fails[0]) if fails else "")
    (s0, rss0), (s1, rss1) = ctx.notes.get("scale0", (None, None)), ctx.notes.get("scale1", (None, None))
    if not s0 or not s1:
        return "server stats not read at SCALE-BASELINE/SCALE-END"
    o0, o1 = s0["firmware"]["objects"], s1["firmware"]["objects"]
    say("SCALE objects at the baseline %s; at the end %s; server RssAnon %s kB -> %s kB" % (
        " ".join("%s=%s" % (k, o0.get(k)) for k in SCALE_KINDS), " ".join("%s=%s" % (k, o1.get(k)) for k in SCALE_KINDS),
        rss0, rss1))
    errs = ["%s %s at the end, %s at the baseline" % (k, o1.get(k), o0.get(k))
            for k in SCALE_KINDS if k not in ("mkey", "mtt_entries") and o1.get(k) != o0.get(k)]
    errs += scale_limit_errors(text, o0)
    # mlx5_ib's MR cache keeps deregistered keys (live device objects, their translation entries with them): each
    # may hold SCALE_KB_PER_KEPT_MKEY of the server's memory on top of the margin
    kept = max(0, (o1.get("mkey") or 0) - (o0.get("mkey") or 0))
    if rss0 and rss1 and rss1 > rss0 * 1.10 + 8192 + kept * SCALE_KB_PER_KEPT_MKEY:
        errs.append("server RssAnon %d kB at the end, %d kB at the baseline (%d memory keys kept by the MR cache)" % (
            rss1, rss0, kept))
    return "; ".join(errs) if errs else None
