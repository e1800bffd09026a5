"""roce-ecn: two ib_write_bw flows into one receiver through the switch guest's marking qdisc (ethswitch.py), with
congestion control on, then off (`cc off` on every vrnic server's control socket).

What the branch supports decides which checks are hard (STRICT: all of them, for when the congestion-control data
path and the mlx5 congestion counters are in):
- the CNP counters (hw_counters np_cnp_sent on the receiver, rp_cnp_handled on each sender) move with CC on and stay
  still with CC off: checked where the receiver's port has np_cnp_sent, else a SKIP line;
- the CC-off phase: checked where the servers answer `cc off`, else a SKIP line (the phase still runs);
- the flows' shares (35-65% each over the whole run, not per second: a loaded 2-CPU host) and no loss-caused
  retransmission (the receiver's out_of_sequence, the senders' packet_seq_err and local_ack_timeout_err) with CC on:
  hard where the CNP counters exist (ECT(0) on the wire: RED marks instead of dropping), else reported with a SKIP
  line (vrnic leaves RoCE frames Not-ECT without CC, and RED drops Not-ECT packets where it would mark).
Always: both phases' flows complete with a bandwidth, the switch came up and its AQM saw the traffic."""
import re

from ..common import say
from . import stats
from .checks_eth import finish, up_lines
from .checks_pairs import PERF_ROW, tool_runs
from .checks_roce import counters
from .checks_switch import aqm_delta, switch_health, switch_stats

STRICT = True  # the CC data path, the mlx5 congestion counters and `cc on|off` are all in
SHARE = (0.35, 0.65)
CNP_COUNTERS = ("np_cnp_sent", "np_ecn_marked_roce_packets", "rp_cnp_handled", "rp_cnp_ignored")
LOSS_RX = ("out_of_sequence",)
LOSS_TX = ("packet_seq_err", "local_ack_timeout_err")


def interact_cc(ctx):
    """Guest 0 prints ROCE-ECN-CC-REQUEST on|off and waits a few seconds: send `cc on|off` to every vrnic server
    (ctx.notes["cc_answers"]: {server index: answer}; a server without the command answers an error), until guest 0's
    script ends."""
    ctx.notes["cc_answers"] = {}
    if not ctx.guests:
        return None
    start = 0
    while True:
        m = ctx.guests[0].wait_for(r"ROCE-ECN-CC-REQUEST (on|off)|VRNIC-SCENARIO-END", timeout=ctx.timeout,
                                      start=start)
        if not m or not m.group(1):  # the script ended: the runner takes over (power-off within 8 s)
            return None
        start = len(ctx.guests[0].lines)
        for i, sv in enumerate(ctx.servers):
            try:
                ans = sv.command("cc %s" % m.group(1))
            except OSError as e:
                ans = "error: %s" % e
            ctx.notes["cc_answers"][i] = ans
            say("[roce-ecn] server %d: cc %s -> %s" % (i, m.group(1), ans.strip()[:120]))


def cc_command_ok(ctx):
    """Every vrnic server accepted the `cc` commands (control.rs answers "ok ..." or "err ..."), and there was one."""
    a = ctx.notes.get("cc_answers") or {}
    return bool(a) and all(v.strip().startswith("ok") for v in a.values())


def flow_bw(runs, label):
    """The client's BW average (MiB/s) of a flow, or None."""
    r = runs.get((label, "client"))
    if not r or r["rc"] != 0:
        return None
    rows = PERF_ROW.findall(r["out"])
    f = rows[0].split() if rows else []
    return float(f[3]) if len(f) >= 4 else None


def deltas(cs, phase, gi, names):
    a, b = cs.get(("before-" + phase, gi), {}), cs.get(("after-" + phase, gi), {})
    return {k: b[k] - a.get(k, 0) for k in names if k in b}


def phase_report(ctx, phase, errs):
    """Say the phase's figures; returns (shares or None, {guest: counter deltas}, AQM delta)."""
    runs = tool_runs(ctx)
    bws = {}
    for s in (1, 2):
        bw = flow_bw(runs, "%s-flow%d" % (phase, s))
        if bw is None or bw <= 0:
            r = runs.get(("%s-flow%d" % (phase, s), "client"))
            errs.append("phase %s: flow g%d -> g0 %s" % (phase, s, "did not run" if not r else "rc %d, no bandwidth: %s"
                                                         % (r["rc"], r["out"].strip()[-160:])))
        else:
            bws[s] = bw
    total = sum(bws.values())
    shares = {s: bw / total for s, bw in bws.items()} if len(bws) == 2 and total > 0 else None
    say("ROCE-ECN %s: flows %s MiB/s, total %.1f MiB/s (%.1f Mbit/s), shares %s" % (
        phase, " ".join("g%d=%.1f" % kv for kv in sorted(bws.items())), total, total * 1048576 * 8 / 1e6,
        " ".join("g%d=%.0f%%" % (s, 100 * x) for s, x in sorted(shares.items())) if shares else "NA"))
    cs = counters(ctx)
    moved = {gi: deltas(cs, phase, gi, CNP_COUNTERS + LOSS_RX + LOSS_TX) for gi in range(3)}
    for gi in range(3):
        say("ROCE-ECN %s g%d counters moved: %s" % (phase, gi, " ".join("%s+%d" % kv for kv in moved[gi].items())
                                                    or "(none of %s exposed)" % "/".join(CNP_COUNTERS)))
    aqm = aqm_delta(switch_stats(ctx.switch_text), "before-" + phase, "after-" + phase)
    if aqm:
        say("ROCE-ECN %s switch %s: %d pkts %.1f Mbit/s over %.1f s, marked %d, dropped %d" % (
            phase, aqm["kind"], aqm["pkts"], aqm["bytes"] * 8 / max(aqm["seconds"], 0.001) / 1e6, aqm["seconds"],
            aqm["marked"], aqm["dropped"]))
    else:
        errs.append("phase %s: no switch counters around it" % phase)
    return shares, moved, aqm


def drop_report(ctx):
    """Where the window's frames were dropped, as each vrnic server counted it (its link's shaper, receive socket,
    pause gate, faults), and the switch's NIC sockets (switch_health): one line each, only the counters that moved."""
    for i in range(len(ctx.servers)):
        try:
            moved = {k: v for k, v in stats.counters(ctx.server_stats(i), r"\w*drop\w*").items() if v}
        except stats.StatsError as e:
            moved = {"stats": str(e)}
        say("ROCE-ECN server %d drops: %s" % (i, " ".join("%s+%s" % kv for kv in sorted(moved.items())) or "none"))


def check_roce_ecn(ctx):
    errs = []
    up_lines(ctx, errs)
    switch_health(ctx, errs)
    cs = counters(ctx)
    have_cnp = "np_cnp_sent" in cs.get(("before-on", 0), {})
    have_cc_cmd = cc_command_ok(ctx)
    hard = STRICT or have_cnp
    on = phase_report(ctx, "on", errs)
    off = phase_report(ctx, "off", errs)
    shares, moved, aqm = on
    if aqm and aqm["pkts"] <= 0:
        errs.append("phase on: nothing went through the switch's %s qdisc" % aqm["kind"])
    # shares and loss
    if shares and not all(SHARE[0] <= x <= SHARE[1] for x in shares.values()):
        (errs.append if hard else lambda m: say("SKIP roce-ecn (no CC on this branch) " + m))(
            "phase on: a flow's share is outside %d-%d%%: %s" % (100 * SHARE[0], 100 * SHARE[1], shares))
    loss = {gi: {k: v for k, v in moved[gi].items() if v and k in (LOSS_RX if gi == 0 else LOSS_TX)} for gi in range(3)}
    lossy = {gi: d for gi, d in loss.items() if d}
    drop_report(ctx)
    if lossy:
        msg = "phase on: retransmissions caused by loss: %s" % lossy
        if hard:
            errs.append(msg)
        else:
            say("SKIP roce-ecn loss check (RoCE frames leave Not-ECT on this branch: RED drops them): " + msg)
    # the CNP counters
    if not have_cnp:
        say("SKIP roce-ecn CNP checks: the receiver's port has no hw_counters/np_cnp_sent (the mlx5 congestion "
            "counters are not on this branch)")
        if STRICT:
            errs.append("no hw_counters/np_cnp_sent on the receiver (STRICT)")
    else:
        if moved[0].get("np_cnp_sent", 0) <= 0:
            errs.append("phase on: the receiver sent no CNP (np_cnp_sent +0)")
        for gi in (1, 2):
            if moved[gi].get("rp_cnp_handled", 0) <= 0:
                errs.append("phase on: sender g%d handled no CNP (rp_cnp_handled +0)" % gi)
        if aqm and aqm["marked"] <= 0:
            errs.append("phase on: the switch marked no packet CE")
    if not have_cc_cmd:
        say("SKIP roce-ecn CC-off phase checks: the vrnic servers do not take `cc off` (%s)" % (
            "; ".join("%d: %s" % (i, a.strip()[:60]) for i, a in (ctx.notes.get("cc_answers") or {}).items()) or "no answer"))
        if STRICT:
            errs.append("`cc off` not accepted by every vrnic server (STRICT)")
    elif have_cnp:
        _s, moved_off, _a = off
        if moved_off[0].get("np_cnp_sent", 0) != 0:
            errs.append("phase off: the receiver still sent CNPs (np_cnp_sent +%d)" % moved_off[0]["np_cnp_sent"])
        for gi in (1, 2):
            if moved_off[gi].get("rp_cnp_handled", 0) != 0:
                errs.append("phase off: sender g%d still handled CNPs (rp_cnp_handled +%d)"
                            % (gi, moved_off[gi]["rp_cnp_handled"]))
    say("ROCE-ECN mode: %s (CNP counters %s, cc command %s)" % ("strict" if hard else "switch only",
                                                               "present" if have_cnp else "absent",
                                                               "accepted" if have_cc_cmd else "absent"))
    return finish(ctx, errs)
