"""roce-pfc (scenarios/roce-pfc.sh): the host writes 802.1Qbb PFC frames (priority 3, quanta 0xffff) into guest 0's
TAP for ~3 s, which guest 0's vrnic reads as received; guest 0's ethtool -S samples show priority 3's transmit
counter standing while the frames arrive and priority 0's advancing.

The servers time quanta at 100 Mb/s (PFC_TOML: 0xffff quanta = 335 ms; the port's own 100 Gb/s makes it 335 us): a
Python injector on a shared host cannot refresh a pause every 300 us (the first version of this scenario, at
100 Gb/s, saw the pause lapse 1220 times in 2 s and priority 3 pass as fast as priority 0), and at 1 Gb/s (33.5 ms)
one late refresh in a run let the pause lapse and the queued frames out; every 5 ms against 335 ms it can.

Then PFC transmit: guest 0 slows its receive processing (one NAPI pass per 2 s) and the host sends TX_FRAMES
priority-3 frames into its TAP at TX_RATE/s, stopping while the PFC frames guest 0's port sends back say so (their
quanta timed at the same 100 Mb/s). Judged: every frame reached guest 0's vl3 (no loss), the port sent XOFF and XON
(the host read them off the TAP; ethtool -S tx_prio3_pause, tx_prio3_pause_duration), the RQ never dropped
(rx_out_of_buffer), the port held frames (stats rx_held) and discarded none."""
import re
import time

from ..common import say
from . import stats
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
TXSAMPLE = re.compile(r"^ROCE-PFC-TXSAMPLE t=([\d.]+) (.*)$", re.M)
TX_FRAMES = 2500  # = want in scenarios/roce-pfc.sh
TX_RATE = 1000.0
# The PFC-honouring sender, run in the bridge's namespace on guest 0's TAP: N frames to DMAC on VLAN 3 with PCP 3
# (EtherType 0x88b5, a sequence number), RATE a second; a PFC frame from the port for priority 3 stops it for its
# quanta (at SPEED b/s) or until XON (quanta 0); it reads them off the TAP (what the port sends arrives there) with
# an ETH_P_ALL socket, which sees them before the bridge drops them as link-local.
# Prints what it sent and saw.
SENDER = r"""
import select, socket, struct, sys, time
dev, dmac, n, rate, speed = sys.argv[1], bytes.fromhex(sys.argv[2].replace(":", "")), int(sys.argv[3]), \
    float(sys.argv[4]), float(sys.argv[5])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))  # ETH_P_ALL: the bridge drops 01:80:c2:00:00:01
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
s.bind((dev, 0))
st = dict(xoff=0, xon=0, until=0.0, paused=0.0, other=0)
def frame(i):
    f = dmac + bytes.fromhex("020000fefe03") + struct.pack(">HHHI", 0x8100, 3 << 13 | 3, 0x88b5, i)
    return f + bytes(64 - len(f))
def drain(wait):
    r, _, _ = select.select([s], [], [], max(wait, 0))
    while r:
        f, addr = s.recvfrom(256)
        if addr[2] == socket.PACKET_OUTGOING:
            pass
        elif len(f) >= 34 and f[12:16] == b"\x88\x08\x01\x01" and struct.unpack(">H", f[16:18])[0] & 8:
            q = struct.unpack(">H", f[24:26])[0]
            now = time.monotonic()
            if st["until"] > now:
                st["paused"] += now - st["since"]
            if q:
                st["xoff"] += 1
                st["until"], st["since"] = now + q * 512 / speed, now
            else:
                st["xon"] += 1
                st["until"] = 0.0
        else:
            st["other"] += 1
        r, _, _ = select.select([s], [], [], 0)
sent, t0 = 0, time.monotonic()
nxt = t0
while sent < n and time.monotonic() - t0 < 90:
    drain(0)
    now = time.monotonic()
    if now < st["until"]:
        drain(min(st["until"] - now, 0.02))
        nxt = time.monotonic()
        continue
    s.send(frame(sent))
    sent += 1
    nxt += 1 / rate
    drain(nxt - time.monotonic())
end = time.monotonic() + 3
while time.monotonic() < end:
    drain(end - time.monotonic())
if st["until"] > time.monotonic():
    st["paused"] += time.monotonic() - st["since"]
print("sent %d in %.2f s xoff %d xon %d paused %.2f s other %d" % (sent, end - 3 - t0, st["xoff"], st["xon"],
                                                                  st["paused"], st["other"]))
"""


def interact_roce_pfc(ctx):
    g, eth = ctx.guests[0], ctx.eth
    m = g.wait_for(r"ROCE-PFC-TRAFFIC g0|GUEST-FAIL.*", timeout=ctx.timeout)
    if not m or m.group(0).startswith("GUEST-FAIL"):
        return None
    time.sleep(2.5)
    rc, out = eth.ns_run(["python3", "-c", INJECT, eth.tap(0), str(BURST_S), str(GAP_S)], timeout=30)
    say("[roce-pfc] PFC burst into %s (priority 3, quanta 0xffff, every %g s for %g s): rc %d %s" % (
        eth.tap(0), GAP_S, BURST_S, rc, out.strip()))
    mm = re.search(r"sent (\d+)", out)
    ctx.notes["pfc_sent"] = int(mm.group(1)) if rc == 0 and mm else 0
    m = g.wait_for(r"ROCE-PFC-TX g0 mac=(\S+) frames=(\d+)|GUEST-FAIL.*", timeout=ctx.timeout)
    if not m or m.group(0).startswith("GUEST-FAIL"):
        return None
    rc, out = eth.ns_run(["python3", "-c", SENDER, eth.tap(0), m.group(1), m.group(2), str(TX_RATE),
                          str(100e6)], timeout=120)
    say("[roce-pfc] PFC transmit: %s priority-3 frames into %s at %g/s, honouring its PFC frames: rc %d %s" % (
        m.group(2), eth.tap(0), TX_RATE, rc, out.strip()))
    mm = re.search(r"sent (\d+) in [\d.]+ s xoff (\d+) xon (\d+) paused ([\d.]+) s", out)
    ctx.notes["pfc_tx"] = dict(sent=int(mm.group(1)), xoff=int(mm.group(2)), xon=int(mm.group(3)),
                         paused=float(mm.group(4))) if rc == 0 and mm else None
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


def prio_stat(st, name, prio):
    """Counter `name` of priority `prio` in a server's stats (eth_link.prio), or None."""
    for k, o in stats.objects(st or {}):
        p = o.get(str(prio)) if k == "prio" else None
        if isinstance(p, dict) and name in p:
            return p[name]
    return None


def judge_tx(ctx, st, errs):
    """PFC transmit: no frame lost, the port paused the host and resumed it."""
    tx = ctx.notes.get("pfc_tx")
    ss = [(float(m.group(1)), {k: int(v) for k, v in re.findall(r"(\w+):(\d+)", m.group(2))})
          for m in TXSAMPLE.finditer(texts(ctx)[0])]
    if not tx or len(ss) < 2:
        errs.append("PFC transmit: the host sender did not run (%s) or no samples (%d)" % (tx, len(ss)))
        return
    a, b = ss[0][1], ss[-1][1]
    d = {k: b.get(k, 0) - a.get(k, 0) for k in ("tx_prio3_pause", "tx_prio3_pause_duration", "rx_out_of_buffer")}
    held, disc = (prio_stat(st, "rx_held", 3), prio_stat(st, "rx_discards", 3)) if st else (None, None)
    say("PFC transmit: host sent %d, saw %d XOFF + %d XON, paused %.2f s; guest 0 vl3 got %d in %.2f s; "
        "tx_prio3_pause +%d, tx_prio3_pause_duration +%d us, rx_out_of_buffer +%d; vrnic prio 3 rx_held %s "
        "rx_discards %s" % (tx["sent"], tx["xoff"], tx["xon"], tx["paused"], b.get("vl3_rx", 0), ss[-1][0],
                            d["tx_prio3_pause"], d["tx_prio3_pause_duration"], d["rx_out_of_buffer"], held, disc))
    if tx["sent"] != TX_FRAMES or b.get("vl3_rx", 0) < tx["sent"]:
        errs.append("PFC transmit lost frames: host sent %d of %d, guest 0's vl3 received %d" % (
            tx["sent"], TX_FRAMES, b.get("vl3_rx", 0)))
    if tx["xoff"] < 1 or tx["xon"] < 1:
        errs.append("PFC transmit: the host saw %d XOFF, %d XON from the port" % (tx["xoff"], tx["xon"]))
    if d["tx_prio3_pause"] < tx["xoff"] + tx["xon"]:
        errs.append("tx_prio3_pause +%d, fewer than the %d PFC frames the host saw" % (
            d["tx_prio3_pause"], tx["xoff"] + tx["xon"]))
    if d["tx_prio3_pause_duration"] <= 0:
        errs.append("tx_prio3_pause_duration did not move")
    if d["rx_out_of_buffer"]:
        errs.append("rx_out_of_buffer +%d: the RQ dropped" % d["rx_out_of_buffer"])
    if not held or disc != 0:
        errs.append("vrnic prio 3: rx_held %s (want > 0), rx_discards %s (want 0)" % (held, disc))


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
    sent = ctx.notes.get("pfc_sent", 0)
    if not sent:
        errs.append("the host sent no PFC frame")
    judge(samples(texts(ctx)[0]), sent, errs)
    for m in re.finditer(r"^ROCE-PFC-PING (.*)$", alltext(ctx), re.M):
        say("PFC ping %s" % m.group(1))
    st = None
    if ctx.servers:
        try:
            st = ctx.server_stats(0)
        except stats.StatsError as e:
            errs.append("vrnic 0: no stats (%s)" % e)
    if st is not None:
        ign = stats.counters(st, "rx_pause_ignored").get("rx_pause_ignored")
        drop = [v for k, v in stats.leaves(st) if k == "tx_pause_dropped"]
        say("PFC vrnic 0 link: rx_pause_ignored %s (the priority-5 frame), tx_pause_dropped per priority %s" % (
            "?" if ign is None else ign, drop))
        if not ign or ign < 1:
            errs.append("the PFC frame for priority 5 (PFC off) was not counted as ignored")
    judge_tx(ctx, st, errs)
    return finish(ctx, errs)
