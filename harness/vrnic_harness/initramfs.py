"""The guest's initramfs: CACHE/guest/initramfs.cpio, trixie's kernel, modules and userspace packages unpacked from
their .debs, busybox applets, /init (the file qemu/guest/init), modules.dep, packed by Debian's `cpio`
(Tree.write); CACHE/guest/initramfs-ulp.cpio, the files only the ULP userspace (ulpimage.py) ships, appended to it
for the boots that need it (unpacking 180 MB costs a boot seconds under TCG; the base alone is a third of that).
guest-tests/run appends a per-run overlay (cpio.overlay) to a copy of them.
"""
import glob
import hashlib
import os
import re
import shutil
import stat
import subprocess

from . import cpio
from .common import INIT_FILE
from .debian import deb_name, extract
from .kernel import check_closure, extract_vmlinux, has_pvh_note, module_depends, read_module
from .ulpimage import (ULP_BINARIES, ULP_USER_PKGS, add_ulp_userspace, follow_guest_dep, ulp_closure_starts,
                       ulp_exclude, ulp_paths)

# what the initramfs is made by: a change to one of them rebuilds it
BUILD_INPUTS = [INIT_FILE, os.path.abspath(__file__)] + [os.path.join(os.path.dirname(os.path.abspath(__file__)), f)
                                                         for f in ("kernel.py", "ulpimage.py")]
GUEST_USER_PKGS = ["libibverbs1", "ibverbs-providers", "librdmacm1t64", "libibumad3", "ibverbs-utils",
                   "rdmacm-utils", "perftest", "libnl-3-200", "libnl-route-3-200", "pciutils", "pci.ids",
                   "libpci3", "iproute2", "busybox-static",
                   # the Ethernet scenarios (eth-*): ethtool, iperf3, tcpdump, iputils ping (-M do, -f, -6)
                   "ethtool", "iperf3", "tcpdump", "iputils-ping",
                   # the IB fabric scenarios (ib-diag): ibstat, smpquery, perfquery, ibnetdiscover (binaries only:
                   # perl is not followed, so its perl scripts do not run)
                   "infiniband-diags", "libibmad5", "libibnetdisc5t64",
                   # ib-opensm: the real subnet manager in a guest (vrnic's built-in SM off)
                   "opensm"] + ULP_USER_PKGS
GUEST_MODULES = ["ib_core", "ib_uverbs", "ib_umad", "rdma_ucm", "rdma_cm", "ib_cm", "iw_cm", "configfs",
                 "mlx5_core", "mlx5_ib", "ib_ipoib", "rdma_rxe", "crc32_generic", "vfio", "vfio_pci",
                 "vfio_iommu_type1", "vfio_pci_core",
                 # the out-of-band link between guests (qemu/launch --guests N: a second virtio-net NIC)
                 "virtio_net", "net_failover", "failover",
                 # the Ethernet scenarios: 802.1Q subinterfaces, tcpdump's packet sockets
                 "8021q", "af_packet", "ipv6",
                 # the kernel ULP scenarios (issue 22): NVMe-oF over RDMA (host, target, null_blk namespace),
                 # NFS over RDMA (nfsd, the NFSv4 client, the RPC-over-RDMA transport)
                 "nvme_rdma", "nvmet_rdma", "null_blk", "nfsd", "nfsv4", "rpcrdma",
                 # the switch guest (ethtopo.py link "switch"): a Linux bridge and the qdiscs of its congestion
                 # point (rate limit htb/tbf, RED with ECN marking; netem for delay; fq_codel is built in)
                 "bridge", "sch_htb", "sch_tbf", "sch_red", "sch_netem"]


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

    def order(self):
        """Parents before children, shallow before deep (the order the entries are archived in)."""
        return sorted(self.e, key=lambda x: (x.count("/"), x))

    def write(self, out, stage, nodes=True):
        """Lays the entries out in the directory stage (files copied, mtimes 0) and packs them with Debian's
        `cpio -o -H newc` (owner root), then appends the device nodes (cpio.device_nodes)."""
        if os.path.exists(stage):
            shutil.rmtree(stage)
        os.makedirs(stage)
        names = self.order()
        for p in names:
            kind, payload, mode = self.e[p]
            dst = os.path.join(stage, p)
            if kind == "dir":
                os.mkdir(dst)
            elif kind == "link":
                os.symlink(payload, dst)
            elif kind == "data":
                with open(dst, "wb") as f:
                    f.write(payload)
            else:
                shutil.copyfile(payload, dst)
            if kind != "link":
                os.chmod(dst, mode)
        for p in reversed(names):
            os.utime(os.path.join(stage, p), (0, 0), follow_symlinks=False)
        with open(out + ".tmp", "wb") as f:
            subprocess.run(["cpio", "-o", "-H", "newc", "-R", "0:0", "--quiet"], cwd=stage, stdout=f, check=True,
                           input=("\n".join(names) + "\n").encode())
            if nodes:
                f.write(cpio.device_nodes())
        shutil.rmtree(stage)
        os.replace(out + ".tmp", out)


def build_guest(cache, apt, debs_dir, force, manifest, log):
    """The guest: trixie's kernel (CACHE/guest/vmlinux, bzImage, config) and the base initramfs
    (CACHE/guest/initramfs.cpio), rebuilt when its key (kernel, packages, BUILD_INPUTS) changed or with force."""
    gdir = os.path.join(cache, "guest")
    os.makedirs(gdir, exist_ok=True)
    krec, user = resolve_guest(apt)
    recs = [krec] + sorted(user.values(), key=lambda r: r["Package"])
    apt.download(recs, debs_dir)
    manifest.extend(("guest", r) for r in recs)
    kroot, uroot = os.path.join(gdir, "kernel-root"), os.path.join(gdir, "user-root")
    kchanged = extract(debs_dir, [krec], kroot, "kernel root", log)
    extract(debs_dir, list(user.values()), uroot, "guest userspace root", log)
    kver = install_kernel(gdir, kroot, kchanged or force, log)
    initrd = os.path.join(gdir, "initramfs.cpio")
    key = initramfs_key(kver, recs)
    stamp = initrd + ".key"
    if not force and os.path.exists(initrd) and os.path.exists(ulp_initrd_path(gdir)) and os.path.exists(stamp) and \
            open(stamp).read() == key:
        log("initramfs up to date")
        return
    log("building initramfs")
    t = Tree()
    add_userspace(t, cache, uroot, log)
    add_modules(t, kroot, kver, log)
    check_guest_closure(uroot, log)
    ulp = split_ulp(t, debs_dir, user)
    t.write(initrd, initrd + ".stage")
    ulp.write(ulp_initrd_path(gdir), initrd + ".stage", nodes=False)
    open(stamp, "w").write(key)
    log("initramfs: %s (%.1f MB), %s (%.1f MB)" % (initrd, os.path.getsize(initrd) / 1e6, ulp_initrd_path(gdir),
                                                  os.path.getsize(ulp_initrd_path(gdir)) / 1e6))


def ulp_initrd_path(gdir):
    return os.path.join(gdir, "initramfs-ulp.cpio")


def split_ulp(t, debs_dir, user):
    """Moves from t to a new Tree what only the ULP userspace needs: the files of the packages the ULP roots
    (ULP_USER_PKGS) pull in and the base roots do not, and add_ulp_userspace's additions (ulp_paths). A package
    reached from neither stays in the base."""
    base_roots = [n for n in GUEST_USER_PKGS if n not in ULP_USER_PKGS]
    only_ulp = reachable(user, ULP_USER_PKGS) - reachable(user, base_roots)
    paths = set()
    for n in only_ulp:
        paths |= deb_paths(os.path.join(debs_dir, deb_name(user[n])))
    ulp = Tree()
    for p in [p for p, e in t.e.items() if e[0] != "dir" and (p in paths or ulp_paths(p))]:
        kind, payload, mode = t.e.pop(p)
        ulp.add(p, kind, payload, mode)
    return ulp


def reachable(recs, roots):
    """The packages of recs (by name) that roots reach through Depends/Pre-Depends (any alternative in recs)."""
    seen, todo = set(), [n for n in roots if n in recs]
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        for field in ("Depends", "Pre-Depends"):
            for alt in recs[n].get(field, "").split(","):
                for d in alt.split("|"):
                    d = re.split(r"[\s(:]", d.strip(), maxsplit=1)[0]
                    if d in recs and d not in seen:
                        todo.append(d)
    return seen


def deb_paths(deb):
    """The paths a .deb ships (files and links), as the initramfs has them (merged /usr)."""
    out = subprocess.run(["dpkg-deb", "-c", deb], capture_output=True, text=True, check=True).stdout
    paths = set()
    for line in out.splitlines():
        p = line.split(None, 5)[-1].split(" -> ")[0].lstrip(".").strip("/")
        top = p.split("/")[0]
        paths.add("usr/" + p if top in ("bin", "sbin", "lib", "lib64") else p)
    return paths


def resolve_guest(apt):
    """The kernel package (the ABI linux-image-amd64 depends on, -unsigned flavour) and the userspace packages."""
    meta = apt.candidate("linux-image-amd64")
    dep = re.match(r"\s*([^\s(,|:]+)", meta["Depends"]).group(1)   # linux-image-6.12.NNN+deb13-amd64
    kpkg = dep + "-unsigned" if not dep.endswith("-unsigned") else dep
    return apt.candidate(kpkg), apt.resolve(GUEST_USER_PKGS, follow=follow_guest_dep, tag="ulp3")


def install_kernel(gdir, kroot, changed, log):
    """CACHE/guest/bzImage, config and vmlinux (PVH) from the kernel root; the kernel version."""
    kver = [os.path.basename(p)[len("vmlinuz-"):] for p in glob.glob(os.path.join(kroot, "boot", "vmlinuz-*"))][0]
    open(os.path.join(gdir, "kver"), "w").write(kver + "\n")
    bz = os.path.join(gdir, "bzImage")
    if changed or not os.path.exists(bz):
        shutil.copy(os.path.join(kroot, "boot", "vmlinuz-" + kver), bz)
        shutil.copy(os.path.join(kroot, "boot", "config-" + kver), os.path.join(gdir, "config"))
        extract_pvh_vmlinux(bz, os.path.join(gdir, "vmlinux"), log)
    cfg = open(os.path.join(gdir, "config")).read()
    for opt in ("CONFIG_VFIO_NOIOMMU", "CONFIG_VFIO", "CONFIG_VFIO_PCI", "CONFIG_MLX5_CORE", "CONFIG_RDMA_RXE",
                "CONFIG_PVH"):
        m = re.search(r"^%s=(\S+)" % opt, cfg, re.M)
        log("kernel %s=%s" % (opt, m.group(1) if m else "(not set)"))
    return kver


def extract_pvh_vmlinux(bz, vml, log):
    """The uncompressed vmlinux out of the bzImage, kept only with a PVH note (launch then boots it directly)."""
    if os.path.exists(vml):
        os.unlink(vml)
    log("extracting uncompressed vmlinux from the bzImage")
    if not extract_vmlinux(bz, vml + ".tmp"):
        log("WARNING: could not extract vmlinux; launch will use the bzImage")
        return
    os.replace(vml + ".tmp", vml)
    if not has_pvh_note(vml):
        log("WARNING: vmlinux has no PVH note; launch will use the bzImage")
        os.rename(vml, vml + ".nopvh")


def initramfs_key(kver, recs):
    """What the initramfs is made of: the kernel version, every package, BUILD_INPUTS' text."""
    return hashlib.sha256((kver + "|" + "|".join(deb_name(r) for r in recs) + "|" +
                           "".join(open(f, "rb").read().decode(errors="replace") for f in BUILD_INPUTS)).encode()
                          ).hexdigest()


def add_userspace(t, cache, uroot, log):
    """The root's directories, the userspace packages (merged-/usr), busybox applets where no real binary exists,
    the ULP userspace, /init and the few /etc files."""
    for d in ("proc", "sys", "dev", "tmp", "run", "etc", "root", "var", "mnt"):
        t.mkdirs(d)
    for l, tgt in (("bin", "usr/bin"), ("sbin", "usr/sbin"), ("lib", "usr/lib"), ("lib64", "usr/lib64")):
        t.add(l, "link", tgt)
    # userspace (merged-/usr layout; packages that ship /bin or /sbin get folded into /usr)
    for top in ("usr", "etc"):
        src = os.path.join(uroot, top)
        if os.path.isdir(src):
            t.add_tree(src, top, exclude=("share/doc", "share/man", "share/locale", "share/lintian",
                                           "share/bug", "share/info", "share/bash-completion", "share/zsh") +
                       ulp_exclude(top))
    for top, dst in (("bin", "usr/bin"), ("sbin", "usr/sbin"), ("lib", "usr/lib"), ("lib64", "usr/lib64")):
        src = os.path.join(uroot, top)
        if os.path.isdir(src) and not os.path.islink(src):
            t.add_tree(src, dst)
    add_busybox_applets(t, uroot)
    add_ulp_userspace(t, cache, uroot, log)
    t.add("init", "data", open(INIT_FILE, "rb").read(), 0o755)
    t.add("etc/passwd", "data", b"root:x:0:0:root:/root:/bin/sh\n")
    t.add("etc/group", "data", b"root:x:0:\n")
    t.add("etc/hosts", "data", b"127.0.0.1 localhost vrnic-guest\n")
    t.add("etc/nsswitch.conf", "data", b"hosts: files\n")


def add_busybox_applets(t, uroot):
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


def module_index(mroot):
    """{module name: its file} of the kernel's modules, and the names of the built-in ones."""
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
    return index, builtin


def module_closure(index, builtin, mroot, log):
    """GUEST_MODULES and their dependencies: {name: (path in the modules tree, dependencies, bytes)}."""
    todo = list(GUEST_MODULES)
    mods = {}
    while todo:
        n = todo.pop(0).replace("-", "_")
        if n in mods:
            continue
        if n not in index:
            log("module %s is built in" % n if n in builtin else "WARNING: module %s not found" % n)
            continue
        deps = module_depends(index[n])
        rel = re.sub(r"\.(xz|zst|gz)$", "", os.path.relpath(index[n], mroot))
        mods[n] = (rel, deps, read_module(index[n]))
        todo.extend(deps)
    return mods


def dependency_order(mods):
    """Every module after the ones it depends on."""
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
    return order


def add_modules(t, kroot, kver, log):
    """GUEST_MODULES with their dependencies (decompressed), modules.dep/order for busybox modprobe, the builtin
    lists, /etc/vrnic-modules."""
    mroot = os.path.join(kroot, "lib/modules", kver)
    if not os.path.isdir(mroot):
        mroot = os.path.join(kroot, "usr/lib/modules", kver)
    mods = module_closure(*module_index(mroot), mroot, log)
    order = dependency_order(mods)
    base = "usr/lib/modules/%s/" % kver
    dep_lines = []
    for n in order:
        rel, deps, data = mods[n]
        t.add(base + rel, "data", data)
        # modprobe loads the listed dependencies from the end: list them in reverse topological order
        deps_sorted = sorted(closure(mods, n, []), key=order.index, reverse=True)
        dep_lines.append("%s: %s" % (rel, " ".join(mods[d][0] for d in deps_sorted)))
    t.add(base + "modules.dep", "data", ("\n".join(dep_lines) + "\n").encode())
    t.add(base + "modules.order", "data", ("\n".join(mods[n][0] for n in order) + "\n").encode())
    for f in ("modules.builtin", "modules.builtin.modinfo"):
        if os.path.exists(os.path.join(mroot, f)):
            t.add(base + f, "file", os.path.join(mroot, f))
    t.add("etc/vrnic-modules", "data", ("\n".join(order) + "\n").encode())
    log("modules: %d (%s)" % (len(order), " ".join(order)))


def closure(mods, x, acc):
    """Every module x depends on, transitively."""
    for d in mods.get(x, ("", []))[1]:
        if d in mods and d not in acc:
            acc.append(d)
            closure(mods, d, acc)
    return acc


def check_guest_closure(uroot, log):
    """Every library the important binaries and the verbs providers need is in the root (UCX's modules find each
    other through their RUNPATH, usr/lib/x86_64-linux-gnu/ucx); SystemExit otherwise."""
    libdirs = ["usr/lib/x86_64-linux-gnu", "usr/lib64", "lib/x86_64-linux-gnu", "usr/lib", "usr/lib/x86_64-linux-gnu/ucx"]
    starts = []
    for b in ("ibv_devinfo", "ib_write_lat", "ib_send_bw", "rping", "lspci", "ip", "rdma", "ibv_rc_pingpong",
              "ethtool", "iperf3", "tcpdump", "ping", "ibstat", "smpquery", "perfquery", "ibnetdiscover",
              "opensm") + ULP_BINARIES:
        for d in ("usr/bin", "usr/sbin", "bin", "sbin"):
            if os.path.exists(os.path.join(uroot, d, b)):
                starts.append(os.path.join(uroot, d, b))
                break
        else:
            log("WARNING: guest binary %s not found" % b)
    starts += glob.glob(os.path.join(uroot, "usr/lib/x86_64-linux-gnu/libibverbs/*.so")) + ulp_closure_starts(uroot)
    miss = check_closure(uroot, starts, libdirs)
    if miss:
        raise SystemExit("guest library closure incomplete: %s" % miss)
    log("guest library closure OK (%d start files)" % len(starts))
