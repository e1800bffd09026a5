"""What a scenario's interact and check functions see: RunContext, one run of one scenario in its window of a boot
(the console lines from its VRNIC-SCENARIO-BEGIN on, the server stats from when the window opened), and
GuestWindow, a guest seen from that window."""
import os
import struct
import time
from dataclasses import dataclass, field
from typing import Any, Optional

from ..common import say
from . import stats
from .guestwait import wait_power_off


class GuestWindow:
    """A qemu.Guest as one scenario sees it: lines, text() and wait_for(start=...) count from the scenario's
    VRNIC-SCENARIO-BEGIN line, so a marker an earlier scenario of the boot printed never matches."""

    def __init__(self, guest, base):
        self.guest, self.base = guest, base

    @property
    def name(self):
        return self.guest.name

    @property
    def p(self):
        return self.guest.p

    @property
    def t0(self):
        return self.guest.t0

    @property
    def marker_wall(self):
        return self.guest.marker_wall

    @property
    def lines(self):
        with self.guest.cond:
            return self.guest.lines[self.base:]

    def text(self):
        return "\n".join(self.lines)

    def wait_for(self, pattern, timeout=None, start=0, count=1):
        return self.guest.wait_for(pattern, timeout=timeout, start=self.base + start, count=count)

    def kill(self):
        self.guest.kill()


@dataclass
class RunContext:
    """One run of one scenario. Set when its window opens: name, tag, timeout, fw, guests (GuestWindow), servers
    (qemu.Server, guest i's at i; none for a virtio-net guest), eth (ethtopo.EthTopology or None), topology,
    switch (the switch guest, a GuestWindow), stats_before (each server's stats then); set when it closes: texts
    (each guest's window), text (all of them, lines prefixed [g<i>] when there are several), switch_text,
    stats_after. run_texts and failed_runs gather every run of the scenario (label, text). interact sets
    killed_ok when it stopped the guests itself, expect_dead (server pids it killed); notes carries what an
    interact hands its check."""
    name: str
    tag: str
    timeout: float
    fw: str
    outdir: str
    guests: list = field(default_factory=list)
    servers: list = field(default_factory=list)
    eth: Any = None
    topology: Any = None
    switch: Optional[GuestWindow] = None
    t_begin: float = 0.0
    t_end: float = 0.0
    alone: bool = True
    stats_before: list = field(default_factory=list)
    stats_after: list = field(default_factory=list)
    text: str = ""
    texts: list = field(default_factory=list)
    switch_text: str = ""
    run_texts: list = field(default_factory=list)
    failed_runs: list = field(default_factory=list)
    killed_ok: bool = False
    expect_dead: set = field(default_factory=set)
    notes: dict = field(default_factory=dict)

    def wait_end(self, guests, timeout):
        """Waits (at most timeout s) for these guests' VRNIC-SCENARIO-END, then for each to power off (8 s from
        its own end, the runner's rule), for an interact that ends the run itself."""
        end = time.time() + timeout
        for g in guests:
            g.wait_for(r"VRNIC-SCENARIO-END \S+ rc=\d+", timeout=max(end - time.time(), 0.1))
        wait_power_off([g.guest for g in guests], self.tag)

    def server_stats(self, i):
        """Server i's stats in this window: its counters less their values when the window opened (stats.delta);
        StatsError if it did not answer at the window's end."""
        after = self.stats_after[i] if i < len(self.stats_after) else None
        if after is None:
            raise stats.StatsError("no answer at the end of the scenario")
        before = self.stats_before[i] if i < len(self.stats_before) else None
        return stats.delta(before, after)

    def capture(self, fname):
        """The path of capture fname (in the boot's directory) holding only this window's frames: the file itself
        when the boot ran this scenario alone, else a copy of the frames stamped within the window."""
        path = os.path.join(self.eth.pcap_dir or "", fname) if self.eth else fname
        if self.alone or not os.path.exists(path):
            return path
        out = os.path.join(self.outdir, fname)
        n = slice_pcap(path, out, self.t_begin, self.t_end)
        say("[run] %s: %d frames of %s stamped within the scenario's window -> %s" % (self.tag, n, path, out))
        return out


def slice_pcap(src, dst, t0, t1):
    """Copies the records of classic pcap src stamped within [t0, t1] (host wall clock) to dst; their count."""
    with open(src, "rb") as f:
        data = f.read()
    if len(data) < 24:
        return 0
    endian = "<" if data[:4] == b"\xd4\xc3\xb2\xa1" else ">"
    out, n, off = [data[:24]], 0, 24
    while off + 16 <= len(data):
        sec, usec, incl, _ = struct.unpack(endian + "IIII", data[off:off + 16])
        rec = data[off:off + 16 + incl]
        if len(rec) < 16 + incl:
            break
        if t0 <= sec + usec / 1e6 <= t1:
            out.append(rec)
            n += 1
        off += 16 + incl
    with open(dst, "wb") as f:
        f.write(b"".join(out))
    return n
