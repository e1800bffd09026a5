"""A newc cpio writer for the small archives the harness writes itself.

The guest's base initramfs is packed by Debian's `cpio` (initramfs.py). This writer stays for two archives
the tool does not make: the per-run overlay (`/scenario.sh`, lib.sh, the guest programs: bytes held in memory with
the modes the guest needs, written for every guest run, also on hosts where only python3 is at hand, such as
the devbench machines) and the base archive's two device nodes (/dev/console, /dev/null), which `cpio -o` can only
copy from real nodes, and making those needs root.
"""
import io
import stat


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


def overlay(files):
    """A newc archive holding files {guest path: (bytes, mode)} and their parent directories (0755), parents
    first; appended to the base initramfs, the kernel unpacks it over it."""
    entries = {}
    for p, (data, mode) in files.items():
        p = p.strip("/")
        parts = p.split("/")
        for i in range(1, len(parts)):
            entries.setdefault("/".join(parts[:i]), None)
        entries[p] = (data, mode)
    f = io.BytesIO()
    c = Cpio(f)
    for p in sorted(entries, key=lambda x: (x.count("/"), x)):
        if entries[p] is None:
            c.dir(p, 0o755)
        else:
            c.file(p, entries[p][0], entries[p][1])
    c.trailer()
    return f.getvalue()


def device_nodes():
    """/dev/console and /dev/null as a newc archive (appended to the packed base initramfs, which has /dev)."""
    f = io.BytesIO()
    c = Cpio(f)
    c.node("dev/console", stat.S_IFCHR | 0o600, 5, 1)
    c.node("dev/null", stat.S_IFCHR | 0o666, 1, 3)
    c.trailer()
    return f.getvalue()
