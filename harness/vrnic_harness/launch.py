#!/usr/bin/env python3
"""qemu/launch - start vrnic guests, each with its own vrnic server on its own socket.

Also importable (guest-tests/run loads it with SourceFileLoader) for Server/Guest/accel helpers.

CLI examples:
  qemu/launch --no-device                        # boot one bare guest (no scenario) and power off
  qemu/launch --script guest-tests/scenarios/lspci.sh
  qemu/launch --guests 2 --server-arg=--trace --script my.sh --timeout 300
  qemu/launch --shell                             # interactive busybox shell on the serial console
  qemu/launch --guests 2 --script guest-tests/scenarios/net2.sh   # two guests: fabric + OOB link

Topology (--guests N): server i gets --lid i+1 and, when the binary has the flags, --fabric-port P_i
--fabric-bind 127.0.0.1 and --peer LID=127.0.0.1:P_j for every other server (free UDP ports, or
--fabric-base B: P_i = B+i). With N > 1 each guest also gets a second NIC (virtio-net, QEMU -netdev dgram
over UDP on 127.0.0.1, a hub thread for N > 2) and the kernel argument vrnic.net=10.0.0.<i+1>/24 that
/init puts on eth0: the out-of-band TCP path for ibv_*_pingpong/perftest. The guest's index is
vrnic.guest=<i>. One guest: unchanged (no fabric flags, no second NIC) unless --loopback (its server then
gets --lid 1 and a fabric port with no peers).

Every QEMU runs under a hard timeout (QEMU pauses instead of exiting on some failures), with
-no-reboot (unless --reboot), panic=-1 and the serial console on stdout (+ a log file).
Guest RAM is a shared memfd (the vfio-user server needs its fd).
Accelerator: KVM only if a probe boot reached the init marker within 20 s (verdict cached in
CACHE/kvm-verdict); otherwise TCG (multi-threaded, 256 MB TB cache, -cpu max).
"""
import argparse
import importlib.machinery
import io
import json
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
INIT_MARKER = re.compile(r"VRNIC-INIT-START uptime=([0-9.]+)")
TCG_ACCEL = ["-accel", "tcg,thread=multi,tb-size=256", "-cpu", "max"]
KVM_ACCEL = ["-accel", "kvm", "-cpu", "host"]
OUT_LOCK = threading.Lock()


def out(s):
    """Print one whole line (console reader threads and the harness share stdout)."""
    with OUT_LOCK:
        sys.stdout.write(s + "\n")
        sys.stdout.flush()


def default_cache():
    return os.environ.get("VRNIC_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "vrnic")


def load_fetch():
    return importlib.machinery.SourceFileLoader("vrnic_fetch", os.path.join(HERE, "fetch")).load_module()


def cache_ready(cache):
    need = ["bin/qemu-system-x86_64", "guest/initramfs.cpio", "guest/bzImage", "manifest.txt",
            "guest/dev-root/.vrnic-extracted"]
    return all(os.path.exists(os.path.join(cache, p)) for p in need)


def ensure_cache(cache):
    if not cache_ready(cache):
        print("[launch] cache %s incomplete: running qemu/fetch" % cache, flush=True)
        subprocess.run([os.path.join(HERE, "fetch"), "--cache", cache], check=True)
    else:
        # cheap: recompiles guest programs whose source changed
        subprocess.run([os.path.join(HERE, "fetch"), "--cache", cache, "--bins-only"], check=True)


def kernel_image(cache):
    v = os.path.join(cache, "guest", "vmlinux")
    return v if os.path.exists(v) else os.path.join(cache, "guest", "bzImage")


def make_initrd(cache, out, files):
    """base initramfs + an appended newc cpio holding files {guest path: (bytes, mode)}."""
    fetch = load_fetch()
    shutil.copyfile(os.path.join(cache, "guest", "initramfs.cpio"), out)
    t = fetch.Tree()
    for p, (data, mode) in files.items():
        t.add(p, "data", data, mode)
    ov = out + ".overlay"
    t.write(ov, extra_nodes=False)
    with open(out, "ab") as f, open(ov, "rb") as g:
        shutil.copyfileobj(g, f)
    os.unlink(ov)
    return out


def scenario_files(cache, script_path, extra=None):
    files = {"scenario.sh": (open(script_path, "rb").read(), 0o755)}
    lib = os.path.join(REPO, "guest-tests", "scenarios", "lib.sh")
    if os.path.exists(lib):
        files["usr/local/lib/vrnic-lib.sh"] = (open(lib, "rb").read(), 0o644)
    bindir = os.path.join(cache, "guest-bin")
    if os.path.isdir(bindir):
        for b in sorted(os.listdir(bindir)):
            files["usr/local/bin/" + b] = (open(os.path.join(bindir, b), "rb").read(), 0o755)
    files.update(extra or {})
    return files


# --------------------------------------------------------------------------------------------
class Server:
    """A vrnic vfio-user server process."""

    def __init__(self, binary, sock, control=None, args=(), log=None):
        self.sock, self.control = sock, control
        argv = [binary, "--socket", sock]
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
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout)
        s.connect(self.control)
        s.sendall(line.encode() + b"\n")
        buf = b""
        while not buf.endswith(b"\n"):
            d = s.recv(4096)
            if not d:
                break
            buf += d
        s.close()
        return buf.decode(errors="replace").strip()

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
# scenario whose guest kernel log shows one (guest-tests/run, kernel_health_reason).
GUEST_KERNEL_ARGS = "sysctl.kernel.hung_task_timeout_secs=20"


class Guest:
    """One QEMU process; console lines are collected by a reader thread."""

    def __init__(self, cache, name, initrd, append="", sockets=(), accel=None, reboot=False, timeout=120,
                 mem="1G", smp=2, extra=(), log=None, echo=True, iommu=False, interactive=False):
        self.name, self.timeout, self.echo = name, timeout, echo
        qemu = os.path.join(cache, "bin", "qemu-system-x86_64")
        argv = [qemu, "-nodefaults", "-display", "none", "-smp", str(smp), "-m", mem,
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
            self.p = subprocess.Popen(argv)
            return
        self.p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, start_new_session=True)
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
            out("[%s] %s" % (self.name, s))
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
        if self.logf:
            self.logf.close()
            self.logf = None
        return rc, timed_out

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
# multi-guest topology: the RoCEv2 fabric between the vrnic servers and the out-of-band IP link
_HELP_CACHE = {}


def server_flags(binary):
    """The long flags a server binary accepts (from its --help; cached per binary)."""
    if binary not in _HELP_CACHE:
        try:
            r = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=20)
            _HELP_CACHE[binary] = set(re.findall(r"(--[a-z][a-z0-9-]*)", r.stdout + r.stderr))
        except (OSError, subprocess.TimeoutExpired):
            _HELP_CACHE[binary] = set()
    return _HELP_CACHE[binary]


def free_ports(n, kind=socket.SOCK_DGRAM, host="127.0.0.1"):
    """n distinct ports free right now on host (bound together, then released)."""
    socks, ports = [], []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, kind)
            s.bind((host, 0))
            socks.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return ports


class UdpHub(threading.Thread):
    """A repeating hub for QEMU `-netdev dgram` NICs (more than two guests): every datagram that arrives on
    the hub port is sent to every other guest's port."""

    def __init__(self, port, guest_ports, host="127.0.0.1"):
        super().__init__(daemon=True, name="vrnic-udp-hub")
        self.addrs = [(host, p) for p in guest_ports]
        self.s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.s.bind((host, port))
        self.s.settimeout(0.5)
        self.stopped = False

    def run(self):
        while not self.stopped:
            try:
                data, src = self.s.recvfrom(65536)
            except socket.timeout:
                continue
            except OSError:
                break
            for a in self.addrs:
                if a != src:
                    try:
                        self.s.sendto(data, a)
                    except OSError:
                        pass

    def stop(self):
        self.stopped = True
        self.join(2)
        self.s.close()


class Topology:
    """N guests, each with its own vrnic server.

    RDMA fabric: server i gets LID i+1 and a UDP fabric port on 127.0.0.1 and lists every other server as a
    `--peer LID=HOST:PORT` (flags `--fabric-port/--fabric-bind/--peer`, only passed when the server binary
    has them). Ports: fabric_base+i if given, else free ports picked at start.
    Out-of-band IP (net=True): each guest gets a second virtio-net NIC (`-netdev dgram`, UDP on 127.0.0.1;
    two guests are wired back to back, more go through a UdpHub thread) and the kernel argument
    `vrnic.net=10.0.0.<i+1>/24`, which the guest /init applies to eth0.
    """

    def __init__(self, n, fabric=True, net=True, fabric_base=None, net_base=None, pcap_dir=None, faults=None,
                 host="127.0.0.1"):
        self.n, self.fabric, self.net, self.host = n, fabric, net, host
        self.pcap_dir, self.faults = pcap_dir, faults
        self.lids = [i + 1 for i in range(n)]
        self.fabric_ports = ([fabric_base + i for i in range(n)] if fabric_base else free_ports(n)) if fabric else []
        nports = n + (1 if n > 2 else 0)
        self.net_ports = ([net_base + i for i in range(nports)] if net_base else free_ports(nports)) \
            if net and n > 1 else []
        self.hub = None
        self.warned = False

    def ip(self, i):
        return "10.0.0.%d" % (i + 1)

    def server_args(self, i, binary=None):
        if not self.fabric:
            return []
        args = ["--lid", str(self.lids[i])]
        flags = server_flags(binary) if binary else {"--fabric-port", "--fabric-bind", "--peer", "--pcap"}
        if "--fabric-port" not in flags:
            if not self.warned:
                out("[launch] server %s has no --fabric-port flag: guests get LIDs but no RDMA fabric" % binary)
                self.warned = True
            return args
        args += ["--fabric-port", str(self.fabric_ports[i])]
        if "--fabric-bind" in flags:
            args += ["--fabric-bind", self.host]
        for j in range(self.n):
            if j != i:
                args += ["--peer", "%d=%s:%d" % (self.lids[j], self.host, self.fabric_ports[j])]
        if self.pcap_dir and "--pcap" in flags:
            args += ["--pcap", os.path.join(self.pcap_dir, "fabric%d.pcap" % i)]
        if self.faults and "--faults" in flags:
            args += ["--faults", self.faults]
        return args

    def config_toml(self, i):
        """The same topology as a config file section (docs/configuration.md `[fabric]`)."""
        peers = ", ".join('{lid = %d, addr = "%s:%d"}' % (self.lids[j], self.host, self.fabric_ports[j])
                          for j in range(self.n) if j != i)
        return "[identity]\nlid = %d\n\n[fabric]\nport = %d\nbind = \"%s\"\npeers = [%s]\n" % (
            self.lids[i], self.fabric_ports[i], self.host, peers)

    def qemu_args(self, i):
        if not self.net_ports:
            return []
        local = self.net_ports[i]
        remote = self.net_ports[1 - i] if self.n == 2 else self.net_ports[self.n]
        nd = ("dgram,id=oob,local.type=inet,local.host=%s,local.port=%d,remote.type=inet,remote.host=%s,"
              "remote.port=%d" % (self.host, local, self.host, remote))
        return ["-netdev", nd, "-device", "virtio-net-pci,netdev=oob,mac=52:54:00:00:00:%02x,romfile=" % (i + 1)]

    def append(self, i):
        return ("vrnic.net=%s/24" % self.ip(i)) if self.net_ports else ""

    def start(self):
        if self.n > 2 and self.net_ports and not self.hub:
            self.hub = UdpHub(self.net_ports[self.n], self.net_ports[:self.n], self.host)
            self.hub.start()

    def stop(self):
        if self.hub:
            self.hub.stop()
            self.hub = None

    def describe(self):
        parts = []
        if self.fabric:
            parts.append("fabric " + ", ".join("g%d lid %d udp %s:%d" % (i, self.lids[i], self.host,
                                                                          self.fabric_ports[i]) for i in range(self.n)))
        if self.net_ports:
            parts.append("oob " + ", ".join("g%d %s" % (i, self.ip(i)) for i in range(self.n)) +
                         " (virtio-net over udp %s%s)" % (",".join(map(str, self.net_ports[:self.n])),
                                                         " + hub %d" % self.net_ports[-1] if self.n > 2 else ""))
        return "; ".join(parts)


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
                initrd = make_initrd(cache, os.path.join(tmp, "initrd"), scenario_files(cache, script))
                g = Guest(cache, "kvm-probe", initrd, append="vrnic.scenario=kvm-probe", accel=KVM_ACCEL,
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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cache", default=default_cache())
    ap.add_argument("--guests", type=int, default=1)
    ap.add_argument("--no-device", action="store_true", help="boot without a vfio-user device/server")
    ap.add_argument("--server", help="vrnic binary (default: build target/release/vrnic)")
    ap.add_argument("--server-arg", action="append", default=[], help="extra vrnic argument (repeatable)")
    ap.add_argument("--doorbell", choices=["trap", "poll"])
    ap.add_argument("--script", help="guest script run by /init (becomes /scenario.sh)")
    ap.add_argument("--append", default="", help="extra kernel command line")
    ap.add_argument("--timeout", type=float, default=120, help="hard timeout per guest (s)")
    ap.add_argument("--reboot", action="store_true", help="allow guest reboots (no -no-reboot)")
    ap.add_argument("--iommu", action="store_true", help="add an intel-iommu (guest: intel_iommu=on)")
    ap.add_argument("--accel", choices=["auto", "tcg", "kvm"], default="auto")
    ap.add_argument("--shell", action="store_true", help="interactive shell on the console (1 guest)")
    ap.add_argument("--workdir", help="where sockets/logs go (default: a temp dir)")
    ap.add_argument("--no-fabric", action="store_true", help="no RDMA fabric flags for the servers")
    ap.add_argument("--loopback", action="store_true",
                    help="one guest: still give its server --lid 1 and a fabric port (loopback over the UDP path)")
    ap.add_argument("--no-net", action="store_true", help="no virtio-net link between the guests")
    ap.add_argument("--fabric-base", type=int, help="fabric UDP port of guest 0 (guest i: +i); default: free ports")
    ap.add_argument("--pcap", action="store_true", help="each server writes WORKDIR/fabric<i>.pcap")
    ap.add_argument("--faults", help="fault-injection spec passed to every server (--faults)")
    ap.add_argument("--smp", type=int, help="vCPUs per guest (default 2)")
    a = ap.parse_args()
    cache = os.path.abspath(a.cache)
    ensure_cache(cache)
    accel = accel_args(cache, None if a.accel == "auto" else a.accel)
    work = a.workdir or tempfile.mkdtemp(prefix="vrnic-launch-")
    os.makedirs(work, exist_ok=True)
    servers, guests = [], []
    rc = 0
    topo = Topology(a.guests, fabric=not a.no_fabric and not a.no_device and (a.guests > 1 or a.loopback),
                    net=not a.no_net,
                    fabric_base=a.fabric_base, pcap_dir=work if a.pcap else None, faults=a.faults)
    smp = a.smp or 2
    try:
        binary = None if a.no_device else (a.server or server_binary())
        topo.start()
        if topo.describe():
            print("[launch] topology: %s" % topo.describe(), flush=True)
        for i in range(a.guests):
            sockets = []
            if binary:
                sargs = topo.server_args(i, binary) + list(a.server_arg) + (
                    ["--doorbell", a.doorbell] if a.doorbell else [])
                s = Server(binary, os.path.join(work, "vrnic%d.sock" % i), os.path.join(work, "vrnic%d.ctl" % i),
                           sargs, log=os.path.join(work, "server%d.log" % i))
                if not s.wait_socket():
                    raise RuntimeError("server %d did not create its socket (log %s):\n%s"
                                       % (i, s.logpath, s.log_text()[-2000:]))
                print("[launch] server %d pid %d socket %s control %s log %s" % (i, s.pid, s.sock, s.control,
                                                                               s.logpath), flush=True)
                servers.append(s)
                sockets = [s.sock]
            script = a.script
            if a.shell or not script:
                script = os.path.join(work, "noop.sh")
                open(script, "w").write("#!/bin/sh\n" + ("exec setsid cttyhack sh\n" if a.shell else "true\n"))
            initrd = make_initrd(cache, os.path.join(work, "initrd%d" % i), scenario_files(cache, script))
            append = ("vrnic.scenario=%s vrnic.guest=%d %s" % (os.path.basename(script)[:-3] if script.endswith(".sh")
                                                               else "custom", i, a.append)).strip()
            if a.iommu:
                append += " intel_iommu=on iommu=pt"
            append = (append + " " + topo.append(i)).strip()
            g = Guest(cache, "g%d" % i, initrd, append=append, sockets=sockets, accel=accel, reboot=a.reboot,
                      timeout=a.timeout, log=os.path.join(work, "console%d.log" % i), iommu=a.iommu,
                      interactive=a.shell, smp=smp, extra=topo.qemu_args(i))
            guests.append(g)
        if a.shell:
            guests[0].p.wait()
            return 0
        for g in guests:
            if g.wait_for(r"VRNIC-SCENARIO-END", timeout=a.timeout):
                # a driver still probing (e.g. mlx5_core waiting for its command queue) blocks the
                # guest kernel's power-off in device_shutdown(): allow 8 s, then stop QEMU
                try:
                    g.p.wait(8)
                except subprocess.TimeoutExpired:
                    print("[launch] %s did not power off within 8 s of the scenario end; stopping QEMU" % g.name,
                          flush=True)
                    g.kill()
            grc, to = g.wait_exit()
            if g.marker_wall:
                print("[launch] %s boot: kernel->init %.2f s (guest uptime), QEMU start->init marker %.2f s wall"
                      % (g.name, g.marker_uptime[0], g.marker_wall[0]), flush=True)
            if to:
                print("[launch] %s TIMEOUT after %.0f s (killed)" % (g.name, a.timeout), flush=True)
                rc = 124
            elif grc:
                print("[launch] %s QEMU exit code %s" % (g.name, grc), flush=True)
                rc = rc or 1
    finally:
        for g in guests:
            g.kill()
        for s in servers:
            s.stop()
        topo.stop()
        print("[launch] logs in %s" % work, flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
