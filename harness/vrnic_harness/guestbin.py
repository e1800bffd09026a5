"""Guest test programs: guest-tests/src/*.c compiled into CACHE/guest-bin/ (static, except VERBS_PROGRAMS)."""
import glob
import os

from .common import GUEST_TESTS, REPO, run

# guest-tests/src/<name>.c linked dynamically against trixie's libibverbs (the others are -static)
VERBS_PROGRAMS = {"verbs_objects", "dm_test", "err_test", "churn", "resize_cq", "timestamp", "grh_ah", "bad_opcode", "rereg", "scale"}
# VERBS_PROGRAMS that also use the mlx5 direct-verbs API (mlx5dv_*): linked against the guest's own
# libmlx5.so.1 (ibverbs-providers, in CACHE/guest/user-root; dev-root's libmlx5.so points at it).
MLX5DV_PROGRAMS = {"bad_opcode"}


def dev_root(cache):
    return os.path.join(cache, "guest", "dev-root")


def build_guest_bins(cache, log, force=False):
    """Compiles each guest-tests/src/<name>.c that is newer than its binary or than a header next to it (vrtest.h:
    checks, DIE, the PASS/FAIL line, now(); vrverbs.h: the device, port LID, RC QP set-up the verbs programs share)."""
    src = os.path.join(GUEST_TESTS, "src")
    out = os.path.join(cache, "guest-bin")
    os.makedirs(out, exist_ok=True)
    droot = dev_root(cache)
    dstamp = os.path.join(droot, ".vrnic-extracted")
    headers = max([os.path.getmtime(h) for h in glob.glob(os.path.join(src, "*.h"))] or [0])
    for c in sorted(glob.glob(os.path.join(src, "*.c"))):
        name = os.path.basename(c)[:-2]
        b = os.path.join(out, name)
        verbs = name in VERBS_PROGRAMS
        newest = max(os.path.getmtime(c), headers)
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
