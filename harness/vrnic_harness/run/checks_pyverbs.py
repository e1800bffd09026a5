"""Check of the pyverbs scenarios (pyverbs, pyverbs-roce, *-full): rdma-core's own test suite run by
scenarios/pyverbs.sh on the vrnic port and on rxe0 in the same boot, one "PYV <label> <kind> <test> <s> <reason>"
line per test. Per test: rxe passes and vrnic does not -> FAIL, unless the test is in KNOWN (a reasoned
difference, shown in docs/conformance.md too); vrnic FAIL/ERROR where rxe does not fail the same way -> FAIL
unless KNOWN. Skips are counted and listed by reason (docs/conformance.md)."""
import fnmatch
import re

from ..common import say
from .console import mlx5_bad_lines

PYV = re.compile(r"^PYV (\S+) (ok|skip|FAIL|ERROR) (\S+) ([\d.]+) ?(.*)$", re.M)
PYV_END = re.compile(r"^PYV-END (\S+) rc=(\d+) seconds=(\S+) restarts=(\d+)$", re.M)
PYV_EXCLUDED = re.compile(r"^PYV-EXCLUDED (\S+) (\S+) (\d+)$", re.M)
PYV_SUMMARY = re.compile(r"^PYV-SUMMARY (\S+) run=(\d+) failures=(\d+) errors=(\d+) skipped=(\d+)$", re.M)

# tests vrnic may not pass where rxe does, or fail where rxe does not, with the reason: (vrnic label regex, test
# id regex, reason). Keep it short and honest; docs/conformance.md shows the same list.
KNOWN = [
    # rxe implements these; mlx5 (provider and mlx5_ib) offers none of them, real ConnectX included
    (r".", r"\.test_qp_ex_rc_atomic_write$", "RDMA atomic write (IBV_QP_EX_WITH_ATOMIC_WRITE): rxe only, not mlx5"),
    (r".", r"\.test_qp_ex_rc_flush(_type_violate)?$", "RDMA FLUSH (IBV_ACCESS_FLUSH_*): rxe only, not mlx5"),
    (r".", r"\.test_resize_srq$", "SRQ resize: mlx5_ib refuses IB_SRQ_MAX_WR (as on a real ConnectX)"),
    # features vrnic does not advertise
    (r".", r"\.MWTest\.|\.test_qp_ex_rc_bind_mw$",
     "memory windows: not advertised (cmd_hca_cap.imaicl = 0, so mlx5_ib offers no alloc_mw)"),
    (r".", r"\.test_create_ud_qp_ex_(no|with)_attr$|\.test_(modify|query)_ud_qp$",
     "the suite picks IBV_QP_CREATE_BLOCK_SELF_MCAST_LB at random for extended UD QPs: block_lb_mc is not "
     "advertised, mlx5_ib answers EOPNOTSUPP and the test skips (passes when the flag is not picked)"),
    (r"vrnic-ib", r"\.test_create_ah_roce$", "a RoCE test; the IB port skips it (link layer InfiniBand), pyverbs-roce runs it"),
    (r"vrnic-ib", r"\.test_query_gid_ex_bad_flow$",
     "IB port: every GID table index reads back a GID (mlx5_ib builds IB GIDs from the subnet prefix and the "
     "GUIDInfo entry, so none is all-zero): the test finds no empty index and skips; rxe's RoCE table has empty ones"),
]
# mlx5 command errors the suite provokes on purpose (bad-flow tests), the only mlx5 lines allowed in dmesg
PROVOKED = [
    # test_cq.test_resize_cq: shrinking a CQ below its unpolled CQEs must fail (the test expects EINVAL)
    r"MODIFY_CQ\(0x403\) op_mod\(0x1\) failed, status bad resource state\(0x9\), syndrome \(0x7e050006\)",
]


def known(label, test):
    for lab, pat, why in KNOWN:
        if re.search(lab, label) and re.search(pat, test):
            return why
    return None


def finish(text, errs):
    bad = [l for l in mlx5_bad_lines(text) if not any(re.search(p, l) for p in PROVOKED)]
    for l in bad:
        say("MLX5 BAD DMESG LINE: %s" % l)
    if bad:
        errs.append("%d mlx5/ib error line(s) in dmesg the suite does not provoke on purpose, first: %s" % (
            len(bad), bad[0]))
    return "; ".join(errs) or None


def results(text):
    """{label: {test id: (kind, seconds, reason)}}"""
    out = {}
    for m in PYV.finditer(text):
        out.setdefault(m.group(1), {})[m.group(3)] = (m.group(2), float(m.group(4)), m.group(5).strip())
    return out


def counts(res):
    c = {"ok": 0, "skip": 0, "FAIL": 0, "ERROR": 0}
    for kind, _, _ in res.values():
        c[kind] += 1
    return c


def check_pyverbs(ctx):
    text = re.sub(r"(?m)^\[g\d+\] ", "", ctx.text)
    errs = []
    res = results(text)
    ends = {m.group(1): m for m in PYV_END.finditer(text)}
    sums = {m.group(1): m for m in PYV_SUMMARY.finditer(text)}
    vlabel = next((lb for lb in ("vrnic-ib", "vrnic-roce") if lb in ends), None)
    if not vlabel:
        return finish(text, ["no vrnic run (no PYV-END vrnic-ib/vrnic-roce line)"])
    for lb in (vlabel, "rxe"):
        if lb not in ends:
            errs.append("%s: did not run (no PYV-END)" % lb)
            continue
        if lb not in sums:
            errs.append("%s: the runner did not finish (rc %s after %s s)" % (lb, ends[lb].group(2), ends[lb].group(3)))
        c = counts(res.get(lb, {}))
        say("PYVERBS %-10s tests=%d ok=%d skip=%d fail=%d error=%d (%s s, %s restarts)" % (
            lb, len(res.get(lb, {})), c["ok"], c["skip"], c["FAIL"], c["ERROR"], ends[lb].group(3), ends[lb].group(4)))
    v, r = res.get(vlabel, {}), res.get("rxe", {})
    if not v:
        errs.append("%s: no test results" % vlabel)
    # modules the scenario does not run on rxe (PYV-EXCLUDED): vrnic's tests there are judged on their own
    rxe_excl = {m.group(2) for m in PYV_EXCLUDED.finditer(text) if m.group(1) == "rxe"}
    for m in PYV_EXCLUDED.finditer(text):
        say("PYVERBS %s: module %s not run (%s tests)" % (m.group(1), m.group(2), m.group(3)))
    left = re.findall(r"^PYV-LEFT-OUT (\S+) (\S+)$", text, re.M)
    if left:
        say("PYVERBS left out of this run (known defects, in the *-full scenarios): %s" % ", ".join(
            sorted({t.rsplit(".", 1)[1] for _, t in left})))
    if v and r and {t for t in v if not any(fnmatch.fnmatch(t.split(".")[1], m) for m in rxe_excl)} != set(r):
        errs.append("the two runs loaded different tests (%d vs %d)" % (len(v), len(r)))
    bad, knowns = [], []
    for t in sorted(set(v) | set(r)):
        vk, rk = v.get(t, ("missing", 0, ""))[0], r.get(t, ("missing", 0, ""))[0]
        why = known(vlabel, t)
        if rk == "ok" and vk != "ok":
            (knowns if why else bad).append((t, vk, rk, v.get(t, ("", 0, ""))[2], why))
        elif vk in ("FAIL", "ERROR", "missing") and rk not in ("FAIL", "ERROR"):
            (knowns if why else bad).append((t, vk, rk, v.get(t, ("", 0, ""))[2], why))
    for t, vk, rk, reason, why in knowns:
        say("PYVERBS KNOWN %s: vrnic %s, rxe %s (%s)" % (t, vk, rk, why))
    for t, vk, rk, reason, _ in bad:
        say("PYVERBS DIFF %s: vrnic %s, rxe %s: %s" % (t, vk, rk, reason[:160]))
    both = sorted(t for t in v if v[t][0] in ("FAIL", "ERROR") and r.get(t, ("",))[0] in ("FAIL", "ERROR"))
    for t in both:
        say("PYVERBS BOTH-FAIL %s: vrnic %s (%s), rxe %s (%s)" % (t, v[t][0], v[t][2][:80], r[t][0], r[t][2][:80]))
    skips = {}
    for t, (kind, _, reason) in v.items():
        if kind == "skip":
            skips.setdefault(reason[:100], []).append(t)
    for reason, ts in sorted(skips.items(), key=lambda x: -len(x[1])):
        say("PYVERBS SKIP %s %d: %s" % (vlabel, len(ts), reason))
    if bad:
        errs.append("%d tests rxe passes (or does not fail) that %s does not: %s" % (
            len(bad), vlabel, ", ".join("%s=%s" % (t.split(".", 1)[-1], vk) for t, vk, _, _, _ in bad[:12])))
    return finish(text, errs)
