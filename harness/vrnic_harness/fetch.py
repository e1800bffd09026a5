#!/usr/bin/env python3
"""qemu/fetch - populate the vrnic test-bench cache (python3 stdlib only).

Downloads, into CACHE (default ~/.cache/vrnic, env VRNIC_CACHE, flag --cache DIR):
  * QEMU >= 10.1 with vfio-user-pci from Debian trixie-backports + trixie runtime libraries,
    unpacked into CACHE/qemu-root, wrapper CACHE/bin/qemu-system-x86_64;
  * the guest: trixie's 6.12 kernel (vmlinux extracted for PVH boot + bzImage), the RDMA/VFIO
    modules and their dependencies, rdma-core/perftest/pciutils/iproute2/busybox userspace,
    packed into CACHE/guest/initramfs.cpio (newc) with a busybox /init;
  * host-side build inputs for guest programs that use libibverbs: trixie's libibverbs-dev (headers,
    libibverbs.so) + the libraries it links against, unpacked (never installed) into CACHE/guest/dev-root;
  * guest test programs compiled from guest-tests/src/*.c into CACHE/guest-bin/: static, except the
    VERBS_PROGRAMS, which are linked dynamically against trixie's libibverbs from dev-root (glibc 2.36
    host build, runs on trixie's 2.41).

Uses a PRIVATE apt configuration (CACHE/apt); the system's apt sources/state are never touched
and nothing is installed: only `apt-get download` + `dpkg-deb -x`.
Idempotent: only missing .debs are downloaded, unchanged outputs are not rebuilt.
Versions are resolved at fetch time and written to CACHE/manifest.txt.
"""
import argparse
import ctypes
import ctypes.util
import glob
import gzip
import hashlib
import io
import lzma
import os
import re
import shutil
import stat
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
T0 = time.time()

# --------------------------------------------------------------------------------------------
# package sets
QEMU_PKGS = ["qemu-system-x86", "qemu-system-data", "seabios", "ipxe-qemu"]
# packages that must come from trixie-backports (vfio-user-pci client exists from 10.1 on)
PREFER_BPO = {"qemu-system-x86", "qemu-system-data"}
GUEST_USER_PKGS = ["libibverbs1", "ibverbs-providers", "librdmacm1t64", "libibumad3", "ibverbs-utils",
                   "rdmacm-utils", "perftest", "libnl-3-200", "libnl-route-3-200", "pciutils", "pci.ids",
                   "libpci3", "iproute2", "busybox-static"]
# dependencies never followed (not needed at run time in a cache root / initramfs)
DEP_SKIP = {"qemu-system-common", "debconf", "adduser", "dpkg", "install-info", "init-system-helpers",
            "libc-bin", "libpam-runtime", "debconf-2.0", "perl-base", "sensible-utils", "base-files",
            "libpam-modules", "libpam-modules-bin", "login", "passwd", "systemd", "udev",
            "libsystemd-shared", "libcap2-bin", "libpam0g", "readline-common", "lsb-base",
            "tzdata", "ucf", "media-types", "netbase"}
# host-side build inputs for VERBS_PROGRAMS (headers and link-time libraries only; never installed).
# linux-libc-dev: verbs.h includes <rdma/ib_user_verbs.h> etc.; take the uapi headers of the guest's 6.12
# kernel rather than the host's 6.1 ones (uapi headers are libc-independent).
DEV_PKGS = ["libibverbs-dev", "libibverbs1", "libnl-3-200", "libnl-route-3-200", "linux-libc-dev"]
# guest-tests/src/<name>.c linked dynamically against trixie's libibverbs (the others are -static)
VERBS_PROGRAMS = {"verbs_objects", "dm_test", "err_test", "churn", "resize_cq", "timestamp", "grh_ah", "bad_opcode", "rereg"}
# VERBS_PROGRAMS that also use the mlx5 direct-verbs API (mlx5dv_*): linked against the guest's own
# libmlx5.so.1 (ibverbs-providers, in CACHE/guest/user-root; dev-root's libmlx5.so points at it).
MLX5DV_PROGRAMS = {"bad_opcode"}
GUEST_MODULES = ["ib_core", "ib_uverbs", "ib_umad", "rdma_ucm", "rdma_cm", "ib_cm", "iw_cm", "configfs",
                 "mlx5_core", "mlx5_ib", "ib_ipoib", "rdma_rxe", "crc32_generic", "vfio", "vfio_pci",
                 "vfio_iommu_type1", "vfio_pci_core",
                 # the out-of-band link between guests (qemu/launch --guests N: a second virtio-net NIC)
                 "virtio_net", "net_failover", "failover"]

# --------------------------------------------------------------------------------------------
def log(*a):
    print("[fetch %6.1fs]" % (time.time() - T0), *a, flush=True)


def run(cmd, **kw):
    r = subprocess.run(cmd, **kw)
    if r.returncode != 0:
        raise SystemExit("command failed (%d): %s" % (r.returncode, " ".join(map(str, cmd))))
    return r


def system_debian_uri():
    """The system's Debian archive URI (same mirror as the host's sources)."""
    for f in ["/etc/apt/sources.list.d/debian.sources"] + glob.glob("/etc/apt/sources.list.d/*.sources"):
        try:
            txt = open(f).read()
        except OSError:
            continue
        for block in txt.split("\n\n"):
            m = re.search(r"^URIs:\s*(\S+)", block, re.M)
            s = re.search(r"^Suites:\s*(.*)$", block, re.M)
            if m and s and "security" not in s.group(1) and "security" not in m.group(1):
                return m.group(1)
    try:
        for line in open("/etc/apt/sources.list"):
            p = line.split()
            if len(p) >= 3 and p[0] == "deb" and "security" not in line:
                return p[1] if not p[1].startswith("[") else p[2]
    except OSError:
        pass
    return "http://deb.debian.org/debian"


class Apt:
    def __init__(self, cache):
        self.dir = os.path.join(cache, "apt")
        for d in ("lists/partial", "cache/archives/partial"):
            os.makedirs(os.path.join(self.dir, d), exist_ok=True)
        self.sources = os.path.join(self.dir, "trixie.sources")
        empty = os.path.join(self.dir, "empty")
        os.makedirs(empty, exist_ok=True)
        want = ("Types: deb\nURIs: %s\nSuites: trixie trixie-backports\nComponents: main\n"
                "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n" % system_debian_uri())
        if not os.path.exists(self.sources) or open(self.sources).read() != want:
            open(self.sources, "w").write(want)
        self.opts = ["-o", "Dir::Etc::SourceList=" + self.sources, "-o", "Dir::Etc::SourceParts=" + empty,
                     "-o", "Dir::State::Lists=" + os.path.join(self.dir, "lists"),
                     "-o", "Dir::Cache=" + os.path.join(self.dir, "cache"),
                     "-o", "Dir::Etc::Preferences=/nonexistent", "-o", "Dir::Etc::PreferencesParts=" + empty,
                     "-o", "APT::Sandbox::User=root", "-q"]
        self.pkgs = {}  # name -> {suite: record}

    def lists_files(self):
        return glob.glob(os.path.join(self.dir, "lists", "*_Packages*"))

    def update(self, force=False, max_age=12 * 3600):
        fl = self.lists_files()
        if fl and not force and all(time.time() - os.path.getmtime(f) < max_age for f in fl):
            log("apt lists fresh (use --refresh to force), skipping update")
            return
        log("apt-get update (private trixie + trixie-backports configuration)")
        run(["apt-get"] + self.opts + ["update"], stdout=subprocess.DEVNULL)
        for f in self.lists_files():
            os.utime(f)

    def load(self):
        for f in self.lists_files():
            suite = "trixie-backports" if "trixie-backports" in os.path.basename(f) else "trixie"
            txt = subprocess.run(["/usr/lib/apt/apt-helper", "cat-file", f], capture_output=True,
                                 text=True, check=True).stdout
            for block in txt.split("\n\n"):
                rec = {}
                key = None
                for line in block.split("\n"):
                    if not line:
                        continue
                    if line[0] in " \t":
                        if key:
                            rec[key] += "\n" + line
                        continue
                    k, _, v = line.partition(":")
                    key = k
                    rec[k] = v.strip()
                if "Package" in rec:
                    cur = self.pkgs.setdefault(rec["Package"], {}).get(suite)
                    if cur is None or vcmp(rec["Version"], cur["Version"]) > 0:
                        self.pkgs[rec["Package"]][suite] = rec

    def download(self, recs, dest):
        os.makedirs(dest, exist_ok=True)
        missing = [r for r in recs if not os.path.exists(os.path.join(dest, deb_name(r)))]
        if missing:
            log("downloading %d .debs (%d already cached)" % (len(missing), len(recs) - len(missing)))
            r = subprocess.run(["apt-get"] + self.opts + ["download"] +
                               ["%s=%s" % (r["Package"], r["Version"]) for r in missing], cwd=dest,
                               stdout=subprocess.DEVNULL)
            if r.returncode != 0:
                raise DownloadError("apt-get download failed (rc %d)" % r.returncode)
        else:
            log("all %d .debs already cached" % len(recs))
        for r in recs:
            p = os.path.join(dest, deb_name(r))
            if not os.path.exists(p):
                raise SystemExit("download did not produce " + p)


class DownloadError(Exception):
    pass


def deb_name(r):
    v = r["Version"].replace(":", "%3a")
    return "%s_%s_%s.deb" % (r["Package"], v, r.get("Architecture", "amd64"))


_vc = {}


def vcmp(a, b):
    """Debian version comparison (via dpkg)."""
    if a == b:
        return 0
    k = (a, b)
    if k not in _vc:
        if subprocess.run(["dpkg", "--compare-versions", a, "lt", b]).returncode == 0:
            _vc[k] = -1
        else:
            _vc[k] = 1
    return _vc[k]


def satisfies(ver, op, want):
    c = 0 if ver == want else vcmp(ver, want)
    return {"<<": c < 0, "<=": c <= 0, "=": c == 0, ">=": c >= 0, ">>": c > 0}[op]


def parse_deps(rec):
    out = []
    for field in ("Pre-Depends", "Depends"):
        for clause in rec.get(field, "").split(","):
            clause = clause.strip()
            if not clause:
                continue
            alts = []
            for alt in clause.split("|"):
                m = re.match(r"\s*([^\s(:]+)(?::\S+)?\s*(?:\(\s*(<<|<=|=|>=|>>)\s*([^)\s]+)\s*\))?", alt)
                if m:
                    alts.append((m.group(1), m.group(2), m.group(3)))
            out.append(alts)
    return out


def resolve(apt, roots, prefer_bpo=(), follow=lambda n: True):
    """Resolve roots + their Depends closure (first satisfiable alternative, filtered by follow)."""
    chosen = {}
    todo = [(r, None, None, True) for r in roots]
    while todo:
        name, op, want, forced = todo.pop(0)
        if name in chosen:
            r = chosen[name]
            if op and not satisfies(r["Version"], op, want):
                # try to upgrade to the other suite
                cands = [c for c in apt.pkgs.get(name, {}).values() if satisfies(c["Version"], op, want)]
                if cands:
                    chosen[name] = cands[0]
                    todo.extend((n, o, w, False) for alts in parse_deps(cands[0]) for (n, o, w) in alts[:1])
                else:
                    log("WARNING: %s %s %s not satisfiable (have %s)" % (name, op, want, r["Version"]))
            continue
        suites = apt.pkgs.get(name)
        if not suites:
            if forced:
                raise SystemExit("package %s not found in trixie/trixie-backports" % name)
            continue
        order = ["trixie-backports", "trixie"] if name in prefer_bpo else ["trixie", "trixie-backports"]
        rec = None
        for s in order:
            c = suites.get(s)
            if c and (not op or satisfies(c["Version"], op, want)):
                rec = c
                break
        if rec is None:
            rec = suites.get(order[0]) or suites.get(order[1])
            log("WARNING: no version of %s satisfies %s %s, using %s" % (name, op, want, rec["Version"]))
        chosen[name] = rec
        for alts in parse_deps(rec):
            pick = None
            for (n, o, w) in alts:
                if n in apt.pkgs:
                    pick = (n, o, w)
                    break
            if pick is None or pick[0] in DEP_SKIP or not follow(pick[0]):
                continue
            todo.append(pick + (False,))
    return chosen


def extract(debs_dir, recs, root, stampname):
    """dpkg-deb -x each deb into root; re-extract from scratch if the set changed."""
    key = hashlib.sha256("\n".join(sorted(deb_name(r) for r in recs)).encode()).hexdigest()
    stamp = os.path.join(root, ".vrnic-extracted")
    if os.path.exists(stamp) and open(stamp).read() == key:
        log("%s up to date" % stampname)
        return False
    if os.path.exists(root):
        shutil.rmtree(root)
    os.makedirs(root)
    log("extracting %d packages into %s" % (len(recs), root))
    for r in recs:
        run(["dpkg-deb", "-x", os.path.join(debs_dir, deb_name(r)), root])
    open(stamp, "w").write(key)
    return True


# --------------------------------------------------------------------------------------------
# ELF helpers
def elf_needed(path):
    try:
        out = subprocess.run(["readelf", "-dW", path], capture_output=True, text=True).stdout
    except OSError:
        return []
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


def is_elf(path):
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def check_closure(root, start_files, libdirs):
    """Return sorted list of (missing soname, needed-by)."""
    seen, missing = set(), []
    todo = list(start_files)
    while todo:
        f = todo.pop()
        rf = os.path.realpath(f)
        if rf in seen:
            continue
        seen.add(rf)
        for so in elf_needed(rf):
            for d in libdirs:
                p = os.path.join(root, d, so)
                if os.path.exists(p):
                    todo.append(p)
                    break
            else:
                missing.append((so, os.path.relpath(f, root)))
    return sorted(set(missing))


# --------------------------------------------------------------------------------------------
# kernel helpers
def zstd_decompress(data):
    name = ctypes.util.find_library("zstd") or "libzstd.so.1"
    z = ctypes.CDLL(name)
    z.ZSTD_createDStream.restype = ctypes.c_void_p
    z.ZSTD_decompressStream.restype = ctypes.c_size_t
    z.ZSTD_decompressStream.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    z.ZSTD_isError.argtypes = [ctypes.c_size_t]
    z.ZSTD_freeDStream.argtypes = [ctypes.c_void_p]
    z.ZSTD_DCtx_setParameter.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]

    class Buf(ctypes.Structure):
        _fields_ = [("ptr", ctypes.c_void_p), ("size", ctypes.c_size_t), ("pos", ctypes.c_size_t)]

    ds = z.ZSTD_createDStream()
    z.ZSTD_initDStream(ctypes.c_void_p(ds))
    z.ZSTD_DCtx_setParameter(ds, 100, 31)  # ZSTD_d_windowLogMax = 31 (kernel uses a large window)
    src = ctypes.create_string_buffer(data, len(data))
    inb = Buf(ctypes.cast(src, ctypes.c_void_p), len(data), 0)
    chunk = 1 << 24
    dst = ctypes.create_string_buffer(chunk)
    out = io.BytesIO()
    while True:
        ob = Buf(ctypes.cast(dst, ctypes.c_void_p), chunk, 0)
        ret = z.ZSTD_decompressStream(ds, ctypes.byref(ob), ctypes.byref(inb))
        if z.ZSTD_isError(ret):
            break  # trailing garbage after the frame: stop, we have what we need
        out.write(dst.raw[:ob.pos])
        if ret == 0 and ob.pos < chunk:
            break
        if inb.pos >= inb.size and ob.pos < chunk:
            break
    z.ZSTD_freeDStream(ds)
    return out.getvalue()


def extract_vmlinux(bzimage, dest):
    data = open(bzimage, "rb").read()
    for magic, fn in ((b"\x28\xb5\x2f\xfd", zstd_decompress), (b"\xfd7zXZ\x00", lzma.decompress),
                      (b"\x1f\x8b\x08", gzip.decompress)):
        off = data.find(magic)
        while off >= 0:
            try:
                out = fn(data[off:])
            except Exception:
                out = b""
            if out[:4] == b"\x7fELF":
                open(dest, "wb").write(out)
                return True
            off = data.find(magic, off + 1)
    return False


def has_pvh_note(vmlinux):
    out = subprocess.run(["readelf", "-nW", vmlinux], capture_output=True, text=True).stdout
    # XEN_ELFNOTE_PHYS32_ENTRY = 18
    return bool(re.search(r"Xen\s+0x[0-9a-f]+\s+(?:NT_VERSION|Unknown note type:)?\s*\(?0x0*12\)?", out)) or \
        "PHYS32_ENTRY" in out or bool(re.search(r"Xen.*0x00000012", out))


def modinfo(data):
    """Parse the .modinfo section of an ELF64 LE module."""
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3a)
    secs = []
    for i in range(shnum):
        s = struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
        secs.append(s)
    strtab = secs[shstrndx]
    names = data[strtab[4]:strtab[4] + strtab[5]]
    info = {}
    for s in secs:
        nm = names[s[0]:names.index(b"\0", s[0])]
        if nm == b".modinfo":
            for kv in data[s[4]:s[4] + s[5]].split(b"\0"):
                if b"=" in kv:
                    k, v = kv.decode(errors="replace").split("=", 1)
                    info.setdefault(k, []).append(v)
    return info


def read_module(path):
    raw = open(path, "rb").read()
    if path.endswith(".xz"):
        return lzma.decompress(raw)
    if path.endswith(".zst"):
        return zstd_decompress(raw)
    if path.endswith(".gz"):
        return gzip.decompress(raw)
    return raw


# --------------------------------------------------------------------------------------------
# cpio newc writer
class Cpio:
    def __init__(self, f):
        self.f = f
        self.ino = 300000
        self.n = 0

    def _hdr(self, name, mode, size, nlink=1, rdev=(0, 0)):
        self.ino += 1
        name_b = name.encode() + b"\0"
        h = b"070701" + b"".join(b"%08X" % x for x in (
            self.ino, mode, 0, 0, nlink, 0, size, 0, 0, rdev[0], rdev[1], len(name_b), 0))
        self.f.write(h + name_b)
        self.f.write(b"\0" * ((4 - (len(h) + len(name_b)) % 4) % 4))
        self.n += 1

    def _pad(self, size):
        self.f.write(b"\0" * ((4 - size % 4) % 4))

    def dir(self, name, mode=0o755):
        self._hdr(name, stat.S_IFDIR | mode, 0, nlink=2)

    def file(self, name, data, mode=0o644):
        self._hdr(name, stat.S_IFREG | mode, len(data))
        self.f.write(data)
        self._pad(len(data))

    def symlink(self, name, target):
        t = target.encode()
        self._hdr(name, stat.S_IFLNK | 0o777, len(t))
        self.f.write(t)
        self._pad(len(t))

    def node(self, name, mode, major, minor):
        self._hdr(name, mode, 0, rdev=(major, minor))

    def trailer(self):
        self._hdr("TRAILER!!!", 0, 0)
        pos = self.f.tell()
        self.f.write(b"\0" * ((512 - pos % 512) % 512))


class Tree:
    """An ordered set of initramfs entries (path -> (kind, payload, mode))."""

    def __init__(self):
        self.e = {}

    def mkdirs(self, path):
        parts = path.strip("/").split("/")
        for i in range(1, len(parts) + 1):
            p = "/".join(parts[:i])
            if p and p not in self.e:
                self.e[p] = ("dir", None, 0o755)

    def add(self, path, kind, payload, mode=0o644):
        path = path.strip("/")
        self.mkdirs(os.path.dirname(path))
        self.e[path] = (kind, payload, mode)

    def add_tree(self, src, dst, exclude=()):
        for dp, dns, fns in os.walk(src):
            rel = os.path.relpath(dp, src)
            if any(rel == x or rel.startswith(x + "/") for x in exclude):
                dns[:] = []
                continue
            d = os.path.normpath(os.path.join(dst, rel)).strip("/")
            if d and d != ".":
                self.mkdirs(d)
            for n in dns + fns:
                p = os.path.join(dp, n)
                rp = os.path.normpath(os.path.join(d, n)).strip("/")
                if any(os.path.relpath(p, src) == x for x in exclude):
                    continue
                st = os.lstat(p)
                if stat.S_ISLNK(st.st_mode):
                    self.add(rp, "link", os.readlink(p))
                elif stat.S_ISREG(st.st_mode):
                    self.add(rp, "file", p, stat.S_IMODE(st.st_mode))
                elif stat.S_ISDIR(st.st_mode):
                    self.mkdirs(rp)

    def write(self, out, extra_nodes=True):
        with open(out + ".tmp", "wb") as f:
            c = Cpio(f)
            for p in sorted(self.e, key=lambda x: (x.count("/"), x)):
                kind, payload, mode = self.e[p]
                if kind == "dir":
                    c.dir(p, mode)
                elif kind == "link":
                    c.symlink(p, payload)
                elif kind == "data":
                    c.file(p, payload, mode)
                else:
                    c.file(p, open(payload, "rb").read(), mode)
            if extra_nodes:
                c.node("dev/console", stat.S_IFCHR | 0o600, 5, 1)
                c.node("dev/null", stat.S_IFCHR | 0o666, 1, 3)
            c.trailer()
        os.replace(out + ".tmp", out)


# --------------------------------------------------------------------------------------------
INIT = r"""#!/bin/busybox sh
# vrnic guest init (generated by qemu/fetch)
export PATH=/usr/local/bin:/usr/bin:/usr/sbin:/bin:/sbin
export LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mkdir -p /dev/pts /dev/shm /tmp /run /var/tmp
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /dev/shm
hostname vrnic-guest
ip link set lo up 2>/dev/null
echo "VRNIC-INIT-START uptime=$(cut -d' ' -f1 /proc/uptime) kernel=$(uname -r)"
SCEN=
NET=
for a in $(cat /proc/cmdline); do
  case "$a" in
    vrnic.scenario=*) SCEN="${a#vrnic.scenario=}";;
    vrnic.net=*) NET="${a#vrnic.net=}";;
  esac
done
# vrnic.net=<addr/prefix> (qemu/launch --guests N): the virtio-net link between the guests gets that address
if [ -n "$NET" ]; then
  modprobe virtio_net
  n=0
  while [ ! -e /sys/class/net/eth0 ] && [ $n -lt 50 ]; do sleep 0.1; n=$((n + 1)); done
  if ip addr add "$NET" dev eth0 && ip link set eth0 up; then
    echo "VRNIC-NET eth0 $NET $(cat /sys/class/net/eth0/address)"
  else
    echo "VRNIC-NET-FAIL eth0 $NET"
  fi
fi
poweroff_now() { sync; echo o > /proc/sysrq-trigger; sleep 5; poweroff -f; }
if [ -x /scenario.sh ]; then
  echo "VRNIC-SCENARIO-BEGIN $SCEN"
  /scenario.sh "$SCEN"
  rc=$?
  # the console shows only KERN_ERR and worse (loglevel=4): the harness reads WARNINGs from this dump
  dmesg | grep -E 'blocked for more than|soft lockup|hard LOCKUP|WARNING:|BUG:|Oops' | sed 's/^/VRNIC-KERNEL-LOG /'
  echo "VRNIC-SCENARIO-END $SCEN rc=$rc"
elif [ -n "$SCEN" ] && [ "$SCEN" = "shell" ]; then
  setsid cttyhack sh
else
  echo "VRNIC-NO-SCENARIO"
fi
poweroff_now
"""


def build_guest(cache, apt, debs_dir, force, manifest):
    gdir = os.path.join(cache, "guest")
    os.makedirs(gdir, exist_ok=True)
    # ---- kernel: the ABI linux-image-amd64 depends on, -unsigned flavour
    meta = apt.pkgs["linux-image-amd64"]["trixie"]
    dep = parse_deps(meta)[0][0][0]          # linux-image-6.12.NNN+deb13-amd64
    kpkg = dep + "-unsigned" if not dep.endswith("-unsigned") else dep
    if kpkg not in apt.pkgs:
        raise SystemExit("kernel package %s not found" % kpkg)
    krec = apt.pkgs[kpkg]["trixie"]
    user = resolve(apt, GUEST_USER_PKGS, follow=lambda n: n.startswith(("lib", "zlib")))
    recs = [krec] + sorted(user.values(), key=lambda r: r["Package"])
    apt.download(recs, debs_dir)
    for r in recs:
        manifest.append(("guest", r))
    kroot = os.path.join(gdir, "kernel-root")
    uroot = os.path.join(gdir, "user-root")
    kchanged = extract(debs_dir, [krec], kroot, "kernel root")
    uchanged = extract(debs_dir, list(user.values()), uroot, "guest userspace root")

    kver = [os.path.basename(p)[len("vmlinuz-"):] for p in glob.glob(os.path.join(kroot, "boot", "vmlinuz-*"))][0]
    open(os.path.join(gdir, "kver"), "w").write(kver + "\n")
    bz = os.path.join(gdir, "bzImage")
    vml = os.path.join(gdir, "vmlinux")
    if kchanged or force or not os.path.exists(bz):
        shutil.copy(os.path.join(kroot, "boot", "vmlinuz-" + kver), bz)
        shutil.copy(os.path.join(kroot, "boot", "config-" + kver), os.path.join(gdir, "config"))
        if os.path.exists(vml):
            os.unlink(vml)
        log("extracting uncompressed vmlinux from the bzImage")
        if extract_vmlinux(bz, vml + ".tmp"):
            os.replace(vml + ".tmp", vml)
            if not has_pvh_note(vml):
                log("WARNING: vmlinux has no PVH note; launch will use the bzImage")
                os.rename(vml, vml + ".nopvh")
        else:
            log("WARNING: could not extract vmlinux; launch will use the bzImage")
    cfg = open(os.path.join(gdir, "config")).read()
    for opt in ("CONFIG_VFIO_NOIOMMU", "CONFIG_VFIO", "CONFIG_VFIO_PCI", "CONFIG_MLX5_CORE", "CONFIG_RDMA_RXE",
                "CONFIG_PVH"):
        m = re.search(r"^%s=(\S+)" % opt, cfg, re.M)
        log("kernel %s=%s" % (opt, m.group(1) if m else "(not set)"))

    initrd = os.path.join(gdir, "initramfs.cpio")
    key = hashlib.sha256((kver + "|" + "|".join(deb_name(r) for r in recs) + "|" +
                          open(os.path.abspath(__file__), "rb").read().decode(errors="replace")).encode()).hexdigest()
    stamp = initrd + ".key"
    if not force and os.path.exists(initrd) and os.path.exists(stamp) and open(stamp).read() == key:
        log("initramfs up to date")
        return
    log("building initramfs")
    t = Tree()
    for d in ("proc", "sys", "dev", "tmp", "run", "etc", "root", "var", "mnt"):
        t.mkdirs(d)
    for l, tgt in (("bin", "usr/bin"), ("sbin", "usr/sbin"), ("lib", "usr/lib"), ("lib64", "usr/lib64")):
        t.add(l, "link", tgt)
    # userspace (merged-/usr layout; packages that ship /bin or /sbin get folded into /usr)
    for top in ("usr", "etc"):
        src = os.path.join(uroot, top)
        if os.path.isdir(src):
            t.add_tree(src, top, exclude=("share/doc", "share/man", "share/locale", "share/lintian",
                                           "share/bug", "share/info", "share/bash-completion", "share/zsh"))
    for top, dst in (("bin", "usr/bin"), ("sbin", "usr/sbin"), ("lib", "usr/lib"), ("lib64", "usr/lib64")):
        src = os.path.join(uroot, top)
        if os.path.isdir(src) and not os.path.islink(src):
            t.add_tree(src, dst)
    # busybox applets where no real binary exists
    bb = os.path.join(uroot, "usr/bin/busybox")
    if not os.path.exists(bb):
        bb = os.path.join(uroot, "bin/busybox")
        t.add("usr/bin/busybox", "file", bb, 0o755)
    applets = subprocess.run([bb, "--list-full"], capture_output=True, text=True, check=True).stdout.split()
    for a in applets:
        name = os.path.basename(a)
        if name in ("busybox", "init", "linuxrc"):
            continue
        dest = "usr/sbin/" + name if a.startswith(("sbin", "usr/sbin")) else "usr/bin/" + name
        if ("usr/bin/" + name) in t.e or ("usr/sbin/" + name) in t.e:
            continue
        t.add(dest, "link", "/usr/bin/busybox")
    t.add("init", "data", INIT.encode(), 0o755)
    t.add("etc/passwd", "data", b"root:x:0:0:root:/root:/bin/sh\n")
    t.add("etc/group", "data", b"root:x:0:\n")
    t.add("etc/hosts", "data", b"127.0.0.1 localhost vrnic-guest\n")
    t.add("etc/nsswitch.conf", "data", b"hosts: files\n")
    # modules
    mroot = os.path.join(kroot, "lib/modules", kver)
    if not os.path.isdir(mroot):
        mroot = os.path.join(kroot, "usr/lib/modules", kver)
    index = {}
    for dp, _, fns in os.walk(mroot):
        for fn in fns:
            m = re.match(r"(.+)\.ko(\.xz|\.zst|\.gz)?$", fn)
            if m:
                index[m.group(1).replace("-", "_")] = os.path.join(dp, fn)
    builtin = set()
    bf = os.path.join(mroot, "modules.builtin")
    if os.path.exists(bf):
        for line in open(bf):
            builtin.add(os.path.basename(line.strip())[:-3].replace("-", "_"))
    todo = list(GUEST_MODULES)
    mods = {}
    while todo:
        n = todo.pop(0).replace("-", "_")
        if n in mods:
            continue
        if n not in index:
            if n in builtin:
                log("module %s is built in" % n)
            else:
                log("WARNING: module %s not found" % n)
            continue
        data = read_module(index[n])
        deps = [d.replace("-", "_") for d in ",".join(modinfo(data).get("depends", [""])).split(",") if d]
        rel = os.path.relpath(index[n], mroot)
        rel = re.sub(r"\.(xz|zst|gz)$", "", rel)
        mods[n] = (rel, deps, data)
        todo.extend(deps)
    order = []

    def visit(n, stack=()):
        if n in order or n not in mods:
            return
        for d in mods[n][1]:
            if d not in stack:
                visit(d, stack + (n,))
        order.append(n)
    for n in sorted(mods):
        visit(n)
    base = "usr/lib/modules/%s/" % kver
    dep_lines = []
    for n in order:
        rel, deps, data = mods[n]
        t.add(base + rel, "data", data)

        def closure(x, acc):
            for d in mods.get(x, ("", []))[1]:
                if d in mods and d not in acc:
                    acc.append(d)
                    closure(d, acc)
            return acc
        # modprobe loads the listed dependencies from the end: list them in reverse topological order
        deps_sorted = sorted(closure(n, []), key=order.index, reverse=True)
        dep_lines.append("%s: %s" % (rel, " ".join(mods[d][0] for d in deps_sorted)))
    t.add(base + "modules.dep", "data", ("\n".join(dep_lines) + "\n").encode())
    t.add(base + "modules.order", "data", ("\n".join(mods[n][0] for n in order) + "\n").encode())
    for f in ("modules.builtin", "modules.builtin.modinfo"):
        if os.path.exists(os.path.join(mroot, f)):
            t.add(base + f, "file", os.path.join(mroot, f))
    t.add("etc/vrnic-modules", "data", ("\n".join(order) + "\n").encode())
    log("modules: %d (%s)" % (len(order), " ".join(order)))
    # library closure check for the important binaries and the verbs providers
    libdirs = ["usr/lib/x86_64-linux-gnu", "usr/lib64", "lib/x86_64-linux-gnu", "usr/lib"]
    starts = []
    for b in ("ibv_devinfo", "ib_write_lat", "ib_send_bw", "rping", "lspci", "ip", "rdma", "ibv_rc_pingpong"):
        for d in ("usr/bin", "usr/sbin", "bin", "sbin"):
            if os.path.exists(os.path.join(uroot, d, b)):
                starts.append(os.path.join(uroot, d, b))
                break
        else:
            log("WARNING: guest binary %s not found" % b)
    starts += glob.glob(os.path.join(uroot, "usr/lib/x86_64-linux-gnu/libibverbs/*.so"))
    miss = check_closure(uroot, starts, libdirs)
    if miss:
        raise SystemExit("guest library closure incomplete: %s" % miss)
    log("guest library closure OK (%d start files)" % len(starts))
    t.write(initrd)
    open(stamp, "w").write(key)
    log("initramfs: %s (%.1f MB)" % (initrd, os.path.getsize(initrd) / 1e6))


def build_qemu(cache, apt, debs_dir, manifest):
    chosen = resolve(apt, QEMU_PKGS, prefer_bpo=PREFER_BPO,
                     follow=lambda n: n.startswith(("lib", "zlib")) or n in QEMU_PKGS)
    recs = sorted(chosen.values(), key=lambda r: r["Package"])
    qv = chosen["qemu-system-x86"]["Version"]
    if vcmp(qv, "1:10.1") < 0:
        raise SystemExit("qemu-system-x86 %s is older than 10.1 (no vfio-user-pci)" % qv)
    apt.download(recs, debs_dir)
    for r in recs:
        manifest.append(("qemu", r))
    root = os.path.join(cache, "qemu-root")
    extract(debs_dir, recs, root, "qemu root")
    qbin = os.path.join(root, "usr/bin/qemu-system-x86_64")
    miss = check_closure(root, [qbin], ["usr/lib/x86_64-linux-gnu", "usr/lib64", "lib/x86_64-linux-gnu"])
    if miss:
        raise SystemExit("QEMU library closure incomplete: %s" % miss)
    log("QEMU library closure OK")
    bindir = os.path.join(cache, "bin")
    os.makedirs(bindir, exist_ok=True)
    w = os.path.join(bindir, "qemu-system-x86_64")
    open(w, "w").write(
        '#!/bin/sh\n# generated by qemu/fetch: QEMU %s from trixie-backports, run with its own loader\n'
        'ROOT="$(cd "$(dirname "$0")/../qemu-root" && pwd)"\n'
        'exec "$ROOT/usr/lib64/ld-linux-x86-64.so.2" --library-path "$ROOT/usr/lib/x86_64-linux-gnu" '
        '"$ROOT/usr/bin/qemu-system-x86_64" -L "$ROOT/usr/share/qemu" -L "$ROOT/usr/share/seabios" '
        '-L "$ROOT/usr/lib/ipxe/qemu" "$@"\n' % qv)
    os.chmod(w, 0o755)
    out = subprocess.run([w, "-device", "help"], capture_output=True, text=True)
    if "vfio-user-pci" not in out.stdout + out.stderr:
        raise SystemExit("QEMU does not list vfio-user-pci:\n" + out.stderr[-2000:])
    ver = subprocess.run([w, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    log("QEMU OK: %s, vfio-user-pci present" % ver)


def dev_root(cache):
    return os.path.join(cache, "guest", "dev-root")


def build_dev_root(cache, apt, debs_dir, manifest):
    """trixie's libibverbs-dev (+ the .so files it links against) unpacked into CACHE/guest/dev-root."""
    chosen = resolve(apt, DEV_PKGS, follow=lambda n: n in DEV_PKGS)
    recs = sorted(chosen.values(), key=lambda r: r["Package"])
    if chosen["libibverbs-dev"]["Version"] != chosen["libibverbs1"]["Version"]:
        raise SystemExit("libibverbs-dev %s != libibverbs1 %s" % (chosen["libibverbs-dev"]["Version"],
                                                                   chosen["libibverbs1"]["Version"]))
    apt.download(recs, debs_dir)
    for r in recs:
        manifest.append(("dev", r))
    root = dev_root(cache)
    extract(debs_dir, recs, root, "dev root (libibverbs-dev)")
    for need in ("usr/include/infiniband/verbs.h", "usr/include/rdma/ib_user_verbs.h",
                 "usr/include/x86_64-linux-gnu/asm/types.h", "usr/lib/x86_64-linux-gnu/libibverbs.so"):
        if not os.path.exists(os.path.join(root, need)):
            raise SystemExit("dev root lacks %s" % need)


def build_guest_bins(cache, force=False):
    src = os.path.join(REPO, "guest-tests", "src")
    out = os.path.join(cache, "guest-bin")
    os.makedirs(out, exist_ok=True)
    droot = dev_root(cache)
    dstamp = os.path.join(droot, ".vrnic-extracted")
    for c in sorted(glob.glob(os.path.join(src, "*.c"))):
        name = os.path.basename(c)[:-2]
        b = os.path.join(out, name)
        verbs = name in VERBS_PROGRAMS
        newest = os.path.getmtime(c)
        if verbs:
            if not os.path.exists(dstamp):
                raise SystemExit("%s needs %s (libibverbs-dev): run qemu/fetch" % (name, droot))
            newest = max(newest, os.path.getmtime(dstamp))
        if not force and os.path.exists(b) and os.path.getmtime(b) >= newest:
            continue
        if verbs:
            lib = os.path.join(droot, "usr/lib/x86_64-linux-gnu")
            # dynamic: the guest's trixie libibverbs1 + mlx5 provider are loaded at run time; the host
            # linker only checks our references (trixie's libs name newer glibc symbols: not our concern)
            cmd = ["gcc", "-O2", "-Wall", "-I" + os.path.join(droot, "usr/include"),
                   "-I" + os.path.join(droot, "usr/include/x86_64-linux-gnu"), "-L" + lib,
                   "-Wl,-rpath-link," + lib, "-Wl,--allow-shlib-undefined", "-o", b + ".tmp", c, "-libverbs"]
            if name in MLX5DV_PROGRAMS:
                mlx5 = os.path.join(cache, "guest", "user-root", "usr/lib/x86_64-linux-gnu/libmlx5.so.1")
                if not os.path.exists(mlx5):
                    raise SystemExit("%s needs %s (ibverbs-providers): run qemu/fetch" % (name, mlx5))
                cmd.append(mlx5)
            log("gcc (dynamic, trixie libibverbs) %s" % os.path.relpath(c, REPO))
        else:
            cmd = ["gcc", "-static", "-O2", "-Wall", "-o", b + ".tmp", c]
            log("gcc -static %s" % os.path.relpath(c, REPO))
        run(cmd)
        os.replace(b + ".tmp", b)


def du(path):
    tot = 0
    for dp, _, fns in os.walk(path):
        for f in fns:
            try:
                tot += os.lstat(os.path.join(dp, f)).st_size
            except OSError:
                pass
    return tot


def default_cache():
    return os.environ.get("VRNIC_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "vrnic")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cache", default=default_cache(), help="cache dir (default $VRNIC_CACHE or ~/.cache/vrnic)")
    ap.add_argument("--refresh", action="store_true", help="force apt-get update of the private lists")
    ap.add_argument("--force", action="store_true", help="rebuild the initramfs and test programs")
    ap.add_argument("--bins-only", action="store_true", help="only (re)compile guest-tests/src/*.c")
    a = ap.parse_args()
    cache = os.path.abspath(a.cache)
    os.makedirs(cache, exist_ok=True)
    if a.bins_only:
        build_guest_bins(cache, a.force)
        return
    debs_dir = os.path.join(cache, "debs")
    before = du(debs_dir)
    apt = Apt(cache)
    apt.update(force=a.refresh)
    apt.load()
    manifest = []
    try:
        build_qemu(cache, apt, debs_dir, manifest)
        build_guest(cache, apt, debs_dir, a.force, manifest)
        build_dev_root(cache, apt, debs_dir, manifest)
    except DownloadError as e:
        # the archive may have dropped a version our (recent) lists still name: refresh and retry once
        log("%s: refreshing the package lists and retrying" % e)
        apt.update(force=True)
        apt.pkgs = {}
        apt.load()
        manifest = []
        build_qemu(cache, apt, debs_dir, manifest)
        build_guest(cache, apt, debs_dir, a.force, manifest)
        build_dev_root(cache, apt, debs_dir, manifest)
    build_guest_bins(cache, a.force)
    with open(os.path.join(cache, "manifest.txt"), "w") as f:
        f.write("# vrnic cache manifest, resolved %s from Debian trixie/trixie-backports\n"
                % time.strftime("%Y-%m-%d %H:%M:%S"))
        for grp, r in manifest:
            suite = "trixie-backports" if "bpo" in r["Version"] else "trixie"
            f.write("%s %s %s %s %s\n" % (grp, r["Package"], r["Version"], suite, r.get("Size", "?")))
    after = du(debs_dir)
    log("done in %.1f s: downloaded %.1f MB this run; .debs %.1f MB; cache total %.1f MB (%s)" % (
        time.time() - T0, (after - before) / 1e6, after / 1e6, du(cache) / 1e6, cache))


if __name__ == "__main__":
    main()
