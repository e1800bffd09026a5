"""The guest kernel's pieces: the uncompressed vmlinux inside the bzImage (for PVH boot), modules and their
dependencies (modinfo), and ELF shared-library closure checks of unpacked roots.

Debian's tools do the work: `zstd` (the bzImage payload), kmod's `modinfo` (module dependencies), binutils'
`readelf` (PVH note, NEEDED entries), Python's lzma/gzip (modules, stored uncompressed in the initramfs). The
bzImage scan for the compressed payload stays here: the kernel's scripts/extract-vmlinux, which does the same, is
not in a Debian package the host has (only in the kernel sources).
"""
import gzip
import lzma
import os
import re
import shutil
import subprocess


def elf_dynamic(path):
    """(NEEDED sonames, RUNPATH/RPATH directories) of an ELF file."""
    try:
        out = subprocess.run(["readelf", "-dW", path], capture_output=True, text=True).stdout
    except OSError:
        return [], []
    paths = [d for p in re.findall(r"\((?:RUNPATH|RPATH)\)\s+Library (?:runpath|rpath): \[([^\]]+)\]", out)
             for d in p.split(":") if d.startswith("/")]
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out), paths


def elf_needed(path):
    return elf_dynamic(path)[0]


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
        needed, runpath = elf_dynamic(rf)
        for so in needed:
            for d in [r.strip("/") for r in runpath] + list(libdirs):
                p = os.path.join(root, d, so)
                if os.path.exists(p):
                    todo.append(p)
                    break
            else:
                missing.append((so, os.path.relpath(f, root)))
    return sorted(set(missing))


def zstd_decompress(data):
    """The first zstd frame of data (the kernel uses a window up to 2^31; trailing bytes after the frame, such
    as the bzImage's size trailer, make zstd exit non-zero after it wrote the frame: what it wrote is kept)."""
    r = subprocess.run(["zstd", "-d", "-c", "-q", "--long=31"], input=data, capture_output=True)
    return r.stdout


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


def module_depends(path):
    """The modules a module file depends on (kmod's `modinfo -F depends`, which reads .ko.xz/.zst/.gz files)."""
    exe = shutil.which("modinfo") or "/sbin/modinfo"
    r = subprocess.run([exe, "-F", "depends", path], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("modinfo %s failed: %s" % (path, r.stderr.strip()))
    return [d.replace("-", "_") for d in r.stdout.strip().split(",") if d]


def read_module(path):
    raw = open(path, "rb").read()
    if path.endswith(".xz"):
        return lzma.decompress(raw)
    if path.endswith(".zst"):
        return zstd_decompress(raw)
    if path.endswith(".gz"):
        return gzip.decompress(raw)
    return raw
