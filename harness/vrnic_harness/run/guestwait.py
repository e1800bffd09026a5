"""Waiting on guests: the end of a scenario on every guest of a boot, and the power-off that follows the last."""
import subprocess
import time

from ..common import say

END_RX = r"VRNIC-SCENARIO-END \S+ rc=(\d+)"
POWER_OFF_S = 8      # from a guest's last VRNIC-SCENARIO-END to its QEMU being stopped
PEER_GONE_S = 30     # once one guest ended its scenario with a non-zero rc, what the others get


def wait_ends(guests, deadline, starts=None):
    """Waits until every guest printed VRNIC-SCENARIO-END at or after line starts[i] (all 0: anywhere), or its QEMU
    exited, or the deadline passed; once one ended with a non-zero rc the others get PEER_GONE_S more. Returns
    {guest index: rc (int) or None (no end line)}."""
    starts = starts or [0] * len(guests)
    rcs = {}
    while len(rcs) < len(guests) and time.time() < deadline:
        for i, g in enumerate(guests):
            if i in rcs:
                continue
            m = g.wait_for(END_RX, timeout=0.2 if len(guests) > 1 else deadline - time.time(), start=starts[i])
            if m is None and g.p.poll() is None:
                continue
            rcs[i] = int(m.group(1)) if m else None
            if m and m.group(1) != "0" and len(rcs) < len(guests):
                deadline = min(deadline, time.time() + PEER_GONE_S)
    return {i: rcs.get(i) for i in range(len(guests))}


def wait_power_off(guests, tag):
    """The guests have printed their last VRNIC-SCENARIO-END: each gets POWER_OFF_S from now to power off (a driver
    still tearing down, mlx5_core waiting on its command queue, blocks the kernel's power-off in device_shutdown),
    side by side, then its QEMU is stopped (a power-off blocked 20 s would read as a hung task)."""
    end = time.time() + POWER_OFF_S
    for g in guests:
        try:
            g.p.wait(max(end - time.time(), 0.1))
        except subprocess.TimeoutExpired:
            say("[run] %s/%s: guest did not power off within %d s of the scenario end; stopping QEMU"
                % (tag, g.name, POWER_OFF_S))
            g.kill()
