"""QEMU guests and vrnic servers for the harness: the cache layout qemu/fetch fills, the per-run initramfs
overlay, the server process, the QEMU process with its console reader, and the accelerator choice.

Every QEMU runs under a hard timeout (QEMU pauses instead of exiting on some failures), with -no-reboot (unless
reboot=True), panic=-1 and the serial console read line by line (echoed and logged). Guest RAM is a shared memfd
(the vfio-user server needs its fd). Accelerator: KVM only if a probe boot reached the init marker within 20 s
(verdict cached in CACHE/kvm-verdict); otherwise TCG (multi-threaded, 256 MB TB cache, -cpu max).
"""
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time

from . import cpio
from .common import INIT_FILE, QEMU_DIR, REPO, out

INIT_MARKER = re.compile(r"VRNIC-INIT-START uptime=([0-9.]+)")
TCG_ACCEL = ["-accel", "tcg,thread=multi,tb-size=256", "-cpu", "max"]
KVM_ACCEL = ["-accel", "kvm", "-cpu", "host"]


def cache_ready(cache):
    need = ["bin/qemu-system-x86_64", "guest/initramfs.cpio", "guest/initramfs-ulp.cpio", "guest/bzImage",
            "manifest.txt", "guest/dev-root/.vrnic-extracted"]
    return all(os.path.exists(os.path.join(cache, p)) for p in need)


def ensure_cache(cache):
    if not cache_ready(cache):
        print("[launch] cache %s incomplete: running qemu/fetch" % cache, flush=True)
        subprocess.run([os.path.join(QEMU_DIR, "fetch"), "--cache", cache], check=True)
    else:
        # cheap: recompiles guest programs whose source changed
        subprocess.run([os.path.join(QEMU_DIR, "fetch"), "--cache", cache, "--bins-only"], check=True)


def kernel_image(cache):
    v = os.path.join(cache, "guest", "vmlinux")
    return v if os.path.exists(v) else os.path.join(cache, "guest", "bzImage")


def make_initrd(cache, out, files, ulp=False):
    """The base initramfs, with ulp the ULP userspace's archive, and an appended newc cpio holding files
    {guest path: (bytes, mode)}."""
    shutil.copyfile(os.path.join(cache, "guest", "initramfs.cpio"), out)
    with open(out, "ab") as f:
        if ulp:
            with open(os.path.join(cache, "guest", "initramfs-ulp.cpio"), "rb") as u:
                shutil.copyfileobj(u, f)
        f.write(cpio.overlay(files))
    return out


GUEST_LIBS = {"lib.sh": "vrnic-lib.sh", "eth-lib.sh": "vrnic-eth-lib.sh", "roce-lib.sh": "vrnic-roce-lib.sh",
              "ulp-lib.sh": "vrnic-ulp-lib.sh", "ib-lib.sh": "vrnic-ib-lib.sh"}


def scenario_files(cache, scripts, extra=None):
    """The overlay of a boot: /init (qemu/guest/init, replacing the base's), the scripts {scenario name: path} as
    /scenarios/<name>.sh (the kernel argument vrnic.scenarios=A,B,.. runs them in that order), the shell libraries
    as /usr/local/lib/vrnic-*.sh, the guest-tests/src programs in /usr/local/bin, and extra {path: (bytes, mode)}."""
    files = {"init": (open(INIT_FILE, "rb").read(), 0o755)}
    for name, path in scripts.items():
        files["scenarios/%s.sh" % name] = (open(path, "rb").read(), 0o755)
    for src, dst in GUEST_LIBS.items():
        lib = os.path.join(REPO, "guest-tests", "scenarios", src)
        if os.path.exists(lib):
            files["usr/local/lib/" + dst] = (open(lib, "rb").read(), 0o644)
    bindir = os.path.join(cache, "guest-bin")
    if os.path.isdir(bindir):
        for b in sorted(os.listdir(bindir)):
            files["usr/local/bin/" + b] = (open(os.path.join(bindir, b), "rb").read(), 0o755)
    files.update(extra or {})
    return files


# --------------------------------------------------------------------------------------------
def control_command(path, line, timeout=10):
    """One line to a vrnic server's control socket at `path`; its one-line answer (stripped)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(timeout)
        s.connect(path)
        s.sendall(line.encode() + b"\n")
        buf = b""
        while not buf.endswith(b"\n"):
            d = s.recv(4096)
            if not d:
                break
            buf += d
    finally:
        s.close()
    return buf.decode(errors="replace").strip()


class Server:
    """A vrnic vfio-user server process."""

    def __init__(self, binary, sock, control=None, args=(), log=None, wrap=()):
        """wrap: an argv prefix that execs the server (e.g. `ip netns exec NS`: its TAP lives in a namespace)."""
        self.sock, self.control = sock, control
        argv = list(wrap) + [binary, "--socket", sock]
        if control:
            argv += ["--control", control]
        argv += list(args)
        self.argv = argv
        self.logpath = log
        self.logf = open(log, "wb") if log else subprocess.DEVNULL
        self.p = subprocess.Popen(argv, stdout=self.logf, stderr=subprocess.STDOUT, start_new_session=True)
        self.pid = self.p.pid

    def wait_socket(self, timeout=20):
        t = time.time() + timeout
        while time.time() < t:
            if self.p.poll() is not None:
                return False
            if os.path.exists(self.sock) and (not self.control or os.path.exists(self.control)):
                return True
            time.sleep(0.05)
        return False

    def alive(self):
        return self.p.poll() is None

    def command(self, line, timeout=10):
        return control_command(self.control, line, timeout)

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(5)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        if self.logf is not subprocess.DEVNULL:
            self.logf.close()
        return self.p.returncode

    def log_text(self):
        try:
            return open(self.logpath, errors="replace").read()
        except (OSError, TypeError):
            return ""


# Every guest reports a task blocked for 20 s (instead of 120 s) as a hung task: the harness fails a
# scenario whose guest kernel log shows one (guest-tests/run, kernel_health_reason). Boot and run time under TCG:
# no crypto self-tests at boot (cryptomgr.notests: ~1 s), no CPU side-channel mitigations (retpolines, RSB fills:
# every indirect branch and context switch of an emulated CPU pays for them); neither touches a device.
GUEST_KERNEL_ARGS = "sysctl.kernel.hung_task_timeout_secs=20 cryptomgr.notests mitigations=off"


class Guest:
    """One QEMU process; console lines are collected by a reader thread."""

    def __init__(self, cache, name, initrd, append="", sockets=(), accel=None, reboot=False, timeout=120,
                 mem="1G", smp=2, extra=(), log=None, echo=True, iommu=False, interactive=False, wrap=(),
                 echo_tag=None, fds=()):
        """wrap: an argv prefix that execs QEMU (e.g. `ip netns exec NS` for a -netdev tap in a namespace). fds: file
        descriptors QEMU inherits (a `-netdev dgram,local.type=fd` socket the harness made)."""
        self.name, self.timeout, self.echo = name, timeout, echo
        self.echo_tag = echo_tag or name  # the console echo's prefix (boots side by side: the boot's name too)
        qemu = os.path.join(cache, "bin", "qemu-system-x86_64")
        argv = list(wrap) + [qemu, "-nodefaults", "-display", "none", "-smp", str(smp), "-m", mem,
                "-object", "memory-backend-memfd,id=mem,size=%s,share=on" % mem,
                "-machine", "q35,memory-backend=mem"]
        argv += accel or TCG_ACCEL
        if not reboot:
            argv += ["-no-reboot"]
        if iommu:
            argv += ["-device", "intel-iommu,intremap=off,caching-mode=on"]
        for i, s in enumerate(sockets):
            argv += ["-device", "pcie-root-port,id=rp%d,chassis=%d,slot=%d" % (i, i + 1, i + 1),
                     "-device", json.dumps({"driver": "vfio-user-pci", "bus": "rp%d" % i,
                                            "socket": {"type": "unix", "path": s}})]
        argv += ["-kernel", kernel_image(cache), "-initrd", initrd,
                 "-append", ("console=ttyS0 panic=-1 loglevel=4 " + GUEST_KERNEL_ARGS + " " + append).strip(),
                 "-serial", "stdio"]
        argv += list(extra)
        self.argv = argv
        self.lines = []
        self.cond = threading.Condition()
        self.logf = open(log, "w") if log else None
        self.t0 = time.time()
        self.marker_wall = []       # wall seconds from QEMU start to each init marker
        self.marker_uptime = []     # guest uptime at each init marker
        if interactive:
            self.p = subprocess.Popen(argv, pass_fds=tuple(fds))
            return
        # stdin: the guest's console input (send): the harness's word between two scenarios of a boot
        self.p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  stdin=subprocess.PIPE, start_new_session=True, pass_fds=tuple(fds))
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.deadline = self.t0 + timeout

    def _read(self):
        buf = b""
        while True:
            d = self.p.stdout.read1(65536) if hasattr(self.p.stdout, "read1") else self.p.stdout.read(1)
            if not d:
                break
            buf += d
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                self._line(line.decode(errors="replace").rstrip("\r"))
        if buf:
            self._line(buf.decode(errors="replace"))
        with self.cond:
            self.cond.notify_all()

    def _line(self, s):
        m = INIT_MARKER.search(s)
        if m:
            self.marker_wall.append(time.time() - self.t0)
            self.marker_uptime.append(float(m.group(1)))
        with self.cond:
            self.lines.append(s)
            self.cond.notify_all()
        if self.echo:
            out("[%s] %s" % (self.echo_tag, s))
        if self.logf:
            self.logf.write(s + "\n")
            self.logf.flush()

    def wait_for(self, pattern, timeout=None, start=0, count=1):
        """Wait until `count` console lines from index `start` match; returns the last match or None."""
        rx = re.compile(pattern)
        end = min(self.deadline, time.time() + (timeout if timeout is not None else 1e9))
        with self.cond:
            while True:
                found = [rx.search(l) for l in self.lines[start:]]
                found = [m for m in found if m]
                if len(found) >= count:
                    return found[count - 1]
                if self.p.poll() is not None and not self.reader.is_alive():
                    return None
                left = end - time.time()
                if left <= 0:
                    return None
                self.cond.wait(min(left, 0.5))

    def wait_exit(self):
        """Wait for QEMU to exit within the hard timeout; kill it otherwise. Returns (rc, timed_out)."""
        left = self.deadline - time.time()
        try:
            rc = self.p.wait(max(left, 0.1))
            timed_out = False
        except subprocess.TimeoutExpired:
            self.kill()
            rc, timed_out = self.p.returncode, True
        self.reader.join(5)
        if self.p.stdin:
            try:
                self.p.stdin.close()
            except OSError:
                pass
        if self.logf:
            self.logf.close()
            self.logf = None
        return rc, timed_out

    def send(self, line):
        """One line to the guest's console (its /init reads the harness's word there); False if QEMU is gone."""
        try:
            self.p.stdin.write((line + "\n").encode())
            self.p.stdin.flush()
            return True
        except (OSError, ValueError, AttributeError):
            return False

    def kill(self):
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(5)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()

    def text(self):
        with self.cond:
            return "\n".join(self.lines)


# --------------------------------------------------------------------------------------------
def accel_args(cache, force=None, verbose=True):
    """KVM only if a probe guest reaches the init marker within 20 s; verdict cached."""
    if force == "tcg":
        return TCG_ACCEL
    if force == "kvm":
        return KVM_ACCEL
    verdict_f = os.path.join(cache, "kvm-verdict")
    if os.path.exists(verdict_f):
        v = open(verdict_f).read().split()
        verdict = v[0] if v else "tcg"
    else:
        verdict = "tcg"
        why = "no /dev/kvm"
        if os.path.exists("/dev/kvm") and os.access("/dev/kvm", os.R_OK | os.W_OK):
            tmp = tempfile.mkdtemp(prefix="vrnic-kvmprobe-")
            try:
                script = os.path.join(tmp, "s.sh")
                open(script, "w").write("#!/bin/sh\necho KVM-PROBE-OK\n")
                initrd = make_initrd(cache, os.path.join(tmp, "initrd"), scenario_files(cache, {"kvm-probe": script}))
                g = Guest(cache, "kvm-probe", initrd, append="vrnic.scenarios=kvm-probe", accel=KVM_ACCEL,
                          timeout=20, echo=False, smp=1)
                ok = g.wait_for(r"KVM-PROBE-OK", timeout=20)
                g.kill()
                g.wait_exit()
                if ok:
                    verdict, why = "kvm", "probe guest booted in %.1f s" % (time.time() - g.t0)
                else:
                    tail = [l for l in g.lines if l.strip() and "terminating on signal" not in l][-3:]
                    why = "probe guest did not reach the init marker in 20 s (%s)" % (
                        " | ".join(tail)[-300:] if tail else "no console output")
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
        open(verdict_f, "w").write("%s %s\n" % (verdict, why))
        if verbose:
            print("[launch] KVM probe verdict: %s (%s)" % (verdict, why), flush=True)
    return KVM_ACCEL if verdict == "kvm" else TCG_ACCEL


def server_binary(build=True):
    b = os.path.join(REPO, "target", "release", "vrnic")
    if build:
        if not os.path.exists(os.path.join(REPO, "Cargo.toml")):
            raise RuntimeError("no Cargo.toml at repo root")
        r = subprocess.run(["cargo", "build", "--release", "-p", "vrnic"], cwd=REPO,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if r.returncode != 0:
            raise RuntimeError("cargo build --release -p vrnic failed:\n" + r.stdout.decode(errors="replace")[-3000:])
    if not os.path.exists(b):
        raise RuntimeError("server binary %s missing" % b)
    return b
