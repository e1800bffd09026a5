"""Checks of the kernel-ULP, UCX and libfabric scenarios (nvmeof, nfs-rdma, ucx, libfabric; issue 22), all on two
guests over RoCE v2 (vrnic ports, or virtio-net + rxe with `--eth-nic virtio`): what the guests printed
(scenarios/ulp-lib.sh: ULP-* lines, ETH-TOOL blocks around each tool run). Each check says what it verified
(ULP ... lines) and returns None or the reasons it failed."""
import re

from ..common import say
from . import checks_roce
from .checks_eth import texts, tools
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


def check_nvmeof(ctx):
    errs = []
    checks_roce.up_lines(ctx, errs)
    tx = texts(ctx)
    if len(tx) < 2:
        return "two guests expected"
    tl = tools(ctx)
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
    # the restart under load
    rs = fields(line(tx[0], "ULP-RESTART"))
    say("ULP restart g0: %s; port re-enabled: %s" % (rs or "none", "yes" if line(tx[0], "ULP-NVMET-REENABLED") is not None
                                                   else "no"))
    if not rs:
        errs.append("g0: the RDMA device did not come back after its restart")
    load = judge_fio(tl, ("fio-load", 1), errs, want=(), limit_ok=True)
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
