"""What every harness program shares: the repository's paths, the cache location, one-line console output."""
import os
import subprocess
import sys
import threading
import time

PKG = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(PKG))
QEMU_DIR = os.path.join(REPO, "qemu")
GUEST_TESTS = os.path.join(REPO, "guest-tests")
INIT_FILE = os.path.join(QEMU_DIR, "guest", "init")  # the guest's /init (base initramfs and every boot's overlay)
OUT_LOCK = threading.Lock()


def out(s):
    """Print one whole line (console reader threads and the harness share stdout)."""
    with OUT_LOCK:
        sys.stdout.write(s + "\n")
        sys.stdout.flush()


def say(*a):
    out(" ".join(str(x) for x in a))


def default_cache():
    return os.environ.get("VRNIC_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "vrnic")


class Log:
    """`[NAME  12.3s] ...` lines, the time counted from the program's start."""

    def __init__(self, name):
        self.name, self.t0 = name, time.time()

    def __call__(self, *a):
        print("[%s %6.1fs]" % (self.name, time.time() - self.t0), *a, flush=True)

    def elapsed(self):
        return time.time() - self.t0


def run(cmd, **kw):
    """subprocess.run that stops the program with the command line when the command fails."""
    r = subprocess.run(cmd, **kw)
    if r.returncode != 0:
        raise SystemExit("command failed (%d): %s" % (r.returncode, " ".join(map(str, cmd))))
    return r
