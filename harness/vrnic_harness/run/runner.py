"""Runs scenarios: the plan's boots one after another (run/plan.py); in each boot its scenarios one after another,
each in its window of the consoles (from its VRNIC-SCENARIO-BEGIN to its VRNIC-SCENARIO-END), judged when every guest
has ended it (the guest's rc and GUEST-FAIL lines, the kernel-health rule, the servers, the scenario's check); then
the guests are told to go on (qemu/guest/init resets them and begins the next).

A boot that cannot start, or whose guests never reach their first scenario, fails every unit left in it with that
reason. After a unit that failed (or timed out, or left the guest in a state the reset could not undo) the boot ends
and the units after it get a new boot: none of them runs in the state a failure left behind."""
import json
import os
import re
import resource
import shutil
import threading
import time
from dataclasses import dataclass, field

from .. import qemu
from ..common import GUEST_TESTS, say
from . import stats
from .boot import Boot, BootError
from .console import exit_text, guest_reason, kernel_health_reason
from .context import GuestWindow, RunContext
from .guestwait import wait_ends, wait_power_off
from .plan import BootPlan, plan

OUT = os.path.join(GUEST_TESTS, "out")
BEGIN_FIRST_S = 120   # from QEMU start to the first scenario's BEGIN (boot)
BEGIN_NEXT_S = 60     # from "go" to the next scenario's BEGIN


# ---- per scenario: its runs' verdicts, its SCENARIO line ----------------------------------------------------------
@dataclass
class ScenarioState:
    total: int
    done: int = 0
    reasons: list = field(default_factory=list)
    run_texts: list = field(default_factory=list)
    failed_runs: list = field(default_factory=list)
    seconds: float = 0.0


class Results:
    """Gathers each scenario's runs; prints `SCENARIO <name> PASS|FAIL <reason>` when its last run is judged."""

    def __init__(self, units):
        self.lock = threading.RLock()  # boots may run side by side (--jobs)
        self.state = {}
        for u in units:
            self.state.setdefault(u.name, ScenarioState(0)).total += 1
        self.passed, self.failed = [], []

    def shared(self, unit):
        return self.state[unit.name]

    def judge(self, unit, ctx, reason, seconds):
        """The run's verdict: the check (for each run, or once after the last: scenario.checks_each_run) unless it
        failed already; a bench's failed run (but the last) becomes NA figures."""
        with self.lock:
            return self._judge(unit, ctx, reason, seconds)

    def _judge(self, unit, ctx, reason, seconds):
        sc, st = unit.scenario, self.state[unit.name]
        last = st.done + 1 == st.total
        st.run_texts.append((unit.run.nic or unit.run.doorbell or "default", ctx.text))
        if reason is None and (sc.checks_each_run() or last):
            try:
                reason = sc.check(ctx)
            except Exception as e:  # noqa: BLE001 - a check that breaks fails its scenario, not the run
                reason = "harness error in the check: %r" % e
        if reason and sc.eth_runs and not last:
            st.failed_runs.append("[%s] %s" % (unit.tag, reason))
            say("[run] %s failed: %s (its figures are NA; the next run goes on)" % (unit.tag, reason))
            reason = None
        if reason:
            st.reasons.append("[%s] %s" % (unit.tag, reason) if st.total > 1 else reason)
        st.done += 1
        st.seconds += seconds
        say("[run] %s took %.1f s" % (unit.tag, seconds))
        if st.done == st.total:
            self.finish(unit.name, st)
        return reason

    def fail(self, unit, reason):
        """A unit that never ran (its boot failed)."""
        with self.lock:
            self._fail(unit, reason)

    def _fail(self, unit, reason):
        st = self.state[unit.name]
        st.reasons.append("[%s] %s" % (unit.tag, reason) if st.total > 1 else reason)
        st.done += 1
        if st.done == st.total:
            self.finish(unit.name, st)

    def finish(self, name, st):
        if st.reasons:
            self.failed.append(name)
            say("SCENARIO %s FAIL %s" % (name, "; ".join(st.reasons).replace("\n", " ")))
        else:
            self.passed.append(name)
            say("SCENARIO %s PASS" % name)


# ---- one window ---------------------------------------------------------------------------------------------------
class Window:
    """One unit's window in a running boot."""

    def __init__(self, boot, unit, index, stats_before, results):
        self.boot, self.unit, self.index = boot, unit, index
        self.last = index == len(boot.plan.units) - 1
        self.t_open = time.time()
        self.deadline = self.t_open + unit.scenario.timeout
        self.bases = []
        self.ends = {}
        self.stuck = set()
        self.began = False
        self.reason_ = None
        sc = unit.scenario
        share = results.shared(unit)
        self.ctx = RunContext(name=unit.name, tag=unit.tag, timeout=sc.timeout, fw=sc.fw,
                              outdir=os.path.join(OUT, unit.name), servers=list(boot.servers), eth=boot.eth,
                              topology=boot.topo, t_begin=self.t_open, alone=len(boot.plan.units) == 1,
                              stats_before=stats_before, run_texts=share.run_texts, failed_runs=share.failed_runs)
        if boot.switch:
            self.ctx.switch = GuestWindow(boot.switch, 0)

    def wait_begin(self):
        """Every guest's VRNIC-SCENARIO-BEGIN of this unit; None or why not. The window starts where the last one
        ended (the first: at the boot's first line), so a kernel line between two scenarios is judged too."""
        end = min(self.deadline, self.t_open + (BEGIN_NEXT_S if self.index else BEGIN_FIRST_S))
        line = "VRNIC-SCENARIO-BEGIN " + self.unit.name
        for i, g in enumerate(self.boot.guests):
            if g.wait_for(r"^%s$" % line, timeout=max(end - time.time(), 0.1), start=self.boot.marks[i]) is None:
                return self.no_begin(g)
            self.bases.append(self.boot.marks[i])
        self.ctx.guests = [GuestWindow(g, b) for g, b in zip(self.boot.guests, self.bases)]
        self.began = True
        return None

    def no_begin(self, g):
        who = "" if self.boot.n == 1 else g.name + ": "
        if not g.marker_wall:
            qerr = [l for l in g.lines if l.startswith("qemu-system-x86_64:") and "warning:" not in l
                    and "terminating on signal" not in l]
            return "%sguest never reached /init (no VRNIC-INIT-START marker)%s" % (
                who, ("; QEMU: " + qerr[0][len("qemu-system-x86_64:"):].strip()) if qerr else "")
        return "%sthe scenario never began (no VRNIC-SCENARIO-BEGIN %s)" % (who, self.unit.name)

    def interact(self):
        if not self.unit.scenario.interact:
            return None
        try:
            return self.unit.scenario.interact(self.ctx)
        except Exception as e:  # noqa: BLE001
            return "harness error in interact: %r" % e

    def wait_end(self):
        if self.ctx.killed_ok:
            return
        self.ends = wait_ends(self.boot.guests, self.deadline, self.bases)
        self.stuck = {i for i, rc in self.ends.items() if rc is None and self.boot.guests[i].p.poll() is None}

    def close(self):
        """Stats at the end; for the boot's last unit (or one that stopped or lost its guests) the power-off; the
        window's texts."""
        self.ctx.stats_after = [stats.snapshot(s) if s.alive() else None for s in self.boot.servers]
        self.ctx.t_end = time.time()
        if self.ends_boot():
            ended = [g for i, g in enumerate(self.boot.guests) if self.ctx.killed_ok or self.ends.get(i) is not None]
            wait_power_off(ended, self.unit.tag)
            self.stop_switch()
            for g in self.boot.guests:
                g.kill()
                g.wait_exit()
        texts = [self.window_text(g, i) for i, g in enumerate(self.boot.guests)]
        self.ctx.texts = texts
        self.ctx.text = texts[0] if len(texts) == 1 else "\n".join(
            "[%s] %s" % (g.name, l) for g, t in zip(self.boot.guests, texts) for l in t.split("\n"))

    def ends_boot(self):
        return self.last or self.ctx.killed_ok or None in self.ends.values()

    def window_text(self, g, i):
        """Guest i's lines from the unit's BEGIN to its END (the boot's last unit: to the guest's last line)."""
        with g.cond:
            lines = g.lines[self.bases[i]:]
        if not self.ends_boot():
            end = "VRNIC-SCENARIO-END %s " % self.unit.name
            n = next((k for k, l in enumerate(lines) if l.startswith(end)), len(lines) - 1)
            lines = lines[:n + 1]
            self.boot.marks[i] = self.bases[i] + len(lines)
        return "\n".join(lines)

    def stop_switch(self):
        """The scenario's guests are done: the switch guest gets 20 s to end (a script's `sw_cmd end`), then stops;
        its console goes to ctx.switch_text."""
        sw = self.boot.switch
        if not sw:
            return
        if not sw.wait_for(r"VRNIC-SCENARIO-END", timeout=20 if sw.p.poll() is None else 0):
            say("[run] %s-sw: the switch guest got no end command; stopping QEMU" % self.unit.tag)
        sw.kill()
        sw.wait_exit()
        self.ctx.switch_text = sw.text()
        if self.boot.eth and self.boot.eth.switch:
            self.ctx.notes["switch_ingress_drops"] = self.boot.eth.switch.ingress_drops()

    def reason(self):
        """Why the unit failed before its check, or None: a guest's end (its rc, GUEST-FAIL, no end in time), the
        kernel-health rule on its window (the switch guest's console too), a server that exited."""
        sc, ctx = self.unit.scenario, self.ctx
        ended, missing, health = [], [], []
        for i, (g, text) in enumerate(zip(self.boot.guests, ctx.texts)):
            who = "" if self.boot.n == 1 else g.name + ": "
            if i in self.stuck:
                missing.append("%stimeout after %.0f s (QEMU killed)" % (who, sc.timeout))
            elif not ctx.killed_ok and guest_reason(text):
                ended.append(who + guest_reason(text))
            r = kernel_health_reason(text, sc.kernel_allow)
            if r:
                health.append(who + r)
        if self.boot.switch:
            r = kernel_health_reason(ctx.switch_text, sc.kernel_allow)
            if r:
                health.append("switch guest: " + r)
        for sv in self.boot.servers:
            if not sv.alive() and sv.pid not in ctx.expect_dead:
                health.append("server pid %d exited early (%s)" % (sv.pid, exit_text(sv.p.returncode)))
        return (ended + missing + health or [None])[0]

    def write_logs(self):
        """A boot of several units: each unit's window of each console in out/<name>/console-<tag>[-g<i>].log."""
        if self.ctx.alone:
            return
        for g, t in zip(self.boot.guests, self.ctx.texts):
            sfx = "" if self.boot.n == 1 else "-" + g.name
            with open(os.path.join(self.ctx.outdir, "console-%s%s.log" % (self.unit.tag, sfx)), "w") as f:
                f.write(t + "\n")

    def go_on(self):
        """Whether the boot can take its next unit."""
        if self.last or self.ctx.killed_ok:
            return False
        if any("VRNIC-RESET-DIRTY" in t for t in self.ctx.texts):
            say("[run] %s: the guest reset left state behind: a new boot for the rest" % self.unit.tag)
            return False
        return all(g.p.poll() is None for g in self.boot.guests)


def run_window(boot, unit, index, stats_before, results):
    """Runs one unit in the boot (the next ones: after the guests are told to go on); its Window, reason set."""
    w = Window(boot, unit, index, stats_before, results)
    if index:
        for g in boot.guests:
            g.send("go")
    w.reason_ = w.wait_begin()
    if w.reason_:
        return w
    w.reason_ = w.interact()
    w.wait_end()
    w.close()
    w.reason_ = w.reason_ or w.reason()
    w.write_logs()
    return w


# ---- one boot -------------------------------------------------------------------------------------------------------
# The counters that say why traffic failed (retries, drops, NAKs, errors): a failed unit's log shows each server's
# nonzero ones for the unit's window, and out/<boot>/stats-<unit>-g<i>.json keeps the whole delta.
TROUBLE_COUNTERS = re.compile(r".*(retrans|timeout|drop|dup|nak|err|retry|rnr|seq|lost|invalid|refus|overflow|late).*")


def say_failed_stats(boot_tag, unit_tag, ctx):
    for i, (b, a) in enumerate(zip(ctx.stats_before, ctx.stats_after or [])):
        if a is None:
            say("[run] %s g%d stats: the server did not answer" % (unit_tag, i))
            continue
        d = stats.delta(b, a)
        with open(os.path.join(OUT, boot_tag, "stats-%s-g%d.json" % (unit_tag, i)), "w") as f:
            json.dump(d, f, indent=1)
        moved = {k: v for k, v in stats.paths(d).items() if v and TROUBLE_COUNTERS.fullmatch(k.rsplit(".", 1)[-1])}
        say("[run] %s g%d stats in the window: %s" % (unit_tag, i, " ".join(
            "%s=%d" % kv for kv in sorted(moved.items())) or "no retry, drop, NAK or error counter moved"))


def boot_dir(bp):
    """The boot's directory (sockets, server logs, captures): named by its tag, so the trap and the poll boot of one
    scenario, side by side, never share one."""
    return os.path.join(OUT, bp.tag)


def child_cpu():
    """CPU seconds of the processes this harness started and reaped (QEMU, servers, tools)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def say_boots(boot):
    for g in boot.guests:
        gtag = boot.plan.tag if boot.n == 1 else "%s/%s" % (boot.plan.tag, g.name)
        if g.marker_wall:
            say("BOOT %s: kernel start->init %.2f s (guest uptime), QEMU start->init marker %.2f s wall%s" % (
                gtag, g.marker_uptime[0], g.marker_wall[0],
                "; later boots: " + ", ".join("%.2f s" % (b - a) for a, b in zip(g.marker_wall, g.marker_wall[1:]))
                if len(g.marker_wall) > 1 else ""))


LIVE = set()  # the boots running now (a ^C or SIGTERM stops them all)
LIVE_LOCK = threading.Lock()


def run_boot(env, units, results):
    """Boots the guests for these units and runs them until one fails or the last is done; the number judged."""
    bp = BootPlan(units)
    boot = Boot(env, bp, boot_dir(bp))
    os.makedirs(boot.outdir, exist_ok=True)
    with LIVE_LOCK:
        LIVE.add(boot)
    say("[run] ===== boot %s =====" % bp.describe())
    t0, cpu0, done, failed = time.time(), child_cpu(), 0, False
    try:
        try:
            boot.start()
        except Exception as e:  # noqa: BLE001 - BootError, a segment that cannot be made, a harness bug
            failed = True
            for u in units:
                results.fail(u, "boot: %s" % (e if isinstance(e, (BootError, RuntimeError, OSError)) else repr(e)))
            return len(units)
        before = [stats.snapshot(s) for s in boot.servers]
        for k, u in enumerate(units):
            tu = time.time()
            w = run_window(boot, u, k, before, results)
            if not w.began and k == 0:  # the guests never reached the first scenario: the boot failed
                failed = True
                for x in units:
                    results.fail(x, w.reason_)
                return len(units)
            reason = results.judge(u, w.ctx, w.reason_, time.time() - tu)
            if reason:
                say_failed_stats(bp.tag, u.tag, w.ctx)
            done += 1
            before = w.ctx.stats_after
            if reason or not w.began or not w.go_on():
                failed = failed or bool(reason)
                break
        return done
    finally:
        boot.stop(failed)
        with LIVE_LOCK:
            LIVE.discard(boot)
        for g in boot.guests:
            g.wait_exit()
        say_boots(boot)
        say("[run] boot %s took %.1f s%s" % (bp.tag, time.time() - t0, "" if env.options.jobs > 1 else
                                               " (its QEMUs and servers: %.1f s of CPU)" % (child_cpu() - cpu0)))


# ---- the whole run --------------------------------------------------------------------------------------------------
def prepare_dirs(boots):
    for bp in boots:
        for d in {os.path.join(OUT, u.name) for u in bp.units} | {boot_dir(bp)}:
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d)


def build_initrd(env, scenarios):
    """The run's initramfs: the base + every scenario's script as /scenarios/<name>.sh (one for every boot), and the
    same with the ULP userspace when a scenario needs it."""
    os.makedirs(OUT, exist_ok=True)
    scripts = {sc.name: os.path.join(GUEST_TESTS, "scenarios", sc.script_name() + ".sh") for sc in scenarios}
    files = qemu.scenario_files(env.cache, scripts)
    env.initrd = qemu.make_initrd(env.cache, os.path.join(OUT, "initrd"), files)
    if any(sc.ulp for sc in scenarios):
        env.initrd_ulp = qemu.make_initrd(env.cache, os.path.join(OUT, "initrd-ulp"), files, ulp=True)


def run_all(env, scenarios):
    """Every scenario (in order) through its boots; the Results."""
    boots = plan(scenarios, env.options.only_doorbell)
    results = Results([u for b in boots for u in b.units])
    missing = [sc for sc in scenarios if not os.path.exists(os.path.join(GUEST_TESTS, "scenarios",
                                                                         sc.script_name() + ".sh"))]
    for sc in missing:
        results.finish(sc.name, ScenarioState(1, reasons=["no script %s.sh" % sc.script_name()]))
    boots = [BootPlan([u for u in b.units if u.scenario not in missing]) for b in boots]
    boots = [b for b in boots if b.units]
    say("[run] %d scenarios in %d boots:" % (len(scenarios), len(boots)))
    for b in boots:
        say("[run]   %s" % b.describe())
    prepare_dirs(boots)
    build_initrd(env, scenarios)
    try:
        if env.options.jobs > 1:
            run_side_by_side(env, boots, results)
        else:
            for bp in boots:
                run_group(env, bp, results)
    except KeyboardInterrupt as e:
        with LIVE_LOCK:
            for b in list(LIVE):
                b.stop(True)
        for name, st in results.state.items():
            if st.done < st.total:
                say("SCENARIO %s FAIL interrupted (%s)" % (name, e))
        raise
    return results


def run_group(env, bp, results):
    """The plan's boot bp, and a new boot for the units after one that failed (or left state behind)."""
    pending = list(bp.units)
    while pending:
        try:
            pending = pending[run_boot(env, pending, results):]
        except Exception as e:  # noqa: BLE001 - a harness bug fails what is left of the group, not the run
            for u in pending:
                if results.state[u.name].done < results.state[u.name].total:
                    results.fail(u, "harness error: %r" % e)
            return
        if pending:
            say("[run] a new boot for the rest of %s: %s" % (bp.tag, " ".join(u.tag for u in pending)))


# ---- boots side by side (--jobs 2) ---------------------------------------------------------------------------------
VCPU_BUDGET = 8   # vCPUs of the boots running at once: two boots of up to two guests (2 vCPUs each)


def vcpus(bp):
    sc = bp.units[0].scenario
    return 2 * sc.guests + (1 if sc.eth and sc.eth.link == "switch" else 0)


def exclusive(bp):
    """Three guests or a switch guest: the boot runs by itself (its checks time things across guests)."""
    sc = bp.units[0].scenario
    return sc.guests >= 3 or bool(sc.eth and sc.eth.link == "switch")


def weight(bp):
    """How long a boot is expected to take, for the order boots start in: its scenarios' timeouts."""
    return sum(u.scenario.timeout for u in bp.units)


def side_by_side_order(boots):
    """The exclusive boots first (nothing runs beside them, so they cost the same wherever they are), then the rest
    longest first, so that the last boots to start are short and the two lanes end close together."""
    return ([b for b in boots if exclusive(b)] +
            sorted((b for b in boots if not exclusive(b)), key=weight, reverse=True))


def run_side_by_side(env, boots, results):
    """At most env.options.jobs boots at once, their vCPUs within VCPU_BUDGET, an exclusive one by itself; they
    start in side_by_side_order, each as soon as it fits."""
    pending, running, cond = side_by_side_order(boots), {}, threading.Condition()

    def lane(bp):
        try:
            run_group(env, bp, results)
        finally:
            with cond:
                del running[bp.tag]
                cond.notify_all()

    def fits(bp):
        if not running:
            return True
        if exclusive(bp) or any(exclusive(b) for b in running.values()) or len(running) >= env.options.jobs:
            return False
        return sum(vcpus(b) for b in running.values()) + vcpus(bp) <= VCPU_BUDGET

    with cond:
        while pending or running:
            nxt = next((bp for bp in pending if fits(bp)), None)
            if nxt is None:
                cond.wait(1)
                continue
            pending.remove(nxt)
            running[nxt.tag] = nxt
            threading.Thread(target=lane, args=(nxt,), daemon=True, name="boot-" + nxt.tag).start()
