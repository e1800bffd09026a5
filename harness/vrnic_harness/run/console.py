"""Reading guest consoles: kernel-line rules every scenario shares (hung tasks, WARNINGs, mlx5/ib errors)."""
import re

from ..common import say


def exit_text(rc):
    """A server's exit status in words; SIGSYS means the seccomp allow-list refused a syscall."""
    if rc == -31:
        return ("killed by SIGSYS: a syscall outside the seccomp allow-list; rerun with "
                "--server-arg=--seccomp=log and look for type=1326 in dmesg")
    return "rc %s" % rc


KLINE = re.compile(r"^\[\s*\d+\.\d+\] ")
MLX5_LINE = re.compile(r"mlx5|infiniband|\bib_|\brdma", re.I)
BAD_LINE = re.compile(r"cmd timeout|failed|error|health compromised", re.I)


def guest_reason(text):
    """Why one guest's window failed (GUEST-FAIL, the script's exit code, no end line), or None."""
    m = re.search(r"GUEST-FAIL (.*)", text)
    if m:
        return "guest: " + m.group(1).strip()
    if not re.search(r"VRNIC-SCENARIO-END \S+ rc=0", text):
        m = re.search(r"VRNIC-SCENARIO-END \S+ rc=(\d+)", text)
        return "scenario script exit %s" % (m.group(1) if m else "missing")
    return None


def console_lines(text):
    return [re.sub(r"^\[g\d+\] ", "", l) for l in text.split("\n")]


def dmesg_sections(text):
    """The `=== dmesg (...) ===` ... `=== end dmesg ===` blocks the scenarios print."""
    return re.findall(r"^=== dmesg \((.*?)\) ===\n(.*?)^=== end dmesg ===", "\n".join(console_lines(text)),
                      re.S | re.M)


def mlx5_bad_lines(text):
    """Kernel lines (console printk or dmesg dump) from mlx5/ib that report a timeout, failure, error or
    health problem; deduplicated (a line can appear on the console and in a dump)."""
    seen, bad = set(), []
    for l in console_lines(text):
        if KLINE.match(l) and MLX5_LINE.search(l) and BAD_LINE.search(l) and l not in seen:
            seen.add(l)
            bad.append(l)
    return bad


def bad_lines_reason(text):
    bad = mlx5_bad_lines(text)
    if not bad:
        return None
    for l in bad:
        say("MLX5 BAD DMESG LINE: %s" % l)
    return "%d mlx5/ib error line(s) in dmesg, first: %s" % (len(bad), bad[0])


KERNEL_BAD = re.compile(r"blocked for more than|soft lockup|hard LOCKUP|WARNING:|BUG:|Oops")


def kernel_health_reason(text, allow=None):
    """A hung task, soft or hard lockup, WARNING, BUG or Oops in a guest kernel's log fails every scenario:
    kernel lines on the console (KERN_ERR and worse) and the WARNING-level lines /init dumps from dmesg
    after the scenario (`VRNIC-KERNEL-LOG ...`). `allow`: a regex of lines a scenario provokes on purpose."""
    seen, bad = set(), []
    for l in console_lines(text):
        l = re.sub(r"^VRNIC-KERNEL-LOG ", "", l)
        if KLINE.match(l) and KERNEL_BAD.search(l) and not (allow and re.search(allow, l)):
            key = KLINE.sub("", l)
            if key not in seen:
                seen.add(key)
                bad.append(l)
    if not bad:
        return None
    for l in bad:
        say("GUEST KERNEL BAD LINE: %s" % l)
    return "guest kernel: %d hung-task/lockup/WARNING/BUG/Oops line(s), first: %s" % (len(bad), bad[0])


def mlx5_up_reason(text):
    m = re.search(r"MLX5-UP-FAIL (.*)", text)
    if m:
        return "mlx5 bring-up: " + m.group(1).strip()
    if not re.search(r"MLX5-UP start=", text):
        return "no MLX5-UP marker"
    return None
