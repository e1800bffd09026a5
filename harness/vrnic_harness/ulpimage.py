"""The guest image's userspace for issue 22's scenarios (the kernel ULP modules are in initramfs.GUEST_MODULES):
python3 + pyverbs and rdma-core's own tests, nvme-cli, fio (Debian's binary: its NEEDED closure includes the
Ceph/Gluster client libraries of its rbd/rados/gfapi engines; the archive serves no sources to build a leaner one), the kernel NFS
server/client tools, UCX and libfabric. Trixie's packages, unpacked into the same user root as the base userspace;
what no scenario uses is left out: the ROCm/HIP/LLVM/X11/MPI libraries libucx0 and libhwloc pull (for UCX's rocm
modules, which are not shipped), Python's idle stdlib parts.
"""
import glob
import gzip
import os

ULP_USER_PKGS = ["python3-pyverbs", "nvme-cli", "fio", "nfs-kernel-server", "nfs-common", "ucx-utils", "libucx0",
                 "libfabric-bin", "libfabric1"]
# dependencies never followed for the guest: GPU (ROCm/HIP, LLVM, Level Zero, DRM), X11, hwloc's GPU/X plugins.
# The closure check (ulp_closure_starts) proves the shipped binaries and modules do not need them. (OpenMPI stays:
# Debian's ucx_perftest links libmpi.so.40 directly; its libpmix needs libmunge.)
ULP_SKIP = ("libamd", "libhsa", "libllvm", "libz3", "libdrm", "libze1", "libx11", "libxau", "libxcb", "libxdmcp",
            "libxext", "libxnvctrl", "libhwloc-plugins", "libpciaccess")
# the guest binaries the library closure check starts from (with initramfs' base list)
# (trixie has no fabtests package: no fi_rdm_pingpong; libfabric-bin's fi_pingpong runs RDM endpoints with -e rdm)
ULP_BINARIES = ("python3.13", "nvme", "fio", "rpc.nfsd", "exportfs", "rpc.mountd", "mount.nfs", "ucx_perftest", "ucx_info",
                "fi_pingpong", "fi_info")
PY = "lib/python3.13"
# Python stdlib parts no test imports (relative to usr/)
PY_EXCLUDE = ["test", "idlelib", "tkinter", "turtledemo", "ensurepip", "pydoc_data", "venv", "__phello__",
              "config-3.13-x86_64-linux-gnu", "lib2to3", "sqlite3", "dbm", "curses", "xmlrpc", "wsgiref"]
TESTS_SRC = "usr/share/doc/rdma-core/tests"
TESTS_DST = "usr/lib/rdma-core-tests/tests"   # python3 /usr/lib/rdma-core-tests/tests/run_tests.py --dev ...
ARCH_LIB = "usr/lib/x86_64-linux-gnu"


def follow_guest_dep(name):
    return name.startswith(("lib", "zlib", "python3")) and not name.startswith(ULP_SKIP)


def ulp_exclude(top):
    """add_tree excludes (paths relative to the unpacked top directory, usr or etc)."""
    if top != "usr":
        return ()
    return tuple("%s/%s" % (PY, x) for x in PY_EXCLUDE) + ("lib/x86_64-linux-gnu/ucx/rocm",)


def _skip_file(rel):
    """Files add_tree took that the guest must not have: UCX's rocm modules (their closure is ROCm)."""
    b = os.path.basename(rel)
    return "/ucx/" in rel and "rocm" in b or b.startswith(("libucm_rocm", "libuct_rocm", "libucx_perftest_rocm"))


def add_ulp_userspace(t, cache, uroot, log):
    """rdma-core's tests (gunzipped), fio, the NFS state/config files; drops UCX's rocm modules."""
    for p in [p for p in t.e if _skip_file(p)]:
        del t.e[p]
    n = 0
    for f in sorted(glob.glob(os.path.join(uroot, TESTS_SRC, "*"))):
        name = os.path.basename(f)
        if name.endswith(".gz"):
            t.add("%s/%s" % (TESTS_DST, name[:-3]), "data", gzip.open(f).read(), 0o644)
        elif os.path.isfile(f):
            t.add("%s/%s" % (TESTS_DST, name), "file", f, 0o755 if name == "run_tests.py" else 0o644)
        n += 1
    if not n:
        raise SystemExit("python3-pyverbs has no %s" % TESTS_SRC)
    # the kernel NFS server's state (exportfs/rpc.mountd/nfsdcld) and client config; exports written by the scenario
    for d in ("var/lib/nfs/rpc_pipefs", "var/lib/nfs/v4recovery", "var/lib/nfs/nfsdcld", "etc/exports.d", "run"):
        t.mkdirs(d)
    for f in ("var/lib/nfs/etab", "var/lib/nfs/rmtab", "etc/exports"):
        t.add(f, "data", b"")
    log("ULP userspace: %d rdma-core test files in /%s, NFS state dirs" % (n, TESTS_DST))


def ulp_paths(p):
    """Initramfs paths add_ulp_userspace adds (rdma-core's tests, the NFS state files): in the ULP archive."""
    return p.startswith(TESTS_DST + "/") or p in ("var/lib/nfs/etab", "var/lib/nfs/rmtab", "etc/exports")


def ulp_closure_starts(uroot):
    """The shared objects dlopen()ed rather than NEEDED: pyverbs' extension modules, UCX's transport modules."""
    starts = glob.glob(os.path.join(uroot, "usr/lib/python3/dist-packages/pyverbs/**/*.so"), recursive=True)
    starts += [p for p in glob.glob(os.path.join(uroot, ARCH_LIB, "ucx", "*.so*")) if not _skip_file(p)]
    starts += glob.glob(os.path.join(uroot, ARCH_LIB, "libfabric", "*.so"))
    starts += glob.glob(os.path.join(uroot, PY, "lib-dynload", "*.so"))
    return starts
