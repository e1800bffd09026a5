"""guest-tests/run - run vrnic guest scenarios (python3 stdlib only).

usage: guest-tests/run [--list | --list-ci | --list-boots | --list-md | --write-md | --self-test] [--ci]
                       [--cache DIR] [--accel auto|tcg|kvm] [NAME ...]
  NAME: a scenario (see --list), or "default" (the scenarios the registry marks default: what CI runs, also used
  when no NAME is given), or "all" (every scenario: default + barbench, bench-loopback, bench-2vm);
  "bench" = bench-loopback bench-2vm. --ci: the default set (ci/test runs `guest-tests/run --ci`).
  --list-ci prints the default set's names, --list-boots which of the scenarios (NAME..., or --ci's) share a
  boot, --list-md guest-tests/README.md's scenario table, --write-md rewrites that table in the README;
  --self-test checks the harness's own rules and that the README table is current.
Builds the server if needed (cargo build --release -p vrnic), then boots: scenarios whose guests and servers are set
up alike run one after another in one boot of vrnic server(s) and QEMU guest(s) (run/plan.py), each its
guest-tests/scenarios/<script>.sh as /scenarios/<name>.sh (appended to the initramfs as a second cpio, so editing
a script needs no rebuild); echoes the guest consoles; prints exactly one line "SCENARIO <name> PASS" or
"SCENARIO <name> FAIL <reason>" per scenario, judged on its own window of the consoles. The last line is
"N passed, M failed". Exit 0 only if all passed. Logs (console, server stderr) go to guest-tests/out/<name>/
(a boot of several scenarios: out/boot-<first>/, and each scenario's window in out/<name>/). The scenarios are
registered in harness/vrnic_harness/run/registry.py (the only list).
"""
import argparse
import os
import re
import signal
import time

from .. import qemu, roce_pcap
from ..common import GUEST_TESTS, default_cache, say
from . import checks_switch, checks_ulp, plan, runner, stats
from .boot import Env, Options
from .console import kernel_health_reason
from .registry import DEFAULT, MD_BEGIN, MD_END, SCENARIOS, expand, markdown_table

README = os.path.join(GUEST_TESTS, "README.md")


def readme_table(path=README):
    """The scenario table as it stands in the README (MD_BEGIN .. MD_END), or None."""
    try:
        text = open(path).read()
    except OSError:
        return None
    a, b = text.find(MD_BEGIN), text.find(MD_END)
    if a < 0 or b < a:
        return None
    return text[a:b + len(MD_END)] + "\n"


def write_readme_table(path=README):
    text = open(path).read()
    a, b = text.find(MD_BEGIN), text.find(MD_END)
    if a < 0 or b < a:
        raise SystemExit("%s has no %r .. %r markers" % (path, MD_BEGIN, MD_END))
    open(path, "w").write(text[:a] + markdown_table() + text[b + len(MD_END) + 1:])


def self_test():
    """The harness's own rules on captured console text (ci/test runs this before any guest)."""
    hung = "[   31.204] INFO: task rereg:241 blocked for more than 20 seconds."
    warn = "VRNIC-KERNEL-LOG [   12.001] WARNING: CPU: 1 PID: 77 at drivers/infiniband/hw/mlx5/umr.c:300 x+0x1/0x2"
    cases = [("[    1.000] mlx5_core 0000:01:00.0: firmware version: 16.35.1012\nperftest WARNING: x", False),
             ("[g1] " + hung, True), (warn, True), ("[    3.3] BUG: kernel NULL pointer dereference", True),
             ("[    3.3] watchdog: BUG: soft lockup - CPU#0 stuck for 22s!", True), ("WARNING: not a kernel line", False)]
    fails = [t for t, bad in cases if (kernel_health_reason(t) is not None) != bad]
    if kernel_health_reason(warn, allow=r"umr\.c") is not None:
        fails.append("allow pattern ignored")
    # one registry: every scenario has its script and a doc line, and the README's table is generated from it
    nchecks = len(cases) + 4
    missing = [n for n, sc in SCENARIOS.items()
               if not sc.doc or not os.path.exists(os.path.join(GUEST_TESTS, "scenarios", sc.script_name() + ".sh"))]
    if missing:
        fails.append("scenarios without a doc line or a guest-tests/scenarios script: %s" % " ".join(missing))
    # the ULP userspace is in a boot only when a scenario asks for it (Scenario.ulp)
    ulp_tools = re.compile(r"vrnic-ulp-lib|python3|\bfio\b|\bnvme |ucx_|\bfi_(info|pingpong)|mount\.nfs|exportfs")
    scripts = {n: os.path.join(GUEST_TESTS, "scenarios", sc.script_name() + ".sh") for n, sc in SCENARIOS.items()}
    need_ulp = [n for n, sc in SCENARIOS.items() if not sc.ulp and os.path.exists(scripts[n]) and
                ulp_tools.search(open(scripts[n]).read())]
    if need_ulp:
        fails.append("scenarios whose script uses the ULP userspace without ulp=True: %s" % " ".join(need_ulp))
    if not DEFAULT:
        fails.append("the registry marks no scenario default (CI would run none)")
    if readme_table() != markdown_table():
        fails.append("guest-tests/README.md's scenario table differs from the registry: run guest-tests/run --write-md")
    # the RoCE pcap checker's ICRC verifier against frames rxe sent (vrnic_harness/roce_pcap.py)
    nchecks += 1
    fails += ["roce_pcap: %s" % f for f in roce_pcap.self_test()]
    # check_ucx: UCX's ERROR lines fail ucx, but for the strong fence's flush(remote) where UCX has no flush key
    nchecks += 1
    fails += ["check_ucx: %s" % f for f in checks_ulp.ucx_log_self_test()]
    # the switch guest's counter blocks (tc -s qdisc, ip -s link) and the RED delta between two of them
    nchecks += 1
    fails += ["switch_stats: %s" % f for f in checks_switch.self_test()]
    # shared boots: the plan of every scenario (and of the default set) keeps the rules of run/plan.py
    nchecks += 2
    fails += ["plan: %s" % f for f in plan.self_test(list(SCENARIOS.values()))]
    fails += ["plan (default set): %s" % f for f in plan.self_test([SCENARIOS[n] for n in DEFAULT])]
    # the control socket's stats in a scenario's window (run/stats.py)
    nchecks += 1
    fails += ["stats: %s" % f for f in stats.self_test()]
    for f in fails:
        say("SELF-TEST FAIL: %s" % f)
    say("%d passed, %d failed" % (nchecks - len(fails), len(fails)))
    return 1 if fails else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*")
    ap.add_argument("--list", action="store_true", help="every scenario with its doc line")
    ap.add_argument("--list-ci", action="store_true", help="the default set's names, one a line (what CI runs)")
    ap.add_argument("--list-boots", action="store_true",
                    help="which scenarios share a boot (of NAME..., else the default set)")
    ap.add_argument("--list-md", action="store_true", help="print guest-tests/README.md's scenario table")
    ap.add_argument("--write-md", action="store_true", help="rewrite the scenario table in guest-tests/README.md")
    ap.add_argument("--ci", action="store_true", help="run the default set (what ci/test runs)")
    ap.add_argument("--cache", default=default_cache())
    ap.add_argument("--accel", choices=["auto", "tcg", "kvm"], default="auto")
    ap.add_argument("--server", help="use this server binary instead of building target/release/vrnic")
    ap.add_argument("--server-arg", action="append", default=[],
                    help="extra vrnic argument for every server (repeatable), e.g. --server-arg=--trace")
    ap.add_argument("--guest-arg", action="append", default=[],
                    help="extra guest kernel command line word (repeatable), e.g. vrnic.bench=ib_write_lat,ib_send_lat "
                         "(bench: only these tests) or vrnic.bench_devs=mlx5_0 (bench: only these devices)")
    ap.add_argument("--doorbell", choices=["trap", "poll"], action="append", default=[],
                    help="scenarios that run once per doorbell mode: only this mode (repeatable)")
    ap.add_argument("--eth-nic", choices=["vrnic", "virtio"],
                    help="Ethernet scenarios: virtio = every vrnic port becomes a virtio-net NIC on the same backend "
                         "(no vrnic: validates the topology and the scripts)")
    ap.add_argument("--pcap", action="store_true", help="Ethernet scenarios: capture every port to OUT/eth<i>.pcap")
    ap.add_argument("--jobs", type=int, help="boots at once (default 1; --ci: 2): two small ones side by side "
                                              "(run/runner.py run_side_by_side)")
    ap.add_argument("--self-test", action="store_true", help="check the harness's own rules, boot nothing")
    a = ap.parse_args()

    def stop(sig, _frame):
        # a SIGTERM/SIGHUP (timeout, CI cancel) unwinds like ^C: guests and servers stopped, namespaces deleted
        raise KeyboardInterrupt("signal %d" % sig)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGHUP, stop)
    if a.self_test:
        return self_test()
    if a.list_ci:
        for n in DEFAULT:
            print(n)
        return 0
    if a.list_md:
        print(markdown_table(), end="")
        return 0
    if a.write_md:
        write_readme_table()
        say("wrote the scenario table of %s" % README)
        return 0
    if a.list:
        for n, sc in SCENARIOS.items():
            say("%-13s %s%s" % (n, sc.doc, "" if n in DEFAULT else "  (not in default set)"))
        return 0
    if a.ci and a.names:
        say("--ci runs the default set: give no scenario names with it")
        return 2
    names = list(dict.fromkeys(expand(a.names)))
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        say("unknown scenario(s): %s (see --list)" % " ".join(unknown))
        return 2
    options = Options(server_extra=a.server_arg, guest_extra=a.guest_arg, only_doorbell=a.doorbell,
                      eth_nic=a.eth_nic or "", eth_pcap=a.pcap, jobs=a.jobs or (2 if a.ci else 1))
    scenarios = [SCENARIOS[n] for n in names]
    if a.list_boots:
        for b in plan.plan(scenarios, options.only_doorbell):
            say(b.describe())
        return 0
    t0 = time.time()
    cache = os.path.abspath(a.cache)
    qemu.ensure_cache(cache)
    accel = qemu.accel_args(cache, None if a.accel == "auto" else a.accel)
    say("[run] accel: %s" % " ".join(accel))
    env = Env(cache, accel, server(a, scenarios), options)
    try:
        results = runner.run_all(env, scenarios)
    except KeyboardInterrupt:  # ^C or SIGTERM: the runner's finally blocks have cleaned up
        return 130
    say("[run] total %.1f s" % (time.time() - t0))
    say("%d passed, %d failed" % (len(results.passed), len(results.failed)))
    return 0 if not results.failed else 1


def server(a, scenarios):
    """The server binary: --server, else target/release/vrnic built (when a scenario needs a device); a failed
    build's exception (each scenario that needs the server then fails with it)."""
    if a.server:
        say("[run] server binary %s (given)" % os.path.abspath(a.server))
        return os.path.abspath(a.server)
    if not any(sc.device and not (sc.eth and a.eth_nic == "virtio") for sc in scenarios):
        return None
    tb = time.time()
    try:
        binary = qemu.server_binary(build=True)
        say("[run] server binary %s (build %.1f s)" % (binary, time.time() - tb))
        return binary
    except Exception as e:  # noqa: BLE001 - reported per scenario
        say("[run] server build failed: %s" % e)
        return e
