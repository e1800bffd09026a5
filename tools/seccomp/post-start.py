#!/usr/bin/env python3
"""post-start.py TRACE... - the syscalls a vrnic server made after start-up, from `strace -f -o` files
(tools/seccomp/strace-server writes them).

For each thread, everything after its last capset (the capability drop that precedes the seccomp filter;
threads without one were started later and count whole). A long-lived thread's own set-up runs between its
capset and the filter, so it shows here too (the fabric's event loop: epoll_create1, eventfd2). Prints one line per syscall: name, count, first
example; then the calls seen only before start-up. Compare the first list with `vrnic::seccomp::allow_list`.
Start the servers without --keep-privileges/--user, so that every thread calls capset.
"""
import collections
import re
import sys

rx = re.compile(r"^(\d+)\s+([a-z0-9_]+)\(")
post, pre, example = collections.Counter(), collections.Counter(), {}
for f in sys.argv[1:]:
    lines = open(f, errors="replace").read().splitlines()
    if not any("capset(" in l for l in lines):
        continue  # e.g. `vrnic --help`
    last_capset = {}
    for i, l in enumerate(lines):
        m = rx.match(l)
        if m and m.group(2) == "capset":
            last_capset[m.group(1)] = i
    for i, l in enumerate(lines):
        m = rx.match(l)  # "<... x resumed>" lines do not match: each call counts once
        if not m:
            continue
        tid, sc = m.group(1), m.group(2)
        if i > last_capset.get(tid, -1):
            post[sc] += 1
            example.setdefault(sc, l[:160])
        else:
            pre[sc] += 1
for sc, n in sorted(post.items()):
    print("%-20s %9d  %s" % (sc, n, example[sc]))
print("# before start-up only:", " ".join(sorted(set(pre) - set(post))))
