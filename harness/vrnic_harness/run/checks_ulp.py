"""Checks of the kernel-ULP, UCX and libfabric scenarios (nvmeof, nfs-rdma, ucx, libfabric; issue 22), all on two
guests over RoCE v2 (vrnic ports, or virtio-net + rxe with `--eth-nic virtio`): what the guests printed
(scenarios/ulp-lib.sh: ULP-* lines, ETH-TOOL blocks around each tool run). Each check says what it verified
(ULP ... lines) and returns None or the reasons it failed."""
import re

from ..common import say
from . import checks_roce
from .checks_eth import texts, tools
from .checks_pairs import TOOL_RX, tool_runs
from .console import bad_lines_reason, mlx5_bad_lines

FIO_JOB = re.compile(r"^(\S+): \(groupid=\d+, jobs=\d+\): err=\s*(\d+)", re.M)
FIO_DIR = re.compile(r"^\s+(read|write): IOPS=([\d.]+)([kM]?), BW=([\d.]+)([KMG]i)B/s", re.M)
UNIT = {"": 1, "k": 1e3, "M": 1e6}
BUNIT = {"Ki": 1 / 1024, "Mi": 1, "Gi": 1024}


def fio_result(out):
    """{"err": first job's err=, "read"/"write": (IOPS, MiB/s)} of one fio run's normal output, or None."""
    m = FIO_JOB.search(out)
    if not m:
        return None
    res = {"err": int(m.group(2))}
    for d, iops, u, bw, bu in FIO_DIR.findall(out):
        res.setdefault(d, (float(iops) * UNIT[u], float(bw) * BUNIT[bu]))
    return res


def judge_fio(tl, key, errs, want=("read", "write"), limit_ok=False):
    """One fio ETH-TOOL block: rc 0 (or not the timeout when limit_ok), err= 0, no verify complaint, a figure
    per direction in `want`. Returns its fio_result or None."""
    r = tl.get(key)
    if r is None:
        errs.append("%s: fio did not run on g%d" % key)
        return None
    res = fio_result(r["out"])
    bad = re.findall(r"^.*(?:verify: bad|bad magic|crc32c: verify failed|fio: io_u error|Input/output error).*$",
                     r["out"], re.M)
    say("ULP fio %s g%d: rc %d, %s s, %s%s" % (key[0], key[1], r["rc"], r["seconds"], res or "no fio summary",
                                              (", first complaint: " + bad[0].strip()) if bad else ""))
    if r["rc"] == 124:
        errs.append("%s: fio hung (killed at its limit)" % key[0])
    elif r["rc"] != 0 and not limit_ok:
        errs.append("%s: fio rc %d" % (key[0], r["rc"]))
    if res is None:
        errs.append("%s: no fio job summary" % key[0])
        return None
    if not limit_ok and (res["err"] or bad):
        errs.append("%s: fio err=%d%s" % (key[0], res["err"], (" (%s)" % bad[0].strip()) if bad else ""))
    for d in want:
        if d not in res or res[d][0] <= 0:
            errs.append("%s: no %s IOPS" % (key[0], d))
    return res


def line(t, tag):
    m = re.search(r"^%s (.*)$" % tag, t, re.M)
    return m.group(1).strip() if m else None


def fields(s):
    return dict(re.findall(r"(\w+)=(\S*)", s or ""))


def split_at(t, marker):
    """A guest's text before and after the first line starting with `marker` (all of it before when absent)."""
    i = t.find("\n" + marker)
    return (t, "") if i < 0 else (t[:i], t[i:])


def restart_bad_lines(after, allow):
    """mlx5/ib error lines of the part after a device restart, less those of the ULP reporting the outage."""
    return [l for l in mlx5_bad_lines(after) if not re.search(allow, l)]


# ---- nvmeof ------------------------------------------------------------------------------------------------
NVMEOF_JOBS = [("rand4k-write", ("write", "read")), ("rand4k-read", ("read",)), ("seq128k-write", ("write", "read")),
               ("seq128k-read", ("read",))]
NVME_OUTAGE = r"nvme\d*|nvmet|nvme_rdma|nvmet_rdma|nvme-fabrics"


def judge_nvme_basic(tx, tl, errs):
    """The target up on g0, g1's connect (rdma, live, the namespace's size), the four fio jobs, the disconnect.
    Returns g1's ULP-NVME-DISCONNECT lines."""
    up = fields(line(tx[0], "ULP-NVMET-UP"))
    say("ULP nvmet target g0: %s" % (up or "none"))
    if not up:
        errs.append("g0: no nvmet target (ULP-NVMET-UP)")
    cons = re.findall(r"^ULP-NVME-CONNECT (.*)$", tx[1], re.M)
    for c in cons:
        say("ULP nvme connect g1: %s" % c)
    if not cons:
        errs.append("g1: nvme connect never gave a namespace")
    else:
        f = fields(cons[0])
        if f.get("transport") != "rdma" or f.get("state") != "live":
            errs.append("g1: controller transport %s state %s, want rdma live" % (f.get("transport"), f.get("state")))
        if up and f.get("bytes") != up.get("ns_bytes"):
            errs.append("g1: namespace of %s bytes, the target's is %s" % (f.get("bytes"), up.get("ns_bytes")))
    if "fio-rand4k-write" not in {k[0] for k in tl}:
        errs.append("fio is not in the guest image (%s)" % (line(tx[1], "ULP-DD-VERIFY") or "no dd check either"))
    for job, want in NVMEOF_JOBS:
        judge_fio(tl, ("fio-" + job, 1), errs, want)
    disc = re.findall(r"^ULP-NVME-DISCONNECT (.*)$", tx[1], re.M)
    if not disc or fields(disc[0]).get("left"):
        errs.append("g1: nvme disconnect left the controller (%s)" % (disc[:1] or "no disconnect"))
    return disc


def check_nvmeof(ctx):
    errs = []
    checks_roce.up_lines(ctx, errs)
    tx = texts(ctx)
    if len(tx) < 2:
        return "two guests expected"
    tl = tools(ctx)
    disc = judge_nvme_basic(tx, tl, errs)
    # the restart under load
    rs = fields(line(tx[0], "ULP-RESTART"))
    say("ULP restart g0: %s; port re-enabled: %s" % (rs or "none", "yes" if line(tx[0], "ULP-NVMET-REENABLED") is not None
                                                   else "no"))
    if not rs:
        errs.append("g0: the RDMA device did not come back after its restart")
    load = judge_fio(tl, ("fio-load", 1), errs, want=(), limit_ok=True)
    _, after_restart = split_at(tx[1], "ULP-RESTART-BEGIN")
    recov = re.findall(r"nvme nvme\d+: (starting error recovery|Successfully reconnected \(\d+ attempts?\)|"
                       r"Reconnecting in \d+ seconds)", after_restart)
    say("ULP host's view of the restart (nvme-rdma, dmesg): %s" % (", ".join(dict.fromkeys(recov)) or "nothing"))
    if not any(r.startswith("starting error recovery") for r in recov):
        errs.append("the host never saw the target's restart (no nvme error recovery): nothing was tested")
    st = fields(line(tx[1], "ULP-NVME-STATE"))
    after = tl.get(("fio-after-restart", 1))
    if st.get("state") == "live":
        say("ULP restart under load: the host reconnected (controller live %s s after the load ended), load fio rc %s"
            % (st.get("waited"), tl[("fio-load", 1)]["rc"] if load is not None else "-"))
        if load is not None and (load["err"] or tl[("fio-load", 1)]["rc"]):
            errs.append("the host reconnected but the load's fio failed (err=%d): I/O lost across the reconnect"
                        % load["err"])
        judge_fio(tl, ("fio-after-restart", 1), errs, ("write", "read"))
    else:
        say("ULP restart under load: the host did not reconnect (controller %s); load fio rc %s" % (
            st.get("state"), tl[("fio-load", 1)]["rc"] if load is not None else "-"))
        errs.append("the host never reconnected to the restarted target (controller %s)" % st.get("state"))
        if after:
            errs.append("fio ran after the restart on a controller that was not live")
    if len(disc) < 2 or fields(disc[1]).get("left"):
        errs.append("g1: the second nvme disconnect left the controller (%s)" % (disc[1:2] or "no disconnect"))
    for gi, t in enumerate(tx):
        before, rest = split_at(t, "ULP-RESTART-BEGIN")
        r = bad_lines_reason(before)
        if r:
            errs.append("g%d before the restart: %s" % (gi, r))
        bad = restart_bad_lines(rest, NVME_OUTAGE)
        for l in bad:
            say("MLX5 BAD DMESG LINE (after the restart): %s" % l)
        if bad:
            errs.append("g%d after the restart: %d mlx5/ib error line(s), first: %s" % (gi, len(bad), bad[0]))
    return "; ".join(errs) or None


FIO_LAT = re.compile(r"^\s+lat \((nsec|usec|msec)\):.*?avg=\s*([\d.]+)", re.M)
LAT_SCALE = {"nsec": 1e-3, "usec": 1.0, "msec": 1e3}


def fio_lat_usec(out):
    """The mean total latency (fio's `lat (..): avg=`) of one fio run in usec, or None."""
    m = FIO_LAT.search(out)
    return float(m.group(2)) * LAT_SCALE[m.group(1)] if m else None


# ---- nfs-rdma -----------------------------------------------------------------------------------------------
NFS_SIZES = ["1024", "65536", "1048576", "16777216"]


def check_nfs_rdma(ctx):
    errs = []
    checks_roce.up_lines(ctx, errs)
    tx = texts(ctx)
    if len(tx) < 2:
        return "two guests expected"
    judge_nfs(tx, tools(ctx), errs)
    r = bad_lines_reason(ctx.text)
    if r:
        errs.append(r)
    return "; ".join(errs) or None


def judge_nfs(tx, tl, errs):
    """g0's server (RDMA listener), g1's mount (rdma, 20049, 4.2), the files' sums on all three sides, the fio
    jobs on the mount, the transport in mountstats, the umount."""
    up = line(tx[0], "ULP-NFSD-UP")
    say("ULP nfsd g0: %s" % (up or "none"))
    if not up or "rdma 20049" not in up.replace(",", " ").replace("  ", " "):
        errs.append("g0: the NFS server has no RDMA listener on 20049 (%s)" % up)
    mnt = line(tx[1], "ULP-NFS-MOUNT")
    say("ULP nfs mount g1: %s" % (mnt or "none"))
    if not mnt:
        errs.append("g1: the export was not mounted")
    else:
        for want in ("proto=rdma", "port=20049", "vers=4.2"):
            if want not in mnt:
                errs.append("g1: the mount has no %s (%s)" % (want, mnt))
    sums = {}
    for t in tx:
        for who, name, s in re.findall(r"^ULP-NFS-SUM g\d (\w+) (\S+) (\w+)", t, re.M):
            sums[(who, name)] = s
    for size in NFS_SIZES:
        f = "f." + size
        got = {w: sums.get((w, f)) for w in ("src", "nfs", "export")}
        ok = got["src"] and got["src"] == got["nfs"] == got["export"]
        say("ULP nfs file %s (%s B): written %s, read back %s, on the server %s: %s" % (
            f, size, (got["src"] or "-")[:16], (got["nfs"] or "-")[:16], (got["export"] or "-")[:16],
            "equal" if ok else "DIFFER"))
        if not ok:
            errs.append("%s: sha256 written/read back/on the server differ or missing" % f)
    for m in re.findall(r"^ULP-NFS-WRITE-FAIL (.*)$", tx[1], re.M):
        errs.append("g1: write failed: %s" % m)
    judge_fio(tl, ("fio-nfs-seq128k", 1), errs, ("write", "read"))
    judge_fio(tl, ("fio-nfs-rand4k", 1), errs, ("write", "read"))
    lat = judge_fio(tl, ("fio-nfs-lat4k", 1), errs, ("read",))
    if lat is not None:
        us = fio_lat_usec(tl[("fio-nfs-lat4k", 1)]["out"])
        say("ULP NFS/RDMA small-operation round trip (fio 4 KiB O_DIRECT read, QD1, psync): %s usec mean, %.0f IOPS"
            % ("%.1f" % us if us is not None else "NA", lat["read"][0]))
    xprt = re.findall(r"^ULP-NFS-MOUNTSTATS g1 \s*xprt:\s*(\S+)", tx[1], re.M)
    say("ULP nfs transport (mountstats): %s" % (xprt or "none"))
    if xprt and xprt[0] != "rdma":
        errs.append("g1: the mount's transport is %s, not rdma" % xprt[0])
    um = fields(line(tx[1], "ULP-NFS-UMOUNT"))
    if um.get("left") != "0":
        errs.append("g1: umount left the mount (%s)" % um)


# ---- ib-ulp: nvmeof's and nfs-rdma's checks on the IB personality (rdma_cm over IPoIB addresses) --------------
IB_ULP_UP = re.compile(r"^IB-ULP-UP g(\d+) (.*)$", re.M)


def check_ib_ulp(ctx):
    errs = []
    tx = texts(ctx)
    if len(tx) < 2:
        return "two guests expected"
    for gi, t in enumerate(tx):
        m = IB_ULP_UP.search(t)
        f = fields(m.group(2) if m else "")
        say("ULP IB g%d: %s" % (gi, f or "no IB-ULP-UP line"))
        if not m:
            errs.append("g%d: ib0 never came up (no IB-ULP-UP)" % gi)
        elif f.get("link_layer") != "InfiniBand" or f.get("state") != "4" or not f.get("dev", "").startswith("mlx5_"):
            errs.append("g%d: want an ACTIVE mlx5 InfiniBand port under ib0, got %s" % (gi, f))
    tl = tools(ctx)
    judge_nvme_basic(tx, tl, errs)
    judge_nfs(tx, tl, errs)
    r = bad_lines_reason(ctx.text)
    if r:
        errs.append(r)
    return "; ".join(errs) or None


def pair_runs(ctx):
    """{(label, role): run} of the roce_pair TOOL blocks (scenarios/roce-lib.sh)."""
    return tool_runs(ctx)


# ---- ucx ----------------------------------------------------------------------------------------------------
UCX_FINAL = re.compile(r"^Final:\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)",
                       re.M)
UCX_TESTS = ["tag_lat", "tag_bw", "put_lat", "put_bw"]


def ucx_final(out):
    """ucx_perftest's Final line: (iterations, 50%ile usec, avg usec, overall usec, MB/s avg, MB/s overall,
    msg/s avg, msg/s overall), or None."""
    m = UCX_FINAL.search(out)
    return tuple(float(x) for x in m.groups()) if m else None


# UCX's own log lines: "[1796453584.39] [host:997  :0]  rc_mlx5_ep.c:586  UCX  ERROR ...", and ucs_fatal /
# failed assertions: "... ud_ep.c:798 Fatal: Assertion ...". They look like kernel lines to console.mlx5_bad_lines.
UCX_LOG = re.compile(r"^\[\d+\.\d+\]\s+\[[^\]]*\]\s+(\S+?):\d+\s+(?:UCX\s+(ERROR|FATAL|WARN)|(Fatal):)\s*(.*)$", re.M)
# UCX 1.18.1's defaults (UCX_FENCE_MODE=auto with UCX_PROTO_ENABLE=y) make ucp_worker_fence() strong: it flushes
# every lane with UCT_FLUSH_FLAG_REMOTE. rc_mlx5 does that as an RDMA READ through the peer's flush key, which only
# UCX's DEVX memory domain creates (an indirect KSM mkey); an mlx5 device that UCX opens without DEVX has none, so
# uct_rc_mlx5_base_ep_flush() refuses (UCS_ERR_UNSUPPORTED) and UCP logs the failed flush. ucx_perftest fences
# only in a unidirectional put stream, before its last iteration (ucp_tests.cc send_last_iter), and ignores the
# result. A real ConnectX-5 opened without DEVX logs the same lines (docs/conformance.md). Accepted only there:
# ucp_put_bw's client (the sender), with both guests' md reported as non-DEVX and the strong fence in force.
UCX_NO_FLUSH_KEY = [
    ("rc_mlx5_ep.c", re.compile(r"^rcx endpoint 0x[0-9a-f]+ on \S+: flush\(remote\) is not supported$")),
    ("flush.c", re.compile(r"^req 0x[0-9a-f]+: error during flush: Unsupported operation$"))]


def ucx_known_no_flush_key(f, msg):
    return any(f == kf and rx.match(msg) for kf, rx in UCX_NO_FLUSH_KEY)


def judge_ucx_log(tx, errs, say=say):
    """Every UCX ERROR/FATAL line fails the scenario, except the strong fence's refused flush(remote) (above) in
    ucp_put_bw's client when both guests' UCX reported its md without DEVX and the fence is the strong one (UCX's
    default). WARN lines are shown, not judged."""
    no_devx = all("DEVX is not supported" in (line(t, "ULP-UCX-DEVX") or "") for t in tx)
    confs = [set((line(t, "ULP-UCX-CONFIG") or "").split()) for t in tx]
    strong = all("UCX_FENCE_MODE=strong" in c or {"UCX_FENCE_MODE=auto", "UCX_PROTO_ENABLE=y"} <= c for c in confs)
    for gi, t in enumerate(tx):
        say("ULP UCX md %s; %s" % (line(t, "ULP-UCX-DEVX") or "g%d: no DEVX line" % gi, line(t, "ULP-UCX-CONFIG")))
    known = bad = 0
    for gi, t in enumerate(tx):
        # where ucp_put_bw's client printed (its TOOL block)
        spans = [b.span() for b in TOOL_RX.finditer(t) if (b.group(1), b.group(3)) == ("ucx-put_bw", "client")]
        for m in UCX_LOG.finditer(t):
            f, lvl, msg = m.group(1), m.group(2) or m.group(3), m.group(4).strip()
            in_put_bw = any(a <= m.start() < e for a, e in spans)
            if lvl == "WARN":
                say("ULP UCX WARN g%d: %s: %s" % (gi, f, msg))
            elif no_devx and strong and in_put_bw and ucx_known_no_flush_key(f, msg):
                known += 1
            else:
                bad += 1
                say("ULP UCX %s g%d: %s: %s" % (lvl, gi, f, msg))
                if bad == 1:
                    errs.append("UCX %s on g%d: %s: %s" % (lvl, gi, f, msg))
    if bad > 1:
        errs.append("%d UCX ERROR/FATAL lines in all" % bad)
    say("ULP UCX log: %d ERROR/FATAL line(s) judged, %d of them the strong fence's flush(remote) without a flush "
        "key (md without DEVX: %s, strong fence: %s)" % (bad + known, known, no_devx, strong))


def ucx_log_self_test():
    """judge_ucx_log on made-up consoles: the failures (empty when the rule holds)."""
    ref = "ULP-UCX-DEVX g%d DEVX is not supported;\nULP-UCX-CONFIG g%d UCX_FENCE_MODE=auto UCX_PROTO_ENABLE=y\n"
    e1 = "[1796453584.399815] [vrnic-guest:997  :0]      rc_mlx5_ep.c:586  UCX  ERROR rcx endpoint 0x55fa on " \
         "mlx5_0: flush(remote) is not supported\n"
    e2 = "[1796453584.400199] [vrnic-guest:997  :0]           flush.c:58   UCX  ERROR req 0x55fb: error during " \
         "flush: Unsupported operation\n"

    def block(lab, body):
        return "=== TOOL %s g1 client: x ===\n%s=== TOOL-END %s g1 client rc=0 seconds=1 tries=1 ===\n" % (
            lab, body, lab)
    g0 = ref % (0, 0)
    cases = [("fence in put_bw", [g0, ref % (1, 1) + block("ucx-put_bw", e1 + e2)], False),
             ("fence in tag_bw", [g0, ref % (1, 1) + block("ucx-tag_bw", e1)], True),
             ("DEVX md", [g0, ref.replace("DEVX is not supported", "") % (1, 1) + block("ucx-put_bw", e1)], True),
             ("weak fence", [g0.replace("auto", "weak"), ref % (1, 1) + block("ucx-put_bw", e2)], True),
             ("other error", [g0, ref % (1, 1) + block("ucx-put_bw", e1.replace("flush(remote)", "x"))], True),
             ("assertion", [g0 + "[1.5] [h:1:0]  ud_ep.c:798 Fatal: Assertion 'ctl->type' failed\n", ref % (1, 1)],
              True)]
    fails = []
    for name, tx, bad in cases:
        errs = []
        judge_ucx_log(tx, errs, say=lambda _m: None)
        if bool(errs) != bad:
            fails.append("%s: %s" % (name, errs or "accepted"))
    return fails

def check_ucx(ctx):
    errs = []
    checks_roce.up_lines(ctx, errs)
    tx = texts(ctx)
    if len(tx) < 2:
        return "two guests expected"
    trans = line(tx[0], "ULP-UCX-TRANSPORTS") or ""
    say("ULP ucx_info -d g0: transports %s; devices %s" % (trans or "none", line(tx[0], "ULP-UCX-DEVICES")))
    if not re.search(r"\b(rc_verbs|rc_mlx5|ud_verbs|ud_mlx5|dc_mlx5)\b", trans):
        errs.append("g0: UCX found no verbs transport on the RDMA device (%s)" % trans)
    runs = pair_runs(ctx)
    for t in UCX_TESTS:
        lab = "ucx-" + t
        c, s = runs.get((lab, "client")), runs.get((lab, "server"))
        if not c or not s:
            errs.append("%s: did not run" % lab)
            continue
        f = ucx_final(c["out"])
        if c["rc"] != 0 or s["rc"] != 0 or f is None:
            errs.append("%s: client rc %s server rc %s%s" % (lab, c["rc"], s["rc"], "" if f else ", no Final line"))
            continue
        if t.endswith("_lat"):
            say("ULP ucx_perftest %s: %d iterations, latency %.2f usec median, %.2f usec average (one way)" % (
                t, f[0], f[1], f[2]))
            ok = f[2] > 0
        else:
            say("ULP ucx_perftest %s: %d iterations, %.1f MB/s, %.0f msg/s" % (t, f[0], f[5], f[7]))
            ok = f[5] > 0
        if not ok:
            errs.append("%s: no figure in its Final line" % lab)
    judge_ucx_log(tx, errs)
    # UCX's log lines are judged above; the rest of the console goes through the mlx5/ib dmesg rule
    r = bad_lines_reason(UCX_LOG.sub("", "\n".join(tx)))
    if r:
        errs.append(r)
    return "; ".join(errs) or None


# ---- libfabric ----------------------------------------------------------------------------------------------
FI_ROW = re.compile(r"^(\d+)([kmg]?)\s+(\d+)\s+=?(\d+)\s+(\S+)\s+([\d.]+)s\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$",
                    re.M)
FI_UNIT = {"": 1, "k": 1024, "m": 1024 ** 2, "g": 1024 ** 3}


def fi_rows(out):
    """fi_pingpong's result rows ("64k  200  =200  25m  1.16s  22.63  2895.53  0.00"):
    [(bytes, iterations, MB/s, usec/xfer)]."""
    return [(int(m.group(1)) * FI_UNIT[m.group(2)], int(m.group(3)), float(m.group(7)), float(m.group(8)))
            for m in FI_ROW.finditer(out)]


def check_libfabric(ctx):
    errs = []
    checks_roce.up_lines(ctx, errs)
    tx = texts(ctx)
    if len(tx) < 2:
        return "two guests expected"
    for gi, t in enumerate(tx):
        info = fields(line(t, "ULP-FI-INFO"))
        say("ULP fi_info -p verbs g%d: %s" % (gi, line(t, "ULP-FI-INFO")))
        if info.get("rc") != "0":
            errs.append("g%d: fi_info -p verbs found no verbs provider" % gi)
    runs = pair_runs(ctx)
    for lab, what in [("fi-%s-s%d" % (e, size), "%s, %d B" % (w, size)) for e, w in
                      (("msg", "verbs MSG endpoint"), ("rdm", "verbs;ofi_rxm RDM endpoint")) for size in (64, 65536)]:
        c, s = runs.get((lab, "client")), runs.get((lab, "server"))
        if not c or not s:
            errs.append("%s: did not run" % lab)
            continue
        rows = fi_rows(c["out"])
        say("ULP fi_pingpong %s: client rc %d server rc %d: %s" % (
            what, c["rc"], s["rc"], ", ".join("%d B x %d: %.2f usec/xfer %.2f MB/s" % (b, n, u, mb)
                                              for b, n, mb, u in rows) or "no rows"))
        want = int(lab.rsplit("-s", 1)[1])
        if c["rc"] != 0 or s["rc"] != 0:
            errs.append("%s: client rc %d server rc %d" % (lab, c["rc"], s["rc"]))
        elif not any(r[0] == want and r[3] > 0 for r in rows):
            errs.append("%s: no result row for %d B" % (lab, want))
    r = bad_lines_reason(ctx.text)
    if r:
        errs.append(r)
    return "; ".join(errs) or None
