"""Debian packages for the cache, through apt itself with a private configuration (CACHE/apt).

The system's apt sources and state are never touched and nothing is installed: a private sources file (trixie +
trixie-backports, the host's mirror), private lists, an empty private dpkg status. apt's own solver resolves
(`apt-get -s install`), `apt-get download` fetches, `dpkg-deb -x` unpacks.

What a cache root needs is narrower than what an installation needs: `resolve(roots, follow)` keeps only the
packages `follow` accepts (e.g. libraries) and never descends into the others (maintainer-script helpers such as
debconf, adduser, systemd, ...). apt has no option for that, so those packages are entered in the private status
file as installed and on hold (without dependencies) and apt is asked again, until its answer holds none of them.
"""
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import time

from .common import run

# dependencies never followed (not needed at run time in a cache root / initramfs)
DEP_SKIP = {"qemu-system-common", "debconf", "adduser", "dpkg", "install-info", "init-system-helpers",
            "libc-bin", "libpam-runtime", "debconf-2.0", "perl-base", "sensible-utils", "base-files",
            "libpam-modules", "libpam-modules-bin", "login", "passwd", "systemd", "udev",
            "libsystemd-shared", "libcap2-bin", "libpam0g", "readline-common", "lsb-base",
            "tzdata", "ucf", "media-types", "netbase"}
SUITES = "trixie trixie-backports"


class DownloadError(Exception):
    pass


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


def deb822(text):
    """Records of an apt-cache show / Packages text: [{field: value}] (continuation lines kept)."""
    recs = []
    for block in text.split("\n\n"):
        rec, key = {}, None
        for line in block.split("\n"):
            if not line:
                continue
            if line[0] in " \t":
                if key:
                    rec[key] += "\n" + line
                continue
            key, _, v = line.partition(":")
            rec[key] = v.strip()
        if "Package" in rec:
            recs.append(rec)
    return recs


def deb_name(r):
    v = r["Version"].replace(":", "%3a")
    return "%s_%s_%s.deb" % (r["Package"], v, r.get("Architecture", "amd64"))


def vcmp(a, b):
    """Debian version comparison (dpkg's)."""
    if a == b:
        return 0
    return -1 if subprocess.run(["dpkg", "--compare-versions", a, "lt", b]).returncode == 0 else 1


class Apt:
    def __init__(self, cache, log, types="deb", name="apt"):
        """types "deb-src" (in its own directory, name): a source-package configuration (Apt.source)."""
        self.log = log
        self.dir = os.path.join(cache, name)
        for d in ("lists/partial", "cache/archives/partial", "state"):
            os.makedirs(os.path.join(self.dir, d), exist_ok=True)
        self.sources = os.path.join(self.dir, "trixie.sources")
        empty = os.path.join(self.dir, "empty")
        os.makedirs(empty, exist_ok=True)
        want = ("Types: %s\nURIs: %s\nSuites: %s\nComponents: main\n"
                "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n" % (types, system_debian_uri(), SUITES))
        if not os.path.exists(self.sources) or open(self.sources).read() != want:
            open(self.sources, "w").write(want)
        self.status = os.path.join(self.dir, "state", "status")
        self.opts = ["-o", "Dir::Etc::SourceList=" + self.sources, "-o", "Dir::Etc::SourceParts=" + empty,
                     "-o", "Dir::State::Lists=" + os.path.join(self.dir, "lists"),
                     "-o", "Dir::State::status=" + self.status,
                     "-o", "Dir::State::extended_states=" + os.path.join(self.dir, "state", "extended_states"),
                     "-o", "Dir::Cache=" + os.path.join(self.dir, "cache"),
                     "-o", "Dir::Etc::Preferences=/nonexistent", "-o", "Dir::Etc::PreferencesParts=" + empty,
                     "-o", "APT::Install-Recommends=0", "-o", "APT::Install-Suggests=0",
                     "-o", "Debug::NoLocking=1", "-o", "APT::Sandbox::User=root", "-q"]
        # apt's answers, per package set, for the lists they were computed from: a filled cache stays a fast no-op
        self.resolved_path = os.path.join(self.dir, "resolved.json")
        try:
            self.resolved = json.load(open(self.resolved_path))
        except (OSError, ValueError):
            self.resolved = {}

    def lists_files(self):
        return glob.glob(os.path.join(self.dir, "lists", "*_Packages*")) + \
            glob.glob(os.path.join(self.dir, "lists", "*_Sources*"))

    def source(self, spec, dest):
        """apt-get source --download-only NAME=VERSION into dest (signature and checksums checked by apt), then
        dpkg-source -x; returns the unpacked source directory."""
        os.makedirs(dest, exist_ok=True)
        name, _, ver = spec.partition("=")
        upver = re.sub(r"^\d+:", "", ver).rsplit("-", 1)[0]
        tree = os.path.join(dest, "%s-%s" % (name, upver))
        if os.path.isdir(tree):
            return tree
        run(["apt-get"] + self.opts + ["source", "--download-only", spec], cwd=dest, stdout=subprocess.DEVNULL)
        dsc = glob.glob(os.path.join(dest, "%s_%s.dsc" % (name, re.sub(r"^\d+:", "", ver))))
        if not dsc:
            raise SystemExit("apt-get source %s produced no .dsc in %s" % (spec, dest))
        run(["dpkg-source", "--no-check", "-x", dsc[0], tree], stdout=subprocess.DEVNULL)
        return tree

    def update(self, force=False, max_age=12 * 3600):
        fl = self.lists_files()
        if fl and not force and all(time.time() - os.path.getmtime(f) < max_age for f in fl):
            self.log("apt lists fresh (use --refresh to force), skipping update")
            return
        self.log("apt-get update (private trixie + trixie-backports configuration)")
        run(["apt-get"] + self.opts + ["update"], stdout=subprocess.DEVNULL)
        for f in self.lists_files():
            os.utime(f)

    def lists_key(self):
        return ";".join("%s:%d:%d" % (os.path.basename(f), os.path.getsize(f), os.path.getmtime(f))
                        for f in sorted(self.lists_files()))

    def show(self, specs):
        """apt-cache show records for NAME=VERSION (or NAME: its candidate)."""
        if not specs:
            return []
        r = subprocess.run(["apt-cache"] + self.opts + ["show", "--no-all-versions"] + list(specs),
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit("apt-cache show failed: %s" % r.stderr.strip()[-500:])
        return deb822(r.stdout)

    def candidate(self, name):
        recs = self.show([name])
        if not recs:
            raise SystemExit("package %s not found in %s" % (name, SUITES))
        return recs[0]

    def _simulate(self, specs):
        """{name: (version, arch)} apt would install, or {} and the names whose version it could not satisfy."""
        r = subprocess.run(["apt-get"] + self.opts + ["-s", "install"] + specs, capture_output=True, text=True)
        if r.returncode != 0:
            unmet = set(re.findall(r"Depends: (\S+) \([<>=]+ [^)]*\) but \S+ is to be installed", r.stdout))
            if not unmet:
                raise SystemExit("apt-get -s install %s failed:\n%s" % (" ".join(specs), (r.stdout + r.stderr)[-2000:]))
            return {}, unmet
        # only NEW packages: the held ones stay as they are ("hold ok installed")
        return {m.group(1): (m.group(2), m.group(3))
                for m in re.finditer(r"^Inst (\S+) \((\S+) .*\[(\S+)\]\)", r.stdout, re.M)}, set()

    def resolve(self, roots, follow, backports=(), tag=""):
        """roots + the Depends/Pre-Depends closure apt picks, through packages follow(name) accepts only
        (roots always; DEP_SKIP never). backports: roots taken from trixie-backports. Returns records, by name."""
        specs = [n + "/trixie-backports" if n in backports else n for n in roots]
        key = hashlib.sha256(("%s|%s" % (" ".join(specs), tag)).encode()).hexdigest()
        if self.resolved.get("lists") != self.lists_key():
            self.resolved = {"lists": self.lists_key(), "sets": {}}
        hit = self.resolved["sets"].get(key)
        if hit:
            return {r["Package"]: r for r in hit}
        held = {}   # packages not followed: "installed" in the private status, without dependencies
        for _ in range(30):
            with open(self.status + ".tmp", "w") as f:
                for r in held.values():
                    f.write("Package: %s\nStatus: hold ok installed\nVersion: %s\nArchitecture: %s\n" % (
                        r["Package"], r["Version"], r["Architecture"]))
                    for k in ("Multi-Arch", "Provides"):
                        if k in r:
                            f.write("%s: %s\n" % (k, r[k]))
                    f.write("\n")
            os.replace(self.status + ".tmp", self.status)
            inst, unmet = self._simulate(specs)
            # a trixie-backports root needs its versioned dependencies from there too: apt 2.6 does not take them
            # from the root's suite by itself (the old hand-written resolver's "upgrade to the other suite")
            for n in sorted(unmet):
                bpo = n + "/trixie-backports"
                if n in DEP_SKIP or not follow(n):
                    held[n] = self.candidate(bpo)
                elif n in roots:
                    specs = [bpo if s.split("/")[0] == n else s for s in specs]
                elif bpo not in specs:
                    specs.append(bpo)
            if unmet:
                continue
            more = [n for n in inst if n not in roots and n not in held and (n in DEP_SKIP or not follow(n))]
            if not more:
                break
            for r in self.show(["%s=%s" % (n, inst[n][0]) for n in more]):
                held[r["Package"]] = r
        else:
            raise SystemExit("apt: no stable answer for %s after 30 rounds" % " ".join(specs))
        recs = self.show(["%s=%s" % (n, v) for n, (v, _) in sorted(inst.items())])
        self.log("apt resolved %s: %d packages (%d dependencies not followed)" % (
            " ".join(roots), len(recs), len(held)))
        keep = ("Package", "Version", "Architecture", "Size", "Depends", "Pre-Depends")
        self.resolved["sets"][key] = [{k: r[k] for k in keep if k in r} for r in recs]
        with open(self.resolved_path + ".tmp", "w") as f:
            json.dump(self.resolved, f)
        os.replace(self.resolved_path + ".tmp", self.resolved_path)
        return {r["Package"]: r for r in recs}

    def download(self, recs, dest):
        os.makedirs(dest, exist_ok=True)
        missing = [r for r in recs if not os.path.exists(os.path.join(dest, deb_name(r)))]
        if missing:
            self.log("downloading %d .debs (%d already cached)" % (len(missing), len(recs) - len(missing)))
            r = subprocess.run(["apt-get"] + self.opts + ["download"] +
                               ["%s=%s" % (r["Package"], r["Version"]) for r in missing], cwd=dest,
                               stdout=subprocess.DEVNULL)
            if r.returncode != 0:
                raise DownloadError("apt-get download failed (rc %d)" % r.returncode)
        else:
            self.log("all %d .debs already cached" % len(recs))
        for r in recs:
            p = os.path.join(dest, deb_name(r))
            if not os.path.exists(p):
                raise SystemExit("download did not produce " + p)


def extract(debs_dir, recs, root, stampname, log):
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
