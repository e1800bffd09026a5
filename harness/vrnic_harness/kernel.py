"""The guest kernel's pieces: the uncompressed vmlinux inside the bzImage (for PVH boot), modules and their
dependencies (modinfo), and ELF shared-library closure checks of unpacked roots.

Decompression uses Debian's `zstd` binary and Python's lzma/gzip. The .modinfo reader and the bzImage scan stay
here: no Debian tool reads a module's .modinfo without the kernel's module tree installed (`modinfo` needs
depmod's files under /lib/modules of a running layout), and extract-vmlinux ships only in the kernel sources.
"""
import gzip
import lzma
import os
import re
import struct
import subprocess


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
