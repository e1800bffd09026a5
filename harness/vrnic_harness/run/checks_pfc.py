"""roce-pfc (scenarios/roce-pfc.sh): the host writes 802.1Qbb PFC frames (priority 3, quanta 0xffff) into guest 0's
TAP for ~3 s, which guest 0's vrnic reads as received; guest 0's ethtool -S samples show priority 3's transmit
counter standing while the frames arrive and priority 0's advancing.

The servers time quanta at 100 Mb/s (PFC_TOML: 0xffff quanta = 335 ms; the port's own 100 Gb/s makes it 335 us): a
Python injector on a shared host cannot refresh a pause every 300 us (the first version of this scenario, at
100 Gb/s, saw the pause lapse 1220 times in 2 s and priority 3 pass as fast as priority 0), and at 1 Gb/s (33.5 ms)
one late refresh in a run let the pause lapse and the queued frames out; every 5 ms against 335 ms it can."""
import re
import time

from ..common import say
from .checks_eth import alltext, finish, texts, tools, up_lines

BURST_S = 3.0
GAP_S = 0.005
PFC_TOML = "[eth]\npause_speed_mbps = 100\n"
# The injector, run in the bridge's namespace: first one PFC frame for priority 5 (PFC off there: ignored), then
# priority-3 PFC frames (quanta 0xffff) every GAP for SECS, then one XON (quanta 0); prints how many priority-3 frames it sent.
INJECT = r"""
import socket, struct, sys, time
dev, secs, gap = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((dev, 0))
def frame(prio, q):
    t = [0] * 8
    t[prio] = q
    f = bytes.fromhex("0180c2000001020000fefe01") + struct.pack(">HHH8H", 0x8808, 0x0101, 1 << prio, *t)
    return f + bytes(60 - len(f))
def send(f):
    try:
        s.send(f)
        return 1
    except OSError:
        return 0
send(frame(5, 0xffff))
pause, n = frame(3, 0xffff), 0
t0 = time.monotonic()
nxt = t0
while time.monotonic() - t0 < secs:
    n += send(pause)
    nxt += gap
    d = nxt - time.monotonic()
    if d > 0:
        time.sleep(d)
n += send(frame(3, 0))
print("sent", n, "in", round(time.monotonic() - t0, 3))
"""
SAMPLE = re.compile(r"^ROCE-PFC-SAMPLE t=([\d.]+) (.*)$", re.M)


def interact_roce_pfc(ctx):
    g, eth = ctx["guests"][0], ctx["eth"]
    m = g.wait_for(r"ROCE-PFC-TRAFFIC g0|GUEST-FAIL.*", timeout=ctx["timeout"])
    if not m or m.group(0).startswith("GUEST-FAIL"):
        return None
    time.sleep(2.5)
    rc, out = eth.ns_run(["python3", "-c", INJECT, eth.tap(0), str(BURST_S), str(GAP_S)], timeout=30)
    say("[roce-pfc] PFC burst into %s (priority 3, quanta 0xffff, every %g s for %g s): rc %d %s" % (
        eth.tap(0), GAP_S, BURST_S, rc, out.strip()))
    mm = re.search(r"sent (\d+)", out)
    ctx["pfc_sent"] = int(mm.group(1)) if rc == 0 and mm else 0
    return None


def samples(text):
    return [(float(m.group(1)), {k: int(v) for k, v in re.findall(r"(\w+):(\d+)", m.group(2))})
            for m in SAMPLE.finditer(text)]


def judge(ss, sent, errs):
    """The pause window is the samples between the first and the last one that saw rx_prio3_pause grow: frames
    arrived on both sides of it. Judged are its sample intervals in which the pause did not lapse (a refresh late
    on the shared host ends it and lets the queued frames out: rx_prio3_pause_transition counts each)."""
    key = lambda k, n: ss[k][1].get(n, 0)
    if len(ss) < 10 or any("rx_prio3_pause" not in s[1] or "tx_prio3_packets" not in s[1] for s in ss):
        errs.append("%d samples, or no rx_prio3_pause/tx_prio3_packets in ethtool -S (PFC on prio 3 not seen "
                    "by mlx5e?)" % len(ss))
        return
    grew = [k for k in range(1, len(ss)) if key(k, "rx_prio3_pause") > key(k - 1, "rx_prio3_pause")]
    if len(grew) < 2:
        errs.append("rx_prio3_pause grew in %d sample intervals (want the ~3 s burst)" % len(grew))
        return
    a, b = grew[0], grew[-1] - 1
    # the sample intervals inside the window in which the pause did not lapse (no new transition)
    held = [k for k in range(a + 1, b + 1)
            if key(k, "rx_prio3_pause_transition") == key(k - 1, "rx_prio3_pause_transition")]
    dt = sum(ss[k][0] - ss[k - 1][0] for k in held)
    d = {n: sum(key(k, n) - key(k - 1, n) for k in held) for n in ("tx_prio0_packets", "tx_prio3_packets")}
    pre = {n: key(a - 1, n) - key(0, n) for n in d}
    post = {n: key(len(ss) - 1, n) - key(grew[-1], n) for n in d}
    final = ss[-1][1]
    lapses = key(b, "rx_prio3_pause_transition") - key(a, "rx_prio3_pause_transition")
    say("PFC pause window samples %d..%d of %d, %d lapse(s); in its %d interval(s) without one (%.2f s): "
        "tx_prio0_packets +%d, tx_prio3_packets +%d; before it (%.2f s) +%d/+%d; after it (%.2f s) +%d/+%d" % (
            a, b, len(ss), lapses, len(held), dt, d["tx_prio0_packets"], d["tx_prio3_packets"],
            ss[a - 1][0] - ss[0][0], pre["tx_prio0_packets"], pre["tx_prio3_packets"],
            ss[-1][0] - ss[grew[-1]][0], post["tx_prio0_packets"], post["tx_prio3_packets"]))
    say("PFC ethtool -S at the end: rx_prio3_pause %d (host sent %d), rx_prio3_pause_duration %d us, "
        "rx_prio3_pause_transition %d" % (final.get("rx_prio3_pause", 0), sent,
                                          final.get("rx_prio3_pause_duration", 0),
                                          final.get("rx_prio3_pause_transition", 0)))
    if dt < 1.0:
        errs.append("the pause held only %.2f s between samples" % dt)
    if d["tx_prio0_packets"] < 10:
        errs.append("priority 0 did not keep going while priority 3 was paused (+%d)" % d["tx_prio0_packets"])
    if d["tx_prio3_packets"] * 4 > d["tx_prio0_packets"]:
        errs.append("priority 3 was not held: +%d frames while priority 0 sent +%d" % (
            d["tx_prio3_packets"], d["tx_prio0_packets"]))
    if post["tx_prio3_packets"] < 10:
        errs.append("priority 3 did not resume after the pause (+%d)" % post["tx_prio3_packets"])
    got = final.get("rx_prio3_pause", 0)
    if sent and not sent // 2 <= got <= sent:
        errs.append("rx_prio3_pause %d, host sent %d" % (got, sent))
    if not final.get("rx_prio3_pause_duration"):
        errs.append("rx_prio3_pause_duration stayed 0")


def check_roce_pfc(ctx):
    errs = []
    up_lines(ctx, errs)
    t = tools(ctx)
    for lab in ("pfc-set", "pfc-show"):
        r = t.get((lab, 0))
        if r is None or r["rc"] != 0:
            errs.append("g0 %s: %s" % (lab, "did not run" if r is None else "rc=%d %s" % (r["rc"], r["out"][-200:])))
        else:
            say("PFC g0 %s: %s" % (lab, re.sub(r"\s+", " ", r["out"]).strip()))
    sent = ctx.get("pfc_sent", 0)
    if not sent:
        errs.append("the host sent no PFC frame")
    judge(samples(texts(ctx)[0]), sent, errs)
    for m in re.finditer(r"^ROCE-PFC-PING (.*)$", alltext(ctx), re.M):
        say("PFC ping %s" % m.group(1))
    for i, sv in enumerate(ctx.get("servers", [])[:1]):
        try:
            st = sv.command("stats")
        except OSError as e:
            errs.append("vrnic %d: no stats (%s)" % (i, e))
            continue
        ign = re.search(r'"rx_pause_ignored":\s*(\d+)', st)
        drop = re.findall(r'"tx_pause_dropped":\s*(\d+)', st)
        say("PFC vrnic 0 link: rx_pause_ignored %s (the priority-5 frame), tx_pause_dropped per priority %s" % (
            ign.group(1) if ign else "?", drop))
        if not ign or int(ign.group(1)) < 1:
            errs.append("the PFC frame for priority 5 (PFC off) was not counted as ignored")
    return finish(ctx, errs)
