"""fio for the guest, built from Debian trixie's own fio source package: static, with only the engines the issue's
scenarios use (sync/psync/libaio/io_uring and fio's built-in ones), into CACHE/guest-bin/fio.

Why not trixie's fio .deb: it links librados, librbd, libgfapi, libnfs, libnbd, libpmem, ... directly (a closure of
well over 100 MB) for engines no scenario uses. The source comes through a private deb-src apt configuration
(CACHE/apt-src; apt checks the signed Sources index and the file checksums). Where the mirror serves no source
files (the host's mirror here answers 404 for pool/*.dsc), the same upstream release is taken from a git clone of
upstream fio (env VRNIC_FIO_GIT, default FIO_GIT) at the tag of trixie's upstream version (`git archive fio-3.39`).
The static libaio comes from trixie's libaio-dev (unpacked into CACHE/src/fio/aio-root, never installed); fio's
io_uring engine needs no library.
"""
import glob
import os
import re
import shutil
import subprocess

from .debian import Apt, extract

FIO_GIT = "/work/.mirror/axboe+fio/repo"

# fio's optional engines and helpers, off explicitly (the host may have some of their headers)
FIO_DISABLE = ["rdma", "rados", "rbd", "http", "gfapi", "libnfs", "pmem", "numa", "tcmalloc", "dfs", "xnvme",
               "libblkio", "libzbc", "tls", "lex", "gui", "nvme", "shm", "dynamic-engines"]


def build_fio(cache, apt, debs_dir, manifest, log, force=False):
    out = os.path.join(cache, "guest-bin", "fio")
    rec = apt.candidate("fio")
    ver = rec["Version"]
    stamp = out + ".version"
    if not force and os.path.exists(out) and os.path.exists(stamp) and open(stamp).read() == ver:
        log("fio %s up to date" % ver)
        return out
    src_apt = Apt(cache, log, types="deb-src", name="apt-src")
    src_apt.update()
    wdir = os.path.join(cache, "src", "fio")
    tree = fio_source(src_apt, ver, wdir, log)
    aio = apt.resolve(["libaio-dev"], follow=lambda n: n == "libaio-dev" or n.startswith("libaio1"))
    arecs = sorted(aio.values(), key=lambda r: r["Package"])
    apt.download(arecs, debs_dir)
    for r in arecs:
        manifest.append(("fio-build", r))
    aroot = os.path.join(wdir, "aio-root")
    extract(debs_dir, arecs, aroot, "libaio-dev root", log)
    if not glob.glob(os.path.join(aroot, "usr/lib/x86_64-linux-gnu/libaio.a")):
        raise SystemExit("libaio-dev has no libaio.a")
    inc, lib = os.path.join(aroot, "usr/include"), os.path.join(aroot, "usr/lib/x86_64-linux-gnu")
    log("building fio %s (static; engines sync/psync/libaio/io_uring)" % ver)
    subprocess.run(["make", "clean"], cwd=tree, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cfg = ["./configure", "--build-static", "--disable-native", "--extra-cflags=-I%s -L%s" % (inc, lib)]
    cfg += ["--disable-" + d for d in FIO_DISABLE if _knows(tree, "--disable-" + d)]
    r = subprocess.run(cfg, cwd=tree, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("fio configure failed:\n" + (r.stdout + r.stderr)[-3000:])
    conf = r.stdout
    for need in ("Linux AIO support",):
        line = [l for l in conf.splitlines() if l.startswith(need)]
        if not line or not line[0].rstrip().endswith("yes"):
            raise SystemExit("fio configure: %s not found:\n%s" % (need, conf[-3000:]))
    with open(os.path.join(tree, "config-host.mak"), "a") as f:
        f.write("LDFLAGS+= -L%s\n" % lib)   # the static libaio.a (fio's --extra-cflags is not on its link line)
    r = subprocess.run(["make", "-j%d" % max(1, min(2, os.cpu_count() or 1)), "fio"], cwd=tree, capture_output=True,
                       text=True)
    if r.returncode != 0:
        raise SystemExit("fio make failed:\n" + (r.stdout + r.stderr)[-3000:])
    eng = subprocess.run([os.path.join(tree, "fio"), "--enghelp"], capture_output=True, text=True).stdout.split()
    for e in ("sync", "psync", "libaio", "io_uring"):
        if e not in eng:
            raise SystemExit("the fio built lacks the %s engine (fio --enghelp: %s)" % (e, " ".join(eng)))
    os.makedirs(os.path.dirname(out), exist_ok=True)
    shutil.copy(os.path.join(tree, "fio"), out + ".tmp")
    subprocess.run(["strip", out + ".tmp"], check=True)
    os.replace(out + ".tmp", out)
    open(stamp, "w").write(ver)
    log("fio %s: %s (%.1f MB)" % (ver, out, os.path.getsize(out) / 1e6))
    return out


def fio_source(src_apt, ver, wdir, log):
    try:
        return src_apt.source("fio=" + ver, wdir)
    except SystemExit as e:
        log("apt-get source fio failed (%s); using upstream git" % str(e).splitlines()[0][:80])
    up = re.sub(r"^\d+:", "", ver).rsplit("-", 1)[0]
    tree = os.path.join(wdir, "fio-%s-git" % up)
    if os.path.isdir(tree):
        return tree
    git = os.environ.get("VRNIC_FIO_GIT", FIO_GIT)
    os.makedirs(tree + ".tmp", exist_ok=True)
    arch = subprocess.run(["git", "--git-dir", git, "archive", "fio-" + up], capture_output=True)
    if arch.returncode != 0:
        raise SystemExit("no fio source: apt-get source failed and %s has no tag fio-%s (set VRNIC_FIO_GIT)" % (git, up))
    subprocess.run(["tar", "-x", "-C", tree + ".tmp"], input=arch.stdout, check=True)
    os.replace(tree + ".tmp", tree)
    return tree


def _knows(tree, opt):
    try:
        return opt in open(os.path.join(tree, "configure")).read()
    except OSError:
        return False
